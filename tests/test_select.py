"""Choosing the session to hand off when several agents are searched (`--from auto`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from passdown import _pipeline as pipeline
from passdown.agents import get_agent
from passdown.agents.base import Discovered
from passdown.errors import SessionNotFound, SessionReadError
from passdown.transcript import SessionRef


def _agents(monkeypatch: pytest.MonkeyPatch, newest: dict[str, object]) -> None:
    """Search exactly these agents; each one's discovery finds or raises its value."""
    agents = [get_agent(name) for name in newest]
    for agent in agents:
        value = newest[agent.name]

        def fake(workspace: Path | None, value: object = value) -> Discovered:
            if isinstance(value, Exception):
                raise value
            refs = [value] if isinstance(value, SessionRef) else []
            return Discovered(refs=refs, skipped=[])

        monkeypatch.setattr(agent, "discover_all", fake)
    monkeypatch.setattr(pipeline, "source_agents", lambda name: agents)


def test_one_unreadable_store_does_not_hide_another_agents_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = SessionRef(agent="codex", session_id="s1", path=tmp_path / "s1.jsonl", updated_at=5.0)
    broken = SessionReadError(f"cannot read {tmp_path / 'claude-store'}: permission denied")
    _agents(monkeypatch, {"claude": broken, "codex": ref})
    selection = pipeline.select_session("auto", None, tmp_path)
    assert selection.agent.name == "codex" and selection.ref is ref
    assert len(selection.notes) == 1
    assert "unreadable session store" in selection.notes[0]
    assert str(tmp_path / "claude-store") in selection.notes[0]


def test_only_unreadable_stores_is_the_read_error_not_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = SessionReadError("cannot read /x: permission denied")
    _agents(monkeypatch, {"claude": broken, "codex": None})
    with pytest.raises(SessionReadError):
        pipeline.select_session("auto", None, tmp_path)
    _agents(monkeypatch, {"claude": None, "codex": None})
    with pytest.raises(SessionNotFound):
        pipeline.select_session("auto", None, tmp_path)


def test_one_named_agent_with_an_unreadable_store_is_still_the_read_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agents(monkeypatch, {"claude": SessionReadError("cannot read /x")})
    with pytest.raises(SessionReadError):
        pipeline.select_session("claude", None, tmp_path)
