"""`passdown run AGENT --fallback OTHER` with the real Cline CLI and Kimi CLI, both
directions: the first agent's every model request gets a 429, its session ends on the
rate limit, and passdown continues in the other agent with the takeover prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv, run_passdown
from e2e.checks import ok
from e2e.cline_kimi import cline_environ, kimi_environ
from e2e.pyagents import pyagent
from e2e.servers import ChatCompletionsServer, Step
from e2e.test_switch_matrix import user_texts

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write hello.txt with a greeting."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}


@pytest.mark.parametrize(("first", "fallback"), [("kimi", "cline"), ("cline", "kimi")])
def test_run_falls_back_on_a_rate_limit(
    first: str, fallback: str, tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    with ChatCompletionsServer() as limited, ChatCompletionsServer() as open_server:
        servers = {first: limited, fallback: open_server}
        kimi_env = kimi_environ(agent_env, servers["kimi"].url)
        env = {**kimi_env, **cline_environ(agent_env, servers["cline"].url, workspace)}
        env["PATH"] = f"{pyagent('kimi').parent}{os.pathsep}{env['PATH']}"
        env["PYTHONPATH"] = register(tmp_path / "site")
        limited.fail(429, RATE_LIMIT, headers={"retry-after": "0"})
        open_server.set_script([Step(text="Took over from the handoff.")])
        proc = run_passdown(
            env,
            workspace,
            *("run", first, "--fallback", fallback, "--non-interactive", "--", TASK),
            timeout=300,
        )
        ok(proc, f"passdown run {first} --fallback {fallback}")
        assert limited.requests, f"{first} never asked its (rate-limited) server"
        steps = open_server.step_requests()
        assert steps, f"{fallback} was never started"
        user = "\n".join(user_texts(fallback, steps[0]))
        assert str(workspace / ".agent-handoff" / "HANDOFF.md") in user
    md = (workspace / ".agent-handoff" / "HANDOFF.md").read_text(encoding="utf-8")
    assert TASK in md
    assert "rate" in md.lower()
