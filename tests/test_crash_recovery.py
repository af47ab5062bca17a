"""Issue 21: an export killed half-way (SIGKILL, as a power cut would) is taken back by
the next passdown process that opens the store, or finished when its files were all in
place (the write-ahead journal, `passdown._wal`).

Each case makes a good export first (the previous handoff: stored, published, its files
and the session's checkpoint on disk), appends to the session, and runs `passdown
export` with `PASSDOWN_TEST_CRASH_AT=<step>`, which SIGKILLs it at that step:

- `record-stored`: right after the handoff's record is stored;
- `pointer-moved`: right after the active pointer moved to it;
- `between-renames`: between two renames (every file but handoff.json is in place);
- `after-last-rename`, `before-journal-removed`: after the last rename (the first before
  the commit dropped the previous files' hidden links), before the journal is removed.

The store's rows, the active pointer, the files and the checkpoints are hashed as
tests/test_failed_export.py does: after the kill they differ (the test can fail), and
after the next `passdown find` (or the session-start pickup, or the next export) they
are byte-identical to before the killed export, or, when the commit was complete, the
new handoff stands whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from test_failed_export import World, make_world, run_door, snapshot

pytestmark = pytest.mark.timeout(300)

UNDONE = ("record-stored", "pointer-moved", "between-renames")
COMMITTED = ("after-last-rename", "before-journal-removed")

# Loaded first in the export's process (a `sitecustomize` on its PYTHONPATH): at the
# step named in PAUSE_AT the export stops, says so in a file and waits for another.
PAUSER = """
import os, time
import passdown._wal as wal

_real = wal.crash_point

def _pause(step):
    if step == os.environ.get("PAUSE_AT"):
        open(os.environ["PAUSE_READY"], "w").close()
        while not os.path.exists(os.environ["PAUSE_GO"]):
            time.sleep(0.02)
    _real(step)

wal.crash_point = _pause
"""


# Loaded first in the export's process: placing handoff.json (the last file) fails as
# on a full disk, after the package was published and the other files placed.
FAILER = """
import passdown._filebatch as fb
from passdown._fsio import _error

_real = fb._Staged.place

def _place(self):
    if self.path.name == "handoff.json":
        self.drop()
        raise _error("write", self.path, OSError(28, "No space left on device"))
    _real(self)

fb._Staged.place = _place
"""


def with_site(world: World, tmp_path: Path, code: str, **extra: str) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(code)
    path = os.pathsep.join([str(site), *filter(None, [world.env.get("PYTHONPATH")])])
    return {**world.env, "PYTHONPATH": path, **extra}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    yield make_world(tmp_path, tmp_path / "data", monkeypatch)


def passdown(world: World, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=world.ws,
        env=env or world.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr


def killed_export(world: World, step: str) -> None:
    code, err = passdown(
        world, "export", "--from", "claude", env={**world.env, "PASSDOWN_TEST_CRASH_AT": step}
    )
    assert code == -9, f"the export was not killed at {step}: {code} {err}"


def journals(world: World) -> list[Path]:
    folder = world.data / "journal"
    return sorted(folder.iterdir()) if folder.exists() else []


def journal_header(world: World) -> dict[str, object]:
    (path,) = journals(world)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["kind"] == "header"
    return dict(header)


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def active(state: dict[str, str]) -> str | None:
    rows = json.loads(state["active"])
    return rows[0][0] if rows else None


def temp_files(world: World) -> list[str]:
    return sorted(
        str(p.relative_to(world.ws))
        for p in (world.ws / ".agent-handoff").rglob(".*")
        if p.name.endswith(".tmp")
    )


@pytest.mark.parametrize("step", UNDONE)
def test_a_killed_export_is_taken_back_by_the_next_process(world: World, step: str) -> None:
    before = snapshot(world)
    killed_export(world, step)

    mid = snapshot(world)
    assert changed(before, mid), "the kill left nothing to take back: the test proves nothing"
    if step != "record-stored":
        assert active(mid) != active(before)  # the store names a handoff not on disk
    if step == "between-renames":
        assert mid["file:.agent-handoff/HANDOFF.md"] != before["file:.agent-handoff/HANDOFF.md"]
        assert temp_files(world), "the previous files are kept aside during the commit"
    assert journal_header(world)["handoff"]

    code, err = passdown(world, "find")
    assert code == 0, err
    assert "took back the interrupted export of handoff" in err
    after = snapshot(world)
    assert not changed(before, after), f"after the recovery of {step}: {changed(before, after)}"
    assert journals(world) == [] and temp_files(world) == []

    # the next export goes as if nothing had happened, and changes all of it
    clean = run_door("cli", world)
    assert clean.code == 0, clean.error
    good = snapshot(world)
    assert active(good) not in (active(before), active(mid))
    assert good["file:.agent-handoff/HANDOFF.md"] != before["file:.agent-handoff/HANDOFF.md"]
    assert good["store:pointers"] != before["store:pointers"]


@pytest.mark.parametrize("step", COMMITTED)
def test_a_killed_export_whose_files_were_all_in_place_stands(world: World, step: str) -> None:
    before = snapshot(world)
    killed_export(world, step)
    new_id = str(journal_header(world)["handoff"])
    mid = snapshot(world)
    assert active(mid) == new_id
    if step == "after-last-rename":  # the commit's hidden links to the previous files
        assert temp_files(world)

    code, err = passdown(world, "find")
    assert code == 0, err
    assert f"finished the interrupted export of handoff {new_id}" in err
    after = snapshot(world)
    assert journals(world) == [] and temp_files(world) == []
    assert active(after) == new_id
    on_disk = json.loads((world.ws / ".agent-handoff" / "handoff.json").read_text())
    assert on_disk["id"] == new_id
    assert after["file:.agent-handoff/HANDOFF.md"] != before["file:.agent-handoff/HANDOFF.md"]
    history = [k for k in after if k.startswith("file:.agent-handoff/history/")]
    assert sorted(after[k] for k in history if k.endswith("-HANDOFF.md")) == [
        before["file:.agent-handoff/HANDOFF.md"]
    ]  # the previous handoff, kept in history/ as a finished export keeps it
    # the checkpoint is written after the commit: the kill came first, so it is the
    # previous one (the next export reads a little more; the handoff is the same)
    assert {k: v for k, v in after.items() if k.startswith("checkpoint:")} == {
        k: v for k, v in before.items() if k.startswith("checkpoint:")
    }
    statuses = {
        json.loads(v)["status"]
        for k, v in _pointers(world).items()
        if k.startswith("handoff-status/")
    }
    assert statuses == {"published", "superseded"}
    assert _pointers(world)[f"handoff-status/{new_id}"].count('"published"') == 1


def _pointers(world: World) -> dict[str, str]:
    import sqlite3

    with sqlite3.connect(world.data / "store.db") as conn:
        return dict(conn.execute("SELECT name, value FROM pointers").fetchall())


def test_the_next_export_takes_a_killed_one_back_first(world: World) -> None:
    """Without a `find` in between: the next export's prepare already reads the active
    handoff from before the kill, so it publishes on top of it (no lost race)."""
    before = snapshot(world)
    killed_export(world, "between-renames")
    crashed = active(snapshot(world))

    clean = run_door("cli", world)
    assert clean.code == 0, clean.error
    assert "took back the interrupted export" in clean.error
    after = snapshot(world)
    assert active(after) not in (active(before), crashed)
    records = _record_ids(world)
    assert crashed not in records and active(before) in records
    new = json.loads((world.ws / ".agent-handoff" / "handoff.json").read_text())
    stored = json.loads(_record_body(world, str(active(after))))
    assert stored["package"]["previous_id"] == active(before)
    assert new["id"] == active(after)
    history = [k for k in after if k.startswith("file:.agent-handoff/history/")]
    # one copy of the previous HANDOFF.md, none of the killed export's half
    assert sorted(after[k] for k in history if k.endswith("-HANDOFF.md")) == [
        before["file:.agent-handoff/HANDOFF.md"]
    ]


def _record_ids(world: World) -> set[str]:
    import sqlite3

    with sqlite3.connect(world.data / "store.db") as conn:
        return {row[0] for row in conn.execute("SELECT id FROM records")}


def _record_body(world: World, record_id: str) -> str:
    import sqlite3

    with sqlite3.connect(world.data / "store.db") as conn:
        (body,) = conn.execute("SELECT body FROM records WHERE id = ?", (record_id,)).fetchone()
    return str(body)


def test_the_session_start_pickup_offers_the_handoff_from_before_the_kill(world: World) -> None:
    before = snapshot(world)
    previous = active(before)
    killed_export(world, "pointer-moved")
    assert active(snapshot(world)) != previous

    payload = {
        "hook_event_name": "SessionStart",
        "session_id": "another-session",
        "cwd": str(world.ws),
        "source": "startup",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "hook", "claude"],
        cwd=world.ws,
        env=world.env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "handed over from claude session" in context
    log = (world.data / "logs" / "hooks.log").read_text().splitlines()
    assert log[-1].split()[1:5] == ["pickup", "claude", "claimed", str(previous)]
    after = snapshot(world)
    assert active(after) == previous and journals(world) == []
    assert json.loads(_pointers(world)[f"handoff-status/{previous}"])["status"] == "claimed"
    # nothing else moved: the files and checkpoints are those of before the kill
    assert [k for k in changed(before, after) if not k.startswith("store:")] == []


@contextmanager
def paused_export(world: World, tmp_path: Path, step: str) -> Iterator[tuple[Path, str]]:
    """`passdown export` stopped at `step` (alive, its journal in place): yields the
    file that lets it go on, and the id the store's active pointer names meanwhile. The
    export must then finish cleanly."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = with_site(
        world, tmp_path, PAUSER, PAUSE_AT=step, PAUSE_READY=str(ready), PAUSE_GO=str(go)
    )
    exporter = subprocess.Popen(
        [sys.executable, "-m", "passdown", "export", "--from", "claude"],
        cwd=world.ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert exporter.poll() is None, exporter.communicate()
            assert time.monotonic() < deadline, f"the export never reached {step}"
            time.sleep(0.05)
        moving = active(snapshot(world))
        assert moving is not None
        yield go, moving
    finally:
        go.touch()
        _, err = exporter.communicate(timeout=120)
    assert exporter.returncode == 0, err
    assert journals(world) == []


def test_a_live_exporters_journal_is_left_alone(world: World, tmp_path: Path) -> None:
    with paused_export(world, tmp_path, "between-renames") as (_go, moving):
        paused = snapshot(world)
        (journal,) = journals(world)

        code, err = passdown(world, "find")  # another process opens the store meanwhile
        assert code == 0, err
        assert "interrupted export" not in err
        assert journals(world) == [journal]
        assert not changed(paused, snapshot(world))  # nothing taken back under its feet
    new = json.loads((world.ws / ".agent-handoff" / "handoff.json").read_text())
    assert active(snapshot(world)) == new["id"] == moving
    assert temp_files(world) == []


def test_the_crash_hook_is_inert_without_its_variable(world: World) -> None:
    """The same export without PASSDOWN_TEST_CRASH_AT finishes and leaves no journal."""
    assert "PASSDOWN_TEST_CRASH_AT" not in world.env
    clean = run_door("cli", world)
    assert clean.code == 0, clean.error
    assert journals(world) == []
    assert (world.data / "journal").is_dir()  # the export did write (and remove) one


def test_a_failure_after_the_publish_is_taken_back_to_the_byte(
    world: World, tmp_path: Path
) -> None:
    """In-process: the last rename fails once the package is published. The files come
    back from the commit's kept links, the store through the journal, each pointer with
    the time it had (not just its value), and no journal is left behind."""
    before = snapshot(world)
    code, err = passdown(
        world, "export", "--from", "claude", env=with_site(world, tmp_path, FAILER)
    )
    assert code == 8, err
    assert "No space left on device" in err
    after = snapshot(world)
    assert not changed(before, after), changed(before, after)
    assert journals(world) == [] and temp_files(world) == []


def test_a_killed_export_without_a_store_gets_its_files_back(world: World) -> None:
    before = snapshot(world)
    code, err = passdown(
        world,
        "export",
        "--from",
        "claude",
        "--no-store",
        env={**world.env, "PASSDOWN_TEST_CRASH_AT": "between-renames"},
    )
    assert code == -9, err
    assert changed(before, snapshot(world)) and journal_header(world)["store"] is None

    code, err = passdown(world, "find")  # whichever store it opens: files-only journals too
    assert code == 0, err
    assert "took back the interrupted export" in err
    assert not changed(before, snapshot(world))
    assert journals(world) == [] and temp_files(world) == []


PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)


def _pg_rows(schema: str) -> dict[str, str]:
    import psycopg
    from psycopg import sql

    state = {}
    with psycopg.connect(PG_URL) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        for table, order in (
            ("records", "project, id"),
            ("record_history", "project, id, version"),
            ("pointers", "project, name"),
        ):
            rows = conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            state[table] = json.dumps(rows, default=str)
    return state


@pytest.mark.postgres
@pytest.mark.parametrize("step", ["pointer-moved", "between-renames"])
def test_a_killed_export_is_taken_back_in_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The same, with the team store: rows (their times included) as before the kill."""
    schema = f"test_{uuid.uuid4().hex[:16]}"
    monkeypatch.setenv("PASSDOWN_STORE", f"{PG_URL}?schema={schema}")
    try:
        world = make_world(tmp_path, tmp_path / "data", monkeypatch)
        rows, files = _pg_rows(schema), _files(world)
        killed_export(world, step)
        assert _pg_rows(schema)["pointers"] != rows["pointers"]

        code, err = passdown(world, "find")
        assert code == 0, err
        assert "took back the interrupted export" in err
        assert _pg_rows(schema) == rows
        assert _files(world) == files and journals(world) == []
    finally:
        import psycopg
        from psycopg import sql

        with psycopg.connect(PG_URL, autocommit=True) as conn:
            drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            conn.execute(drop)


def _files(world: World) -> dict[str, str]:
    root = world.ws / ".agent-handoff"
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
