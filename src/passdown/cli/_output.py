"""Machine-readable output shared by the commands: one JSON document on stdout,
redacted like every printed line (a path or a plugin's name may hold a secret) and
safe on a terminal."""

from __future__ import annotations

import json
from typing import Any

import click


def json_text(data: Any, *, redacted: bool = True, one_line: bool = False) -> str:
    """`data` as indented JSON (`one_line`: on one line, for a server that goes on
    running after it, so a script reads one line); `redacted=False` only for content
    that must round-trip as stored (a record printed by `retrieve`)."""
    from passdown.text import json_safe

    if redacted:
        from passdown.redact import Redactor

        data = Redactor().redact_data(data)
    return json_safe(json.dumps(data, indent=None if one_line else 2, ensure_ascii=False))


def emit_json(data: Any, *, redacted: bool = True, one_line: bool = False) -> None:
    click.echo(json_text(data, redacted=redacted, one_line=one_line))
