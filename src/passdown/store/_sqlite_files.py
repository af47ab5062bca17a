"""The files of a SQLite store, handled before SQLite opens them: made private, a
write-ahead log SQLite would drop kept aside, and this process's connections to each
database counted, so those checks run only when it has none open.

Why the count: SQLite's locks are POSIX advisory locks, which belong to the process and
its file, not to a descriptor: closing *any* descriptor of the database, its `-wal` or
its `-shm` drops every lock the process holds on that file, while SQLite still believes
it holds them (https://sqlite.org/howtocorrupt.html, "Posix advisory locks canceled by
a separate thread doing close()"). The checks here open and close those files. Run
while a connection of this process is open (the session-start hook peeks at the store,
then opens it to claim a handoff), they would drop that connection's shared lock: another
process closing its last connection would take itself for the last user, checkpoint, and
delete the `-wal` and `-shm` this process still writes to, and the next commit here
would go to a deleted file and be lost. So a database this process already has open is
not checked again: it was checked when first opened, and a log in use is SQLite's own.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import weakref
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from passdown import _platform
from passdown.errors import StoreError

_OPEN: Counter[tuple[int, str]] = Counter()  # (pid, real path): this process's connections
_OPEN_LOCK = threading.Lock()


def hold(path: str, owner: object, first_open: Callable[[], None]) -> Callable[[], object]:
    """Count one more connection of this process to the database at `path`, before it is
    opened; `first_open` (the checks that open its files) runs first when this process
    has none open. What `first_open` raises propagates, and nothing is counted. Returns
    the call that counts the connection out, once however often it is called: when the
    connection is closed (or failed to open), or by itself when `owner` is collected
    unclosed (its connection then goes with it)."""
    key = (os.getpid(), os.path.realpath(path))  # a forked child holds no lock of its parent's
    with _OPEN_LOCK:
        if not _OPEN[key]:
            first_open()
        _OPEN[key] += 1
    return weakref.finalize(owner, _release, key)


def _release(key: tuple[int, str]) -> None:
    with _OPEN_LOCK:
        _OPEN[key] -= 1
        if _OPEN[key] <= 0:
            del _OPEN[key]


def prepare_files(path: Path, shown: str, warnings: list[str]) -> None:
    """What a store does before SQLite first opens its database in this process: keep
    aside a log SQLite would drop (said on stderr and added to `warnings`), then make the
    files private."""
    kept = keep_unreplayable_wal(path)
    if kept:  # rare and about the user's data: said at once, wherever it runs
        warnings.append(kept)
        print(f"passdown: warning: {kept}", file=sys.stderr)
    make_private(path, shown)


# What to do about a store that cannot be opened (the files' own hints name `--out`)
OPEN_HINT = (
    "check the folder and its permissions, or use another store: set PASSDOWN_STORE "
    "(or pass --store URL); `export --no-store` writes the handoff without one"
)


def make_private(path: Path, shown: str) -> None:
    """The database and its -wal/-shm hold handoff text and token hashes: 0600, in a
    0700 folder when passdown creates it (or it is passdown's data folder). SQLite gives
    -wal and -shm the database file's own mode, so creating that one right is enough;
    files left loose by older versions are tightened."""
    from passdown._fsio import ensure_private_file, make_private_dirs
    from passdown._paths import data_dir, private_data_dir
    from passdown.errors import OutputError

    try:
        if path.resolve().is_relative_to(data_dir().resolve()):
            private_data_dir()
        make_private_dirs(path.parent)
        ensure_private_file(path)
        for suffix in ("-wal", "-shm", "-journal"):
            ensure_private_file(Path(f"{path}{suffix}"), create=False)
    except OutputError as exc:
        raise StoreError(f"SQLite store {shown}: {exc.message}", hint=OPEN_HINT) from exc
    except OSError as exc:
        raise StoreError(f"SQLite store {shown}: {exc.strerror or exc}", hint=OPEN_HINT) from exc


# A write-ahead log starts with one of these (big-endian; the last bit: checksum order).
WAL_MAGIC = (0x377F0682, 0x377F0683)


def unreplayable_wal(path: Path) -> str | None:
    """Why SQLite would drop the `-wal` beside `path` unreplayed, or None (no log, an
    empty one, or one it replays). A process that ends without closing the store (a
    crash, a kill) leaves its log behind, often without `-shm`; opening the store
    replays it (nothing lost) when the database file is there in WAL mode with the
    log's page size. Otherwise SQLite silently deletes it with the records it holds:
    the database file was removed or replaced (a sync tool, a restore), or the log is
    not one. A live store never looks like that: its file says WAL before a log exists."""
    wal = Path(f"{path}-wal")
    try:
        if not stat.S_ISREG(os.lstat(wal).st_mode):
            return None  # a link or a folder: `make_private` refuses those
        log = _head(wal, 32)
    except OSError:
        return None  # none there, or unreadable: SQLite itself says what it cannot open
    if not log:
        return None
    if len(log) < 32 or int.from_bytes(log[:4], "big") not in WAL_MAGIC:
        return "it is not a SQLite write-ahead log"
    try:
        db = _head(path, 100)
    except FileNotFoundError:
        return f"{path.name} is missing"
    except OSError:
        return None
    page = int.from_bytes(db[16:18], "big") if len(db) >= 100 else 0
    if len(db) < 100:
        return f"{path.name} is empty"
    if db[18:20] != b"\x02\x02":
        return f"{path.name} is not in WAL mode"
    if (65536 if page == 1 else page) != int.from_bytes(log[8:12], "big"):
        return f"its page size is not {path.name}'s"
    return None


def _head(path: Path, size: int) -> bytes:
    fd = _platform.open_nonblocking(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def keep_unreplayable_wal(path: Path) -> str | None:
    """Move a `-wal` SQLite would drop (`unreplayable_wal`) aside, to
    `<db>-wal.orphan-<UTC time>` (0600), before SQLite opens the store; the warning
    naming both, or None when there was nothing to keep."""
    reason = unreplayable_wal(path)
    if reason is None:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    kept = Path(f"{path}-wal.orphan-{stamp}")
    try:
        os.rename(f"{path}-wal", kept)
        os.chmod(kept, 0o600)  # it holds handoff text, like the store
    except OSError as exc:
        raise StoreError(
            f"SQLite store {path}: its write-ahead log {path}-wal cannot be replayed "
            f"({reason}) and could not be kept aside: {exc.strerror or exc}",
            hint="move it away yourself, or restore the database file it belongs to",
        ) from exc
    return (
        f"SQLite store {path}: kept its write-ahead log as {kept.name}, which SQLite "
        f"would have dropped unreplayed ({reason}); to recover its records, put it back "
        "as -wal beside the database file it belongs to"
    )
