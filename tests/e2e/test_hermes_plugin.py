"""Issue 31: Hermes Agent installs passdown's Hermes plugin (`plugins/hermes`) from a git
repository, with the real CLI offline.

`hermes plugins install URL#plugins/hermes --enable` clones the repository (here a copy
of the plugin committed to a repository under tmp_path, named by a file:// URL), keeps
the plugin in `~/.hermes/plugins/passdown` and lists it in `plugins.enabled` of
config.yaml. Its hooks run `passdown hook hermes`: a turn against the scripted server
ends and the plugin writes a Hermes handoff; `passdown install hermes` then writes
nothing; `hermes plugins remove passdown` leaves no passdown hook (one session: the
test's time is kept short).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, hermes_environ, run_hermes, run_passdown
from e2e.checks import ok
from e2e.hooked import handoff_json, hook_log, passdown_on_path
from e2e.pyagents import pyagent
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

TASK = "Write usage notes for the calculator in NOTES.md"
PLUGIN = REPO_ROOT / "plugins" / "hermes"


def _git(cwd: Path, *args: str) -> None:
    ok(
        subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False),
        f"git {' '.join(args)}",
    )


def _repository(tmp_path: Path) -> str:
    """A git repository holding the plugin where passdown's has it: its install URL."""
    repo = tmp_path / "passdown-repo"
    shutil.copytree(
        PLUGIN, repo / "plugins" / "hermes", ignore=shutil.ignore_patterns("__pycache__")
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "plugin")
    return f"{repo.as_uri()}#plugins/hermes"


def _hermes(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [str(pyagent("hermes")), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return ok(proc, f"hermes {' '.join(args)}")


def test_the_hermes_plugin_writes_the_handoff_and_removes_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    url = _repository(tmp_path)
    config = agent_env.home / ".hermes" / "config.yaml"
    steps = [Step(text="Notes drafted.")]
    with ChatCompletionsServer(steps) as srv:
        env = hermes_environ(agent_env, srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the plugin finds it on PATH
        _hermes(env, workspace, "plugins", "install", url, "--enable")
        ok(run_hermes(env, workspace, TASK), "hermes chat")
        ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
        assert "hook hermes" in ran, f"{ran}\n{hook_log(agent_env)}"
        handoff = handoff_json(workspace)
        assert handoff["source"]["agent"] == "hermes", hook_log(agent_env)
        assert handoff["task"]["original_request"] == TASK

        listed = run_passdown(env, workspace, "doctor", "hermes", "--json")
        (hermes,) = json.loads(listed.stdout)["agents"]
        (plugin,) = hermes["plugins"]
        assert plugin["name"] == "passdown" and plugin["enabled"] is True
        before = config.read_text(encoding="utf-8")
        done = run_passdown(env, workspace, "install", "hermes")
        assert done.returncode == 0, done.stderr
        assert "Hermes plugin passdown" in done.stdout + done.stderr
        assert config.read_text(encoding="utf-8") == before

    _hermes(env, workspace, "plugins", "remove", "passdown")
    assert not (agent_env.home / ".hermes" / "plugins" / "passdown").exists()
    assert "hook hermes" not in config.read_text(encoding="utf-8")
    listed = run_passdown(env, workspace, "doctor", "hermes", "--json")
    (hermes,) = json.loads(listed.stdout)["agents"]
    assert hermes["plugins"] == [], hermes  # Hermes keeps the name in plugins.enabled
