"""Auggie's and Continue CLI's sessions are one JSON document each (not lines that
benchmarks/growslice.py can repeat): grown by benchmarks/growdoc.py to thousands of
turns of the recorded shape (a plan change, a file written, a failing command), the
handoff keeps bounded lists, counts what it leaves out and keeps what matters most (the
first request, the last failure). Timing is benchmarks/growdoc.py's, not asserted here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from passdown._pipeline import Selection, build_handoff
from passdown._render import render_markdown
from passdown.agents import get_agent
from passdown.handoff import Limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import growdoc

TURNS = 2500
LIMITS = Limits()


@pytest.mark.parametrize("agent", ["auggie", "continue"])
def test_a_grown_document_stays_in_budget(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)
    monkeypatch.delenv("PASSDOWN_AUGGIE_DIR", raising=False)
    path = growdoc.write(agent, TURNS, home)
    reader = get_agent(agent)
    [ref] = reader.sessions(Path(growdoc.WS))
    assert ref.path == path
    handoff = build_handoff(Selection(agent=reader, ref=ref, workspace=tmp_path / "ws"))
    state, markdown = handoff.state, render_markdown(handoff)
    assert handoff.task.original_request == "the first request"
    assert len(markdown) <= LIMITS.max_doc_chars
    assert len(state.plan) <= LIMITS.max_plan_items
    if agent == "auggie":  # add_tasks adds: thousands of tasks, the budget lists 40
        assert len(state.plan) + state.omitted.plan == TURNS  # each task listed or counted
    else:  # Checklist replaces: the latest list, whole
        assert [p.subject for p in state.plan] == [f"task {TURNS - 1}", f"task {TURNS}"]
    assert len(state.commands) <= LIMITS.max_commands and state.omitted.commands > 0
    assert len(state.files_touched) <= LIMITS.max_files and state.omitted.files_touched > 0
    assert state.last_failure is not None
    assert state.last_failure.command == f"{growdoc.FAILING} {TURNS - 1}"
    assert state.last_failure.exit_code == 2
    assert f"{growdoc.FAILING} {TURNS - 1}" in markdown
    assert handoff.ended.reason == "normal"
