"""Open another program's SQLite database for reading while that program runs: never
write it, never create a file beside it, never hold a lock the owner has to wait on for
longer than one short statement.

What SQLite does with each way of opening (measured with SQLite 3.40; the tests in
tests/test_sqlite_readonly.py check every row on the SQLite this Python has):

| database                      | `mode=ro`                         | `immutable=1`            |
|-------------------------------|-----------------------------------|--------------------------|
| rollback journal              | right answer; SHARED lock per     | no locks, but a page the |
|                               | statement; creates nothing        | owner is writing can be  |
|                               |                                   | read torn                |
| rollback, hot `-journal` left | SQLITE_READONLY_ROLLBACK          | the half-written file    |
| WAL, `-wal` + `-shm` present  | right answer; opens both as they  | misses the log           |
| (the owner has it open)       | are, creates nothing              |                          |
| WAL, no `-shm`                | **creates `-shm` (and `-wal`)**   | misses the log           |
|                               | next to the database, left behind |                          |

So:
- a rollback-journal database (VS Code's own `state.vscdb`s) is read with `mode=ro`. A
  reader's SHARED lock only delays the owner's commit (its EXCLUSIVE step), by one of our
  statements: callers keep statements short (point reads by key, batches), and the
  owner's driver waits for it (node-sqlite3, which VS Code and Cursor use, sets a 1 s
  busy timeout). A writer holding a write transaction (RESERVED) does not stop us; its
  commit (PENDING) makes our next statement wait up to `BUSY_TIMEOUT`.
- a WAL database whose `-shm` exists (the owner has it open: Cursor's global
  `state.vscdb`) is read with `mode=ro`: readers never block a WAL writer.
- a WAL database without `-shm` (nobody has it open) and without a `-wal`, or with a
  `-wal` that holds no complete transaction, is read with `immutable=1`: the main file
  is then the whole database, and nothing is opened beside it.
- a WAL database without `-shm` whose left-over `-wal` holds a committed transaction
  (checked here: the frames' salts and checksums up to the first commit frame, as
  SQLite's recovery checks them) is read through SQLite's lock-free VFS (`unix-none`,
  `win32-none`) in `locking_mode=EXCLUSIVE`, which keeps the log's index in our own
  memory: the log is read, no `-shm` is made, no lock is taken. On close SQLite tries
  to checkpoint that log into the database and delete it; the database is open
  read-only, so the first page write fails and nothing is changed or deleted. (With no
  committed frame there would be nothing to write, the checkpoint would succeed and
  the `-wal` be deleted: hence the check, and `immutable=1` in that case.)
- a hot journal (the owner crashed mid-commit), or a database still locked after
  `BUSY_TIMEOUT`, is read with `immutable=1`, with a warning that what is read may be
  part of an unfinished write.

Two races are left, and said here. The owner closing its last connection between our
check for `-shm` and our open deletes `-wal`/`-shm`, and `mode=ro` then creates them
again (empty; SQLite uses them on its next open): the window is the time between two
system calls. And the reads that take no lock (`immutable=1`, the private index) see
the files as they were when read: an owner that starts and checkpoints into the main
file during such a read can make a page read torn. SQLite then mostly reports the
database as malformed, which the readers here catch and say they stopped on; a value
that still decodes comes from one side of that write or the other. For a WAL database
these reads happen only when nobody had it open as the read began (the other uses of
`immutable=1` come with their warning).

A connection may be closed on another thread than the one that opened it: the readers
hold it in a generator, and a generator left unfinished is closed by whichever thread
drops it (or runs the garbage collector), whose `finally` then closes the connection.
Python's default same-thread check would make that close raise, and leave the
connection open; so connections are opened without it. That is safe here: each is read
by one consumer at a time (a generator cannot run on two threads at once), is read-only,
and this SQLite is built thread-safe (`sqlite3.threadsafety` above 0; where it is not,
the check stays on).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import msgspec

BUSY_TIMEOUT = 2.0  # seconds our statement waits for the owner's commit to finish

Journal = Literal["rollback", "wal", "unknown"]
How = Literal["shared", "wal-shared", "wal-private-index", "immutable"]


class ReadOnlyDatabase(msgspec.Struct):
    """An open read-only connection, how it was opened, and a warning for the reader's
    diagnostics when what it reads may be stale or part of an unfinished write."""

    conn: sqlite3.Connection
    how: How
    warning: str | None = None

    def close(self) -> None:
        self.conn.close()


def journal_mode(path: Path) -> Journal:
    """Bytes 18 and 19 of the header: 1 for a rollback journal, 2 for WAL."""
    head = _prefix(path, 20)
    if len(head) < 20 or not head.startswith(b"SQLite format 3\x00"):
        return "unknown"
    if head[18] == 2 and head[19] == 2:
        return "wal"
    return "rollback"


def open_readonly(path: Path) -> ReadOnlyDatabase:
    """Open `path` for reading as the table above says. Raises sqlite3.Error when it is
    no database (or not one this SQLite can read); never creates a file next to it."""
    if not _is_regular(path):
        raise sqlite3.OperationalError(f"no such database: {path}")
    uri = "file:" + quote(str(path)) + "?mode=ro"
    mode = journal_mode(path)
    if mode == "wal" and not os.path.lexists(f"{path}-shm"):
        log = wal_state(Path(f"{path}-wal"))
        if log == "none":  # nothing to replay: the main file is the database
            return _immutable(uri, path, None)
        if log == "unchecked":
            why = "its write-ahead log could not be checked (too long before its first commit)"
            return _immutable(uri, path, why)
        try:
            return ReadOnlyDatabase(_private_index(uri), "wal-private-index")
        except sqlite3.Error as exc:
            return _immutable(uri, path, f"its write-ahead log could not be read ({exc})")
    conn = _connect(uri, timeout=BUSY_TIMEOUT)
    try:
        _first_read(conn)
    except sqlite3.OperationalError as exc:
        conn.close()  # not this connection: another way in, or the error
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_ROLLBACK":
            why = "a write was interrupted (a hot journal is left)"
        elif "locked" in str(exc) or "busy" in str(exc):
            why = f"it stayed locked for {BUSY_TIMEOUT:g} s"
        else:
            raise
        return _immutable(uri, path, why)
    return ReadOnlyDatabase(conn, "wal-shared" if mode == "wal" else "shared")


def _connect(uri: str, *, timeout: float = 5.0) -> sqlite3.Connection:
    """Autocommit (the readers take their own snapshot with BEGIN), and closable from
    any thread where this SQLite allows it (see the module's last paragraph)."""
    return sqlite3.connect(
        uri,
        uri=True,
        timeout=timeout,
        isolation_level=None,
        check_same_thread=sqlite3.threadsafety == 0,
    )


def _private_index(uri: str) -> sqlite3.Connection:
    """The lock-free VFS in exclusive mode: the WAL index lives in this connection's
    memory, so no `-shm` is made, and the `-wal` (if any) is only read."""
    vfs = "unix-none" if os.name == "posix" else "win32-none"
    conn = _connect(f"{uri}&vfs={vfs}")
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        _first_read(conn)
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _immutable(uri: str, path: Path, why: str | None) -> ReadOnlyDatabase:
    conn = _connect(uri + "&immutable=1")
    try:
        _first_read(conn)
    except sqlite3.Error:
        conn.close()
        raise
    if why is None:
        return ReadOnlyDatabase(conn, "immutable")
    warning = f"{path.name}: {why}; read it as it is on disk, which may miss or half-show the latest change"
    return ReadOnlyDatabase(conn, "immutable", warning)


WAL_SCAN_FRAMES = 4096  # frames checked for a first commit before giving up
_WAL_MAGIC = {0x377F0682: "<", 0x377F0683: ">"}  # the checksums' byte order


def wal_state(wal: Path) -> Literal["none", "committed", "unchecked"]:
    """Whether a left-over `-wal` holds a committed transaction SQLite's recovery would
    keep: a valid header, then frames whose salts match it and whose running checksums
    hold, up to one that ends a transaction (its "database size" field is not 0)."""
    import struct

    from passdown._jsonl import open_regular

    try:
        handle = open_regular(wal)
    except OSError:
        return "none"
    with handle:
        head = handle.read(32)
        if len(head) < 32:
            return "none"
        magic, _version, page, _seq, salt1, salt2, ck1, ck2 = struct.unpack(">8I", head)
        order = _WAL_MAGIC.get(magic)
        if order is None or page < 512 or page > 65536 or page & (page - 1):
            return "none"
        s0, s1 = _checksum(head[:24], 0, 0, order)
        if (s0, s1) != (ck1, ck2):
            return "none"
        for _ in range(WAL_SCAN_FRAMES):
            frame = handle.read(24 + page)
            if len(frame) < 24 + page:
                return "none"
            _pgno, commit, f1, f2, c1, c2 = struct.unpack(">6I", frame[:24])
            if (f1, f2) != (salt1, salt2):
                return "none"
            s0, s1 = _checksum(frame[:8] + frame[24:], s0, s1, order)
            if (s0, s1) != (c1, c2):
                return "none"
            if commit:
                return "committed"
    return "unchecked"


def _checksum(data: bytes, s0: int, s1: int, order: str) -> tuple[int, int]:
    """SQLite's WAL checksum (fileformat2 §4.3), continued from (s0, s1)."""
    import struct

    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def _first_read(conn: sqlite3.Connection) -> None:
    """Locks, a hot journal and a file that is no database show on the first read."""
    conn.execute("PRAGMA query_only = 1")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()


def _is_regular(path: Path) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _prefix(path: Path, size: int) -> bytes:
    from passdown._jsonl import open_regular

    try:
        with open_regular(path) as handle:
            return handle.read(size)
    except OSError:
        return b""


__all__ = ["BUSY_TIMEOUT", "ReadOnlyDatabase", "journal_mode", "open_readonly", "wal_state"]
