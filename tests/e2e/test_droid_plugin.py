"""Issue 31: Factory Droid installs passdown's Claude Code plugin from this repository's
marketplace, with the real CLI offline.

Droid reads the same `.claude-plugin/marketplace.json` (`droid plugin marketplace add
PATH`, `droid plugin install passdown@MARKETPLACE`; the marketplace is named after the
folder), keeps `${CLAUDE_PLUGIN_ROOT}` in the hooks and runs them with DROID_PROJECT_DIR
set; the plugin's launcher turns them into `passdown hook droid`. A `droid exec` session
against the scripted server ends and the hook writes a Droid handoff; `passdown install
droid` then writes nothing; after `droid plugin uninstall` a session runs no passdown
hook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_droid, run_passdown
from e2e.checks import ok
from e2e.hooked import agent_cli, handoff_json, hook_log, passdown_on_path
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"


def _plugin(env: dict[str, str], cwd: Path, *args: str) -> str:
    return agent_cli("droid", env, cwd, "plugin", *args)


def test_droid_runs_the_claude_plugin_as_droid(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    market = tmp_path / "passdown"  # Droid names a local marketplace after its folder
    market.symlink_to(REPO_ROOT, target_is_directory=True)
    with ChatCompletionsServer([Step(text="Notes drafted.")]) as srv:
        env = agent_env.droid_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin's launcher finds it on PATH
        _plugin(env, workspace, "marketplace", "add", str(market))
        _plugin(env, workspace, "install", "passdown@passdown")
        ok(run_droid(env, workspace, TASK, timeout=200), "droid exec")
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook droid" in ran, f"{ran}\n{hook_log(agent_env)}"
    assert "hook claude" not in ran
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "droid", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK

    settings = agent_env.home / ".factory" / "settings.json"
    listed = run_passdown(env, workspace, "doctor", "droid", "--json")
    (droid,) = json.loads(listed.stdout)["agents"]
    assert [p["name"] for p in droid["plugins"]] == ["passdown@passdown"], droid
    before = settings.read_text(encoding="utf-8")
    installed = run_passdown(env, workspace, "install", "droid")
    assert installed.returncode == 0, installed.stderr
    assert "passdown@passdown" in installed.stdout + installed.stderr
    assert settings.read_text(encoding="utf-8") == before

    _plugin(env, workspace, "uninstall", "passdown@passdown")
    enabled = json.loads(settings.read_text(encoding="utf-8")).get("enabledPlugins", {})
    assert enabled.get("passdown@passdown") is not True, enabled
    assert not list((agent_env.home / ".factory" / "plugins").rglob("passdown-launch"))
    before_calls = calls.read_text(encoding="utf-8")
    with ChatCompletionsServer([Step(text="Nothing to do.")]) as srv:
        env = {**env, **agent_env.droid_environ(srv.url), "PATH": env["PATH"]}
        ok(run_droid(env, workspace, "Say hello", timeout=200), "droid exec")
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after uninstall"
