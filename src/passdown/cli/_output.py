"""Machine-readable output shared by the commands: one JSON document on stdout,
redacted like every printed line (a path or a plugin's name may hold a secret) and
safe on a terminal."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def json_option(help_text: str = "Print JSON instead of text.") -> Callable[[F], F]:
    """`--json` (the `as_json` parameter): the same flag on every command that prints;
    `passdown.cli.main` also looks for it to print errors as JSON."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def json_text(data: Any, *, redacted: bool = True, one_line: bool = False) -> str:
    """`data` as indented JSON (`one_line`: on one line, for a server that goes on
    running after it, so a script reads one line); `redacted=False` only for content
    that must round-trip as stored (a record printed by `retrieve`)."""
    from passdown._text import json_safe

    if redacted:
        from passdown._redact import Redactor

        data = Redactor().redact_data(data)
    return json_safe(json.dumps(data, indent=None if one_line else 2, ensure_ascii=False))


def emit_json(data: Any, *, redacted: bool = True, one_line: bool = False) -> None:
    click.echo(json_text(data, redacted=redacted, one_line=one_line))
