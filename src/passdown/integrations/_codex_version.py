"""Asking the installed Codex what it is: its version, and whether it runs lifecycle
hooks (`codex features list`), without a shell and without its home folder existing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from passdown import _platform

# The newest Codex passdown knows (.ci/agent-pins.txt): an install that cannot ask the
# installed Codex writes the form this one reads
NEWEST_KNOWN = "0.171"


@cache
def has_lifecycle_hooks(program: str = "codex") -> bool | None:
    """Whether the installed Codex runs `[hooks]`, as its own `features list` says;
    None when Codex cannot be asked (not on PATH, or it answers neither `features list`
    nor `--version`). A Codex that answers `--version` only predates `features`, and
    the hooks with it."""
    listed = _ask_codex(program, ["features", "list"])
    if listed is not None:
        return _says_hooks(listed)
    return None if codex_version(program) is None else False


@cache
def codex_version(program: str = "codex") -> str | None:
    """The first line `codex --version` prints (`codex-cli 0.171.0`); None when Codex
    cannot be asked (or answers no version)."""
    lines = (_ask_codex(program, ["--version"]) or "").strip().splitlines()
    return lines[0].strip() if lines and re.search(r"\d+\.\d+", lines[0]) else None


def _ask_codex(program: str, args: list[str]) -> str | None:
    """What `codex ARGS` prints when it exits 0; None when it is not found or fails."""
    home = os.environ.get("CODEX_HOME")
    if home and not Path(home).is_dir():
        # Codex refuses to start on a CODEX_HOME that is not there yet (the install
        # creates it); a fresh home gives the defaults that install will meet
        import tempfile

        with tempfile.TemporaryDirectory(prefix="passdown-codex-") as empty:
            return _run_codex(program, args, {**os.environ, "CODEX_HOME": empty})
    return _run_codex(program, args, None)


def _run_codex(program: str, args: list[str], env: dict[str, str] | None) -> str | None:
    # found as a shell finds it (on Windows npm installs `codex.cmd`, which a bare
    # CreateProcess of "codex" never sees), and started without cmd.exe
    found = shutil.which(program, path=(env or os.environ).get("PATH"))
    if found is None:
        return None
    try:
        executable, argv = _platform.spawn_argv(found, [found, *args])
        ran = subprocess.run(
            argv,
            executable=executable,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except (OSError, subprocess.SubprocessError, _platform.UnsafeLaunch):
        return None
    return ran.stdout if ran.returncode == 0 else None


def _says_hooks(features: str) -> bool:
    for line in features.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("hooks", "codex_hooks") and parts[-1] == "true":
            return True
    return False
