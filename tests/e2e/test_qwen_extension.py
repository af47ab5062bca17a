"""Issue 31: passdown as a Qwen Code extension, with the real CLI offline.

`plugins/qwen` is the extension (`qwen-extension.json`: the MCP server and the context
file; `hooks/hooks.json`: SessionStart, Stop, SessionEnd, PreCompact, StopFailure; the
takeover skill). The real `qwen` installs it from this checkout's path into
an isolated HOME; a session against the scripted server ends and the extension's hook
writes the handoff (its launcher finds the test's `passdown` on PATH); the next session's
first request carries the pickup pointer, the MCP tools and the context file; after
`qwen extensions uninstall` a session runs no passdown at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_passdown, run_qwen
from e2e.checks import ok
from e2e.hooked import (
    agent_extensions,
    handoff_json,
    hook_log,
    passdown_on_path,
    without_passdown,
)
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"
MISSING = "passdown is not installed where this plugin looks"


POINTER = "passdown: an unfinished task was handed over from"


def test_qwen_extension_writes_the_handoff_and_uninstalls_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    extension = REPO_ROOT / "plugins" / "qwen"
    with ChatCompletionsServer(
        [Step(text="Notes drafted. Next: document the add() edge cases.")]
    ) as srv:
        env = agent_env.qwen_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the extension's launcher finds it on PATH
        agent_extensions("qwen", env, workspace, "install", str(extension), "--consent")
        assert "passdown" in agent_extensions("qwen", env, workspace, "list")
        proc = run_qwen(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook qwen" in ran, f"the extension's hooks never ran passdown\n{hook_log(agent_env)}"
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "qwen", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK

    # the next session: the pointer (SessionStart), the MCP tools and the context file
    with ChatCompletionsServer([Step(text="Reading the handoff first.")]) as srv:
        env = {**env, "OPENAI_BASE_URL": f"{srv.url}/v1"}
        proc = run_qwen(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = srv.step_requests()[0].text()
    assert POINTER in first, hook_log(agent_env)
    assert "load_handoff" in first
    assert ".agent-handoff/HANDOFF.md" in first  # QWEN.md, the extension's context file

    # passdown sees the extension: `install qwen` writes nothing, `doctor` lists it
    settings = agent_env.home / ".qwen" / "settings.json"
    before = settings.read_text(encoding="utf-8")
    installed = run_passdown(env, workspace, "install", "qwen")
    assert installed.returncode == 0, installed.stderr
    assert "Qwen Code extension passdown" in installed.stdout + installed.stderr
    assert settings.read_text(encoding="utf-8") == before
    doctor = json.loads(ok(run_passdown(env, workspace, "doctor", "qwen", "--json"), "doctor"))
    assert doctor["agents"][0]["plugins"][0]["name"] == "passdown", doctor

    # no passdown where the launcher looks: the session is told (SessionStart's context)
    bare = without_passdown(env["PATH"])
    with ChatCompletionsServer([Step(text="Noted.")]) as srv:
        proc = run_qwen(
            {**env, "PATH": bare, "TMPDIR": str(tmp_path), "OPENAI_BASE_URL": f"{srv.url}/v1"},
            workspace,
            "Hi",
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        told = srv.step_requests()[0].text()
    assert MISSING in told, told[-3000:]

    agent_extensions("qwen", env, workspace, "uninstall", "passdown")
    assert not (agent_env.home / ".qwen" / "extensions" / "passdown").exists()
    assert "hook qwen" not in settings.read_text(encoding="utf-8")
    before_calls = calls.read_text(encoding="utf-8")
    with ChatCompletionsServer([Step(text="Nothing to do.")]) as srv:
        env = {**env, "OPENAI_BASE_URL": f"{srv.url}/v1"}
        proc = run_qwen(env, workspace, "Say hello")
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after uninstall"
