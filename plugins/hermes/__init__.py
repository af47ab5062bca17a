"""passdown's Hermes Agent plugin (`hermes plugins install URL#plugins/hermes --enable`).

It runs `passdown hook hermes` with the JSON payload Hermes's shell hooks send
(`{hook_event_name, session_id, cwd, extra}` on stdin) at the events `passdown install
hermes` registers: `pre_llm_call` (its `{"context": ...}` answer is added to the turn:
the pointer to an unclaimed handoff, once per session), `on_session_end` (each turn's
end) and `on_session_finalize` (the session closes). passdown is the one on PATH, else
where the README's set-up or pipx / uv tool put it (~/.local/bin,
~/.local/share/passdown-venv, ~/passdown-venv/Scripts). Where there is none, the
session's first turn is told and no handoff is written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

PLACES = (
    [".local", "bin", "passdown"],
    [".local", "share", "passdown-venv", "bin", "passdown"],
    ["passdown-venv", "Scripts", "passdown.exe"],
    ["passdown-venv", "Scripts", "passdown"],
)
MISSING = (
    "passdown is not installed where this plugin looks (on PATH, ~/.local/bin, "
    "~/.local/share/passdown-venv): no handoff is written for this session. Install it "
    "(README, Set-up) or put it on PATH, then start a new session."
)
TIMEOUT_S = 30
EVENTS = ("pre_llm_call", "on_session_end", "on_session_finalize")


def find_passdown() -> str | None:
    on_path = shutil.which("passdown")
    if on_path:
        return on_path
    for parts in PLACES:
        path = Path.home().joinpath(*parts)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def payload(event: str, kwargs: dict[str, Any]) -> str:
    """The stdin of Hermes's shell hooks for `event`."""
    extra = {k: v for k, v in kwargs.items() if k not in ("session_id", "tool_name", "args")}
    try:
        cwd = str(Path.cwd())
    except OSError:
        cwd = ""
    data = {
        "hook_event_name": event,
        "session_id": kwargs.get("session_id") or kwargs.get("parent_session_id") or "",
        "cwd": cwd,
        "extra": extra,
    }
    return json.dumps(data, ensure_ascii=False, default=str)


def hook(command: str, event: str) -> Any:
    def callback(**kwargs: Any) -> dict[str, str] | None:
        try:
            done = subprocess.run(
                [command, "hook", "hermes"],
                input=payload(event, kwargs),
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None  # passdown logs its own failures; the turn goes on
        if event != "pre_llm_call":
            return None
        try:
            answer = json.loads(done.stdout or "null")
        except ValueError:
            return None
        context = answer.get("context") if isinstance(answer, dict) else None
        return {"context": context} if isinstance(context, str) and context.strip() else None

    return callback


def register(ctx: Any) -> None:
    """Hermes calls this when it loads the plugin."""
    command = find_passdown()
    if command is None:
        told: set[str] = set()

        def tell(**kwargs: Any) -> dict[str, str] | None:
            session = str(kwargs.get("session_id") or "")
            if session in told:
                return None
            told.add(session)
            return {"context": MISSING}

        ctx.register_hook("pre_llm_call", tell)
        return
    for event in EVENTS:
        ctx.register_hook(event, hook(command, event))
