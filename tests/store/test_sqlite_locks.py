"""A process holding the SQLite store open twice (the session-start hook peeks at it,
then opens it to claim a handoff) keeps its locks: another process closing the store
must not take itself for the last user and delete the log this one still commits to."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passdown.errors import StoreError
from passdown.store import _sqlite_files as files
from passdown.store._sqlite import SQLiteStore, StorePeek

TASK = {
    "type": "task",
    "title": "t",
    "scope": {"project": "p"},
    "content": "x",
    "created_at": "2026-01-01T00:00:00Z",
    "provenance": {"agent": "a", "session": "s", "tool": "passdown"},
}


def _record(record_id: str) -> dict[str, Any]:
    return {"id": record_id, **TASK}


def _ids(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return sorted(row[0] for row in conn.execute("SELECT id FROM records"))
    finally:
        conn.close()


def _open_here(db: Path) -> int:
    """This process's connections to `db` as `_sqlite_files` counts them (other tests in
    this worker may have stores of their own open)."""
    real = str(db.resolve())
    return sum(n for (pid, path), n in files._OPEN.items() if path == real)


def _other_process(db: Path, code: str) -> subprocess.Popen[bytes]:
    prelude = "import sqlite3, sys\nfrom passdown.store._sqlite import SQLiteStore\n"
    return subprocess.Popen([sys.executable, "-c", prelude + code, str(db)], stdin=subprocess.PIPE)


@pytest.mark.parametrize("first", ["peek", "store"])
def test_a_commit_beside_a_second_connection_survives_other_processes_closing(
    tmp_path: Path, first: str
) -> None:
    db = tmp_path / "store.db"
    with SQLiteStore(db) as store:
        store.store(_record("first"))
    earlier: Any = StorePeek.open(db) if first == "peek" else SQLiteStore(db)
    if first == "peek":
        assert earlier.pointer("p", "active-handoff") is None  # a read: its locks are taken
    store = SQLiteStore(db)  # the second connection of this process
    # another process opens and closes the store: with this one's locks intact it is not
    # the last user, so it leaves the log alone
    closing = _other_process(db, "SQLiteStore(sys.argv[1]).close()")
    assert closing.wait(timeout=60) == 0
    assert Path(f"{db}-wal").exists()  # still the log this process writes to
    # a third keeps it open past our commit and close: nobody here checkpoints at close
    holding = _other_process(
        db, "c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM records').fetchall()\n"
        "sys.stdin.read()"
    )  # fmt: skip
    time.sleep(0.5)
    store.store(_record("claimed"))
    store.close()
    earlier.close()
    holding.communicate(b"", timeout=60)
    assert _ids(db) == ["claimed", "first"]


def test_only_the_first_connection_runs_the_file_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "store.db"
    checked: list[Path] = []
    prepare = files.prepare_files
    monkeypatch.setattr(
        files, "prepare_files", lambda path, *a: (checked.append(path), prepare(path, *a))
    )
    one = SQLiteStore(db)
    two = SQLiteStore(tmp_path / "." / "store.db")  # the same file, however it is named
    assert checked == [db]
    two.close()
    two.close()  # closing twice counts once
    three = SQLiteStore(db)
    assert checked == [db]  # `one` is still open
    one.close()
    three.close()
    SQLiteStore(db).close()
    assert len(checked) == 2  # none open any more: checked again
    assert _open_here(db) == 0


def test_a_store_that_fails_to_open_is_not_counted(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(b"not a database, but long enough to be read as one" * 100)
    with pytest.raises(StoreError):
        SQLiteStore(db)
    assert _open_here(db) == 0
    folder = tmp_path / "folder.db"
    folder.mkdir()
    with pytest.raises(sqlite3.OperationalError):
        StorePeek(folder)
    assert _open_here(folder) == 0


def test_a_store_dropped_unclosed_is_counted_out_when_collected(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    SQLiteStore(db).store(_record("first"))  # never closed: its connection goes with it
    StorePeek(db).pointer("p", "active-handoff")
    gc.collect()
    assert _open_here(db) == 0  # the next open checks the files again
