"""Issue 31: GitHub Copilot CLI installs passdown's Claude Code plugin from this
repository's marketplace, with the real CLI offline.

Copilot CLI reads the same `.claude-plugin/marketplace.json` and runs the plugin's
Claude-format hooks (setting COPILOT_CLI=1); the plugin's launcher turns them into
`passdown hook copilot EVENT`. A session against the scripted server ends and the hook
writes a Copilot handoff; `passdown install copilot` then writes nothing; after
`copilot plugin uninstall` a session runs no passdown hook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_copilot, run_passdown
from e2e.hooked import agent_cli, handoff_json, hook_log, passdown_on_path
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"


def _plugin(env: dict[str, str], cwd: Path, *args: str) -> str:
    return agent_cli("copilot", env, cwd, "plugin", *args)


def test_copilot_runs_the_claude_plugin_as_copilot(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    with ChatCompletionsServer([Step(text="Notes drafted.")]) as srv:
        env = agent_env.copilot_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin's launcher finds it on PATH
        _plugin(env, workspace, "marketplace", "add", str(REPO_ROOT))
        _plugin(env, workspace, "install", "passdown@passdown")
        proc = run_copilot(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook copilot sessionEnd" in ran, f"{ran}\n{hook_log(agent_env)}"
    assert "hook claude" not in ran
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "copilot", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK

    settings = agent_env.home / ".copilot" / "settings.json"
    before = settings.read_text(encoding="utf-8")
    installed = run_passdown(env, workspace, "install", "copilot")
    assert installed.returncode == 0, installed.stderr
    assert "passdown@passdown" in installed.stdout + installed.stderr
    assert settings.read_text(encoding="utf-8") == before

    _plugin(env, workspace, "uninstall", "passdown@passdown")
    enabled = json.loads(settings.read_text(encoding="utf-8")).get("enabledPlugins", {})
    assert enabled.get("passdown@passdown") is not True, enabled  # Copilot leaves `false`
    before_calls = calls.read_text(encoding="utf-8")
    with ChatCompletionsServer([Step(text="Nothing to do.")]) as srv:
        env = {**env, **agent_env.copilot_environ(srv.url), "PATH": env["PATH"]}
        proc = run_copilot(env, workspace, "Say hello")
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after uninstall"
