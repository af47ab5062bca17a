"""A hook payload that names no session (empty stdin, `{}`, or no session id and no
transcript path) exports nothing and says why in the hook log: exporting the
workspace's newest session instead may hand off another session than the one whose
hook fired. The hook still exits 0 (a hook never fails the agent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from passdown.integrations._hooks import log_path, run_hook
from test_discovery_large_first_record import claude_session

SESSION_ID = "0c0c0c0c-0000-4000-8000-000000000000"


@pytest.fixture
def session(isolated_homes: Path, workspace: Path) -> Path:
    return claude_session(isolated_homes, workspace, SESSION_ID, "TASK: fix greet()", age=10)


def exported(workspace: Path) -> bool:
    return (workspace / ".agent-handoff").exists()


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        ("", "(empty payload)"),
        ("{}", "(an empty JSON object)"),
        (
            '{"hook_event_name": "SessionEnd", "cwd": "."}',
            "(no session id or transcript path among its keys: cwd, hook_event_name)",
        ),
    ],
    ids=["empty", "empty-object", "no-session"],
)
def test_a_payload_naming_no_session_exports_nothing_and_logs_why(
    session: Path, workspace: Path, stdin: str, said: str
) -> None:
    assert run_hook("claude", [], stdin) == 0
    assert not exported(workspace)
    log = log_path().read_text(encoding="utf-8")
    assert "UsageError: the hook payload names no session " + said in log, log
    assert "nothing exported" in log
    assert " ok claude" not in log


def test_a_payload_naming_the_session_still_exports_it(session: Path, workspace: Path) -> None:
    payload = {"hook_event_name": "SessionEnd", "session_id": SESSION_ID, "cwd": str(workspace)}
    payload["transcript_path"] = str(session)
    assert run_hook("claude", [], json.dumps(payload)) == 0
    assert exported(workspace), log_path().read_text(encoding="utf-8")
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["source"]["session_id"] == SESSION_ID
