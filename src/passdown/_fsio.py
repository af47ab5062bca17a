"""Private, atomic output for handoff files.

Handoff files hold a transcript of someone's work, so they are 0600 in a 0700 folder.
A write goes to a temp file in the same folder, is fsynced and renamed over the
destination: a reader sees the old file or the new one, never half of one, and a
symlink planted at the destination is replaced, never followed. Failures become
`OutputError` with the reason (disk full, read-only, permission denied).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from pathlib import Path

from passdown import _platform
from passdown.errors import OutputError

DIR_MODE = 0o700
FILE_MODE = 0o600
# A temp file this old belongs to a writer that was killed (a live write takes
# milliseconds); younger ones may be a concurrent export's, about to be renamed.
STALE_TEMP_S = 600
_TEMP_NAME = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")

REDACTION_MARK = "[REDACTED:"  # redact.MARKER_PREFIX, without importing the redactor
_NOFOLLOW = _platform.O_NOFOLLOW
_CLOEXEC = _platform.O_CLOEXEC
_BINARY = _platform.O_BINARY

_HINTS = {
    errno.ENOSPC: "the disk is full; free some space and run again",
    errno.EDQUOT: "the disk quota is exceeded; free some space and run again",
    errno.EROFS: "the file system is read-only; choose another folder with --out",
    errno.EACCES: "check the folder's owner and permissions, or choose another with --out",
    errno.EPERM: "check the folder's owner and permissions, or choose another with --out",
}


def _error(action: str, path: Path, exc: OSError) -> OutputError:
    reason = exc.strerror or str(exc)
    return OutputError(f"cannot {action} {path}: {reason}", hint=_HINTS.get(exc.errno or 0))


# -- folders ------------------------------------------------------------------------------


def ensure_private_dir(path: Path, *, tighten: bool = True) -> Path:
    """Create `path` (and its parents) with mode 0700, or tighten an existing folder we
    own (`tighten=False`: an existing folder keeps its mode; it is not passdown's).

    Refuses a symlink in place of the folder, a non-folder, and a folder owned by
    another user (its owner could read everything written into it).
    """
    path = Path(path)
    if REDACTION_MARK in str(path) and not os.path.lexists(path):
        # a redacted path is for showing, never a destination: writing there would
        # create a sibling folder named after the marker instead of the real one
        raise OutputError(
            f"refusing to create {path}: the path was redacted, it is not the real folder",
            hint="this is a bug in passdown; pass --out with the real folder meanwhile",
        )
    try:
        make_private_dirs(path.parent)
        try:
            os.mkdir(path, DIR_MODE)
            tighten = True  # created here: passdown's, 0700 whatever the umask took
        except FileExistsError:
            pass
        fd = _platform.open_folder(path)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _not_a_private_dir(path) from exc
        raise _error("create folder", path, exc) from exc
    if fd is None:  # Windows: the folder inherits the profile's ACL; no mode to tighten
        return path
    try:
        _tighten(fd, path, chmod=tighten)  # through the fd: the folder checked is the one changed
    finally:
        os.close(fd)
    return path


def make_private_dirs(path: Path) -> None:
    """Create `path` and its missing parents as 0700 folders, whatever the umask.

    Folders that already exist are left as they are: they are not passdown's to change
    (`/tmp`, a shared team folder). Raises OSError.
    """
    missing: list[Path] = []
    folder = Path(path)
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        try:
            os.mkdir(new, DIR_MODE)
        except FileExistsError:
            continue  # created meanwhile by someone else: theirs
        os.chmod(new, DIR_MODE)  # a umask such as 0o277 takes bits from mkdir's mode


def open_folder_warnings(folder: Path) -> list[str]:
    """One warning when others may read `folder`, an existing folder that is not
    passdown's (its mode is left as it is; the files in it are 0600). None on Windows,
    where an ACL, not a mode, says who may."""
    if _platform.is_windows():
        return []
    try:
        mode = stat.S_IMODE(os.stat(folder).st_mode)
    except OSError:
        return []  # not there yet: created 0700
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return []
    return [
        f"{folder} is readable by others (mode {mode:04o}): the handoff files in it are "
        "0600, the folder is left as it is"
    ]


def _not_a_private_dir(path: Path) -> OutputError:
    what = "a symlink" if path.is_symlink() else "not a folder"
    return OutputError(
        f"refusing to write handoff files into {path}: it is {what}",
        hint="remove it or choose another folder with --out",
    )


def _tighten(fd: int, path: Path, *, chmod: bool = True) -> None:
    st = os.fstat(fd)
    if not _platform.owned_by_me(st):
        raise OutputError(
            f"refusing to write handoff files into {path}: it belongs to another user",
            hint="remove it or choose another folder with --out",
        )
    if chmod and st.st_mode & 0o777 != DIR_MODE:
        try:
            _platform.set_mode(fd, DIR_MODE)
        except OSError as exc:
            raise _error("set permissions on", path, exc) from exc


# -- files --------------------------------------------------------------------------------


def write_private(path: Path, data: bytes | str) -> None:
    """Atomically replace `path` with `data`, as a 0600 file; raises `OutputError`."""
    if isinstance(data, str):
        # a lone surrogate from a damaged session must not cost the whole handoff
        data = data.encode("utf-8", "replace")
    write_atomic(path, data, FILE_MODE)


def ensure_private_file(path: Path, *, create: bool = True) -> None:
    """Make `path` a 0600 regular file: create it empty if missing (unless `create` is
    false), or tighten it if it is ours. For files another library writes in place (a
    SQLite database and its -wal/-shm). Refuses a symlink; raises `OutputError`."""
    if _platform.is_windows() and _platform.is_reparse_point(path):  # no O_NOFOLLOW there
        raise OutputError(f"refusing to use {path}: it is a symlink")
    flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _platform.O_NONBLOCK | _BINARY
    try:
        fd = os.open(path, flags | (os.O_CREAT if create else 0), FILE_MODE)
    except FileNotFoundError:
        if create:
            raise
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"refusing to use {path}: it is a symlink") from exc
        raise _error("create", path, exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"refusing to use {path}: it is not a regular file")
        if _platform.owned_by_me(st) and stat.S_IMODE(st.st_mode) != FILE_MODE:
            _platform.set_mode(fd, FILE_MODE)
    except OSError as exc:
        raise _error("set permissions on", path, exc) from exc
    finally:
        os.close(fd)


def append_private(path: Path, text: str) -> None:
    """Append `text` to a log file, created 0600 (folder 0700); never through a symlink.

    Appending (not the atomic writer) on purpose: a log line is one `write(2)` with
    O_APPEND, so concurrent hooks interleave whole lines and nothing earlier is rewritten.
    """
    path = Path(path)
    ensure_private_dir(path.parent)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _BINARY
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as exc:
        raise _error("write", path, exc) from exc
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
            _platform.set_mode(fd, FILE_MODE)
        _write_all(fd, text.encode("utf-8", "replace"))
    except OSError as exc:
        raise _error("write", path, exc) from exc
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable; some file systems cannot fsync a folder."""
    try:
        fd = _platform.open_folder(folder, follow=True)
    except OSError:
        return
    if fd is None:  # Windows: a folder cannot be opened, nor fsynced
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # the data is written and renamed; only durability across a crash is weaker
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def read_nofollow(path: Path) -> bytes:
    """A file's bytes, refusing to follow a symlink at `path`."""
    if _platform.is_windows() and _platform.is_reparse_point(path):  # no O_NOFOLLOW there
        raise OSError(errno.ELOOP, "a symlink", str(path))
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _BINARY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


# -- temp files a killed writer left ------------------------------------------------------


def sweep_stale_temp(folder: Path, *, older_than: float = STALE_TEMP_S) -> list[Path]:
    """Remove temp files `write_private` left behind when its process was killed
    (SIGKILL runs no cleanup). Only names `write_private` makes, only regular files,
    only older than `older_than` seconds. Returns what was removed."""
    removed = stale_temp(folder, older_than=older_than)
    for path in removed:
        _unlink_quietly(path)
    return removed


def stale_temp(folder: Path, *, older_than: float = STALE_TEMP_S) -> list[Path]:
    """The temp files `sweep_stale_temp` would remove."""
    found: list[Path] = []
    cutoff = time.time() - older_than
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if not _TEMP_NAME.fullmatch(entry.name):
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    found.append(Path(entry.path))
    except OSError:
        pass  # sweeping is housekeeping: it never fails an export
    return found


# -- config files of other programs (`passdown install`) ----------------------------------


def write_atomic(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """The one writer of every file passdown writes: an unpredictable temp name in the
    target folder created with O_EXCL|O_NOFOLLOW, exactly `mode` (0600 for passdown's
    own files; an agent's config keeps the mode it had), fsync, rename, fsync of the
    folder. Raises `OutputError`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY, mode
        )
    except OSError as exc:
        raise _error("write", path, exc) from exc
    try:
        try:
            _platform.set_mode(fd, mode)  # the umask may have taken bits away: set exactly `mode`
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _platform.replace(tmp, path)  # rename(2) replaces a symlink at `path`, never follows it
    except OSError as exc:
        _unlink_quietly(tmp)
        raise _error("write", path, exc) from exc
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(path.parent)


def confined_target(path: Path, roots: list[Path] | None) -> Path:
    """Where a write to `path` really lands: symlinks (of the file and of its folders)
    resolved, so a linked config file is written through and the link kept. With
    `roots` (a repository, ...), a target outside all of them is refused: a hostile
    repository could otherwise commit a link that makes passdown overwrite any file the
    user can write."""
    real = Path(os.path.realpath(path))
    if roots is not None and not any(real.is_relative_to(Path(os.path.realpath(r))) for r in roots):
        raise OutputError(
            f"refusing to write {path}: it is a symlink (or inside one) that leads out of "
            f"{roots[0]}, to {real}",
            hint="remove the link from the repository, or install with --scope user",
        )
    return real
