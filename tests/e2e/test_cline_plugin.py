"""Issue 31: Cline CLI installs passdown's Cline plugin (`plugins/cline`) from its path,
with the real CLI offline.

`cline plugin install PATH` copies the plugin under `~/.cline/plugins`; its `afterRun`
hook runs `passdown hook cline` with the payload of the TaskComplete hook script. A run
against the scripted server ends and the plugin writes a Cline handoff; `passdown
install cline` then writes nothing; after `cline plugin uninstall` a run runs no passdown
hook. The plugin's hook runs detached (Cline gives a plugin's hook 3 s) and `passdown
hook cline` waits for the session's last write, as for `passdown install cline`'s scripts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_passdown
from e2e.checks import ok
from e2e.cline_kimi import cline_environ, run_cline
from e2e.hooked import agent_cli, handoff_json, hook_log, passdown_on_path
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TASK = "Write usage notes for the calculator in NOTES.md"
PLUGIN = REPO_ROOT / "plugins" / "cline"
MISSING = "passdown is not installed where this plugin looks"


def _cline(env: dict[str, str], cwd: Path, *args: str) -> str:
    return agent_cli("cline", env, cwd, *args)


def test_the_cline_plugin_writes_the_handoff_and_uninstalls_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    plugins = agent_env.home / ".cline" / "plugins"
    steps = [Step(text="Notes drafted."), Step(text="Nothing to do.")]
    with ChatCompletionsServer(steps) as srv:  # one server: `cline auth` once
        env = cline_environ(agent_env, srv.url, workspace)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin finds it on PATH
        _cline(env, workspace, "plugin", "install", str(PLUGIN))
        ok(run_cline(env, workspace, TASK), "cline")
        assert MISSING not in srv.step_requests()[0].text()
        handoff = _handoff(workspace)
        ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
        assert "hook cline" in ran, f"{ran}\n{hook_log(agent_env)}"
        assert handoff["source"]["agent"] == "cline", hook_log(agent_env)
        assert handoff["task"]["original_request"] == TASK

        listed = run_passdown(env, workspace, "doctor", "cline", "--json")
        (cline,) = json.loads(listed.stdout)["agents"]
        (plugin,) = cline["plugins"]
        assert plugin["name"] == "passdown-cline" and plugin["scope"] == "user"
        installed = run_passdown(env, workspace, "install", "cline")
        assert installed.returncode == 0, installed.stderr
        assert "Cline plugin passdown-cline" in installed.stdout + installed.stderr
        assert not (agent_env.home / ".cline" / "hooks").exists()

        _cline(env, workspace, "plugin", "uninstall", "passdown-cline")
        assert not list(plugins.glob("_installed/*/*/package"))
        before_calls = calls.read_text(encoding="utf-8")
        ok(run_cline(env, workspace, "Say hello"), "cline")
    time.sleep(1)  # a hook would run detached
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after removal"


def _handoff(workspace: Path, timeout: float = 30) -> dict[str, object]:
    """The plugin's hook runs detached: wait for the handoff it writes."""
    path = workspace / ".agent-handoff" / "handoff.json"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return handoff_json(workspace)
