"""Issue 31: Codex CLI installs passdown's Claude Code plugin from this repository's
marketplace, with the real CLI offline.

Codex 0.171 reads the same `.claude-plugin/marketplace.json` (`codex plugin marketplace
add PATH`, `codex plugin add passdown@passdown`), copies the plugin into its plugin
cache and runs its Claude-format hooks once the user trusts them (Codex's `/hooks`; here
`--dangerously-bypass-hook-trust`, which stands in for that one review), with
PLUGIN_ROOT set to the cached plugin; the plugin's launcher turns them into `passdown
hook codex`. A session against the scripted server ends and the hook writes a Codex
handoff; `passdown install codex` then writes nothing; after `codex plugin remove` a
session runs no passdown hook.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_passdown
from e2e.hooked import agent_cli, handoff_json, hook_log, passdown_on_path
from e2e.servers import OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"


def _codex(env: dict[str, str], cwd: Path, *args: str) -> str:
    return agent_cli("codex", env, cwd, *args, timeout=180)


def _session(env: dict[str, str], cwd: Path, prompt: str) -> str:
    """`codex exec` as run_codex runs it, with the plugin's hooks trusted."""
    flags = ["--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
    return _codex(env, cwd, "exec", "--dangerously-bypass-hook-trust", *flags, prompt)


def test_codex_runs_the_claude_plugin_as_codex(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    with OpenAIResponsesServer([Step(text="Notes drafted.")]) as srv:
        env = agent_env.environ(openai_url=srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin's launcher finds it on PATH
        _codex(env, workspace, "plugin", "marketplace", "add", str(REPO_ROOT))
        _codex(env, workspace, "plugin", "add", "passdown@passdown")
        _session(env, workspace, TASK)
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook codex" in ran, f"{ran}\n{hook_log(agent_env)}"
    assert "hook claude" not in ran
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "codex", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK

    config = agent_env.home / ".codex" / "config.toml"
    before = config.read_text(encoding="utf-8")
    installed = run_passdown(env, workspace, "install", "codex")
    assert installed.returncode == 0, installed.stderr
    assert "passdown@passdown" in installed.stdout + installed.stderr
    assert config.read_text(encoding="utf-8") == before

    _codex(env, workspace, "plugin", "remove", "passdown@passdown")
    after = tomllib.loads(config.read_text(encoding="utf-8"))
    assert "passdown@passdown" not in after.get("plugins", {}), after
    assert not list((agent_env.home / ".codex").rglob("passdown-launch"))
    before_calls = calls.read_text(encoding="utf-8")
    with OpenAIResponsesServer([Step(text="Nothing to do.")]) as srv:
        env = {**env, **agent_env.environ(openai_url=srv.url), "PATH": env["PATH"]}
        _session(env, workspace, "Say hello")
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after removal"
