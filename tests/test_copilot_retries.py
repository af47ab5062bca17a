"""Copilot CLI 1.0.102 fires `errorOccurred` on every retry of a failing request (6 times
for one 429 with its 5 retries, `recoverable: true` each time, the last one too), and
between two firings appends only the hook's own `hook.start`/`hook.end` records to its
events file (seen with the real CLI: tests/e2e/test_copilot_retries.py). Each firing
used to write and publish a handoff; now one failing request gives one handoff, and
only news in the session (a new turn), another reason or a streak longer than
`RETRY_WINDOW_S` writes another."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from passdown.coordinator import HandoffCoordinator
from passdown.integrations import _hooks as hooks
from recorded import scenarios

RATE_LIMIT = '{"message":"Rate limit reached for scripted-model on tokens per min (TPM)."}'


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    recorded = next(r for r in scenarios("copilot") if r.scenario == "full")
    recorded.install(tmp_path / "home", monkeypatch)
    [events] = (tmp_path / "home" / ".copilot" / "session-state").glob("*/events.jsonl")
    return events


def fire(session: Path, workspace: Path, message: str = RATE_LIMIT) -> None:
    """One `errorOccurred` as Copilot runs it: its hook.start record first, the hook,
    then its hook.end record."""
    sid = session.parent.name
    append(session, {"type": "hook.start", "data": {"hookType": "errorOccurred"}})
    payload = {
        "sessionId": sid,
        "cwd": str(workspace),
        "errorContext": "model_call",
        "recoverable": True,
        "error": {"message": message, "name": "Error"},
    }
    assert hooks.run_hook("copilot", ["errorOccurred"], json.dumps(payload)) == 0
    append(session, {"type": "hook.end", "data": {"hookType": "errorOccurred", "success": True}})


def append(session: Path, record: dict[str, Any]) -> None:
    with session.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({**record, "timestamp": "2026-11-30T23:50:08.143Z"}) + "\n")


def handoffs(workspace: Path) -> list[str]:
    with HandoffCoordinator(workspace) as coordinator:
        return [p.id for p in coordinator.history()]


def log() -> str:
    return hooks.log_path().read_text()


def test_one_429_streak_gives_one_handoff(session: Path, workspace: Path) -> None:
    for _ in range(6):
        fire(session, workspace)
    [stored] = handoffs(workspace)  # before: 6
    assert log().count(" ok copilot stop_failure stored=") == 1
    assert (
        log().count(f"skip copilot stop_failure: a retry of the failure handed off as {stored}")
        == 5
    )
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["id"] == stored and handoff["ended"]["reason"] == "rate_limit"


def test_a_new_turn_or_another_reason_is_handed_off_again(session: Path, workspace: Path) -> None:
    fire(session, workspace)
    fire(session, workspace)
    assert len(handoffs(workspace)) == 1
    append(session, {"type": "user.message", "data": {"content": "try again please"}})
    fire(session, workspace)  # the same error, after a new prompt: news
    assert len(handoffs(workspace)) == 2
    fire(session, workspace, '{"message":"You have exceeded your monthly quota"}')
    assert len(handoffs(workspace)) == 3  # a usage limit now
    fire(session, workspace, '{"message":"You have exceeded your monthly quota"}')
    assert len(handoffs(workspace)) == 3


def test_a_long_streak_is_handed_off_again(
    session: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fire(session, workspace)
    later = time.time() + hooks.RETRY_WINDOW_S + 1
    monkeypatch.setattr(time, "time", lambda: later)
    fire(session, workspace)
    assert len(handoffs(workspace)) == 2


def test_a_torn_or_unreadable_tail_means_a_new_handoff(session: Path, workspace: Path) -> None:
    fire(session, workspace)
    with session.open("a") as fh:
        fh.write('{"type": "hook.start", "da')  # a record still being written
    fire(session, workspace)
    assert len(handoffs(workspace)) == 2


def test_a_hostile_session_id_is_never_a_path(tmp_path: Path) -> None:
    from passdown.integrations._copilot import CopilotHooks

    integration = CopilotHooks()
    for sid in ("../../etc", "a/b", "", ".hidden", "x" * 200):
        assert integration.retry_log({"sessionId": sid}) is None
    assert integration.retry_log({"sessionId": "8e15ff8f-08d5"}) is not None


def test_other_agents_failure_hooks_export_every_time(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's StopFailure fires once per failed turn: no retry logic applies."""
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    path = recorded.install(tmp_path / "claude-home", monkeypatch)
    payload = {
        "hook_event_name": "StopFailure",
        "session_id": path.stem,
        "transcript_path": str(path),
        "cwd": str(workspace),
        "error": "rate_limit",
    }
    for _ in range(2):
        assert hooks.run_hook("claude", [], json.dumps(payload)) == 0
    assert log().count(" ok claude stop_failure stored=") == 2
    assert not (Path(os.environ["PASSDOWN_DATA_DIR"]) / "failures").exists()
