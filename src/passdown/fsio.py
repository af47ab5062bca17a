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

from passdown.errors import OutputError

DIR_MODE = 0o700
FILE_MODE = 0o600
HISTORY_DIR = "history"
HISTORY_KEEP = 10  # previous versions kept per handoff file

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

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


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and its parents) with mode 0700, or tighten an existing folder we own.

    Refuses a symlink in place of the folder, a non-folder, and a folder owned by
    another user (its owner could read everything written into it).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, DIR_MODE)
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _not_a_private_dir(path) from exc
        raise _error("create folder", path, exc) from exc
    try:
        _tighten(fd, path)  # through the fd, so the folder checked is the folder changed
    finally:
        os.close(fd)
    return path


def _not_a_private_dir(path: Path) -> OutputError:
    what = "a symlink" if path.is_symlink() else "not a folder"
    return OutputError(
        f"refusing to write handoff files into {path}: it is {what}",
        hint="remove it or choose another folder with --out",
    )


def _tighten(fd: int, path: Path) -> None:
    st = os.fstat(fd)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise OutputError(
            f"refusing to write handoff files into {path}: it belongs to another user",
            hint="remove it or choose another folder with --out",
        )
    if st.st_mode & 0o777 != DIR_MODE:
        try:
            os.fchmod(fd, DIR_MODE)
        except OSError as exc:
            raise _error("set permissions on", path, exc) from exc


# -- files --------------------------------------------------------------------------------


def write_private(path: Path, data: bytes | str) -> None:
    """Atomically replace `path` with `data`, as a 0600 file; raises `OutputError`."""
    path = Path(path)
    if isinstance(data, str):
        # a lone surrogate from a damaged session must not cost the whole handoff
        data = data.encode("utf-8", "replace")
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise _error("write", path, exc) from exc
    try:
        try:
            os.fchmod(fd, FILE_MODE)  # the umask may have taken bits away; set exactly 0600
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)  # rename(2) replaces a symlink at `path`, never follows it
    except OSError as exc:
        _unlink_quietly(tmp)
        raise _error("write", path, exc) from exc
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable; some file systems cannot fsync a folder."""
    try:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError:
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
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return f.read()


# -- keeping the previous handoff ----------------------------------------------------------


def backup_existing(path: Path, *, keep: int = HISTORY_KEEP) -> Path | None:
    """Copy an existing handoff file to `history/<UTC time>-<name>` beside it.

    The time is the old file's modification time (when that handoff was written). Only
    the newest `keep` copies of this file name are kept. Returns the copy, or None when
    there was nothing to keep (no file, a symlink, which is never followed, or the same
    content as the newest copy). Raises `OutputError`.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _error("read", path, exc) from exc
    if not stat.S_ISREG(st.st_mode):
        return None
    history = ensure_private_dir(path.parent / HISTORY_DIR)
    try:
        data = read_nofollow(path)
    except OSError as exc:
        raise _error("read", path, exc) from exc
    previous = _history(history, path.name)
    if previous and _same_content(previous[-1], data):
        return None
    dest = _free_name(history, _stamp(st.st_mtime_ns), path.name)
    write_private(dest, data)
    _prune(history, path.name, keep)
    return dest


def _stamp(mtime_ns: int) -> str:
    seconds, ns = divmod(mtime_ns, 1_000_000_000)
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{ns // 1000:06d}Z"


def _free_name(history: Path, stamp: str, name: str) -> Path:
    dest = history / f"{stamp}-{name}"
    n = 1
    while os.path.lexists(dest):
        n += 1
        dest = history / f"{stamp}-{n}-{name}"
    return dest


def _history(history: Path, name: str) -> list[Path]:
    """This file's copies, oldest first."""
    pattern = re.compile(r"(\d{8}T\d{6}\.\d{6}Z)(?:-(\d+))?-" + re.escape(name))
    found: list[tuple[str, int, str]] = []
    try:
        with os.scandir(history) as it:
            for entry in it:
                match = pattern.fullmatch(entry.name)
                if match and entry.is_file(follow_symlinks=False):
                    found.append((match[1], int(match[2] or 1), entry.name))
    except OSError:
        return []
    return [history / n for *_, n in sorted(found)]


def _same_content(path: Path, data: bytes) -> bool:
    try:
        return read_nofollow(path) == data
    except OSError:
        return False


def _prune(history: Path, name: str, keep: int) -> None:
    copies = _history(history, name)
    for old in copies[: max(0, len(copies) - keep)]:
        _unlink_quietly(old)


# -- keeping handoff files out of commits -------------------------------------------------


def add_git_exclude(repo_root: Path, pattern: str) -> bool:
    """Add `pattern` to the repo's `info/exclude` once; True when the file changed.

    The real path comes from `git rev-parse --git-path info/exclude`, so linked worktrees
    and submodules (whose `.git` is a file) work. Outside git, or without git, it does
    nothing and returns False. Raises `OutputError` when the file cannot be written.
    """
    if not pattern.strip() or "\n" in pattern or "\r" in pattern:
        raise ValueError(f"not a single gitignore pattern: {pattern!r}")
    exclude = _exclude_path(Path(repo_root))
    if exclude is None:
        return False
    try:
        current = read_nofollow(exclude).decode("utf-8", "replace")
    except FileNotFoundError:
        current = ""
    except OSError as exc:
        raise _error("read", exclude, exc) from exc
    if pattern.strip() in (line.strip() for line in current.splitlines()):
        return False
    prefix = "" if not current or current.endswith("\n") else "\n"
    try:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as f:
            f.write(f"{prefix}{pattern}\n")
    except OSError as exc:
        raise _error("update", exclude, exc) from exc
    return True


def _exclude_path(repo_root: Path) -> Path | None:
    # imported here: the git helpers live with the snapshot code, which needs pydantic
    from passdown.workspace import run_git

    result = run_git(repo_root, "rev-parse", "--git-path", "info/exclude")
    text = result.out.decode("utf-8", "replace").strip()
    if not result.ok or not text:
        return None
    return (repo_root / text).resolve()  # relative to `-C repo_root` unless absolute


# -- config files of other programs (`passdown install`) ----------------------------------


def write_atomic(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """`write_private` with a chosen mode: for files that are not passdown's own (an
    agent's config keeps the mode it had). The same unpredictable temp name created with
    O_EXCL|O_NOFOLLOW in the target folder, fsync and rename; raises `OutputError`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        raise _error("write", path, exc) from exc
    try:
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
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
