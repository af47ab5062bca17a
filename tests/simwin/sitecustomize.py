"""Simulated native Windows for one Python process (tests/test_platform_windows_sim.py).

Loaded as `sitecustomize` (its folder first on PYTHONPATH): the POSIX-only modules
(`fcntl`, `resource`, `pwd`, `termios`, `grp`) cannot be imported, the POSIX-only `os`
functions and flags are deleted, and `sys.platform` reads "win32". `os.name` stays
"posix": with "nt", pathlib would make WindowsPath objects that this Linux kernel cannot
open, so what it decides at call time would no longer be passdown's but the simulation's.
The stdlib and third-party modules that read the platform while they load are loaded
first, as on Linux: their Windows branches call the Windows API (subprocess and shutil
must still start this machine's git). What is simulated is passdown's own code.
`PASSDOWN_SIMULATE_READY_FILE`: the file the process writes `time.perf_counter()` to
when the simulation is in place (a benchmark takes that start-up off its timings).
"""

from __future__ import annotations

import importlib.abc
import os
import sys

BLOCKED = {"fcntl", "resource", "pwd", "grp", "termios", "msvcrt", "_winapi"}
POSIX_ONLY_OS = (
    "fchmod",
    "pread",
    "pwrite",
    "fork",
    "forkpty",
    "getuid",
    "geteuid",
    "getgid",
    "setsid",
    "killpg",
    "sched_getaffinity",
    "sysconf",
    "O_NONBLOCK",
    "O_DIRECTORY",
    "O_NOFOLLOW",
    "O_NOCTTY",
    "O_CLOEXEC",
    "O_TMPFILE",
)


if os.environ.get("PASSDOWN_SIMULATE_NO_CTYPES") == "1":  # a Python built without it
    BLOCKED |= {"ctypes", "_ctypes"}


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (simulated Windows)", name=name)
        return None


if os.environ.get("PASSDOWN_SIMULATE_WINDOWS") == "1":
    # loaded before the platform changes: they choose their implementation at import
    import asyncio  # noqa: F401
    import shutil
    import subprocess  # noqa: F401
    import sysconfig
    import tempfile
    import zoneinfo  # noqa: F401

    import click  # noqa: F401
    import mcp.client  # noqa: F401  (reads signal.SIGBREAK, which only Windows has)
    import platformdirs  # noqa: F401  (its Windows branch asks the Windows API)

    sysconfig.get_config_vars()  # cached: read from this Linux build's data module

    for name in BLOCKED:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, _Blocker())
    for name in POSIX_ONLY_OS:
        if hasattr(os, name):
            delattr(os, name)
    _which = shutil.which

    def _posix_which(*args: object, **kwargs: object) -> str | None:
        # Windows' `which` wants a PATHEXT suffix (git.EXE); this machine's programs have
        # none, so they are looked up as here first, then as Windows does (`codex.cmd`)
        platform, sys.platform = sys.platform, "linux"
        try:
            found = _which(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            sys.platform = platform
        return found or _which(*args, **kwargs)  # type: ignore[arg-type]

    shutil.which = _posix_which  # type: ignore[assignment]
    # rmtree's descriptor-based walk (chosen at import) opens with os.O_NONBLOCK, gone
    # now; Windows has no such walk either: the path-based one, as there
    shutil._use_fd_functions = False  # type: ignore[attr-defined]
    # TemporaryFile (chosen at import) opens with os.O_TMPFILE, gone now: mkstemp, unlinked
    tempfile._O_TMPFILE_WORKS = False  # type: ignore[attr-defined]
    if getattr(shutil, "_winapi", False) is None:  # 3.12+: Windows' which asks the API
        import types

        shutil._winapi = types.SimpleNamespace(  # type: ignore[attr-defined]
            NeedCurrentDirectoryForExePath=lambda name: False
        )
    sys.platform = "win32"
    ready_file = os.environ.get("PASSDOWN_SIMULATE_READY_FILE")
    if ready_file:  # a benchmark takes the simulation's own start-up off each run it times
        import time

        with open(ready_file, "w") as ready:
            ready.write(repr(time.perf_counter()))
