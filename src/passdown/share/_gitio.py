"""git for `passdown push`/`pull`: never a prompt, every call inside one deadline.

Runs through `passdown._git.run_git` (an argv list, no shell, `-C workspace`, the
repository variables dropped) with, on top:
- `GIT_TERMINAL_PROMPT=0`, `GIT_ASKPASS`/`SSH_ASKPASS` empty and `core.askPass=`:
  git never asks for a user name or a password; a remote that needs one fails at once.
- `GCM_INTERACTIVE=never`: Git Credential Manager answers from what it stored, or
  fails, never opens a window. Other credential helpers stay configured: those that
  answer without asking (`store`, `cache`, `osxkeychain`, `gh auth git-credential`)
  keep working, and clearing `credential.helper` would only break them.
- ssh in batch mode (`-o BatchMode=yes`, and a connect timeout) appended to the ssh
  command git would use (`GIT_SSH_COMMAND`, else `core.sshCommand`, else `ssh`);
  a `GIT_SSH` program (plink) is left as it is.
- commits of passdown's own identity and unsigned (`commit.gpgSign=false`): they carry
  nobody's name or e-mail and never wait for a signing agent.
Each call gets what remains of the operation's time (`Deadline`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from passdown._git import GitResult, run_git
from passdown.errors import ShareError

IDENTITY = {
    "GIT_AUTHOR_NAME": "passdown",
    "GIT_AUTHOR_EMAIL": "passdown@localhost",
    "GIT_COMMITTER_NAME": "passdown",
    "GIT_COMMITTER_EMAIL": "passdown@localhost",
}
# set through GIT_CONFIG_COUNT (git 2.31+), so the command's name stays git's first argument
_CONFIG = (("core.askPass", ""), ("commit.gpgSign", "false"))


class Deadline:
    """What remains of one push or pull's time."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


class Git:
    """git in one workspace, bounded by `deadline`."""

    def __init__(self, workspace: Path, deadline: Deadline) -> None:
        self.workspace = workspace
        self.deadline = deadline
        self._env: dict[str, str] | None = None

    def env(self) -> dict[str, str]:
        if self._env is None:
            env = {
                "GIT_CONFIG_COUNT": str(len(_CONFIG)),
                **{f"GIT_CONFIG_KEY_{n}": key for n, (key, _) in enumerate(_CONFIG)},
                **{f"GIT_CONFIG_VALUE_{n}": value for n, (_, value) in enumerate(_CONFIG)},
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_ASKPASS": "",
                "SSH_ASKPASS": "",
                "GCM_INTERACTIVE": "never",
                **IDENTITY,
            }
            if not os.environ.get("GIT_SSH"):
                base = os.environ.get("GIT_SSH_COMMAND") or self._config("core.sshCommand")
                wait = max(1, min(30, int(self.deadline.seconds)))
                env["GIT_SSH_COMMAND"] = (
                    f"{base or 'ssh'} -o BatchMode=yes -o ConnectTimeout={wait}"
                )
            self._env = env
        return self._env

    def _config(self, key: str) -> str | None:
        result = run_git(self.workspace, "config", "--get", key, timeout=self._left())
        text = result.out.decode("utf-8", "replace").strip()
        return text if result.ok and text else None

    def _left(self) -> float:
        left = self.deadline.left()
        if left <= 0:
            raise ShareError(
                f"git did not finish within {self.deadline.seconds:g} s",
                hint="a slow or unreachable remote: try again, or give more --timeout",
            )
        return left

    def run(
        self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
    ) -> GitResult:
        """One git call; a result that is not ok is the caller's to judge. ShareError
        when the time is up (before or during the call)."""
        left = self._left()
        result = run_git(
            self.workspace,
            *args,
            timeout=left,
            input=input,
            env={**self.env(), **(env or {})},
        )
        if not result.ok and "timed out after" in result.error:
            raise ShareError(
                f"git {args[0]} did not finish within {self.deadline.seconds:g} s",
                hint="a slow or unreachable remote: try again, or give more --timeout",
            )
        return result

    def must(
        self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        """One git call that must succeed (ShareError with git's reason otherwise)."""
        result = self.run(*args, input=input, env=env)
        if not result.ok:
            raise ShareError(result.error or f"git {args[0]} failed")
        return result.out
