"""Kimi CLI continuity with the real `kimi-cli` 1.51.0: `passdown install kimi` adds its
`[[hooks]]` to ~/.kimi/config.toml, Kimi runs them at the turn's end, the session's end
and on a step that failed (a sticky 429: StopFailure), each writing the handoff; then
`passdown uninstall kimi` gives the config back byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv
from e2e.checks import load_handoff, ok
from e2e.cline_kimi import kimi_environ, run_kimi
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PROMPT = "Run the tests."
FAILING = "ls no-such-test-dir && echo ok"
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}


def _passdown(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return ok(proc, f"passdown {' '.join(args)}")


def test_kimi_hooks_write_the_handoff_and_uninstall_byte_exact(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    with ChatCompletionsServer() as server:
        env = kimi_environ(agent_env, server.url)
        # the hooks run `python -m passdown` with kimi and cline registered
        env["PYTHONPATH"] = register(tmp_path / "site")
        config = agent_env.home / ".kimi" / "config.toml"
        original = config.read_bytes()
        hook = tmp_path / "bin" / "passdown"
        hook.parent.mkdir()
        hook.write_text(f'#!/bin/sh\nexec {sys.executable} -m passdown "$@"\n')
        hook.chmod(0o755)
        _passdown(env, workspace, "install", "kimi", "--command", str(hook))
        assert b"hook kimi" in config.read_bytes()

        server.set_script(
            [
                Step(text="Running them.", tool="Shell", input={"command": FAILING}),
                Step(text="The tests cannot run: no test folder."),
            ]
        )
        ok(run_kimi(env, workspace, PROMPT), "kimi")
        _md, data = load_handoff(workspace)  # written by the Stop/SessionEnd hook
        assert data["source"]["agent"] == "kimi"
        assert data["task"]["original_request"] == PROMPT
        assert data["state"]["last_failure"]["command"] == FAILING
        assert data["state"]["last_failure"]["exit_code"] == 2
        assert data["ended"]["reason"] == "normal"

        server.fail(429, RATE_LIMIT, headers={"retry-after": "0"})
        run_kimi(env, workspace, "Try again.", "-C", timeout=150)
        _md, data = load_handoff(workspace)
        assert data["task"]["latest_user_message"] == "Try again."
        assert data["ended"]["reason"] == "rate_limit", data["ended"]

        log = (agent_env.passdown_data / "logs" / "hooks.log").read_text()
        assert "ok kimi stop_failure" in log and "error" not in log, log
        _passdown(env, workspace, "uninstall", "kimi")
    assert config.read_bytes() == original
