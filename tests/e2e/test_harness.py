"""The harness itself: real CLIs run real tools against the scripted servers, and write
session files where passdown will look for them. These need no passdown code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import CLAUDE_VERSION, CODEX_VERSION, AgentEnv, find_agent, run_claude, run_codex
from e2e.checks import ok
from e2e.servers import AnthropicServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_pinned_versions_installed(agent_bin: Path) -> None:
    import subprocess

    for name, version in (("claude", CLAUDE_VERSION), ("codex", CODEX_VERSION)):
        out = subprocess.run(
            [str(find_agent(name)), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        assert version in out, (name, out)


def test_claude_runs_scripted_tools(
    agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.set_script(
        [
            Step(
                text="Writing.",
                tool="Write",
                input={"file_path": str(workspace / "out.txt"), "content": "scripted\n"},
            ),
            Step(tool="Bash", input={"command": "exit 3", "description": "fail on purpose"}),
            Step(text="Finished."),
        ]
    )
    env = agent_env.environ(anthropic_url=anthropic_server.url)
    proc = run_claude(env, workspace, "write out.txt")
    assert "Finished." in ok(proc, "claude")
    assert (workspace / "out.txt").read_text() == "scripted\n"
    steps = anthropic_server.step_requests()
    assert len(steps) == 3 and anthropic_server.remaining == 0
    # The request log shows what the agent sent: its tools, then each tool's result.
    assert {"Write", "Edit", "Bash", "TaskCreate", "TaskUpdate"} <= steps[0].offered_tools()
    assert "write out.txt" in steps[0].text()
    assert "Exit code 3" in steps[2].text()
    files = list((agent_env.claude_dir / "projects").glob("*/*.jsonl"))
    assert len(files) == 1
    first_user = next(
        json.loads(line)
        for line in files[0].read_text().splitlines()
        if json.loads(line).get("type") == "user"
    )
    assert first_user["cwd"] == str(workspace)


def test_codex_runs_scripted_tools(
    agent_env: AgentEnv, workspace: Path, openai_server: OpenAIResponsesServer
) -> None:
    openai_server.set_script(
        [
            Step(text="Writing.", tool="exec_command", input={"cmd": "printf 'x\\n' > out.txt"}),
            Step(tool="update_plan", input={"plan": [{"step": "write", "status": "completed"}]}),
            Step(text="Finished."),
        ]
    )
    env = agent_env.environ(openai_url=openai_server.url)
    proc = run_codex(env, workspace, "write out.txt")
    assert "Finished." in ok(proc, "codex")
    assert (workspace / "out.txt").read_text() == "x\n"
    steps = openai_server.step_requests()
    assert len(steps) == 3 and openai_server.remaining == 0
    names = {t.get("name") for t in steps[0].body["tools"]}
    assert {"exec_command", "update_plan", "apply_patch"} <= names
    assert "Process exited with code 0" in steps[1].text()
    rollouts = list((agent_env.codex_home / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1
    meta = json.loads(rollouts[0].read_text().splitlines()[0])
    assert meta["type"] == "session_meta" and meta["payload"]["cwd"] == str(workspace)


def test_the_checkpoint_switch_reaches_every_passdown_the_tests_start(
    agent_env: AgentEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PASSDOWN_NO_CHECKPOINT set for the tests reaches the `passdown` processes an e2e
    test starts (AgentEnv.environ, which every other environment builds on)."""
    import subprocess
    import sys

    probe = "from passdown import _checkpoint as c; print(c.disabled())"

    def disabled() -> str:
        return subprocess.run(
            [sys.executable, "-c", probe],
            env=agent_env.environ(),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()

    monkeypatch.setenv("PASSDOWN_NO_CHECKPOINT", "1")
    assert agent_env.environ()["PASSDOWN_NO_CHECKPOINT"] == "1"
    assert disabled() == "True"
    monkeypatch.delenv("PASSDOWN_NO_CHECKPOINT")
    assert "PASSDOWN_NO_CHECKPOINT" not in agent_env.environ()
    assert disabled() == "False"
