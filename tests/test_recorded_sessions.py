"""Sessions recorded from the real Claude Code and Codex CLIs, read end to end."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from passdown._extract import extract
from passdown._pipeline import Selection, build_handoff
from passdown._render import render_markdown
from passdown.agents import get_agent
from recorded import Recorded, params


def _git(ws: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(ws), *args],
        check=True,
        capture_output=True,
        env=env,
    )


def _workspace_like_recording(rec: Recorded, ws: Path) -> Path:
    """A git workspace whose status matches the one the recording left behind."""
    ws.mkdir(parents=True)
    _git(ws, "init", "-q", "-b", "main")
    porcelain = rec.expected.get("git_after", {}).get("status_porcelain", [])
    tracked = [line[3:] for line in porcelain if not line.startswith("??")]
    for name in tracked:
        (ws / name).write_text("original\n")
    (ws / "README.md").write_text("# calc\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "initial")
    for line in porcelain:
        (ws / line[3:]).write_text("changed\n")
    return ws


@pytest.mark.parametrize("rec", params())
def test_discovery_finds_the_recorded_session(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec.install(tmp_path / "store", monkeypatch)
    agent = get_agent(rec.agent)
    refs = agent.sessions(Path(rec.expected["workspace"]))
    assert [r.session_id for r in refs] == [rec.expected["session_id"]]
    assert refs[0].cwd == rec.expected["workspace"]
    # another workspace sees nothing, and a sub-folder session would count as inside
    assert agent.sessions(Path("/tmp/some-other-workspace")) == []


@pytest.mark.parametrize("rec", params())
def test_a_recorded_session_moves_into_a_workspace_of_the_tests_own(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`install` with `workspaces`: the session names, and is found in, a workspace made
    in the test's folder, so nothing needs the recorded one under /tmp/passdown-rec."""
    path = rec.install(tmp_path / "store", monkeypatch, tmp_path / "workspaces")
    ws = rec.workspace_in(tmp_path / "workspaces")
    assert ws.is_dir()
    agent = get_agent(rec.agent)
    refs = agent.sessions(ws)
    assert [r.session_id for r in refs] == [rec.expected["session_id"]]
    assert refs[0].cwd == str(ws)
    assert agent.ref_for_path(path).session_id == rec.expected["session_id"]
    assert agent.sessions(Path(rec.expected["workspace"])) == []


@pytest.mark.parametrize("rec", params())
def test_extraction_matches_what_the_agent_did(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = rec.install(tmp_path / "store", monkeypatch)
    agent = get_agent(rec.agent)
    transcript = agent.read(agent.ref_for_path(path))
    ex = extract(transcript.events(), workspace=rec.expected["workspace"])
    exp = rec.expected
    assert ex.task.original_request == exp["original_request"]
    assert ex.task.latest_user_message == exp["latest_user_message"]
    assert ex.task.latest_progress == exp["final_assistant_message"]
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        (p["subject"], p["status"]) for p in exp["plan"]
    ]
    tool_files = {f.path for f in ex.state.files_touched}
    assert tool_files == set(exp["files_written"]) | set(exp["files_edited"])
    assert [f.path for f in ex.state.failed_edits] == exp["failed_edits"]
    assert not set(exp["failed_edits"]) & tool_files, "a failed edit touched nothing"
    # the session's own commands; a sub-agent's are attributed to it (`by`)
    assert [(c.command, c.exit_code) for c in ex.state.commands if c.by is None] == [
        (c["command"], c["exit_code"]) for c in exp["commands"]
    ]
    failing = exp.get("failing_command")
    if failing:
        assert ex.state.last_failure is not None
        assert ex.state.last_failure.command == failing["command"]
        assert ex.state.last_failure.exit_code == failing["exit_code"]
        assert failing["error_line_contains"] in (ex.state.last_failure.error or "")
    if exp.get("version_in_session", True):  # pi's files record only their format version
        assert transcript.info.agent_version == exp["cli_version"]
    assert transcript.info.session_id == exp["session_id"]
    assert transcript.sha256 and len(transcript.sha256) == 64
    assert transcript.diagnostics.bad_lines == 0
    assert not transcript.diagnostics.torn_last_line


@pytest.mark.parametrize("rec", params())
def test_hidden_and_subagent_text_stays_out(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = rec.install(tmp_path / "store", monkeypatch)
    agent = get_agent(rec.agent)
    ref = agent.ref_for_path(path)
    handoff = build_handoff(Selection(agent=agent, ref=ref, workspace=tmp_path / "ws"))
    dumped = handoff.to_json()
    for hidden in rec.expected.get("hidden_reasoning_planted", []):
        assert hidden not in dumped
    for text in rec.expected.get("subagent_only_text", []):
        assert all(text != e.text for e in handoff.task.transcript)
    for command in rec.expected.get("subagent_commands", []):
        # read from the sub-agent's transcript and attributed to it, never to the session
        runs = [c for c in handoff.state.commands if c.command == command]
        assert runs and all(c.by for c in runs), runs
    if rec.expected.get("subagent_only_text"):
        assert handoff.state.subagents, "the sub-agent's existence is noted"
        assert handoff.state.subagent_calls >= 1
    markdown = render_markdown(handoff)
    for command in rec.expected.get("subagent_commands", []):
        # HANDOFF.md says who ran it, and lists the sub-agent with what it was asked
        run = next(c for c in handoff.state.commands if c.command == command)
        assert f"(by sub-agent {run.by})" in markdown
        sub = next(s for s in handoff.state.subagents if s.id == run.by)
        assert f"- {sub.id}" in markdown.split("## Sub-agents", 1)[1]
    for secret in rec.expected["secrets"]:
        assert secret not in dumped
    if rec.expected.get("compaction", {}).get("triggered"):
        assert handoff.task.compactions >= 1
        assert rec.expected["compaction"]["summary_contains"] in (
            handoff.task.compaction_summary or ""
        )


@pytest.mark.parametrize("rec", params())
def test_cli_export_writes_a_safe_complete_handoff(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = rec.install(tmp_path / "store", monkeypatch)
    ws = _workspace_like_recording(rec, tmp_path / "ws")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "export",
            "--from",
            rec.agent,
            "--session",
            str(session),
            "--workspace",
            ".",
            "--json",
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    folder = ws / ".agent-handoff"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("HANDOFF.md", "handoff.json"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    data = json.loads((folder / "handoff.json").read_text())
    assert data["source"]["session_id"] == rec.expected["session_id"]
    assert data["workspace"]["head"] and len(data["workspace"]["head"]) == 40
    touched = {f["path"] for f in data["state"]["files_touched"]}
    assert set(rec.expected["files_touched"]) <= touched
    for shell_file in rec.expected.get("files_changed_by_shell", []):
        entry = next(f for f in data["state"]["files_touched"] if f["path"] == shell_file)
        assert "git" in entry["source"]
    markdown = (folder / "HANDOFF.md").read_text()
    assert rec.expected["original_request"].split(".")[0][:40] in markdown
    everything = proc.stdout + proc.stderr + markdown + json.dumps(data)
    for secret in rec.expected["secrets"]:
        assert secret not in everything
    assert summary["record_id"] == data["id"]
    exclude = (ws / ".git" / "info" / "exclude").read_text()
    assert "/.agent-handoff/" in exclude
