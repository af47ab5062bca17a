"""The read-only opener for other programs' SQLite databases (agents/_sqlite_readonly.py):
each row of its table on this Python's SQLite, with the owner holding its database open,
in a write transaction, mid-commit, crashed, or gone. Each case checks what was read and
that no file was created, changed or removed beside the database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from passdown.agents import _sqlite_readonly
from passdown.agents._sqlite_readonly import journal_mode, open_readonly


def _make(folder: Path, *, wal: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "state.vscdb"
    conn = sqlite3.connect(db, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES ('a', '1')")
    conn.close()
    return db


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def _keys(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT key FROM ItemTable ORDER BY key")]


class Owner:
    """Another process that owns the database: it runs the statements it is sent, one
    line each, and answers "ok" or the error."""

    SCRIPT = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=float(sys.argv[2]))
for line in sys.stdin:
    try:
        conn.execute(line)
        print("ok", flush=True)
    except sqlite3.Error as exc:
        print("error", exc, flush=True)
"""

    def __init__(self, db: Path, busy_timeout: float = 1.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.SCRIPT, str(db), str(busy_timeout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, sql: str) -> str:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(sql + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def owner_of() -> Iterator[list[Owner]]:
    owners: list[Owner] = []
    yield owners
    for owner in owners:
        owner.close()


def test_rollback_database_is_read_with_shared_locks_and_creates_nothing(tmp_path: Path) -> None:
    db = _make(tmp_path / "u", wal=False)
    before = _files(db.parent)
    opened = open_readonly(db)
    assert (opened.how, opened.warning) == ("shared", None)
    assert _keys(opened.conn) == ["a"]
    with pytest.raises(sqlite3.OperationalError):  # read-only, whatever is sent
        opened.conn.execute("INSERT INTO ItemTable VALUES ('b', '2')")
    opened.close()
    assert _files(db.parent) == before


def test_an_owner_in_a_write_transaction_does_not_stop_the_read(
    tmp_path: Path, owner_of: list[Owner]
) -> None:
    db = _make(tmp_path / "u", wal=False)
    owner = Owner(db)
    owner_of.append(owner)
    assert owner.run("BEGIN IMMEDIATE") == "ok"  # RESERVED: the owner is writing
    assert owner.run("INSERT INTO ItemTable VALUES ('b', '2')") == "ok"
    opened = open_readonly(db)
    assert _keys(opened.conn) == ["a"]  # what is committed, nothing half-written
    opened.close()
    assert owner.run("COMMIT") == "ok"  # and the owner commits after us
    opened = open_readonly(db)
    assert _keys(opened.conn) == ["a", "b"]
    opened.close()


def test_an_owner_committing_all_along_never_waits_out_its_busy_timeout(tmp_path: Path) -> None:
    """VS Code's driver (node-sqlite3) waits 1 s for a lock; our statements are short,
    so its commits all go through while we read again and again. The owner commits
    about a thousand times a second (far more than an editor does), with a millisecond
    between commits: a writer that never lets go at all starves any reader, and ours
    then reads the file as it is, with a warning (tested below)."""
    db = _make(tmp_path / "u", wal=False)
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=1.0)\n"
            "end, n = time.monotonic() + 2.0, 0\n"
            "while time.monotonic() < end:\n"
            "    conn.execute('INSERT INTO ItemTable VALUES (?, ?)', (str(n), 'x' * 4000))\n"
            "    n += 1\n"
            "    time.sleep(0.001)\n"
            "print(n)\n",
            str(db),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reads = 0
    while writer.poll() is None:
        opened = open_readonly(db)
        assert opened.how == "shared"
        opened.conn.execute("SELECT count(*), max(length(value)) FROM ItemTable").fetchone()
        opened.close()
        reads += 1
    out, err = writer.communicate()
    assert writer.returncode == 0, err  # never "database is locked"
    assert int(out) > 10 and reads > 10
    assert sorted(p.name for p in db.parent.iterdir()) == ["state.vscdb"]


def test_a_hot_journal_is_read_as_it_is_with_a_warning(tmp_path: Path) -> None:
    db = _make(tmp_path / "u", wal=False)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "conn.execute('PRAGMA cache_size=1')\n"
            "conn.execute('BEGIN')\n"
            "for i in range(500): conn.execute('INSERT INTO ItemTable VALUES (?, ?)', (str(i), 'x' * 900))\n"
            "os._exit(0)\n",  # killed mid-transaction: the journal is hot
            str(db),
        ],
        check=True,
    )
    before = _files(db.parent)
    assert "state.vscdb-journal" in before
    opened = open_readonly(db)
    assert opened.how == "immutable"
    assert opened.warning and "interrupted" in opened.warning
    assert "a" in _keys(opened.conn)
    opened.close()
    assert _files(db.parent) == before  # the journal is the owner's to roll back


def test_a_lock_held_past_the_timeout_falls_back_with_a_warning(
    tmp_path: Path, owner_of: list[Owner], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _make(tmp_path / "u", wal=False)
    owner = Owner(db)
    owner_of.append(owner)
    assert owner.run("BEGIN EXCLUSIVE") == "ok"  # as during a commit's write
    monkeypatch.setattr(_sqlite_readonly, "BUSY_TIMEOUT", 0.2)
    started = time.monotonic()
    opened = open_readonly(db)
    assert time.monotonic() - started < 5
    assert opened.how == "immutable"
    assert opened.warning and "locked" in opened.warning
    assert _keys(opened.conn) == ["a"]
    opened.close()
    assert owner.run("COMMIT") == "ok"


def test_wal_with_the_owner_open_reads_its_log_and_creates_nothing(
    tmp_path: Path, owner_of: list[Owner]
) -> None:
    db = _make(tmp_path / "u", wal=True)
    owner = Owner(db)
    owner_of.append(owner)
    assert owner.run("PRAGMA wal_autocheckpoint=0") == "ok"
    assert owner.run("INSERT INTO ItemTable VALUES ('b', '2')") == "ok"  # in the -wal only
    assert owner.run("BEGIN IMMEDIATE") == "ok"  # and a write transaction open
    assert owner.run("INSERT INTO ItemTable VALUES ('c', '3')") == "ok"
    names = sorted(p.name for p in db.parent.iterdir())
    assert names == ["state.vscdb", "state.vscdb-shm", "state.vscdb-wal"]
    assert journal_mode(db) == "wal"
    opened = open_readonly(db)
    assert opened.how == "wal-shared"
    assert _keys(opened.conn) == ["a", "b"]
    opened.close()
    assert owner.run("COMMIT") == "ok"  # a WAL reader never blocks the writer
    assert sorted(p.name for p in db.parent.iterdir()) == names


def _leftover_wal(db: Path) -> None:
    """The owner wrote into its log and died without closing: `-wal` stays, `-shm` is
    removed (as after a reboot cleaned it, or a copy without it)."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "conn.execute('PRAGMA wal_autocheckpoint=0')\n"
            "conn.execute(\"INSERT INTO ItemTable VALUES ('b', '2')\")\n"
            "os._exit(0)\n",
            str(db),
        ],
        check=True,
    )
    os.remove(f"{db}-shm")


def test_plain_mode_ro_would_create_shm_beside_a_wal_database(tmp_path: Path) -> None:
    """Why the opener does not use `mode=ro` alone: on this SQLite it creates `-shm` (and
    `-wal`) next to a WAL database nobody has open, and leaves them there."""
    db = _make(tmp_path / "u", wal=True)
    conn = sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True)
    conn.execute("SELECT count(*) FROM ItemTable").fetchone()
    conn.close()
    assert sorted(p.name for p in db.parent.iterdir()) == [
        "state.vscdb",
        "state.vscdb-shm",
        "state.vscdb-wal",
    ]


def test_wal_left_without_shm_is_read_with_its_log_and_no_shm_is_made(tmp_path: Path) -> None:
    db = _make(tmp_path / "u", wal=True)
    _leftover_wal(db)
    before = _files(db.parent)
    wal_bytes = Path(f"{db}-wal").read_bytes()
    opened = open_readonly(db)
    assert (opened.how, opened.warning) == ("wal-private-index", None)
    assert _keys(opened.conn) == ["a", "b"]  # the log's row is there
    opened.close()
    assert _files(db.parent) == before
    assert Path(f"{db}-wal").read_bytes() == wal_bytes


def test_wal_closed_cleanly_is_read_as_it_is_and_creates_nothing(tmp_path: Path) -> None:
    db = _make(tmp_path / "u", wal=True)
    before = _files(db.parent)
    opened = open_readonly(db)
    assert (opened.how, opened.warning) == ("immutable", None)  # nothing to replay
    assert _keys(opened.conn) == ["a"]
    opened.close()
    assert _files(db.parent) == before == {"state.vscdb": before["state.vscdb"]}


@pytest.mark.parametrize("kind", ["empty", "header only", "stale frames", "torn first frame"])
def test_a_left_over_log_with_no_commit_is_left_alone(kind: str, tmp_path: Path) -> None:
    """SQLite's close would checkpoint such a log (nothing to write) and delete it: the
    opener reads the main file alone instead, and the log stays as it was."""
    db = _make(tmp_path / "u", wal=True)
    _leftover_wal(db)
    wal = Path(f"{db}-wal")
    data = wal.read_bytes()
    page = 4096
    if kind == "empty":
        data = b""
    elif kind == "header only":
        data = data[:32]
    elif kind == "stale frames":  # the salts of an earlier generation of the log
        frames = bytearray(data)
        frames[32 + 8 : 32 + 16] = b"\x00" * 8
        data = bytes(frames)
    else:
        data = data[: 32 + 24 + page // 2]
    wal.write_bytes(data)
    before = _files(db.parent)
    opened = open_readonly(db)
    assert opened.how == "immutable"
    assert _keys(opened.conn) == ["a"]
    opened.close()
    assert _files(db.parent) == before
    assert wal.read_bytes() == data


def test_a_committed_log_followed_by_a_torn_frame_is_read_to_its_commit(tmp_path: Path) -> None:
    db = _make(tmp_path / "u", wal=True)
    _leftover_wal(db)
    wal = Path(f"{db}-wal")
    data = wal.read_bytes() + b"\x01" * 100  # a frame cut short after the commit
    wal.write_bytes(data)
    opened = open_readonly(db)
    assert opened.how == "wal-private-index"
    assert _keys(opened.conn) == ["a", "b"]
    opened.close()
    assert wal.read_bytes() == data
    assert not Path(f"{db}-shm").exists()


@pytest.mark.parametrize("left_over", [True, False])
def test_an_owner_opening_after_us_is_not_locked_out_nor_loses_writes(
    left_over: bool, tmp_path: Path, owner_of: list[Owner]
) -> None:
    """The read of a WAL database nobody had open takes no lock: the owner can start and
    write while we still hold the connection, and our close never checkpoints or deletes
    the log it is writing (a checkpoint on close with an empty index of ours would)."""
    db = _make(tmp_path / "u", wal=True)
    if left_over:
        _leftover_wal(db)
    opened = open_readonly(db)
    assert opened.how == ("wal-private-index" if left_over else "immutable")
    owner = Owner(db, busy_timeout=0.1)
    owner_of.append(owner)
    assert owner.run("PRAGMA wal_autocheckpoint=0") == "ok"
    assert owner.run("INSERT INTO ItemTable VALUES ('late', '1')") == "ok"
    assert _keys(opened.conn) == (["a", "b"] if left_over else ["a"])
    opened.close()
    assert owner.run("SELECT 1") == "ok"
    check = sqlite3.connect(db)
    keys = [r[0] for r in check.execute("SELECT key FROM ItemTable ORDER BY key")]
    assert keys == (["a", "b", "late"] if left_over else ["a", "late"])
    check.close()


def test_no_database_raises_and_creates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "u"
    folder.mkdir()
    junk = folder / "state.vscdb"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        open_readonly(junk)
    with pytest.raises(sqlite3.OperationalError):
        open_readonly(folder / "missing.vscdb")
    assert sorted(p.name for p in folder.iterdir()) == ["state.vscdb"]


@pytest.mark.parametrize("how", ["shared", "wal-shared", "wal-private-index", "immutable"])
def test_a_connection_opened_on_one_thread_closes_on_another(
    how: str, tmp_path: Path, owner_of: list[Owner]
) -> None:
    """A reader's generator left unfinished is closed by whichever thread collects it:
    the close works there, whichever way the database was opened."""
    import threading

    db = _make(tmp_path / "u", wal=how != "shared")
    if how == "wal-shared":
        owner_of.append(Owner(db))
        assert owner_of[0].run("INSERT INTO ItemTable VALUES ('b', '2')") == "ok"
    elif how == "wal-private-index":
        _leftover_wal(db)
    opened = open_readonly(db)
    assert opened.how == how
    assert _keys(opened.conn)[0] == "a"
    raised: list[BaseException] = []

    def close() -> None:
        try:
            opened.close()
        except sqlite3.Error as exc:
            raised.append(exc)

    thread = threading.Thread(target=close)
    thread.start()
    thread.join()
    assert raised == []
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        opened.conn.execute("SELECT 1")
