"""Issue 31: passdown as a Claude Code plugin, with the real CLI offline.

The repository's root is a plugin marketplace (`.claude-plugin/marketplace.json`) serving
`plugins/claude`. The real `claude` validates both, adds the marketplace from this
checkout's path, installs `passdown@passdown` in an isolated HOME, runs a session against
the scripted server whose end writes the handoff through the plugin's hook (its launcher
finds the test's `passdown` on PATH), then uninstalls it: a second session runs no
passdown at all, and no passdown hook is left in the settings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_claude, run_passdown
from e2e.hooked import agent_cli, handoff_json, hook_log, passdown_on_path, without_passdown
from e2e.servers import AnthropicServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TASK = "Write usage notes for the calculator in NOTES.md"
MISSING = "passdown is not installed where this plugin looks"


def _claude(env: dict[str, str], cwd: Path, *args: str) -> str:
    return _claude_cli(env, cwd, "plugin", *args)


def _claude_cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    return agent_cli("claude", env, cwd, *args)


def test_claude_plugin_writes_the_handoff_and_uninstalls_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    steps = [
        Step(
            text="Writing the notes file.",
            tool="Write",
            input={"file_path": str(workspace / "NOTES.md"), "content": "usage notes\n"},
        ),
        Step(text="NOTES.md is written; next: document the add() edge cases."),
    ]
    with AnthropicServer(steps) as anthropic:
        env = agent_env.environ(anthropic_url=anthropic.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin's launcher finds it on PATH

        assert "Validation passed" in _claude(env, workspace, "validate", str(REPO_ROOT))
        plugin_dir = REPO_ROOT / "plugins" / "claude"
        assert "Validation passed" in _claude(env, workspace, "validate", str(plugin_dir))
        _claude(env, workspace, "marketplace", "add", str(REPO_ROOT))
        _claude(env, workspace, "install", "passdown@passdown")
        listed = json.loads(_claude(env, workspace, "list", "--json"))
        assert any(p.get("id") == "passdown@passdown" for p in listed), listed

        proc = run_claude(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
        requests = anthropic.step_requests()
    # the plugin's takeover skill reached the model; its MCP server connects (in `-p` runs
    # Claude Code may send the first requests before it did, so `claude mcp list` checks it)
    assert "passdown:passdown-takeover" in requests[0].text()
    servers = _claude_cli(env, workspace, "mcp", "list")
    assert "plugin:passdown:passdown:" in servers and "Connected" in servers, servers
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook claude" in ran, f"the plugin's hooks never ran passdown\n{hook_log(agent_env)}"
    handoff = handoff_json(workspace)
    assert handoff["task"]["original_request"] == TASK, handoff
    assert handoff["source"]["agent"] == "claude"
    assert " ok claude session_end stored=" in hook_log(agent_env)

    # passdown sees the plugin: `install claude` writes nothing, `doctor` lists it
    installed = run_passdown(env, workspace, "install", "claude")
    assert installed.returncode == 0, installed.stderr
    assert "passdown@passdown" in installed.stdout + installed.stderr
    assert not (agent_env.claude_dir / "settings.json").read_text().count("hook claude")
    doctor = run_passdown(env, workspace, "doctor", "claude", "--json")
    assert "passdown@passdown" in doctor.stdout, doctor.stdout + doctor.stderr

    # no passdown where the launcher looks: the session is told (SessionStart's context)
    bare = without_passdown(env["PATH"])
    with AnthropicServer([Step(text="Noted.")]) as anthropic:
        proc = run_claude(
            {**env, "PATH": bare, "TMPDIR": str(tmp_path), "ANTHROPIC_BASE_URL": anthropic.url},
            workspace,
            "Hi",
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        told = anthropic.step_requests()[0].text()
    assert MISSING in told, told[-3000:]

    _claude(env, workspace, "uninstall", "passdown@passdown")
    settings = (agent_env.claude_dir / "settings.json").read_text(encoding="utf-8")
    assert 'passdown@passdown": true' not in settings, settings
    assert "hook claude" not in settings
    records = json.loads(
        (agent_env.claude_dir / "plugins" / "installed_plugins.json").read_text(encoding="utf-8")
    )
    assert not [k for k in records.get("plugins", {}) if k.startswith("passdown@")], records

    before = calls.read_text(encoding="utf-8")
    with AnthropicServer([Step(text="Nothing to do.")]) as anthropic:
        env = {**env, "ANTHROPIC_BASE_URL": anthropic.url}
        proc = run_claude(env, workspace, "Say hello")
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert calls.read_text(encoding="utf-8") == before, "a passdown hook ran after uninstall"
