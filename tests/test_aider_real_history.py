"""Aider 0.86.2's real history file (tests/fixtures/sessions/aider/real, written by
tests/e2e/test_aider_real.py's run of the pinned CLI): two runs, lines ending in aider's
two spaces, the version and model in each run's header."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from passdown._extract import extract
from passdown._pipeline import select_session
from passdown.agents import get_agent

RECORDED = Path(__file__).parent / "fixtures" / "sessions" / "aider" / "real"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(RECORDED / "aider.chat.history.md", ws / ".aider.chat.history.md")
    return ws


def test_each_run_is_read_as_it_was_written(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    agent = get_agent("aider")
    newest, first = agent.sessions(ws)
    transcript = agent.read(newest)
    ex = extract(transcript.events(), workspace=str(ws))
    assert transcript.info.agent_version == "0.86.2"
    assert transcript.info.models == ["openai/scripted-model"]
    assert ex.task.original_request == "Add a second line saying goodbye."
    assert ex.task.latest_progress is not None
    assert "Goodbye!" in ex.task.latest_progress
    assert not ex.task.latest_progress.endswith(" ")
    assert [f.path for f in ex.state.files_touched] == ["hello.txt"]
    earlier = extract(agent.read(first).events(), workspace=str(ws))
    assert earlier.task.original_request == "Create hello.txt with a greeting."


def test_aiders_own_files_are_not_the_tasks_work(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (ws / ".aider.input.history").write_text("# 2026-12-01\n+Add a second line\n")
    (ws / ".aider.tags.cache.v4").mkdir()
    (ws / ".aider.tags.cache.v4" / "cache.db").write_bytes(b"\0")
    (ws / "hello.txt").write_text("Hello, world!\nGoodbye!\n")
    (ws / "notes.txt").write_text("made by someone else\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    from passdown._pipeline import build_handoff

    handoff = build_handoff(select_session("aider", None, ws))
    touched = [f.path for f in handoff.state.files_touched]
    meanwhile = [f.path for f in handoff.state.workspace_changes]
    assert "hello.txt" in touched
    assert meanwhile == ["notes.txt"]
    assert not [p for p in touched + meanwhile if p.startswith(".aider")]


def _export(ws: Path, spec: str, data: Path) -> subprocess.CompletedProcess[str]:
    argv = ["export", "--from", "aider", "--session", spec, "--no-store", "--json"]
    return subprocess.run(
        [sys.executable, "-m", "passdown", *argv],
        cwd=ws,
        env={**os.environ, "PASSDOWN_DATA_DIR": str(data)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_history_file_itself_is_a_session_spec(tmp_path: Path) -> None:
    """`--session PATH` as for every agent: the file's last run (it was taken for a run
    id: "no aider run '<path>'", exit 3)."""
    ws = _workspace(tmp_path)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    history = ws / ".aider.chat.history.md"
    for spec in (str(history), "./.aider.chat.history.md"):
        proc = _export(ws, spec, tmp_path / "data")
        assert proc.returncode == 0, proc.stderr
        handoff = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())
        assert handoff["task"]["original_request"] == "Add a second line saying goodbye."
        assert handoff["source"]["session_id"].endswith("#2")
    outside = tmp_path / "elsewhere" / ".aider.chat.history.md"
    outside.parent.mkdir()
    shutil.copy(history, outside)
    proc = _export(ws, str(outside), tmp_path / "data")
    assert proc.returncode == 2 and "outside" in proc.stderr, proc.stderr


def test_handing_off_reads_the_last_run_without_listing_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history of many runs (one per aider start, over months): choosing the session to
    hand off finds the last run in one pass without a reference per run; listing still
    gives every run, and an earlier one is still chosen by its number."""
    ws = _workspace(tmp_path)
    recorded = (ws / ".aider.chat.history.md").read_text()
    runs = recorded.split("\n# aider chat started at ")
    earlier = "".join(
        f"\n# aider chat started at 2026-11-01 10:00:{k:02d}\n\n#### run {k}  \n\nok\n"
        for k in range(50)
    )
    (ws / ".aider.chat.history.md").write_text(earlier + "\n# aider chat started at " + runs[-1])
    agent = get_agent("aider")
    assert len(agent.sessions(ws)) == 51
    with monkeypatch.context() as patched:
        patched.setattr(type(agent), "discover", lambda *a: pytest.fail("listed every run"))
        selection = select_session("aider", None, ws)
        assert selection.ref.session_id.endswith("#51")
        assert agent.ref_for_path(ws / ".aider.chat.history.md").session_id.endswith("#51")
    last = extract(agent.read(selection.ref).events(), workspace=str(ws))
    assert last.task.original_request == "Add a second line saying goodbye."
    seventh = select_session("aider", "7", ws)
    assert (
        extract(agent.read(seventh.ref).events(), workspace=str(ws)).task.original_request
        == "run 6"
    )
