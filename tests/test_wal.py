"""Issue 21: the write-ahead journal's parts (`passdown._wal`): whose journal may be
recovered, what a torn or foreign journal does, a recovery that was itself interrupted,
and the file plan of a commit killed between two renames (in a forked process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from passdown import _platform
from passdown import _wal as wal
from passdown._filebatch import FileBatch
from passdown.records import Scope
from passdown.store import Store, open_store

SCOPE = Scope(project="p")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite://{tmp_path / 'store.db'}") as opened:
        yield opened


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def write_journal(owner: wal.Owner, lines: list[str]) -> Path:
    folder = wal.journal_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / owner.file_name(os.urandom(6).hex())
    path.write_text("".join(lines))
    return path


def header(store: Store, files: dict[str, object] | None = None) -> str:
    data = {
        "kind": "header",
        "version": 1,
        "handoff": "h-new",
        "store": wal.store_identity(store),
        "scope": SCOPE.model_dump(exclude_none=True),
        "files": files or {},
    }
    return json.dumps(data) + "\n"


def pointer_entry(name: str, before: str | None, after: str, stamp: str | None) -> str:
    entry = {"kind": "pointer", "name": name, "before": before, "after": after, "stamp": stamp}
    return json.dumps({**entry, "records": [f"{after}#x"]}) + "\n"


# -- whose journal --------------------------------------------------------------------------


def test_an_owner_is_alive_only_as_the_process_it_names() -> None:
    me = wal.Owner.me()
    assert not me.alive()  # this process's journals that are not in flight: ended exports
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        started = _platform.process_start(sleeper.pid)
        assert started is not None
        assert wal.Owner(me.host, sleeper.pid, started).alive()
        assert wal.Owner(me.host, sleeper.pid, "0").alive()  # no start time known: the pid
        # the same pid, started at another time: the system reused it, the exporter is gone
        assert not wal.Owner(me.host, sleeper.pid, str(int(started) + 1)).alive()
        sleeper.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)  # a zombie, not reaped
        assert not wal.Owner(me.host, sleeper.pid, started).alive()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not wal.Owner(me.host, dead_pid(), "0").alive()
    assert wal.Owner("another-host", dead_pid(), "0").alive()  # never judged from here
    parsed = wal.Owner.parse(me.file_name("abc"))
    assert parsed == me


def test_a_journal_in_flight_is_skipped_until_abandoned(store: Store) -> None:
    assert store.set_pointer(SCOPE, "active-handoff", None, "h-old")
    journal = wal.WriteAhead(json.loads(header(store)))
    journal.note(json.loads(pointer_entry("active-handoff", "h-old", "h-new", None)))
    assert store.set_pointer(SCOPE, "active-handoff", "h-old", "h-new")

    assert wal.recover_interrupted(store) == []  # this process is still exporting
    assert not wal.pending()
    assert store.get_pointer(SCOPE, "active-handoff") == "h-new"

    journal.abandon()  # the export ended without taking it back (the store was away)
    assert wal.pending()
    (line,) = wal.recover_interrupted(store)
    assert line.startswith("took back the interrupted export of handoff h-new")
    assert store.get_pointer(SCOPE, "active-handoff") == "h-old"
    assert list(wal.journal_folder().iterdir()) == []


# -- what a journal holds ---------------------------------------------------------------------


def test_a_torn_last_line_was_never_acted_on(store: Store) -> None:
    assert store.set_pointer(SCOPE, "a", None, "1")
    assert store.set_pointer(SCOPE, "b", None, "1")
    stamp_a = store.pointer_stamp(SCOPE, "a")
    assert store.set_pointer(SCOPE, "a", "1", "2")  # announced, then made
    store.store(_record("2#x"))
    torn = pointer_entry("b", "1", "2", None)[:30]  # the kill cut the next line short
    owner = wal.Owner(wal.Owner.me().host, dead_pid(), "0")
    write_journal(owner, [header(store), pointer_entry("a", "1", "2", stamp_a), torn])

    (line,) = wal.recover_interrupted(store)
    assert "took back" in line
    assert store.get_pointer(SCOPE, "a") == "1" and store.pointer_stamp(SCOPE, "a") == stamp_a
    assert store.get_pointer(SCOPE, "b") == "1"
    with pytest.raises(Exception, match="no record"):
        store.retrieve(SCOPE, "2#x")


def test_a_journal_of_another_store_is_left_for_that_store(store: Store) -> None:
    owner = wal.Owner(wal.Owner.me().host, dead_pid(), "0")
    other = header(store).replace(str(wal.store_identity(store)), "sqlite:/elsewhere.db")
    path = write_journal(owner, [other, pointer_entry("a", None, "2", None)])
    assert wal.recover_interrupted(store) == []
    assert path.exists()


def test_an_empty_journal_changed_nothing() -> None:
    owner = wal.Owner(wal.Owner.me().host, dead_pid(), "0")
    path = write_journal(owner, ['{"kind": "hea'])  # killed while writing the first line
    (line,) = wal.recover_interrupted(None)
    assert line.startswith("removed the empty journal")
    assert not path.exists()


def test_a_recovery_that_was_itself_killed_is_finished(store: Store) -> None:
    """The recoverer renamed the journal to its own name, took the pointer back, and
    died before deleting the status record: the next process does the rest."""
    assert store.set_pointer(SCOPE, "active-handoff", None, "h-old")
    stamp = store.pointer_stamp(SCOPE, "active-handoff")
    store.store(_record("h-new#x"))  # the announced change's record, still there
    recoverer = wal.Owner(wal.Owner.me().host, dead_pid(), "0")
    write_journal(
        recoverer, [header(store), pointer_entry("active-handoff", "h-old", "h-new", stamp)]
    )
    (line,) = wal.recover_interrupted(store)
    assert "took back" in line
    assert store.get_pointer(SCOPE, "active-handoff") == "h-old"
    assert store.pointer_stamp(SCOPE, "active-handoff") == stamp
    with pytest.raises(Exception, match="no record"):
        store.retrieve(SCOPE, "h-new#x")


def _record(record_id: str) -> dict[str, object]:
    return {
        "id": record_id,
        "type": "status",
        "title": record_id,
        "scope": {"project": "p"},
        "content": "",
        "created_at": "2026-12-01T00:00:00Z",
        "provenance": {"agent": "t", "session": "s", "tool": "passdown"},
    }


# -- files ---------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def _batch(root: Path) -> FileBatch:
    batch = FileBatch()
    batch.stage(root / "out" / "HANDOFF.md", "new markdown\n")
    batch.stage(root / "out" / "history" / "copy.md", "old markdown\n")  # a new folder
    batch.stage(root / "out" / "handoff.json", '{"id": "new"}\n')
    batch.place_last(root / "out" / "handoff.json")
    batch.remove(root / "out" / "pruned.md")
    return batch


def test_a_commit_killed_between_renames_is_put_back_from_its_plan(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "HANDOFF.md").write_text("old markdown\n")
    (out / "handoff.json").write_text('{"id": "old"}\n')
    (out / "pruned.md").write_text("an old history copy\n")
    before = _tree(tmp_path)
    batch = _batch(tmp_path)
    plan = batch.plan()
    assert [Path(p["path"]).name for p in plan["place"]] == [
        "HANDOFF.md",
        "copy.md",
        "handoff.json",
    ]
    assert plan["folders"] == [str(out / "history")]

    pid = os.fork()
    if pid == 0:  # the exporter: killed right before the last rename
        wal._CRASH_AT = "between-renames"
        try:
            batch.commit()
        finally:
            os._exit(3)  # never reached when the hook fires
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    batch.discard()

    mid = _tree(tmp_path)
    assert mid != before and mid["out/HANDOFF.md"] == b"new markdown\n"
    assert not wal.committed(plan)
    wal.restore_files(plan)
    assert _tree(tmp_path) == before


def test_a_finished_commit_is_proven_by_its_last_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "handoff.json").write_text('{"id": "old"}\n')
    (out / "pruned.md").write_text("an old history copy\n")
    batch = _batch(tmp_path)
    plan = batch.plan()
    assert not wal.committed(plan)
    batch.commit()
    assert wal.committed(plan)
    after = _tree(tmp_path)
    wal.finish_files(plan)  # what is left to do after the last rename: nothing here
    assert _tree(tmp_path) == after
    assert "out/pruned.md" not in after and after["out/handoff.json"] == b'{"id": "new"}\n'


def test_pickup_looks_further_only_for_a_journal_whose_process_is_gone(store: Store) -> None:
    """`pending` is the session-start pickup's cheap look: a running export's journal
    does not make it open the store (and load its models)."""
    assert not wal.pending()  # no journal folder at all
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        started = _platform.process_start(sleeper.pid)
        assert started is not None
        live = wal.Owner(wal.Owner.me().host, sleeper.pid, started)
        path = write_journal(live, [header(store)])
        assert not wal.pending()
        assert wal.recover_interrupted(store) == [] and path.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert wal.pending()  # its process is gone now
    (line,) = wal.recover_interrupted(store)
    assert "took back" in line and not path.exists()
