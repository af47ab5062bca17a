"""What an export stages beside its handoff files, in the same `FileBatch`: a copy of the
previous version in `history/`, and the line that keeps `.agent-handoff/` out of git's
commits. Each has a `stage_*` form (part of the caller's batch, which makes it visible
with the handoff) and a form that commits on its own."""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from pathlib import Path

from passdown import _fsio as fsio
from passdown._filebatch import FileBatch

HISTORY_DIR = "history"
HISTORY_KEEP = 10  # previous versions kept per handoff file


def backup_existing(path: Path, *, keep: int = HISTORY_KEEP) -> Path | None:
    """Copy an existing handoff file to `history/<UTC time>-<name>` beside it.

    The time is the old file's modification time (when that handoff was written). Only
    the newest `keep` copies of this file name are kept. Returns the copy, or None when
    there was nothing to keep (no file, a symlink, which is never followed, or the same
    content as the newest copy). Raises `OutputError`.
    """
    with FileBatch() as batch:
        dest = stage_backup(batch, path, keep=keep)
        batch.commit()
    return dest


def stage_backup(batch: FileBatch, path: Path, *, keep: int = HISTORY_KEEP) -> Path | None:
    """`backup_existing` as part of `batch`: the copy, the pruning of older copies and
    the sweep of a killed writer's temp files all happen at its commit."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise fsio._error("read", path, exc) from exc
    if not stat.S_ISREG(st.st_mode):
        return None
    history = path.parent / HISTORY_DIR
    if os.path.lexists(history):
        fsio.ensure_private_dir(history)  # refuses a symlink before anything is read through it
    try:
        data = fsio.read_nofollow(path)
    except OSError as exc:
        raise fsio._error("read", path, exc) from exc
    previous = _history(history, path.name)
    if previous and _same_content(previous[-1], data):
        return None
    dest = _free_name(history, _stamp(st.st_mtime_ns), path.name)
    batch.stage(dest, data)
    for old in previous[: max(0, len(previous) + 1 - keep)]:
        batch.remove(old)
    for folder in (path.parent, history):
        for stale in fsio.stale_temp(folder):
            batch.remove(stale)
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
        return fsio.read_nofollow(path) == data
    except OSError:
        return False


# -- keeping handoff files out of commits -------------------------------------------------


def add_git_exclude(repo_root: Path, pattern: str) -> bool:
    """Add `pattern` to the repo's `info/exclude` once; True when the file changed.

    The real path comes from `git rev-parse --git-path info/exclude`, so linked worktrees
    and submodules (whose `.git` is a file) work. Outside git, or without git, it does
    nothing and returns False. Raises `OutputError` when the file cannot be written.
    """
    with FileBatch() as batch:
        changed = stage_git_exclude(batch, repo_root, pattern)
        batch.commit()
    return changed


def stage_git_exclude(batch: FileBatch, repo_root: Path, pattern: str) -> bool:
    """`add_git_exclude` as part of `batch` (the file changes at its commit)."""
    if not pattern.strip() or "\n" in pattern or "\r" in pattern:
        raise ValueError(f"not a single gitignore pattern: {pattern!r}")
    exclude = _exclude_path(Path(repo_root))
    if exclude is None or os.path.islink(exclude) or os.path.islink(exclude.parent):
        # a repository can plant either link: following it would write outside the repo
        return False
    try:
        current = fsio.read_nofollow(exclude).decode("utf-8", "replace")
    except FileNotFoundError:
        current = ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False  # became a symlink since the check
        raise fsio._error("read", exclude, exc) from exc
    if pattern.strip() in (line.strip() for line in current.splitlines()):
        return False
    prefix = "" if not current or current.endswith("\n") else "\n"
    batch.stage(exclude, f"{current}{prefix}{pattern}\n", private=False)
    return True


def _exclude_path(repo_root: Path) -> Path | None:
    # imported here: the git helpers live with the snapshot code, which needs pydantic
    from passdown._workspace import EXCLUDE_FILE, run_git

    result = run_git(repo_root, *EXCLUDE_FILE)
    text = result.out.decode("utf-8", "replace").strip()
    if not result.ok or not text:
        return None
    # relative to `-C repo_root` unless absolute; not resolved, so that a symlink at
    # info/ or info/exclude stays visible to the caller (who refuses it)
    return Path(os.path.normpath(repo_root / text))
