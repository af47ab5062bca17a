"""Starting the target agent: an argv list, never a shell, never past the OS limits.

The prompt is one element of the argv, so quotes, `$(...)`, backticks, `;`, newlines
or a leading `-` reach the agent unchanged (the agent's own argv must still put it
where an option cannot be parsed, e.g. after `--`). Linux refuses any single argument
of 128 KiB or more (MAX_ARG_STRLEN, counting its NUL) and an argv plus environment
past ARG_MAX; `check_argv` refuses both, with headroom, before anything starts.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from passdown import _platform
from passdown.errors import AgentNotInstalled, LaunchError

if TYPE_CHECKING:
    from passdown.agents.base import LaunchSpec

MAX_ARG_BYTES = 128 * 1024  # Linux MAX_ARG_STRLEN: one argument, including its NUL
ARG_HEADROOM = 8 * 1024  # "near the limit" is already too much
ENV_HEADROOM = 16 * 1024  # for what the runtime or a wrapper script adds to argv/env
_FALLBACK_ARG_MAX = 128 * 1024  # when sysconf cannot tell: the smallest Linux has had
_POINTER = 8  # each argv/envp entry also costs a pointer in the new process's stack

# Signals passdown passes on to the agent while it waits. SIGINT is not among them:
# the agent runs in passdown's foreground process group, so the terminal already
# delivers Ctrl-C to it, and a second copy would count as a double Ctrl-C (quit).
_FORWARDED = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


def format_argv(argv: list[str]) -> str:
    """The argv as one line a POSIX shell would split back into the same list."""
    return shlex.join(argv)


def arg_max() -> int:
    value = _platform.arg_max()
    return value if value is not None and value > 0 else _FALLBACK_ARG_MAX


def _size(text: str) -> int:
    return len(os.fsencode(text)) + 1  # the bytes the kernel copies, with the NUL


def check_argv(argv: list[str], *, env: Mapping[str, str] | None = None) -> None:
    """Raise `LaunchError` unless `argv` can safely be passed to exec().

    Refuses an empty argv, NUL bytes, any argument within ARG_HEADROOM of
    MAX_ARG_BYTES, and an argv that with `env` (default: os.environ) nears ARG_MAX.
    """
    if not argv:
        raise LaunchError("nothing to launch: the command is empty")
    total = 0
    for i, arg in enumerate(argv):
        if not isinstance(arg, str):
            raise LaunchError(f"argument {i} is not a string: {type(arg).__name__}")
        if "\0" in arg:
            raise LaunchError(f"argument {i} contains a NUL byte, which exec() cannot pass")
        size = _size(arg)
        if size > MAX_ARG_BYTES - ARG_HEADROOM:
            raise LaunchError(
                f"argument {i} is {size:,} bytes; one argument must stay under "
                f"{MAX_ARG_BYTES - ARG_HEADROOM:,} (the OS limit is {MAX_ARG_BYTES:,})",
                hint="pass a shorter prompt that points at HANDOFF.md",
            )
        total += size + _POINTER
    env = os.environ if env is None else env
    env_size = sum(_size(f"{k}={v}") + _POINTER for k, v in env.items())
    if _platform.is_windows():  # CreateProcess: the environment has a limit of its own
        env_size = 0
    budget = arg_max() - env_size - ENV_HEADROOM
    if total > budget:
        raise LaunchError(
            f"the command line is {total:,} bytes, more than the {max(budget, 0):,} "
            f"left by the OS limit ({arg_max():,} bytes, {env_size:,} used by the environment)",
            hint="pass a shorter prompt that points at HANDOFF.md",
        )


def resolve_program(program: str, *, path: str | None = None) -> str:
    """The full path of `program` on PATH (or `path`); raises `AgentNotInstalled`."""
    if not program or "\0" in program:
        raise AgentNotInstalled(f"invalid program name: {program!r}")
    found = shutil.which(program, path=path)
    if found is None:
        where = "is not executable" if os.sep in program else "was not found on PATH"
        raise AgentNotInstalled(
            f"{program} {where}",
            hint=f"install {program}, or make sure the folder that holds it is on PATH",
        )
    return found


def run(spec: LaunchSpec, *, interactive: bool) -> int:
    """Start the agent, wait for it, and return its exit code (128+N if killed by signal N).

    Interactive: the agent inherits passdown's terminal. Non-interactive: its stdin is
    /dev/null (nothing can wait for input), stdout and stderr are still shown. Raises
    `AgentNotInstalled` or `LaunchError` when it cannot start; once it runs, passdown
    survives Ctrl-C and passes SIGTERM/SIGHUP on, so the agent decides how to stop.
    """
    env = {**os.environ, **spec.env}
    check_argv(spec.argv, env=env)
    executable = resolve_program(spec.argv[0], path=env.get("PATH", os.defpath))
    cwd = Path(spec.cwd)
    if not cwd.is_dir():
        raise LaunchError(f"cannot start {spec.argv[0]}: folder not found: {cwd}")
    stdin = None if interactive else subprocess.DEVNULL
    executable, argv = windows_safe(executable, spec.argv)
    _flush_own_output()
    with _signals_for_child() as set_child:
        try:
            proc = subprocess.Popen(
                argv, executable=executable, cwd=cwd, env=env, stdin=stdin, shell=False
            )
        except OSError as exc:
            raise LaunchError(
                f"cannot start {executable}: {exc.strerror or exc}",
                hint=f"check that {executable} is a working program for this machine",
            ) from exc
        set_child(proc)
        code = _wait(proc)
    return 128 - code if code < 0 else code


def windows_safe(executable: str, argv: list[str]) -> tuple[str, list[str]]:
    """The (executable, argv) that starts `argv` without cmd.exe re-reading the prompt
    (`_platform.spawn_argv`: an npm `.cmd` shim becomes `node <script>`); raises
    `LaunchError` for a batch file that would see it. Unchanged on POSIX."""
    try:
        return _platform.spawn_argv(executable, argv)
    except _platform.UnsafeLaunch as exc:
        raise LaunchError(
            f"cannot start {argv[0]}: {exc}",
            hint=f"install {argv[0]} so that it is an .exe or an npm package (node + script)",
        ) from None


def _flush_own_output() -> None:
    """What passdown printed must appear before the agent's output, not after it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream is not a reason to stop the launch


def _wait(proc: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue  # only if no handler could be installed (not the main thread)


@contextmanager
def _signals_for_child() -> Iterator[Callable[[subprocess.Popen[bytes]], None]]:
    """While the agent runs: ignore Ctrl-C in passdown, forward SIGTERM/SIGHUP to it."""
    child: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []  # arrived before the agent existed

    def set_child(proc: subprocess.Popen[bytes]) -> None:
        child.append(proc)
        for signum in pending:
            proc.send_signal(signum)

    def forward(signum: int, _frame: object) -> None:
        if not child:
            pending.append(signum)
        elif child[0].poll() is None:
            child[0].send_signal(signum)

    if threading.current_thread() is not threading.main_thread():
        yield set_child  # signal handlers can only be set from the main thread
        return
    # a Python-level handler (not SIG_IGN) is reset by exec(), so the agent still gets
    # the default Ctrl-C behaviour or its own
    handlers = {signal.SIGINT: _ignore, **dict.fromkeys(_FORWARDED, forward)}
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        yield set_child
    finally:
        for sig, handler in previous.items():
            # None: the old handler was not set from Python; the default is the best guess
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def _ignore(_signum: int, _frame: object) -> None:
    pass
