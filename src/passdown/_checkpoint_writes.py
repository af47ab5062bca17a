"""Checkpoint writes held back until the export they belong to has succeeded.

Reading a session through its checkpoint (`passdown._checkpoint`) produces the next
checkpoint (or says the old one must go). A door that exports wraps its prepare in
`deferred()`: the changes are collected, and written (`PendingCheckpoint.apply`) only
once the handoff is published and its files are in place. So a failed export, and
`inspect`, which never exports, leave every checkpoint as it was. Outside `deferred()`
(a reader's own caller: tests, benchmarks) a change is written at once.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import msgspec

from passdown.errors import PassdownError

CHECKPOINTS_DIR = "checkpoints"  # under the data folder
STALE_AFTER_DAYS = 30  # a checkpoint unused this long is removed


class PendingCheckpoint(msgspec.Struct):
    """A checkpoint to write (`data`) or to remove (None), once the export it belongs to
    has succeeded."""

    path: Path
    data: bytes | None

    def apply(self) -> None:
        from passdown._fsio import write_private
        from passdown._paths import private_data_dir

        if self.data is None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        first_of_session = not self.path.exists()
        try:
            private_data_dir(CHECKPOINTS_DIR)  # created 0700 with the first checkpoint
            write_private(self.path, self.data)
        except (PassdownError, OSError):
            # no checkpoint this time (a full data folder): the handoff does not depend on it
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        if first_of_session:  # rare enough to pay for a look at the others
            prune_stale(self.path.parent)


_DEFERRED: ContextVar[list[PendingCheckpoint] | None] = ContextVar(
    "passdown_deferred_checkpoints", default=None
)


@contextmanager
def deferred() -> Iterator[list[PendingCheckpoint]]:
    """Within this block, checkpoints are collected instead of written: a door writes
    them (`apply`) only when its export succeeded, so a failed export (or `inspect`,
    which never exports) leaves every checkpoint as it was."""
    pending: list[PendingCheckpoint] = []
    token = _DEFERRED.set(pending)
    try:
        yield pending
    finally:
        _DEFERRED.reset(token)


def change(what: PendingCheckpoint) -> None:
    """Write (or remove) a checkpoint now, or hold it for the `deferred()` block around."""
    pending = _DEFERRED.get()
    if pending is None:
        what.apply()  # no door asked to wait: the reader's own caller (tests, benchmarks)
    else:
        pending.append(what)


def prune_stale(folder: Path, *, older_than_days: float = STALE_AFTER_DAYS) -> list[Path]:
    """Remove the checkpoints no export has used for `older_than_days` (their sessions
    are over; a later export of one just reads it in full)."""
    cutoff = time.time() - older_than_days * 86400
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        try:
            if (
                entry.name.endswith(".msgpack")
                and entry.stat(follow_symlinks=False).st_mtime < cutoff
            ):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed
