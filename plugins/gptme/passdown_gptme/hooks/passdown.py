"""gptme hooks of passdown's plugin.

At `session.end` it runs `passdown hook gptme` as the script hook `passdown install
gptme` writes is run (the payload in `GPTME_HOOK_EVENT`, `GPTME_LOGDIR`,
`GPTME_WORKSPACE`): the passdown on PATH, else where the README's set-up or pipx / uv
tool put it (~/.local/bin, ~/.local/share/passdown-venv, ~/passdown-venv/Scripts). Where
there is none, the session is told at its start (a system message) and no handoff is
written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
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


def find_passdown() -> str | None:
    on_path = shutil.which("passdown")
    if on_path:
        return on_path
    for parts in PLACES:
        path = Path.home().joinpath(*parts)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def register() -> None:
    """gptme calls this when it loads the plugin."""
    from gptme.hooks import HookType, register_hook
    from gptme.message import Message

    command = find_passdown()
    if command is None:

        def tell(logdir: Path, workspace: Path | None, initial_msgs: list[Any]) -> Iterator[Any]:
            yield Message("system", MISSING)

        register_hook("passdown.missing", HookType.SESSION_START, tell)
        return

    def on_end(manager: Any) -> Iterator[Any]:
        env = {
            **os.environ,
            "GPTME_HOOK_EVENT": "session.end",
            "GPTME_LOGDIR": str(manager.logdir),
            "GPTME_WORKSPACE": str(getattr(manager, "workspace", None) or Path.cwd()),
        }
        # passdown logs its own failures; a session's end is not held up by them
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [command, "hook", "gptme"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        yield from ()

    register_hook("passdown.session_end", HookType.SESSION_END, on_end)
