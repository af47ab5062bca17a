"""opencode: the recorded SQLite store, hand-made databases (revert, compaction, bad rows,
sub-agents), a database locked or in WAL mode while opencode writes, and launch argv."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from passdown._extract import extract
from passdown.agents.opencode import OpenCode
from passdown.errors import SessionNotFound, UsageError
from passdown.transcript import (
    Compaction,
    Message,
    PlanOp,
    SessionRef,
    SubagentNote,
    ToolCall,
    ToolResult,
)
from recorded import FIXTURES

RECORDED = FIXTURES / "opencode" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
WS = "/tmp/ws-oc"


@pytest.fixture
def recorded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    return home


def _db(home: Path) -> Path:
    return home / ".local" / "share" / "opencode" / "opencode.db"


# -- the recorded session ------------------------------------------------------------
def test_recorded_session_reads_into_events(recorded_home: Path) -> None:
    agent = OpenCode()
    ref = agent.ref_for_path(_db(recorded_home))
    assert ref.session_id == EXPECTED["session_id"]
    assert ref.cwd == EXPECTED["workspace"]
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == EXPECTED["turns"]  # opencode's "..." wrapping is undone
    bash = [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    assert [c.command for c in bash] == [c["command"] for c in EXPECTED["commands"]]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    assert [results[c.call_id].exit_code for c in bash] == [0, 0, 1, 0]
    failed_edit = next(
        e for e in events if isinstance(e, ToolCall) and e.paths and "README" in e.paths[0]
    )
    assert results[failed_edit.call_id].is_error
    assert "Could not find oldString" in (results[failed_edit.call_id].error or "")
    assert isinstance(events[-1], PlanOp)  # the todo table, the final plan
    info = transcript.info
    assert info.agent_version == "1.18.33"
    assert info.models == ["scripted-model"]
    assert info.title == "Scripted session"
    assert transcript.sha256 and len(transcript.sha256) == 64
    assert transcript.diagnostics.summary() == []


def test_recorded_fingerprint_is_stable_and_the_db_is_untouched(recorded_home: Path) -> None:
    db = _db(recorded_home)
    before = (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns)
    agent = OpenCode()
    sums = []
    for _ in range(2):
        transcript = agent.read(agent.ref_for_path(db))
        list(transcript.events())
        sums.append(transcript.sha256)
    assert sums[0] == sums[1]
    assert (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["opencode.db"]  # no -wal/-shm left


def test_session_selection_by_id_prefix_and_path(recorded_home: Path) -> None:
    agent = OpenCode()
    sid = EXPECTED["session_id"]
    assert agent.resolve(sid, None).session_id == sid
    assert agent.resolve(sid[:10], None).session_id == sid
    assert agent.resolve(str(_db(recorded_home)), None).session_id == sid
    with pytest.raises(UsageError):
        agent.resolve("/etc/passwd", None)
    with pytest.raises(SessionNotFound):
        agent.resolve("ses_nope", None)


def test_xdg_data_home_and_opencode_db_are_honoured(
    recorded_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "xdg"
    (data / "opencode").mkdir(parents=True)
    shutil.copy(_db(recorded_home), data / "opencode" / "opencode-dev.db")  # a channel db
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    agent = OpenCode()
    assert [r.path.name for r in agent.sessions(Path(EXPECTED["workspace"]))] == ["opencode-dev.db"]
    custom = tmp_path / "elsewhere" / "mine.db"
    custom.parent.mkdir()
    shutil.copy(_db(recorded_home), custom)
    monkeypatch.setenv("OPENCODE_DB", str(custom))
    assert [r.path for r in agent.sessions(None)] == [custom]
    assert agent.resolve(str(custom), None).session_id == EXPECTED["session_id"]


def test_missing_store_finds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "nothing"))
    agent = OpenCode()
    assert agent.sessions(None) == []
    with pytest.raises(SessionNotFound):
        agent.resolve("ses_x", None)


# -- hand-made databases ---------------------------------------------------------------
_SCHEMA = """
CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, directory TEXT NOT NULL,
  title TEXT NOT NULL, version TEXT NOT NULL, revert TEXT, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
"""


class Store:
    """A small opencode database built row by row."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.n = 0
        with closing(sqlite3.connect(path)) as conn:
            conn.executescript(_SCHEMA)

    def session(self, sid: str, *, parent: str | None = None, revert: dict | None = None) -> None:
        self._run(
            "INSERT INTO session VALUES (?,?,?,?,?,?,?,?)",
            (sid, parent, WS, "t", "9.9.9", json.dumps(revert) if revert else None, 1, 2),
        )

    def message(self, sid: str, role: str, *parts: dict | str, **extra: object) -> str:
        self.n += 1
        mid = f"msg_{self.n:04d}"
        data = {"role": role, "time": {"created": 1_700_000_000_000 + self.n}, **extra}
        self._run(
            "INSERT INTO message VALUES (?,?,?,?,?)", (mid, sid, self.n, self.n, json.dumps(data))
        )
        for part in parts:
            self.n += 1
            raw = part if isinstance(part, str) else json.dumps(part)
            self._run(
                "INSERT INTO part VALUES (?,?,?,?,?,?)",
                (f"prt_{self.n:04d}", mid, sid, self.n, self.n, raw),
            )
        return mid

    def _run(self, sql: str, args: tuple) -> None:
        with closing(sqlite3.connect(self.path)) as conn, conn:
            conn.execute(sql, args)


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _tool(call_id: str, tool: str, status: str, inp: dict, **state: object) -> dict:
    return {
        "type": "tool",
        "tool": tool,
        "callID": call_id,
        "state": {"status": status, "input": inp, **state},
    }


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    return Store(tmp_path / "data" / "opencode" / "opencode.db")


def _read(sid: str = "ses_a") -> tuple[list, object]:
    agent = OpenCode()
    ref = agent.resolve(sid, None)
    transcript = agent.read(ref)
    return list(transcript.events()), transcript


def test_bad_rows_unknown_parts_and_hidden_reasoning(store: Store) -> None:
    store.session("ses_a")
    store.message("ses_a", "user", _text("do it"))
    store.message(
        "ses_a",
        "assistant",
        {"type": "reasoning", "text": "SECRET-THOUGHT"},
        "{not json",
        {"type": "hologram"},
        _text("done"),
        modelID="m1",
    )
    events, transcript = _read()
    assert [(e.role, e.text) for e in events if isinstance(e, Message)] == [
        ("user", "do it"),
        ("assistant", "done"),
    ]
    assert "SECRET-THOUGHT" not in repr(events)
    diag = transcript.diagnostics
    assert diag.bad_lines == 1
    assert diag.unknown_types == {"part:hologram": 1}
    assert transcript.info.models == ["m1"]


def test_revert_drops_undone_messages(store: Store) -> None:
    store.session("ses_a")
    store.message("ses_a", "user", _text("first"))
    store.message("ses_a", "assistant", _text("answer one"))
    undone = store.message("ses_a", "user", _text("second, then undone"))
    store.message("ses_a", "assistant", _text("answer two"))
    with closing(sqlite3.connect(store.path)) as conn, conn:
        conn.execute("UPDATE session SET revert = ?", (json.dumps({"messageID": undone}),))
    events, transcript = _read()
    assert [e.text for e in events if isinstance(e, Message)] == ["first", "answer one"]
    assert any("reverted" in w for w in transcript.diagnostics.warnings)


def test_compaction_summary_plan_and_subagent(store: Store) -> None:
    store.session("ses_a")
    store.session("ses_child", parent="ses_a")
    store.message("ses_a", "user", _text("build it"))
    store.message(
        "ses_a",
        "assistant",
        _tool(
            "c1",
            "todowrite",
            "completed",
            {
                "todos": [
                    {"content": "one", "status": "completed", "priority": "high"},
                    {"content": "two", "status": "in_progress", "priority": "low"},
                ]
            },
        ),
        _tool("c2", "task", "completed", {"description": "look around"}),
        _tool("c3", "bash", "running", {"command": "sleep 100"}),
    )
    store.message("ses_a", "user", {"type": "compaction", "auto": True})
    store.message(
        "ses_a", "assistant", _text("Summary: one done, two going"), summary=True, mode="compaction"
    )
    store.message("ses_a", "user", _text('"keep going"'))
    events, _ = _read()
    comp = [e for e in events if isinstance(e, Compaction)]
    assert [(c.summary, c.trigger) for c in comp] == [("Summary: one done, two going", "auto")]
    assert [e.agent_id for e in events if isinstance(e, SubagentNote)] == ["ses_child"]
    assert [r.session_id for r in OpenCode().sessions(None)] == ["ses_a"]  # the child is not listed
    ex = extract(iter(events), workspace=WS)
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        ("one", "completed"),
        ("two", "in_progress"),
    ]
    assert ex.task.latest_user_message == "keep going"
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("sleep 100", None)]


def test_failed_edit_touches_nothing_and_patch_paths(store: Store) -> None:
    store.session("ses_a")
    store.message("ses_a", "user", _text("edit"))
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Add File: b.py\n+z\n*** End Patch"
    )
    store.message(
        "ses_a",
        "assistant",
        _tool(
            "e1", "edit", "error", {"filePath": f"{WS}/bad.py"}, error="Could not find oldString"
        ),
        _tool("e2", "apply_patch", "completed", {"patchText": patch}, output="ok"),
        _tool("e3", "write", "completed", {"filePath": f"{WS}/c.py", "content": "x"}, output="ok"),
    )
    events, _ = _read()
    ex = extract(iter(events), workspace=WS)
    assert [f.path for f in ex.state.files_touched] == ["a.py", "b.py", "c.py"]
    assert [f.path for f in ex.state.failed_edits] == ["bad.py"]


def test_a_session_missing_from_the_db_warns(store: Store) -> None:
    store.session("ses_a")
    ref = SessionRef(agent="opencode", session_id="ses_gone", path=store.path)
    transcript = OpenCode().read(ref)
    assert list(transcript.events()) == []
    assert any("not in the database" in w for w in transcript.diagnostics.warnings)
    gone = SessionRef(agent="opencode", session_id="ses_a", path=store.path.with_name("missing.db"))
    transcript = OpenCode().read(gone)
    assert list(transcript.events()) == []
    assert transcript.diagnostics.warnings


# -- opencode running: WAL mode and locks ------------------------------------------------
def test_wal_database_is_read_while_a_writer_holds_its_lock(recorded_home: Path) -> None:
    db = _db(recorded_home)
    with closing(sqlite3.connect(db)) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE session SET title = 'changing'")  # uncommitted
        agent = OpenCode()
        refs = agent.sessions(Path(EXPECTED["workspace"]))
        assert [r.session_id for r in refs] == [EXPECTED["session_id"]]
        transcript = agent.read(refs[0])
        messages = [e for e in transcript.events() if isinstance(e, Message)]
        assert messages and transcript.diagnostics.warnings == []
        assert transcript.info.title == "Scripted session"  # the committed state
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_wal_database_without_wal_and_shm_files(recorded_home: Path) -> None:
    db = _db(recorded_home)
    with closing(sqlite3.connect(db)) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    agent = OpenCode()
    transcript = agent.read(agent.ref_for_path(db))
    assert any(isinstance(e, Message) for e in transcript.events())


def test_exclusively_locked_database_is_read_without_locking(recorded_home: Path) -> None:
    db = _db(recorded_home)  # rollback-journal mode: an exclusive lock blocks readers
    locker = sqlite3.connect(db, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        agent = OpenCode()
        transcript = agent.read(_ref(agent, db))
        messages = [e for e in transcript.events() if isinstance(e, Message)]
        assert messages
        assert any("stayed locked" in w for w in transcript.diagnostics.warnings)
    finally:
        locker.execute("ROLLBACK")
        locker.close()


def _ref(agent: OpenCode, db: Path) -> SessionRef:
    # discovery would wait on the lock too; build the ref directly
    return SessionRef(agent=agent.name, session_id=EXPECTED["session_id"], path=db)


# -- launching --------------------------------------------------------------------------
def test_launch_argv_keeps_a_dash_prompt_one_argument(tmp_path: Path) -> None:
    agent = OpenCode()
    prompt = "-rf read .agent-handoff/HANDOFF.md"
    batch = agent.launch_spec(prompt, workspace=tmp_path, interactive=False)
    assert batch.argv == ["opencode", "run", "--", prompt]
    assert batch.cwd == tmp_path
    tui = agent.launch_spec(prompt, workspace=tmp_path, interactive=True)
    assert tui.argv == ["opencode", f"--prompt={prompt}"]
