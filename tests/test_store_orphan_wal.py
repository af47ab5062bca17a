"""A `-wal` left beside passdown's SQLite store by a process that ended without closing
it (a crash, a kill; no `-shm` then): `find`, `export` and the session-start pickup
must lose none of its records and print no traceback.

SQLite replays such a log when the database file is there in WAL mode: the records
that were only in the log are found and kept (the first test). When the database file
is gone, empty, not in WAL mode or of another page size, or the log is no log, SQLite
used to delete the log silently with the records in it; now it is kept aside as
`store.db-wal.orphan-<time>` (0600) with a warning, and put back beside its database
file it gives the records back.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from passdown.cli import main
from passdown.store._sqlite import SQLiteStore
from recorded import scenarios

PROJECT = "walproject"


def record(n: int) -> dict[str, object]:
    return {
        "id": f"task-{n}",
        "type": "task",
        "title": f"record {n} kept only in the log",
        "content": "x",
        "scope": {"project": PROJECT},
        "created_at": f"2026-11-30T10:00:0{n}Z",
        "annotations": [],
        "provenance": {"agent": "test", "session": "s"},
    }


def crashed_store(tmp_path: Path, target: Path, *, page_size: int | None = None) -> Path:
    """A store whose records were written only to its log, copied to `target` as a
    killed process leaves it: `store.db` and `store.db-wal`, no `-shm`. Returns a copy
    of the database file the log belongs to."""
    live = tmp_path / "live" / "store.db"
    live.parent.mkdir(parents=True)
    if page_size:  # a database created with another page size before passdown opens it
        with sqlite3.connect(live) as conn:
            conn.execute(f"PRAGMA page_size={page_size}")
            conn.execute("VACUUM")
    store = SQLiteStore(live)
    store._conn.execute("PRAGMA wal_autocheckpoint=0")  # everything stays in the log
    store.store_many([record(n) for n in range(3)])
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(live, target / "store.db")
    shutil.copyfile(f"{live}-wal", target / "store.db-wal")
    os.chmod(target / "store.db-wal", 0o600)
    original = tmp_path / "original-store.db"
    shutil.copyfile(live, original)
    store.close()
    return original


def data_dir() -> Path:
    return Path(os.environ["PASSDOWN_DATA_DIR"])


def found_ids(capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["find", "--project", PROJECT, "--json"]) == 0
    return sorted(r["id"] for r in json.loads(capsys.readouterr().out)["records"])


def ids_in(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return sorted(row[0] for row in conn.execute("SELECT id FROM records"))


def test_an_orphan_log_is_replayed_by_find_and_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    crashed_store(tmp_path, data_dir())
    assert not (data_dir() / "store.db-shm").exists()
    assert ids_in_log_only(data_dir())
    assert found_ids(capsys) == ["task-0", "task-1", "task-2"]
    session = next(r for r in scenarios("codex") if r.scenario == "full").install(
        tmp_path / "codex", monkeypatch
    )
    monkeypatch.chdir(tmp_path)
    args = ["export", "--from", "codex", "--session", str(session), "--workspace", "."]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "warning" not in err
    assert [p.name for p in data_dir().glob("*.orphan-*")] == []
    stored = ids_in(data_dir() / "store.db")
    assert {"task-0", "task-1", "task-2"} <= set(stored) and len(stored) > 3


def ids_in_log_only(folder: Path) -> bool:
    """The copied database file alone holds none of the records: they are in the log."""
    alone = folder.parent / "db-alone.db"
    shutil.copyfile(folder / "store.db", alone)
    try:
        with sqlite3.connect(alone) as conn:
            return not conn.execute(
                "SELECT name FROM sqlite_master WHERE name = 'records'"
            ).fetchall()
    finally:
        alone.unlink()


def break_database(case: str, folder: Path) -> None:
    db = folder / "store.db"
    if case == "missing":
        db.unlink()
    elif case == "empty":
        db.write_bytes(b"")
    elif case == "not-wal":  # replaced by a rollback-journal database (a restore, say)
        other = folder.parent / "rollback.db"
        with sqlite3.connect(other) as conn:
            conn.execute("CREATE TABLE other (x)")
        conn.close()
        shutil.copyfile(other, db)  # made apart: SQLite would drop the log right away
    elif case == "garbage-log":
        (folder / "store.db-wal").write_bytes(os.urandom(4096))


CASES = {
    "missing": "store.db is missing",
    "empty": "store.db is empty",
    "not-wal": "store.db is not in WAL mode",
    "garbage-log": "it is not a SQLite write-ahead log",
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_log_sqlite_would_drop_is_kept_aside(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = crashed_store(tmp_path, data_dir())
    break_database(case, data_dir())
    log = (data_dir() / "store.db-wal").read_bytes()
    capsys.readouterr()
    assert main(["find", "--project", PROJECT, "--json"]) == 0
    err = capsys.readouterr().err
    [kept] = data_dir().glob("store.db-wal.orphan-*")  # before: the log was deleted
    assert kept.read_bytes() == log and kept.stat().st_mode & 0o777 == 0o600
    assert f"kept its write-ahead log as {kept.name}" in err and CASES[case] in err
    assert "Traceback" not in err
    if case != "garbage-log":  # put back beside its database file, the records return
        restored = tmp_path / "restored"
        restored.mkdir()
        shutil.copyfile(original, restored / "store.db")
        shutil.copyfile(kept, restored / "store.db-wal")
        assert ids_in(restored / "store.db") == ["task-0", "task-1", "task-2"]


def test_a_log_of_another_page_size_is_kept_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crashed_store(tmp_path, data_dir(), page_size=8192)
    other = tmp_path / "other"
    crashed_store(tmp_path / "x", other)  # 4096-byte pages
    shutil.copyfile(other / "store.db", data_dir() / "store.db")  # the wrong database
    capsys.readouterr()
    assert main(["find", "--project", PROJECT]) == 0
    assert "its page size is not store.db's" in capsys.readouterr().err
    assert len(list(data_dir().glob("store.db-wal.orphan-*"))) == 1


def test_the_session_start_pickup_keeps_it_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pickup reads the store without opening it as a store (`StorePeek`); a log
    SQLite would drop makes it open the store, which keeps the log aside."""
    from passdown.integrations._continuity import pickup

    crashed_store(tmp_path, data_dir())
    break_database("empty", data_dir())
    log = (data_dir() / "store.db-wal").read_bytes()
    workspace = tmp_path / "ws"
    (workspace / ".agent-handoff").mkdir(parents=True)
    (workspace / ".agent-handoff" / "handoff.json").write_text("{}")  # a handoff to look for
    assert pickup("claude", "new-session", str(workspace)).pointer is None
    [kept] = data_dir().glob("store.db-wal.orphan-*")
    assert kept.read_bytes() == log


# -- an agent's database (opencode, Copilot's session.db) with a left-over log ------------------
def test_an_agents_left_over_log_is_replayed_on_a_private_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """opencode killed while its last change sat in the log: `opencode.db` + `-wal`, no
    `-shm`. Before, the database was read without the log (the latest change missing,
    with a warning), since opening it normally would create files in opencode's folder.
    Now the log is replayed on a private copy: the change is read, nothing appears in
    or vanishes from opencode's folder."""
    recorded = next(r for r in scenarios("opencode") if r.scenario == "full")
    home = tmp_path / "home"
    recorded.install(home, monkeypatch)
    [db] = home.rglob("opencode.db")
    live = tmp_path / "live.db"
    shutil.copyfile(db, live)
    writer = sqlite3.connect(live, isolation_level=None)
    assert writer.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE session SET title = 'renamed just before the crash'")
    shutil.copyfile(live, db)  # what the killed process left: the file and its log
    shutil.copyfile(f"{live}-wal", f"{db}-wal")
    writer.close()
    before = {p.name: p.read_bytes() for p in db.parent.iterdir() if p.is_file()}
    assert sorted(before) == ["opencode.db", "opencode.db-wal"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    capsys.readouterr()
    args = ["export", "--from", "opencode", "--session", str(db), "--workspace", ".", "--json"]
    assert main([*args, "--no-store"]) == 0
    out = capsys.readouterr().out
    handoff = json.loads(Path(json.loads(out)["json"]).read_text())
    assert handoff["source"]["title"] == "renamed just before the crash"  # from the log
    assert not any("write-ahead log" in w for w in handoff["warnings"]), handoff["warnings"]
    after = {p.name: p.read_bytes() for p in db.parent.iterdir() if p.is_file()}
    assert after == before  # nothing created, nothing replayed into opencode's own files
