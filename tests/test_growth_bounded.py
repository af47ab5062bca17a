"""A grown session of every agent and every slice kind: the handoff stays inside its
budgets, extraction keeps a bounded number of items, and what the next agent needs most
(the first request, the current plan's open items, the last failure) survives.

The sessions are the recorded ones (tests/fixtures/sessions/) grown by repeating one kind
of slice (benchmarks/growslice.py: the whole middle, plan operations with the task ids
reused, a failing command, file edits, sub-agent spawns, compactions, user prompts) to
SIZE bytes, a size one export reads in about a second. No timing is asserted here: the
time ratios between sizes are benchmarks/bench_growth.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import extract
from passdown._pipeline import Selection, build_handoff
from passdown._render import render_markdown
from passdown.agents import get_agent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import growslice

SIZE = 2 * 1024 * 1024

# The handoff's budgets. These are the defaults of helper "bounded"'s
# `passdown.handoff.Limits`; swap in `Limits().max_plan_items`, `.max_commands`,
# `.max_files`, `.max_subagents` and `.max_doc_chars` once its budgets land on main.
MAX_PLAN_ITEMS = 40  # Limits().max_plan_items
MAX_COMMANDS = 20  # Limits().max_commands
MAX_FILES = 50  # Limits().max_files
MAX_SUBAGENTS = 20  # Limits().max_subagents
MAX_DOC_CHARS = 100_000  # Limits().max_doc_chars (HANDOFF.md as a whole)
MAX_JSON_BYTES = 256 * 1024  # handoff.json: the lists above cut to budget leave it far below
# What extraction itself keeps, before the budgets cut further: `transcript.PLAN_KEEP`,
# `handoff.COMMANDS_KEEP`, `handoff.FILES_KEEP`, `handoff.SUBAGENTS_KEEP` of "bounded".
KEEP_PLAN, KEEP_COMMANDS, KEEP_FILES, KEEP_SUBAGENTS = 1000, 100, 2000, 200

CASES = [
    pytest.param(agent, kind, id=f"{agent}-{kind}")
    for agent in growslice.agents()
    for kind in growslice.kinds_for(agent)
]


def _grown(agent: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    grown = growslice.grow(agent, kind, SIZE, tmp_path / "store")
    monkeypatch.setenv(grown.env_var, str(grown.root))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    assert grown.copies > 10, "the slice was repeated"
    return grown


def _open_items(agent: str, scenario: str) -> list[str]:
    plan = growslice.expected(agent, scenario).get("plan") or []
    assert isinstance(plan, list)
    return [p["subject"] for p in plan if p["status"] in ("pending", "in_progress", "blocked")]


@pytest.mark.parametrize(("agent", "kind"), CASES)
def test_grown_session_stays_in_budget(
    agent: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = _grown(agent, kind, tmp_path, monkeypatch)
    reader = get_agent(agent)
    ref = reader.ref_for_path(grown.session)
    workspace = str(growslice.expected(agent, grown.scenario)["workspace"])
    kept = extract(reader.read(ref).events(), workspace=workspace).state
    assert len(kept.plan) <= KEEP_PLAN
    assert len(kept.commands) <= KEEP_COMMANDS
    assert len(kept.files_touched) <= KEEP_FILES
    assert len(kept.subagents) <= KEEP_SUBAGENTS

    handoff = build_handoff(Selection(agent=reader, ref=ref, workspace=tmp_path / "ws"))
    markdown = render_markdown(handoff)
    state = handoff.state

    assert len(handoff.to_json().encode()) < MAX_JSON_BYTES
    assert len(markdown) <= MAX_DOC_CHARS
    assert len(state.plan) <= MAX_PLAN_ITEMS
    assert len(state.commands) <= MAX_COMMANDS
    assert len(state.files_touched) <= MAX_FILES
    assert len(state.subagents) <= MAX_SUBAGENTS

    expected = growslice.expected(agent, grown.scenario)
    first = str(expected["original_request"])[:60]  # before the secrets it carries
    assert (handoff.task.original_request or "").startswith(first)
    assert first in markdown
    subjects = [p.subject for p in state.plan]
    for item in _open_items(agent, grown.scenario):
        assert item in subjects, f"open item {item!r} left out"
        assert item in markdown
    failing = expected.get("failing_command")
    if isinstance(failing, dict):
        assert state.last_failure is not None
        assert state.last_failure.command == failing["command"]
        assert failing["command"] in markdown
