"""Copilot CLI 1.0.102 fires its `errorOccurred` hook on every retry of a failing model
request: for one 429 with its 5 retries, 6 firings, each with `recoverable: true` (the
last one too), and between two firings it appends only the hook's own `hook.start` /
`hook.end` records to the session's events file. Each firing used to write and publish
a handoff (6 handoff records for one rate limit). passdown now writes one per failing
request: the first firing hands off (the earliest moment the limit is known), the
retries are logged as skipped, and a new turn that fails again is handed off anew.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, run_copilot, run_passdown
from e2e.checks import ok
from e2e.hooked import hook_log, passdown_on_path, stored_by, with_hooks
from e2e.servers import ChatCompletionsServer, Step
from e2e.test_error_endings import OPENAI_429, RETRY_NOW

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

TASK = "Summarise greet.py in one sentence"
RETRY = "Try the summary again"


def _records(env: dict[str, str], ws: Path, record_id: str) -> dict[str, Any]:
    return dict(json.loads(ok(run_passdown(env, ws, "retrieve", record_id), "passdown retrieve")))


def _handoff_ids(env: dict[str, str], ws: Path) -> list[str]:
    out = ok(run_passdown(env, ws, "find", "--type", "handoff", "--json"), "passdown find")
    return [r["id"] for r in json.loads(out)["records"]]


def test_one_429_streak_writes_one_handoff(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    with ChatCompletionsServer([Step(text="never reached")]) as srv:
        env = with_hooks(agent_env.copilot_environ(srv.url), bindir, workspace, "copilot")
        srv.fail(429, OPENAI_429, headers=RETRY_NOW)  # every request, the retries too
        proc = run_copilot(env, workspace, TASK, timeout=300)
        assert proc.returncode != 0
        first_streak = len(srv.requests)
        assert first_streak == 6, first_streak  # the request and its 5 retries
        fired = calls.read_text().count("hook copilot errorOccurred")
        assert fired == 6, calls.read_text()  # one firing per attempt
        [stored] = stored_by(agent_env, "copilot", "stop_failure")  # before: 6 records
        log = hook_log(agent_env)
        assert (
            log.count(f"skip copilot stop_failure: a retry of the failure handed off as {stored}")
            == 5
        ), log
        record = _records(env, workspace, stored)
        assert record["provenance"]["agent"] == "copilot"
        assert "**How it ended:** on a rate limit" in record["content"]
        assert TASK in record["content"]
        # the session ended too: its sessionEnd handoff is the only other one
        [ended] = stored_by(agent_env, "copilot", "session_end")
        assert sorted(_handoff_ids(env, workspace)) == sorted([stored, ended])

        # a new turn of the same session that fails again is news: handed off again
        sid = next(agent_env.home.glob(".copilot/session-state/*/events.jsonl")).parent.name
        proc = run_copilot(env, workspace, RETRY, resume=sid, timeout=300)
        assert proc.returncode != 0
        assert len(srv.requests) - first_streak == 6
    stop_failures = stored_by(agent_env, "copilot", "stop_failure")
    assert len(stop_failures) == 2, hook_log(agent_env)
    assert hook_log(agent_env).count("skip copilot stop_failure") == 10
    assert RETRY in _records(env, workspace, stop_failures[1])["content"]
