"""Issue 31: gptme loads passdown's gptme plugin (`plugins/gptme`) from its path, with
the real CLI offline.

gptme has no install command: a plugin is installed by naming its folder in `paths` of
the `[plugins]` table of its config.toml. The plugin's `session.end` hook runs
`passdown hook gptme`; a session against the scripted server ends and the plugin writes
a gptme handoff; `passdown install gptme` then writes nothing; with the folder taken out
of `paths` a session runs no passdown hook. Without passdown on PATH or in the README's
places, the session is told at its start.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, gptme_environ, run_gptme, run_passdown
from e2e.checks import ok
from e2e.hooked import handoff_json, hook_log, passdown_on_path, without_passdown
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

TASK = "Write usage notes for the calculator in NOTES.md"
PLUGIN = REPO_ROOT / "plugins" / "gptme"
MISSING = "passdown is not installed where this plugin looks"
MINE = '# mine\n[user]\nname = "User"\n'


def test_the_gptme_plugin_writes_the_handoff_and_uninstalls_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    config = agent_env.home / ".config" / "gptme" / "config.toml"
    config.parent.mkdir(parents=True)
    installed = f"{MINE}\n[plugins]\npaths = [{json.dumps(str(PLUGIN))}]\n"
    config.write_text(installed, encoding="utf-8")
    bindir, calls = passdown_on_path(tmp_path)
    steps = [
        Step(text="Notes drafted.", tool="complete", input={}),
        Step(text="Hello.", tool="complete", input={}),
        Step(text="Noted.", tool="complete", input={}),
    ]
    with ChatCompletionsServer(steps) as srv:
        env = gptme_environ(agent_env, srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin finds it on PATH
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # gptme imports the plugin from the repository
        ok(run_gptme(env, workspace, TASK), "gptme")
        assert MISSING not in srv.step_requests()[0].text()
        ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
        assert "hook gptme" in ran, f"{ran}\n{hook_log(agent_env)}"
        handoff = handoff_json(workspace)
        assert handoff["source"]["agent"] == "gptme", hook_log(agent_env)
        assert handoff["task"]["original_request"] == TASK

        listed = run_passdown(env, workspace, "doctor", "gptme", "--json")
        (gptme,) = json.loads(listed.stdout)["agents"]
        assert [(p["name"], p["path"]) for p in gptme["plugins"]] == [
            ("passdown_gptme", str(PLUGIN / "passdown_gptme"))
        ]
        done = run_passdown(env, workspace, "install", "gptme")
        assert done.returncode == 0, done.stderr
        assert "gptme plugin passdown_gptme" in done.stdout + done.stderr
        assert config.read_text(encoding="utf-8") == installed

        config.write_text(MINE, encoding="utf-8")  # taken out of `paths`
        before_calls = calls.read_text(encoding="utf-8")
        ok(run_gptme(env, workspace, "Say hello"), "gptme")
        assert calls.read_text(encoding="utf-8") == before_calls, "a hook ran after removal"

        config.write_text(installed, encoding="utf-8")  # no passdown anywhere: told
        env["PATH"] = without_passdown(env["PATH"])
        ok(run_gptme(env, workspace, "Note it"), "gptme")
        told = srv.step_requests()[2].text()
    assert told.count(MISSING) == 1
