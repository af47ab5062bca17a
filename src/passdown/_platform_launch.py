"""Starting a program on Windows without cmd.exe re-reading its arguments (`_platform`
re-exports these: import them from there).

An npm `.cmd`/`.bat` shim runs through cmd.exe, which re-parses its command line (`&`,
`|`, `%VAR%`, newlines: the "BatBadBut" class), so the shim is resolved to the
`node <script>` it wraps; where it cannot be, an argv with anything but plain words is
refused. On POSIX and for a Windows `.exe` the argv is used as it is.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from passdown import _platform_os

_SHIM_SCRIPT = re.compile(r'"%~?dp0%?\\([^"%]+)"\s+%\*')
# words cmd.exe passes through unchanged: no quotes, metacharacters, %, ^, ! or spaces
_CMD_SAFE = re.compile(r"[A-Za-z0-9_.,:=+@/\\-]*")


class UnsafeLaunch(Exception):
    """A launch that would put untrusted text on a cmd.exe command line."""


def spawn_argv(executable: str, argv: list[str]) -> tuple[str, list[str]]:
    """The (executable, argv) to start: unchanged on POSIX and for a Windows .exe.
    A Windows `.cmd`/`.bat` would run through cmd.exe, so an npm shim is replaced by
    the `node <script>` it wraps; a batch file that is not such a shim is only started
    when every argument is a plain word (else `UnsafeLaunch`)."""
    if not _platform_os.is_windows() or not executable.lower().endswith((".cmd", ".bat")):
        return executable, argv
    resolved = resolve_npm_shim(executable)
    if resolved is not None:
        node, script = resolved
        return node, [node, script, *argv[1:]]
    unsafe = [arg for arg in argv[1:] if not _CMD_SAFE.fullmatch(arg)]
    if unsafe:
        raise UnsafeLaunch(
            f"{executable} is a batch file, which Windows runs through cmd.exe; cmd.exe "
            "would re-read the prompt as commands, so passdown does not start it"
        )
    return executable, argv


def resolve_npm_shim(shim: str) -> tuple[str, str] | None:
    """(node, script) of an npm cmd-shim (`"%_prog%" "%dp0%\\<script>" %*`), or None."""
    try:
        with open(shim, "rb") as handle:
            text = handle.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return None
    match = _SHIM_SCRIPT.search(text)
    if match is None:
        return None
    folder = os.path.dirname(shim)
    script = os.path.join(folder, *match.group(1).split("\\"))
    if not os.path.isfile(script):
        return None
    local = os.path.join(folder, "node.exe")
    node = local if os.path.isfile(local) else shutil.which("node")
    if node is None or node.lower().endswith((".cmd", ".bat")):
        return None
    return node, script


def spawn_detached(
    argv: list[str], *, cwd: str, env: dict[str, str], log: str | None = None
) -> int:
    """Start `argv` (no shell) so that it outlives the caller and holds none of its
    terminal or pipes: stdin from the null device, stdout and stderr appended to `log`
    (else the null device). POSIX: a new session (no controlling terminal, no signal
    from the caller's process group). Windows: a detached process in a new process
    group, without a console window. Returns its process id; `OSError` when it cannot
    be started, `UnsafeLaunch` for a batch file given untrusted words."""
    import subprocess

    executable, argv = spawn_argv(argv[0], argv)
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    try:
        kwargs: dict[str, Any] = {}
        if _platform_os.is_windows():
            flags = (
                getattr(subprocess, "DETACHED_PROCESS", 0x8)
                | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)
                | getattr(subprocess, "CREATE_NO_WINDOW", 0x8000000)
            )
            kwargs["creationflags"] = flags
        else:
            kwargs["start_new_session"] = True
        proc = subprocess.Popen(
            argv,
            executable=executable,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            close_fds=True,
            **kwargs,
        )
    finally:
        if not isinstance(out, int):
            out.close()
    return int(proc.pid)
