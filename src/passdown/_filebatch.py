"""Several files made visible together: an export's HANDOFF.md, handoff.json, their
history copies and the git exclude line appear only once the handoff is stored, and a
failure (or a killed process) before that leaves the disk as it was. A process killed
during the commit itself is put back from the commit's `plan` (`passdown._wal`)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from passdown import _fsio as fsio
from passdown import _platform
from passdown._wal import crash_point
from passdown.errors import OutputError


class FileBatch:
    """Files made visible together, after everything that can fail has happened.

    `stage` writes each file where nobody sees it: an anonymous file (O_TMPFILE) in the
    nearest folder on its way that exists, fsynced; a process killed meanwhile leaves
    nothing behind. Where the file system has no anonymous files, a hidden temp name is
    used (`sweep_stale_temp` removes it after a kill). A missing destination folder is
    created only by `commit`, which links each staged file in and renames it over its
    destination (no space is needed any more: the data is on disk), then removes the
    files `remove` named; a commit that fails half-way puts back what it replaced (and
    removes the folders it created). `place_last` names the file renamed last, whose
    presence proves the commit complete; `plan` says what the commit will do, for a
    journal that puts the files back after a kill.
    `discard` (or an exception before `commit`) leaves the disk as it was. Raises
    `OutputError`.
    """

    def __init__(self) -> None:
        self._staged: list[_Staged] = []
        self._removals: list[Path] = []

    def stage(
        self,
        path: Path,
        data: bytes | str,
        mode: int = fsio.FILE_MODE,
        *,
        private: bool = True,
        tighten: bool = True,
    ) -> None:
        """`private`: the folder is passdown's (0700, ours, no symlink); False for a
        folder of another program (`.git/info`), which is left as it is. `tighten=False`:
        a private folder that exists already keeps its mode (the user's `--out` folder);
        it is checked all the same, and made 0700 only when the commit creates it."""
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        path = Path(path)
        anchor = existing_folder(path.parent, tighten=tighten) if private else _nearest(path.parent)
        try:
            staged = _Staged.anonymous(path, anchor, mode) or _Staged.named(path, anchor, mode)
        except OSError as exc:
            action = "write" if anchor == path.parent else "create folder"
            raise fsio._error(action, path if anchor == path.parent else path.parent, exc) from exc
        staged.private, staged.tighten = private, tighten
        self._staged.append(staged)
        try:
            fsio._write_all(staged.fd, data)
            os.fsync(staged.fd)
        except OSError as exc:
            raise fsio._error("write", path, exc) from exc

    def remove(self, path: Path) -> None:
        """Delete `path` at commit (a history copy pruned away)."""
        self._removals.append(Path(path))

    def place_last(self, path: Path) -> None:
        """Rename `path` into place after every other staged file: once it holds its
        staged file, all of them do (the proof of a finished commit `plan` describes)."""
        path = Path(path)
        self._staged.sort(key=lambda staged: staged.path == path)  # stable: the rest keep order

    def plan(self) -> dict[str, list[Any]]:
        """What `commit` will do, for a write-ahead journal (`passdown._wal`) to undo it
        after a crash: `place`, in commit order, each destination with the hidden name
        its previous file will be kept under and the identity (device, inode, size,
        mtime) of the staged file that replaces it; the `folders` it will create,
        outermost first; the files it will `remove` once all are in place."""
        place: list[dict[str, Any]] = []
        folders: list[str] = []
        for staged in self._staged:
            st = os.fstat(staged.fd)
            place.append(
                {
                    "path": str(staged.path),
                    "aside": str(staged.aside),
                    "staged": [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns],
                }
            )
            folders.extend(str(f) for f in _missing(staged.path.parent) if str(f) not in folders)
        return {"place": place, "folders": folders, "remove": [str(p) for p in self._removals]}

    def commit(self) -> None:
        """Every staged file in place, or (when one cannot be placed) the ones placed
        before it put back as they were: each file it replaces is kept under a hidden
        name (a hard link, no copy) until all are in."""
        placed: list[tuple[Path, Path | None]] = []  # (destination, its previous file)
        created: list[Path] = []  # folders this commit made, outermost first
        try:
            for n, staged in enumerate(self._staged):
                if n and n == len(self._staged) - 1:
                    crash_point("between-renames")  # test hook: inert unless asked for
                created.extend(_missing(staged.path.parent))
                _make_folder(staged.path.parent, private=staged.private, tighten=staged.tighten)
                previous = _keep_aside(staged.path, staged.aside)
                try:
                    staged.place()
                except BaseException:
                    if previous is not None:  # not replaced: only the link goes
                        fsio._unlink_quietly(previous)
                    raise
                placed.append((staged.path, previous))
            crash_point("after-last-rename")  # test hook: inert unless asked for
        except BaseException:
            for path, previous in reversed(placed):
                if previous is None:
                    fsio._unlink_quietly(path)
                else:
                    with contextlib.suppress(OSError):
                        _platform.replace(previous, path)
            for folder in reversed(created):
                with contextlib.suppress(OSError):
                    os.rmdir(folder)  # only when empty: nothing else was put there meanwhile
            raise
        self._staged.clear()
        for _, previous in placed:
            if previous is not None:
                fsio._unlink_quietly(previous)
        for path in self._removals:
            fsio._unlink_quietly(path)
        self._removals.clear()

    def discard(self) -> None:
        for staged in self._staged:
            staged.drop()
        self._staged.clear()
        self._removals.clear()

    def __enter__(self) -> FileBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def _missing(folder: Path) -> list[Path]:
    """The folders on the way to `folder` (itself included) that do not exist yet,
    outermost first."""
    missing: list[Path] = []
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def _make_folder(folder: Path, *, private: bool, tighten: bool = True) -> None:
    if private:
        fsio.ensure_private_dir(folder, tighten=tighten)
        return
    try:  # another program's folder (`.git/info`): created as it would create it
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
    except OSError as exc:
        raise fsio._error("create folder", folder, exc) from exc


def _keep_aside(path: Path, aside: Path) -> Path | None:
    """A hidden hard link `aside` to the regular file at `path` (None: nothing there to
    keep), named as a temp file, so that a killed commit's link is swept like one."""
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    try:
        _platform.hard_link(path, aside)
    except OSError as exc:
        raise fsio._error("write", path, exc) from exc
    return aside


def existing_folder(folder: Path, *, tighten: bool = True) -> Path:
    """`folder`, checked as `ensure_private_dir` checks it (and, with `tighten`, made
    0700), or its nearest ancestor that exists when it does not (the folder itself is
    then created at commit)."""
    if fsio.REDACTION_MARK in str(folder) and not os.path.lexists(folder):
        fsio.ensure_private_dir(folder)  # raises: a redacted path is never a destination
    if os.path.lexists(folder):
        return fsio.ensure_private_dir(folder, tighten=tighten)
    nearest = _nearest(folder)
    if not os.path.isdir(nearest):  # `--out notes.txt/sub`: no folder can be made there
        raise OutputError(
            f"cannot create folder {folder}: {nearest} is a file, not a folder",
            hint="choose another folder with --out",
        )
    return nearest


def _nearest(folder: Path) -> Path:
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    return folder


_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_PROC_FDS = "/proc/self/fd"


class _Staged:
    """One staged file: an open anonymous file, or a hidden temp name."""

    def __init__(self, path: Path, fd: int, tmp: Path | None, mode: int) -> None:
        self.path, self.fd, self.tmp, self.mode = path, fd, tmp, mode
        self.private = True
        self.tighten = True
        # where the file it replaces is kept until the whole batch is in (named now, so
        # that a journal can name it before the commit starts)
        self.aside = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")

    @classmethod
    def anonymous(cls, path: Path, anchor: Path, mode: int) -> _Staged | None:
        if not _O_TMPFILE or not os.path.isdir(_PROC_FDS):
            return None
        try:
            fd = os.open(anchor, _O_TMPFILE | os.O_WRONLY | fsio._CLOEXEC, mode)
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                return None  # no anonymous files here: a named temp file says why, if need be
            raise
        return cls(path, fd, None, mode)

    @classmethod
    def named(cls, path: Path, anchor: Path, mode: int) -> _Staged:
        tmp = anchor / f".{path.name}.{os.urandom(6).hex()}.tmp"
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | fsio._NOFOLLOW | fsio._CLOEXEC | fsio._BINARY,
            mode,
        )
        return cls(path, fd, tmp, mode)

    def place(self) -> None:
        """Link the file in under a temp name and rename it over the destination (a
        named temp file is renamed straight over it)."""
        tmp = self.tmp or self.path.with_name(f".{self.path.name}.{os.urandom(6).hex()}.tmp")
        try:
            _platform.set_mode(self.fd, self.mode)  # the umask may have taken bits away
            if self.tmp is None:
                procfd = os.open(_PROC_FDS, os.O_RDONLY | fsio._CLOEXEC)
                try:  # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N: the anonymous file
                    os.link(str(self.fd), tmp, src_dir_fd=procfd, follow_symlinks=True)
                finally:
                    os.close(procfd)
            _platform.replace(tmp, self.path)
            self.tmp = None
        except OSError as exc:
            fsio._unlink_quietly(tmp)
            self.tmp = None
            raise fsio._error("write", self.path, exc) from exc
        finally:
            self.drop()
        fsio._fsync_dir(self.path.parent)

    def drop(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        if self.tmp is not None:
            fsio._unlink_quietly(self.tmp)
            self.tmp = None
