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

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import extract
from passdown._pipeline import Selection, build_handoff
from passdown._render import render_markdown
from passdown.agents import get_agent
from passdown.handoff import (
    COMMANDS_KEEP,
    FILES_KEEP,
    SUBAGENTS_KEEP,
    Limits,
)
from passdown.transcript import PLAN_KEEP

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import growslice

SIZE = 2 * 1024 * 1024

LIMITS = Limits()  # the default budgets a handoff is cut to
# handoff.json: its lists cut to budget (and long texts to theirs) leave it far below this
MAX_JSON_BYTES = 256 * 1024

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
    # the replay's bound (transcript.Plan): past 2 * PLAN_KEEP items it cuts back to
    # PLAN_KEEP; a plan whose items are all new (gptme's `add` lines repeated) reaches it
    assert len(kept.plan) <= (2 * PLAN_KEEP if agent == "gptme" else PLAN_KEEP)
    assert len(kept.commands) <= COMMANDS_KEEP
    assert len(kept.files_touched) <= FILES_KEEP
    assert len(kept.subagents) <= SUBAGENTS_KEEP

    handoff = build_handoff(Selection(agent=reader, ref=ref, workspace=tmp_path / "ws"))
    markdown = render_markdown(handoff)
    state = handoff.state

    assert len(handoff.to_json().encode()) < MAX_JSON_BYTES
    assert len(markdown) <= LIMITS.max_doc_chars
    assert len(state.plan) <= LIMITS.max_plan_items
    assert len(state.commands) <= LIMITS.max_commands
    assert len(state.files_touched) <= LIMITS.max_files
    assert len(state.subagents) <= LIMITS.max_subagents

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
    # what the budgets leave out is counted, not lost
    if (agent, kind) == ("claude", "plan"):  # the task ids of every copy are reused
        assert state.omitted.plan_set_aside >= 3 * (grown.copies - 1)
    if kind == "subagents":  # each spawn its own sub-agent, named by its own meta file
        assert state.subagent_calls == grown.copies
        assert len(state.subagents) + state.omitted.subagents == grown.copies
        assert {s.agent_type for s in state.subagents} == {"general-purpose"}
        assert len({s.id for s in state.subagents}) == len(state.subagents)


def test_each_codex_compaction_counts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex CLI writes a `compacted` item and a `context_compacted` event for one
    compaction; a session compacted N times hands off N, through the CLI a user runs."""
    grown = _grown("codex", "compactions", tmp_path, monkeypatch)
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "export",
            "--from",
            "codex",
            "--session",
            grown.session_arg,
            "--out",
            str(out),
            "--no-store",
            "--quiet",
            "--workspace",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    handoff = json.loads((out / "handoff.json").read_text())
    assert handoff["task"]["compactions"] == grown.copies
    assert "calc.py and its test written" in (handoff["task"]["compaction_summary"] or "")


EDITOR_CASES = [
    pytest.param(agent, kind, id=f"{agent}-{kind}")
    for agent, kinds in growslice.EDITOR_KINDS.items()
    for kind in kinds
]


@pytest.mark.parametrize(("agent", "kind"), EDITOR_CASES)
def test_grown_editor_chat_stays_in_budget(
    agent: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editors' chats (issue 24), grown the same way: a Copilot Chat log of requests
    or of one field set again and again, a Cline or Roo Code ui_messages.json repeating its
    middle: the handoff stays in budget and keeps the request, the open plan items and the
    last failure."""
    import editor_chats as ec

    grown = growslice.grow_editor(agent, kind, SIZE, tmp_path / "store")
    monkeypatch.setenv(grown.env_var, str(grown.root))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    assert grown.copies > 10, "the slice was repeated"
    reader = get_agent(agent)
    ref = reader.ref_for_path(grown.session)
    handoff = build_handoff(Selection(agent=reader, ref=ref, workspace=tmp_path / "store" / "ws"))
    markdown = render_markdown(handoff)
    state = handoff.state
    assert len(handoff.to_json().encode()) < MAX_JSON_BYTES
    assert len(markdown) <= LIMITS.max_doc_chars
    assert len(state.plan) <= LIMITS.max_plan_items
    assert len(state.commands) <= LIMITS.max_commands
    assert len(state.files_touched) <= LIMITS.max_files
    assert handoff.task.original_request == ec.REQUEST
    assert "Make the tests pass" in [p.subject for p in state.plan]
    assert ec.SECRET not in markdown and ec.SECRET not in handoff.to_json()
    if kind != "errors":
        assert state.last_failure is not None and state.last_failure.command == ec.FAILING
    if kind == "middle" and agent != "copilot-chat":
        assert state.commands_total == grown.copies + 1
        assert state.omitted.commands == state.commands_total - len(state.commands)
    if kind == "errors":
        assert handoff.ended.reason == "rate_limit"
