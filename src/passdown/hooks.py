"""`passdown hook claude|codex`: `passdown export --quiet` in hook mode.

Agents run this when a session ends or compacts (Claude Code `SessionEnd`/`PreCompact`,
payload JSON on stdin) or when a turn completes (Codex `notify`, payload JSON as the
last argument). It exports the exact session the payload names into that session's
workspace and stores it in the project's scope.

A hook must never break the agent: every failure (bad payload, no session, a store
error, a bug) is appended to `data_dir()/logs/hooks.log` and the hook still exits 0.
It prints nothing.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

LOG_MAX_BYTES = 1_000_000


def log_path() -> Path:
    from passdown.paths import private_data_dir

    return private_data_dir("logs") / "hooks.log"


def run_hook(agent: str, args: list[str], stdin_text: str | None) -> int:
    """Always 0; what happened goes to the hook log."""
    event = "?"
    try:
        payload = _payload(agent, args, stdin_text)
        event = str(payload.get("hook_event_name") or payload.get("type") or "?")
        record_id = export_for_payload(agent, payload)
        _log(f"ok {agent} {event} stored={record_id or '-'}")
    except Exception as exc:  # the agent must not notice: log and carry on
        from passdown.errors import PassdownError

        detail = exc.message if isinstance(exc, PassdownError) else str(exc)
        trace = None if isinstance(exc, PassdownError) else traceback.format_exc()  # a bug
        _log(f"error {agent} {event}: {type(exc).__name__}: {detail}", trace)
    return 0


def _payload(agent: str, args: list[str], stdin_text: str | None) -> dict[str, Any]:
    if agent == "claude":
        raw = stdin_text or "{}"
    elif agent == "codex":
        raw = args[-1] if args else "{}"  # Codex appends the JSON as the last argument
    else:
        raise ValueError(f"unknown hook agent {agent!r}: expected claude or codex")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("hook payload is not a JSON object")
    return data


def export_for_payload(agent: str, payload: dict[str, Any]) -> str | None:
    """`passdown export` on the session the payload names, through the one export path
    (`coordinator.doors.export`): files written, record stored and published."""
    from passdown.coordinator import doors

    if agent == "claude":
        session = payload.get("transcript_path") or payload.get("session_id")
    else:
        session = payload.get("thread-id") or payload.get("thread_id")
    request = doors.HandoffRequest(source=agent, session=session or None)
    written = doors.export(request, Path(payload.get("cwd") or os.getcwd()))
    for warning in written.warnings:
        _log(f"warning {agent}: {warning}")
    return written.record_id


def _log(line: str, detail: str | None = None) -> None:
    try:
        from passdown.fsio import append_private

        path = log_path()
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            path.replace(path.with_suffix(".log.1"))  # keep one old log, bounded size
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        from passdown.text import one_line

        # one line per event: a payload value cannot forge log lines
        append_private(path, f"{stamp} {one_line(_redact(line))}\n" + (_redact(detail) if detail else ""))
    except Exception:  # logging must not break the hook either
        pass


def _redact(text: str) -> str:
    """Redacted, and without terminal control sequences: the log is read with `cat`."""
    from passdown.redact import redact
    from passdown.text import safe_text

    return safe_text(redact(text))


def main(agent: str, args: list[str]) -> int:
    """The `passdown hook` process: load only the calling agent's module (every plugin
    would cost time the agent waits for), read the payload, run."""
    if agent in ("claude", "codex"):
        os.environ.setdefault("PASSDOWN_AGENTS", agent)
    stdin_text = None
    if agent == "claude" and not sys.stdin.isatty():
        stdin_text = sys.stdin.read()
    return run_hook(agent, args, stdin_text)
