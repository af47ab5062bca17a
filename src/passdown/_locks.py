"""The two locks exports take, over one helper: both hold `_platform.exclusive_lock` on a
descriptor for the time of a `with` block and close it after (which also releases it)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from passdown import _platform


@contextlib.contextmanager
def _holding(open_fd: Callable[[], int], *, best_effort: bool) -> Iterator[None]:
    try:
        fd = open_fd()
    except OSError:
        if not best_effort:
            raise
        yield  # nothing to lock: the callers say what may then race
        return
    try:
        with _platform.exclusive_lock(fd, best_effort=best_effort):
            yield
    finally:
        os.close(fd)


def publish_lock(workspace: Path) -> contextlib.AbstractContextManager[None]:
    """One publish-and-rename of a workspace's handoff at a time. Best effort: a
    workspace that cannot be locked (read-only, a file system without locks) is
    exported unserialised rather than not at all."""
    return _holding(
        lambda: _platform.lock_file_descriptor(workspace, _private_lock_folder), best_effort=True
    )


def _private_lock_folder() -> Path:
    """Where lock files go where a folder cannot itself be locked: passdown's data folder."""
    from passdown._fsio import ensure_private_dir
    from passdown._paths import data_dir

    return ensure_private_dir(data_dir() / "locks")


def hook_export_lock(workspace: Path) -> contextlib.AbstractContextManager[None]:
    """One hook export per workspace at a time, so a later hook sees the earlier one's
    handoff: a private lock file in passdown's data folder, held until the block ends
    (or the hook process dies). Not best effort: a hook that cannot lock says so."""

    def open_lock_file() -> int:
        folder = _private_lock_folder()
        name = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
        flags = os.O_RDWR | os.O_CREAT | _platform.O_NOFOLLOW | _platform.O_BINARY
        return os.open(folder / f"export-{name}.lock", flags, 0o600)

    return _holding(open_lock_file, best_effort=False)
