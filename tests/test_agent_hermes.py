"""Hermes Agent 0.19: the recorded sessions (tests/fixtures/sessions/hermes/full from
tests/e2e/test_hermes_real.py, and hermes/resumed from tests/e2e/record_hermes_resumed.py: three
turns over `--continue`, the last one a 429 Hermes gave up on) through the reader and the
CLI; the database read without a file created beside it while a writer holds it;
compression chains, sub-agents, rewound and bad rows made in a copy; the hooks' config
and approval edits (byte-exact uninstall, a user's own `hooks:` refused) and payloads;
discovery, HERMES_HOME and the launch argv."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agent_entry_points import register
from passdown._extract import extract
from passdown.agents.hermes import HermesAgent, hermes_home
from passdown.errors import UsageError
from passdown.integrations._base import SESSION_START, InstallTarget
from passdown.integrations._hermes import HermesHooks
from passdown.transcript import Compaction, Message, SubagentNote, ToolCall
from recorded import FIXTURES

FULL = FIXTURES / "hermes" / "full"
RESUMED = FIXTURES / "hermes" / "resumed"
EXPECTED = json.loads((FULL / "expected.json").read_text())
FACTS = json.loads((RESUMED / "facts.json").read_text())
SID = EXPECTED["session_id"]
PASSDOWN = [sys.executable, "-m", "passdown"]


def _home(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(source, home, ignore=shutil.ignore_patterns("expected.json", "facts.json"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    return home


def _extract(agent: HermesAgent, workspace: str) -> tuple[list[object], object]:
    [ref] = agent.sessions(Path(workspace))
    events = list(agent.read(ref).events())
    return events, extract(iter(events), workspace=workspace)


def test_recorded_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(FULL, tmp_path, monkeypatch)
    agent = HermesAgent()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    assert ref.session_id == SID and ref.path == home / ".hermes" / "state.db"
    transcript = agent.read(ref)
    events = list(transcript.events())
    ex = extract(iter(events), workspace=EXPECTED["workspace"])
    assert ex.task.original_request == EXPECTED["original_request"]
    assert ex.task.latest_progress == EXPECTED["final_assistant_message"]
    # the second todo call was a merge of statuses only: the plan is the tool's result
    assert [{"subject": i.subject, "status": i.status} for i in ex.state.plan] == EXPECTED["plan"]
    assert [f.path for f in ex.state.files_touched] == EXPECTED["files_touched"]
    assert [(c.command, c.exit_code, c.ok) for c in ex.state.commands] == [
        (EXPECTED["failing_command"]["command"], 2, False)
    ]
    assert "No such file" in (ex.state.last_failure.error or "")  # type: ignore[union-attr]
    assert ex.ended.reason == "normal"
    info = transcript.info
    assert info.cwd == EXPECTED["workspace"] and info.models == [EXPECTED["model"]]
    assert info.started_at and info.updated_at and transcript.sha256
    assert transcript.diagnostics.summary() == []
    assert sorted(p.name for p in (home / ".hermes").iterdir()) == ["state.db"]


def test_recorded_handoff_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(FULL, tmp_path, monkeypatch)
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": register(tmp_path / "site"),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            *PASSDOWN,
            "export",
            "--from",
            "hermes",
            "--session",
            SID,
            *("--workspace", "."),
            *("--out", str(out), "--no-store"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "handoff.json").read_text())
    assert data["source"]["agent"] == "hermes" and data["source"]["session_id"] == SID
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert [{k: p[k] for k in ("subject", "status")} for p in data["state"]["plan"]] == (
        EXPECTED["plan"]
    )
    assert data["state"]["last_failure"]["exit_code"] == 2
    assert data["ended"]["reason"] == "normal"


def test_resumed_session_that_ended_on_a_429_hermes_gave_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(RESUMED, tmp_path, monkeypatch)
    events, ex = _extract(HermesAgent(), FACTS["workspace"])
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == FACTS["turns"]  # --continue kept one session
    edits = [(e.action, e.paths) for e in events if isinstance(e, ToolCall) and e.paths]
    assert edits == [("write", ("notes.txt",)), ("edit", ("notes.txt",))]
    assert ex.ended.reason == "rate_limit"  # type: ignore[attr-defined]
    assert "HTTP 429" in (ex.ended.message or "")  # type: ignore[attr-defined]
    # without the dump, or with the session going on after it: no failure to report
    [dump] = (home / ".hermes" / "sessions").iterdir()
    moved = dump.rename(home / "elsewhere.json")
    assert _extract(HermesAgent(), FACTS["workspace"])[1].ended.reason == "normal"  # type: ignore[attr-defined]
    data = json.loads(moved.read_text())
    data["timestamp"] = "2020-01-01T00:00:00"
    dump.write_text(json.dumps(data))
    assert _extract(HermesAgent(), FACTS["workspace"])[1].ended.reason == "normal"  # type: ignore[attr-defined]


def _db(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / ".hermes" / "state.db", isolation_level=None)


def _add_session(conn: sqlite3.Connection, sid: str, parent: str | None, cwd: str) -> None:
    conn.execute(
        "INSERT INTO sessions (id, source, parent_session_id, started_at, cwd, title)"
        " VALUES (?, 'cli', ?, 1800000000.5, ?, ?)",
        (sid, parent, cwd, f"title {sid}"),
    )


def _add_message(
    conn: sqlite3.Connection, sid: str, role: str, content: str, **cols: object
) -> None:
    names = ", ".join(["session_id", "role", "content", "timestamp", *cols])
    marks = ", ".join("?" * (4 + len(cols)))
    conn.execute(
        f"INSERT INTO messages ({names}) VALUES ({marks})",
        (sid, role, content, 1800000001.0, *cols.values()),
    )


def test_a_compressed_chain_is_one_session_and_children_are_subagents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(FULL, tmp_path, monkeypatch)
    ws = EXPECTED["workspace"]
    with _db(home) as conn:
        conn.execute("UPDATE sessions SET end_reason = 'compression' WHERE id = ?", (SID,))
        _add_session(conn, "cont", SID, ws)
        _add_message(conn, "cont", "user", "[summary of the earlier part]")
        _add_message(conn, "cont", "user", "keep going")
        _add_message(conn, "cont", "assistant", "rewound reply", active=0)
        _add_message(conn, "cont", "assistant", "Going on.")
        _add_message(conn, "cont", "assistant", "", tool_calls="not json")
        _add_session(conn, "child", "cont", ws)
    agent = HermesAgent()
    assert [r.session_id for r in agent.sessions(Path(ws))] == ["cont"]
    transcript = agent.read(agent.sessions(Path(ws))[0])
    events = list(transcript.events())
    assert sum(isinstance(e, Compaction) for e in events) == 1
    said = [e.text for e in events if isinstance(e, Message)]
    assert said[0] == EXPECTED["original_request"] and said[-1] == "Going on."
    assert "rewound reply" not in said
    assert [e.agent_id for e in events if isinstance(e, SubagentNote)] == ["child"]
    assert transcript.diagnostics.bad_lines == 1
    ex = extract(iter(events), workspace=ws)
    assert ex.task.original_request == EXPECTED["original_request"]
    assert ex.task.latest_user_message == "keep going"
    assert [i.subject for i in ex.state.plan] == [p["subject"] for p in EXPECTED["plan"]]


def test_reads_a_database_hermes_is_writing_without_creating_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(FULL, tmp_path, monkeypatch)
    folder = home / ".hermes"
    writer = _db(home)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")  # Hermes in the middle of a write
    _add_message(writer, SID, "user", "not committed yet")
    before = sorted(p.name for p in folder.iterdir())
    try:
        events, ex = _extract(HermesAgent(), EXPECTED["workspace"])
        assert "not committed yet" not in [e.text for e in events if isinstance(e, Message)]
        assert ex.task.original_request == EXPECTED["original_request"]  # type: ignore[attr-defined]
        assert sorted(p.name for p in folder.iterdir()) == before
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_bad_databases_give_no_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "h"))
    assert HermesAgent().sessions(None) == []  # no database
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "state.db").write_bytes(b"not a database" * 100)
    assert HermesAgent().sessions(None) == []
    assert not (tmp_path / "h" / "state.db-wal").exists()


def test_home_folder_per_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from passdown import _platform

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    assert hermes_home() == tmp_path / ".hermes"
    monkeypatch.setattr(_platform, "is_windows", lambda: True)
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "Local"))
    assert hermes_home() == tmp_path / "Local" / "hermes"
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "custom"))
    assert HermesAgent().store_roots() == [tmp_path / "custom"]


def test_launch_argv_keeps_a_dash_prompt_one_argument(tmp_path: Path) -> None:
    agent = HermesAgent()
    spec = agent.launch_spec("-c is no flag", workspace=tmp_path, interactive=False)
    assert spec.argv == ["hermes", "chat", "-Q", "--query=-c is no flag"]
    assert agent.launch_spec("go", workspace=tmp_path, interactive=True).argv == [
        "hermes",
        "chat",
        "--query=go",
    ]


# -- hooks -----------------------------------------------------------------------------------
ORIGINAL = "model:\n  default: x\n"


def _plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, object, object]]:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "h"))
    return HermesHooks().plan(InstallTarget("hermes", "user", tmp_path, "/opt/my bin/passdown"))  # type: ignore[return-value]


def test_hook_install_is_idempotent_and_uninstall_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [(config, install, uninstall), (allowlist, approve, revoke)] = _plan(tmp_path, monkeypatch)
    assert config == tmp_path / "h" / "config.yaml"
    assert allowlist == tmp_path / "h" / "shell-hooks-allowlist.json"
    for original in (ORIGINAL, None, "model: x"):
        installed = install(original)  # type: ignore[operator]
        assert installed.startswith(original or "")
        assert install(installed) == installed  # type: ignore[operator]
        restored = uninstall(installed)  # type: ignore[operator]
        assert restored == (original or "") + ("\n" if original == "model: x" else "")
    installed = install(ORIGINAL)  # type: ignore[operator]
    assert "\"'/opt/my bin/passdown' hook hermes\"" in installed
    for event in ("pre_llm_call", "on_session_end", "on_session_finalize"):
        assert f"  {event}:\n" in installed
    theirs = '{"approvals": [{"event": "on_session_end", "command": "/x.sh"}]}'
    approved = json.loads(approve(theirs))  # type: ignore[operator]
    assert [a["command"] for a in approved["approvals"]] == ["/x.sh"] + [
        "'/opt/my bin/passdown' hook hermes"
    ] * 3
    assert json.loads(revoke(approve(theirs))) == json.loads(theirs)  # type: ignore[operator]


def test_a_users_own_hooks_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [(_config, install, _u), _] = _plan(tmp_path, monkeypatch)
    with pytest.raises(UsageError, match="hooks"):
        install("hooks:\n  on_session_end:\n    - command: /x.sh\n")  # type: ignore[operator]
    with pytest.raises(UsageError, match="its own config") as refused:
        HermesHooks().plan(InstallTarget("hermes", "project", tmp_path, "passdown"))
    assert refused.value.hint == "install with --scope user"


def test_commands_payload_and_pickup_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [(config, install, _u), _] = _plan(tmp_path, monkeypatch)
    config.parent.mkdir(parents=True)
    config.write_text(install(ORIGINAL))  # type: ignore[operator]
    hooks = HermesHooks()
    target = InstallTarget("hermes", "user", tmp_path, "/opt/my bin/passdown")
    found = hooks.commands(target)
    assert [(r.what, r.program) for r in found] == [
        ("hook pre_llm_call", "/opt/my bin/passdown"),
        ("hook on_session_end", "/opt/my bin/passdown"),
        ("hook on_session_finalize", "/opt/my bin/passdown"),
    ]
    payload = hooks.payload(
        [],
        json.dumps(
            {"hook_event_name": "pre_llm_call", "session_id": "s", "cwd": "/w", "extra": {}}
        ),
    )
    assert hooks.event(payload) == SESSION_START and hooks.pickup_once_per_session
    assert hooks.session_spec(payload) == "s" and hooks.cwd(payload) == "/w"
    assert json.loads(hooks.context_output("read HANDOFF.md")) == {"context": "read HANDOFF.md"}


def _hook(env: dict[str, str], cwd: Path, payload: dict[str, object]) -> str:
    proc = subprocess.run(
        [*PASSDOWN, "hook", "hermes"],
        input=json.dumps(payload),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout


def test_hooks_through_the_cli_write_then_point_the_next_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`passdown hook hermes` as Hermes runs it: `on_session_end` writes the handoff of the
    session it names; a new session's `pre_llm_call` gets the pointer as `{"context"}`,
    once; a third session finds it claimed."""
    home = _home(FULL, tmp_path, monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data = tmp_path / "data"
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": register(tmp_path / "site"),
        "PASSDOWN_DATA_DIR": str(data),
    }
    end = {"hook_event_name": "on_session_end", "session_id": SID, "cwd": str(workspace)}
    assert _hook(env, workspace, {**end, "extra": {"completed": True}}) == ""
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["source"]["session_id"] == SID
    assert handoff["task"]["original_request"] == EXPECTED["original_request"]
    start = {"hook_event_name": "pre_llm_call", "cwd": str(workspace), "extra": {}}
    pointer = json.loads(_hook(env, workspace, {**start, "session_id": "next"}))["context"]
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in pointer
    assert f"hermes session {SID}" in pointer
    assert _hook(env, workspace, {**start, "session_id": "next"}) == ""  # its second turn
    assert _hook(env, workspace, {**start, "session_id": "third"}) == ""  # claimed
    log = (data / "logs" / "hooks.log").read_text()
    assert "ok hermes turn_complete" in log and "pickup hermes claimed" in log, log


def test_a_closed_wal_database_is_read_without_creating_its_side_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hermes keeps state.db in WAL mode; after it exits cleanly no -wal or -shm is left,
    and a reader in `mode=ro` would create both: passdown reads it immutable instead."""
    home = _home(FULL, tmp_path, monkeypatch)
    with _db(home) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    folder = home / ".hermes"
    assert sorted(p.name for p in folder.iterdir()) == ["state.db"]
    _events, ex = _extract(HermesAgent(), EXPECTED["workspace"])
    assert ex.task.original_request == EXPECTED["original_request"]  # type: ignore[attr-defined]
    assert sorted(p.name for p in folder.iterdir()) == ["state.db"]
