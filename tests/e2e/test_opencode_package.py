"""Issue 31: opencode installs passdown's opencode plugin (`plugins/opencode`) from its
path, with the real CLI offline.

`opencode plugin PATH -g` names the folder in `plugin` of the user's opencode config
(no copy, no registry); opencode loads it at start. A session against the scripted
server goes idle and the plugin's detached export writes an opencode handoff; the next
session gets the pointer in its system prompt; `passdown install opencode` then writes
nothing; without the config entry a session runs no passdown hook. Without passdown on
PATH or in the README's places, the session is told in its system prompt. Kilo, an
opencode fork, installs the same package (`kilo plugin PATH -g`), which runs its hooks as
`passdown hook kilo`.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, find_agent, run_kilo, run_opencode, run_passdown
from e2e.checks import ok
from e2e.hooked import handoff_json, hook_log, passdown_on_path, without_passdown
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"
PACKAGE = REPO_ROOT / "plugins" / "opencode"
MISSING = "passdown is not installed where this plugin looks"


def _config(agent_env: AgentEnv) -> Path:
    folder = agent_env.home / ".config" / "opencode"
    (found,) = [p for p in folder.glob("opencode.json*") if p.is_file()]
    return found


def _plugin_add(env: dict[str, str], cwd: Path, agent: str = "opencode") -> None:
    proc = subprocess.run(
        [str(find_agent(agent)), "plugin", str(PACKAGE), "-g"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    ok(proc, f"{agent} plugin PATH -g")


def _point_at(agent_env: AgentEnv, url: str) -> None:
    """The provider at the scripted server of `url`, the rest of the config kept."""
    config = _config(agent_env)
    text = re.sub(r"http://127\.0\.0\.1:\d+/v1", f"{url}/v1", config.read_text("utf-8"))
    config.write_text(text, encoding="utf-8")


def _plugins(agent_env: AgentEnv) -> list[str]:
    text = re.sub(r"^\s*//.*$", "", _config(agent_env).read_text(encoding="utf-8"), flags=re.M)
    return list(json.loads(text).get("plugin", []))


def test_the_opencode_plugin_writes_the_handoff_and_points_the_next_session_at_it(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    with ChatCompletionsServer([Step(text="Notes drafted. Next step: document add().")]) as srv:
        env = agent_env.opencode_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin finds it on PATH
        _plugin_add(env, workspace)
        assert _plugins(agent_env) == [str(PACKAGE)]
        ok(run_opencode(env, workspace, TASK), "opencode run")
    handoff_file = workspace / ".agent-handoff" / "handoff.json"
    deadline = time.monotonic() + 60  # the plugin's export outlives `opencode run`
    while not handoff_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "opencode", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK
    assert "hook opencode" in calls.read_text(encoding="utf-8")

    listed = run_passdown(env, workspace, "doctor", "opencode", "--json")
    (entry,) = json.loads(listed.stdout)["agents"]
    assert [(p["name"], p["path"]) for p in entry["plugins"]] == [
        ("passdown-opencode", str(PACKAGE))
    ]
    installed = run_passdown(env, workspace, "install", "opencode")
    assert installed.returncode == 0, installed.stderr
    assert "opencode plugin passdown-opencode" in installed.stdout + installed.stderr
    assert not (agent_env.home / ".config" / "opencode" / "plugins").exists()

    with ChatCompletionsServer([Step(text="Reading the handoff first.")]) as srv:
        _point_at(agent_env, srv.url)
        ok(run_opencode(env, workspace, "Continue where the last session stopped"), "opencode run")
        first = srv.step_requests()[0].text()
    assert "document add()" in first or handoff["id"] in first, hook_log(agent_env)

    # taken out of the config (opencode has no remove command): no passdown hook runs
    config = _config(agent_env)
    config.write_text(
        config.read_text(encoding="utf-8").replace(json.dumps(str(PACKAGE)), ""), "utf-8"
    )
    assert _plugins(agent_env) == []
    before_calls = calls.read_text(encoding="utf-8")
    with ChatCompletionsServer([Step(text="Nothing to do.")]) as srv:
        _point_at(agent_env, srv.url)
        ok(run_opencode(env, workspace, "Say hello"), "opencode run")
    time.sleep(2)  # an export would be detached
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after removal"


def test_without_passdown_the_opencode_plugin_tells_the_session(
    agent_env: AgentEnv, workspace: Path
) -> None:
    with ChatCompletionsServer([Step(text="Noted.")]) as srv:
        env = agent_env.opencode_environ(srv.url)
        env["PATH"] = without_passdown(env["PATH"])
        _plugin_add(env, workspace)
        ok(run_opencode(env, workspace, TASK), "opencode run")
        told = srv.step_requests()[0].text()
    assert MISSING in told
    time.sleep(2)
    assert not (workspace / ".agent-handoff").exists()


def test_kilo_runs_the_opencode_plugin_as_kilo(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    with ChatCompletionsServer([Step(text="Notes drafted.")]) as srv:
        env = agent_env.kilo_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        _plugin_add(env, workspace, "kilo")
        ok(run_kilo(env, workspace, TASK), "kilo run")
    handoff_file = workspace / ".agent-handoff" / "handoff.json"
    deadline = time.monotonic() + 60  # the plugin's export outlives `kilo run`
    while not handoff_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "kilo", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK
    ran = calls.read_text(encoding="utf-8")
    assert "hook kilo" in ran and "hook opencode" not in ran, ran
    installed = run_passdown(env, workspace, "install", "kilo")
    assert installed.returncode == 0, installed.stderr
    assert "opencode plugin (in Kilo) passdown-opencode" in installed.stdout + installed.stderr
    assert not (agent_env.home / ".config" / "kilo" / "plugins").exists()
