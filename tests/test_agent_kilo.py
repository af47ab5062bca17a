"""Kilo Code: the session recorded from the real `kilo` 7.7.9 (tests/fixtures/sessions/
kilo/full), read without the CLI: its request, `todowrite` plan and `todo` table, files,
the failing command's exit code; where Kilo's store is (apart from opencode's); launch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from passdown._extract import extract
from passdown.agents.base import Agent
from passdown.agents.kilo import KiloCode
from passdown.agents.opencode import OpenCode
from passdown.transcript import Message, PlanOp, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "kilo" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
OPENCODE_RECORDED = FIXTURES / "opencode" / "full"


@pytest.fixture
def kilo_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_DATA_HOME", "KILO_DB", "OPENCODE_DB"):
        monkeypatch.delenv(var, raising=False)
    return home


def test_the_recorded_session_is_found_by_its_workspace(kilo_home: Path) -> None:
    agent = KiloCode()
    ref = agent.newest(Path(EXPECTED["workspace"]))
    assert ref is not None
    assert ref.session_id == EXPECTED["session_id"]
    assert ref.path == kilo_home / ".local" / "share" / "kilo" / "kilo.db"
    assert ref.agent == "kilo"
    assert agent.sessions(Path("/somewhere/else")) == []


def test_the_recorded_session_reads_fact_by_fact(kilo_home: Path) -> None:
    agent = KiloCode()
    ref = agent.resolve(EXPECTED["session_id"][:12], None)
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == EXPECTED["turns"]  # the "..." Kilo wraps a prompt in is undone
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    commands = [(c.command, results[c.call_id].exit_code) for c in calls if c.action == "command"]
    assert commands == [(c["command"], c["exit_code"]) for c in EXPECTED["commands"]]
    failed = next(c for c in calls if c.action == "command" and results[c.call_id].exit_code)
    assert "FAILED (failures=1)" in (results[failed.call_id].error or "")
    plans = [c for c in calls if c.action == "plan"]
    assert [c.name for c in plans] == ["todowrite"] * 3
    assert isinstance(events[-1], PlanOp)  # the `todo` table: the final plan
    info = transcript.info
    assert (info.agent, info.agent_version, info.models) == ("kilo", "7.7.9", ["scripted-model"])
    assert transcript.diagnostics.summary() == []

    handoff = extract(agent.read(ref).events(), workspace=EXPECTED["workspace"])
    assert handoff.task.original_request == EXPECTED["original_request"]
    assert handoff.task.latest_progress == EXPECTED["final_assistant_message"]
    plan = [(p.subject, p.status) for p in handoff.state.plan]
    assert plan == [(p["subject"], p["status"]) for p in EXPECTED["plan"]]
    assert {f.path for f in handoff.state.files_touched} == set(EXPECTED["files_touched"])
    assert [f.path for f in handoff.state.failed_edits] == EXPECTED["failed_edits"]
    failure = handoff.state.last_failure
    assert failure is not None and failure.command == EXPECTED["failing_command"]["command"]
    assert (failure.exit_code, failure.resolved_later) == (1, True)  # fixed in turn 2
    assert handoff.ended.reason == "normal"  # Kilo keeps no record of a retried 429


def test_kilo_and_opencode_each_read_only_their_own_store(
    kilo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(
        OPENCODE_RECORDED, kilo_home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.json")
    )
    kilo = [r.session_id for r in KiloCode().sessions(None)]
    opencode = [r.session_id for r in OpenCode().sessions(None)]
    assert kilo == [EXPECTED["session_id"]]
    opencode_expected = json.loads((OPENCODE_RECORDED / "expected.json").read_text())
    assert opencode == [opencode_expected["session_id"]]


def test_kilo_db_and_xdg_data_home_move_the_store(
    kilo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = kilo_home / ".local" / "share" / "kilo" / "kilo.db"
    moved = tmp_path / "elsewhere" / "kilo-custom.db"
    moved.parent.mkdir()
    shutil.move(db, moved)
    assert KiloCode().sessions(None) == []
    monkeypatch.setenv("KILO_DB", str(moved))
    assert [r.path for r in KiloCode().sessions(None)] == [moved]
    assert OpenCode().sessions(None) == []  # OPENCODE_DB is opencode's, KILO_DB Kilo's
    monkeypatch.delenv("KILO_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "kilo").mkdir(parents=True)
    shutil.copy(moved, tmp_path / "xdg" / "kilo" / "kilo.db")
    agent = KiloCode()
    assert agent.store_roots() == [tmp_path / "xdg" / "kilo"]
    assert [r.session_id for r in agent.sessions(None)] == [EXPECTED["session_id"]]
    assert "$KILO_DB" in agent.store_hint()


@pytest.mark.parametrize("prompt", ["Take over: fix add()", "--help me", "-"])
def test_launch_argv_keeps_the_prompt_one_argument(prompt: str, tmp_path: Path) -> None:
    agent = KiloCode()
    run = agent.launch_spec(prompt, workspace=tmp_path, interactive=False)
    assert run.argv == ["kilo", "run", "--", prompt]
    tui = agent.launch_spec(prompt, workspace=tmp_path, interactive=True)
    assert tui.argv == ["kilo", f"--prompt={prompt}"]
    assert run.cwd == tui.cwd == tmp_path


def test_kilos_plugin_is_opencodes_under_kilos_names(tmp_path: Path) -> None:
    from passdown.integrations import InstallTarget, integration_for
    from passdown.integrations._kilo import KILO_PLUGIN

    hooks = integration_for("kilo")
    assert hooks.agent == "kilo" and hooks.events == integration_for("opencode").events
    assert "opencode" not in KILO_PLUGIN  # every name replaced, or this fails loudly
    assert '["hook", "kilo", JSON.stringify(payload)]' in KILO_PLUGIN
    target = InstallTarget("kilo", "project", tmp_path, "passdown")
    [(path, _add, _remove)] = hooks.plan(target)
    assert path == tmp_path / ".kilo" / "plugins" / "passdown.js"


def test_the_cli_lists_kilo_and_exports_its_session(kilo_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    listed = subprocess.run(
        [sys.executable, "-m", "passdown", "agents", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    agents = {a["name"]: a for a in json.loads(listed.stdout)}
    assert {"kilo", "droid", "opencode"} <= set(agents)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "export",
            "--from",
            "kilo",
            "--session",
            EXPECTED["session_id"],
            "--workspace",
            str(workspace),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "handoff.json").read_text())
    assert data["source"]["agent"] == "kilo"
    assert data["source"]["session_id"] == EXPECTED["session_id"]
    plan = {p["subject"]: p["status"] for p in data["state"]["plan"]}
    assert plan == {p["subject"]: p["status"] for p in EXPECTED["plan"]}
    for secret in EXPECTED["secrets"]:
        assert secret not in (out / "HANDOFF.md").read_text() + json.dumps(data)


def test_every_agent_class_is_its_own_registration() -> None:
    assert issubclass(KiloCode, OpenCode) and issubclass(KiloCode, Agent)
    assert (KiloCode.name, KiloCode.program, KiloCode.data_folder) == ("kilo", "kilo", "kilo")
    assert (OpenCode.name, OpenCode.data_folder) == ("opencode", "opencode")
