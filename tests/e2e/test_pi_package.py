"""Issue 31: pi installs passdown's pi package (`plugins/pi`) from its path, with the
real CLI offline.

`pi install PATH` lists the package in `~/.pi/agent/settings.json` (no copy); its
extension runs `passdown hook pi` at each prompt's end and at the first prompt (the
pickup). A session against the scripted server ends and the extension writes a pi
handoff; `passdown install pi` then writes nothing; after `pi remove PATH` a session
runs no passdown hook. Without passdown on PATH or in the README's places, the session
is told once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_passdown, run_pi
from e2e.checks import ok
from e2e.hooked import agent_cli, handoff_json, hook_log, passdown_on_path, without_passdown
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"
PACKAGE = REPO_ROOT / "plugins" / "pi"
MISSING = "passdown is not installed where this plugin looks"


def _pi(env: dict[str, str], cwd: Path, *args: str) -> str:
    return agent_cli("pi", env, cwd, *args)


def test_the_pi_package_writes_the_handoff_and_removes_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    settings = agent_env.home / ".pi" / "agent" / "settings.json"
    with ChatCompletionsServer([Step(text="Notes drafted.")]) as srv:
        env = agent_env.pi_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the extension finds it on PATH
        _pi(env, workspace, "install", str(PACKAGE))
        ok(run_pi(env, workspace, TASK), "pi -p")
        first = srv.step_requests()[0].text()
    assert MISSING not in first
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook pi" in ran, f"{ran}\n{hook_log(agent_env)}"
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "pi", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK

    listed = run_passdown(env, workspace, "doctor", "pi", "--json")
    (pi,) = json.loads(listed.stdout)["agents"]
    assert [(p["name"], p["path"]) for p in pi["plugins"]] == [("passdown-pi", str(PACKAGE))]
    before = settings.read_text(encoding="utf-8")
    installed = run_passdown(env, workspace, "install", "pi")
    assert installed.returncode == 0, installed.stderr
    assert "pi package passdown-pi" in installed.stdout + installed.stderr
    assert settings.read_text(encoding="utf-8") == before
    assert not (agent_env.home / ".pi" / "agent" / "extensions").exists()

    _pi(env, workspace, "remove", str(PACKAGE))
    assert json.loads(settings.read_text(encoding="utf-8")).get("packages") in (None, [])
    before_calls = calls.read_text(encoding="utf-8")
    with ChatCompletionsServer([Step(text="Nothing to do.")]) as srv:
        env = {**env, **agent_env.pi_environ(srv.url), "PATH": env["PATH"]}
        ok(run_pi(env, workspace, "Say hello"), "pi -p")
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after removal"


def test_without_passdown_the_pi_package_tells_the_session_once(
    agent_env: AgentEnv, workspace: Path
) -> None:
    steps = [Step(text="Noted."), Step(text="Still noted.")]
    with ChatCompletionsServer(steps) as srv:
        env = agent_env.pi_environ(srv.url)
        env["PATH"] = without_passdown(env["PATH"])
        _pi(env, workspace, "install", str(PACKAGE))
        ok(run_pi(env, workspace, TASK), "pi -p")
        told = srv.step_requests()[0].text()
    assert MISSING in told and told.count(MISSING) == 1
    assert not (workspace / ".agent-handoff").exists()
