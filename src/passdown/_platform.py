"""The one place that knows which operating system passdown runs on.

Every call that differs between Linux, macOS and Windows goes through here; nothing
else in passdown imports `fcntl`, `resource`, `msvcrt` or `pwd`, or calls POSIX-only
`os` functions (`tests/test_platform_seam.py` greps for them). Each function has a
POSIX branch, a Windows branch and a documented fallback. Decisions are taken at call
time (`sys.platform`, `os.name`, `hasattr(os, ...)`), so tests can simulate a platform.
Three parts live beside it and are re-exported here, the one module the rest of
passdown imports: `_platform_os` (which system this is), `_platform_paths` (comparing
workspace paths) and `_platform_launch` (starting a program without cmd.exe). The seam
is the lowest floor of passdown: it imports the standard library and `passdown.errors`
only, so what it needs from passdown's own folders (where a lock file goes) the caller
passes in.

- Private files: POSIX 0700 folders and 0600 files as ever. Windows has no such modes
  (`os.fchmod` only sets the read-only bit, and is missing before 3.13): files under
  the user's profile inherit its ACL, so `set_mode` does nothing there; a folder cannot
  be opened with `os.open`, so its checks use `lstat` and refuse reparse points.
- Atomic replace: `os.replace`; Windows refuses it while another process has the target
  open (sharing violation), so it is retried for a short while.
- Opens: `O_BINARY` (Windows would translate CRLF otherwise), `O_NONBLOCK` (POSIX only:
  Windows has no FIFOs to block on), `O_NOFOLLOW`, `O_DIRECTORY`, `O_CLOEXEC`: 0 where
  missing.
- File locks: `fcntl.flock` (POSIX), `msvcrt.locking` on the first byte (Windows).
- `pread`: `os.pread` (POSIX); elsewhere seek+read under a lock, with the descriptor's
  own offset put back, so positional readers of one descriptor still do not disturb
  each other.
- `peak_rss_kb`: `ru_maxrss` is KB on Linux, bytes on macOS; 0 on Windows.
- Process spawn: an argv list, never a shell. On Windows an npm `.cmd`/`.bat` shim would
  run through cmd.exe, which re-parses its command line (`&`, `|`, `%VAR%`, newlines:
  the "BatBadBut" class), so the shim is resolved to the `node <script>` it wraps, and
  where it cannot be, an argv with anything but plain words is refused. A detached
  process (`spawn_detached`, which outlives its caller) starts in a new session on
  POSIX and as a DETACHED_PROCESS in a new process group on Windows.
- Paths: `path_key`/`relative_inside` compare workspaces as paths, with Windows
  semantics for Windows paths (drive letters, case, `\\` and `/`, UNC, `\\\\?\\`) and
  macOS's `/private/tmp` = `/tmp`, `/private/var` = `/var` and case-insensitive volumes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from passdown._platform_launch import UnsafeLaunch, resolve_npm_shim, spawn_argv, spawn_detached
from passdown._platform_os import is_linux, is_macos, is_windows
from passdown._platform_paths import (
    case_insensitive_fs,
    inside,
    is_windows_path,
    join,
    path_key,
    path_spellings,
    relative_inside,
    same_name,
)

if TYPE_CHECKING:
    import socket


O_BINARY: int = getattr(os, "O_BINARY", 0)
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NOCTTY: int = getattr(os, "O_NOCTTY", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)


# -- private folders and files ------------------------------------------------------------


def open_folder(path: str | os.PathLike[str], *, follow: bool = False) -> int | None:
    """A read-only descriptor of the folder (itself, not through a symlink, unless
    `follow`), or None where folders cannot be opened (Windows: `os.open` on a folder
    fails with EACCES). Raises OSError (ELOOP/ENOTDIR for a link or a non-folder)."""
    if is_windows() or not O_DIRECTORY:
        if (not follow and is_reparse_point(path)) or not os.path.isdir(path):
            raise OSError(errno.ENOTDIR, "not a folder", os.fspath(path))
        return None
    nofollow = 0 if follow else O_NOFOLLOW
    return os.open(path, os.O_RDONLY | O_DIRECTORY | nofollow | O_CLOEXEC)


def is_reparse_point(path: str | os.PathLike[str]) -> bool:
    """A symlink, or on Windows any reparse point (a junction too): never written through."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    attributes = getattr(st, "st_file_attributes", 0)
    return stat.S_ISLNK(st.st_mode) or bool(attributes & 0x400)  # FILE_ATTRIBUTE_REPARSE_POINT


def owned_by_me(st: os.stat_result) -> bool:
    """Whether the file belongs to this user. Windows has no uid: files under the user's
    profile are theirs by its ACL, so the answer there is yes."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def set_mode(fd: int, mode: int) -> None:
    """chmod through the descriptor (POSIX). Windows: no-op, the file inherits its
    folder's ACL (`os.fchmod` there only toggles read-only, and is missing before 3.13)."""
    fchmod = getattr(os, "fchmod", None)
    if fchmod is None or is_windows():
        return
    fchmod(fd, mode)


_SHARING_ERRORS = (5, 32, 33)  # ERROR_ACCESS_DENIED, _SHARING_VIOLATION, _LOCK_VIOLATION
REPLACE_RETRY_S = 1.0


def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """`os.replace`; on Windows retried for up to a second while another process holds
    `dst` open (a reader, an antivirus scan), which POSIX renames never wait for."""
    deadline = time.monotonic() + REPLACE_RETRY_S
    delay = 0.01
    while True:
        try:
            os.replace(src, dst)
            return
        except PermissionError as exc:
            winerror = getattr(exc, "winerror", None)
            if not is_windows() or winerror not in _SHARING_ERRORS:
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def hard_link(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """A hard link to `src` itself, not to what a symlink there points to. Windows'
    `os.link` takes no `follow_symlinks` (NotImplementedError) and links the entry
    itself anyway."""
    if is_windows():
        os.link(src, dst)
    else:
        os.link(src, dst, follow_symlinks=False)


# -- opens and reads ----------------------------------------------------------------------


def open_nonblocking(path: str | os.PathLike[str], flags: int) -> int:
    """os.open with O_NONBLOCK where it exists (a FIFO opens at once instead of waiting
    for a writer) and O_BINARY where that exists; call `set_blocking` after the type check."""
    return os.open(path, flags | O_NONBLOCK | O_BINARY | O_CLOEXEC)


def set_blocking(fd: int) -> None:
    """Clear O_NONBLOCK again (POSIX); Windows files were never non-blocking."""
    if O_NONBLOCK and hasattr(os, "set_blocking") and not is_windows():
        os.set_blocking(fd, True)


_PREAD_LOCK = threading.Lock()


def pread(fd: int, size: int, offset: int) -> bytes:
    """Bytes at `offset` without moving the descriptor's offset (`os.pread`). Fallback
    (Windows): seek+read under one lock, the offset restored afterwards."""
    native = getattr(os, "pread", None)
    if native is not None:
        return cast(bytes, native(fd, size, offset))
    with _PREAD_LOCK:
        before = os.lseek(fd, 0, os.SEEK_CUR)
        try:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)
        finally:
            os.lseek(fd, before, os.SEEK_SET)


@contextlib.contextmanager
def exclusive_lock(fd: int, *, best_effort: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on `fd` (blocking). POSIX: flock(2), released when the
    descriptor is closed. Windows: msvcrt.locking on the first byte, retried until it is
    granted. Where neither exists, or (`best_effort`) the lock fails, nothing is locked:
    the callers' exports may then race, as they document."""
    try:
        unlock = _lock(fd)
    except OSError:
        if not best_effort:
            raise
        unlock = None
    try:
        yield
    finally:
        if unlock is not None:
            with contextlib.suppress(OSError):
                unlock()


def _lock(fd: int) -> Callable[[], None] | None:
    if not is_windows():
        try:
            import fcntl
        except ImportError:
            return None
        posix: Any = fcntl  # typed as absent on Windows
        posix.flock(fd, posix.LOCK_EX)
        return None
    try:
        import msvcrt
    except ImportError:
        return None
    windows = cast(Any, msvcrt)
    while True:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            windows.locking(fd, windows.LK_LOCK, 1)  # itself retries for ~10 s
            break
        except OSError as exc:
            if exc.errno != errno.EDEADLK:
                raise

    def unlock() -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        windows.locking(fd, windows.LK_UNLCK, 1)

    return unlock


def binary_mode(fd: int) -> None:
    """No newline translation on `fd`: Windows' C runtime may hand a descriptor over in
    text mode, which would turn the MCP wire's `\\n` into `\\r\\n` (and drop `^Z`)."""
    if not is_windows():
        return
    try:
        import msvcrt
    except ImportError:
        return
    cast(Any, msvcrt).setmode(fd, O_BINARY or 0x8000)


def listen_exclusively(sock: socket.socket) -> None:
    """Before `bind`: this socket alone may own its port. Windows' SO_REUSEADDR would let a
    second server bind a port in use (and take its connections), so there the option is
    SO_EXCLUSIVEADDRUSE; POSIX's SO_REUSEADDR only allows a port in TIME_WAIT, never two
    listeners, so a restarted server can bind at once."""
    import socket

    if is_windows():
        option = getattr(socket, "SO_EXCLUSIVEADDRUSE", ~socket.SO_REUSEADDR)
        sock.setsockopt(socket.SOL_SOCKET, option, 1)
    else:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)


def lock_file_descriptor(
    path: str | os.PathLike[str], lock_folder: Callable[[], str | os.PathLike[str]]
) -> int:
    """A descriptor to lock for `path`: the folder itself on POSIX (no lock file is
    created, also not in a read-only workspace); on Windows, where folders cannot be
    opened, a lock file named after the path in `lock_folder()` (the caller's private
    folder, asked for only there)."""
    if not is_windows():
        return os.open(path, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    name = hashlib.sha256(path_key(os.fspath(path)).encode()).hexdigest()[:16]
    lock = os.path.join(lock_folder(), f"workspace-{name}.lock")
    return os.open(lock, os.O_RDWR | os.O_CREAT | O_BINARY, 0o600)


def wait_readable(fd: int, timeout: float) -> bool:
    """Whether `fd` has input within `timeout`. POSIX: select(2). Windows: select takes
    only sockets and a pipe cannot be polled without consuming from it, so the answer is
    yes and the read that follows blocks until the client writes (no timeout there)."""
    if is_windows():
        return True
    import select

    return bool(select.select([fd], [], [], timeout)[0])


# -- processes ------------------------------------------------------------------------------


def arg_max() -> int | None:
    """The bytes an argv plus environment may take: sysconf(SC_ARG_MAX) on POSIX;
    Windows' CreateProcess takes a command line of 32767 characters; None: unknown."""
    if is_windows():
        return 32767
    sysconf = getattr(os, "sysconf", None)
    if sysconf is None:
        return None
    try:
        return int(sysconf("SC_ARG_MAX"))
    except (ValueError, OSError):
        return None


def kill_hard(pid: int) -> None:
    """SIGKILL a process, at once (the crash-safety tests' power cut)."""
    import signal

    os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


def process_start(pid: int) -> str | None:
    """A process's start time where the system tells it (Linux: clock ticks since boot,
    /proc/PID/stat), so a reused pid is told apart; None when it does not exist, is a
    zombie (killed, not reaped: gone for our purpose), or the system has no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def has_process_table() -> bool:
    """Whether `process_start` can answer (Linux's /proc)."""
    return os.path.isdir("/proc/self")


def process_exists(pid: int) -> bool:
    """Whether a process with this pid exists, where that can be asked without harm:
    POSIX `kill(pid, 0)`; on Windows `os.kill` would end it, so it is taken as alive."""
    if is_windows():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: it exists
    return True


def peak_rss_kb() -> int:
    """This process's peak resident memory in KB: ru_maxrss is KB on Linux and bytes on
    macOS; 0 where `resource` is missing (Windows)."""
    try:
        import resource
    except ImportError:
        return 0
    posix: Any = resource  # typed as absent on Windows
    value = int(posix.getrusage(posix.RUSAGE_SELF).ru_maxrss)
    return value // 1024 if is_macos() else value


__all__ = [
    "O_BINARY",
    "O_CLOEXEC",
    "O_DIRECTORY",
    "O_NOCTTY",
    "O_NOFOLLOW",
    "O_NONBLOCK",
    "UnsafeLaunch",
    "arg_max",
    "case_insensitive_fs",
    "exclusive_lock",
    "hard_link",
    "inside",
    "is_linux",
    "is_macos",
    "is_windows",
    "is_windows_path",
    "join",
    "kill_hard",
    "lock_file_descriptor",
    "open_folder",
    "open_nonblocking",
    "owned_by_me",
    "path_key",
    "path_spellings",
    "peak_rss_kb",
    "pread",
    "relative_inside",
    "replace",
    "resolve_npm_shim",
    "same_name",
    "set_blocking",
    "set_mode",
    "spawn_argv",
    "spawn_detached",
    "wait_readable",
]
