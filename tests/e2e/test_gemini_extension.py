"""Issue 31: passdown as a Gemini CLI extension, with the real CLI offline.

`plugins/gemini` is the extension (`gemini-extension.json`: the MCP server and the
context file; `hooks/hooks.json`: SessionStart, SessionEnd, PreCompress; the takeover
skill). The real `gemini` validates it and installs it from this checkout's path into
an isolated HOME; a session against the scripted server ends and the extension's hook
writes the handoff (its launcher finds the test's `passdown` on PATH); the next session's
first request carries the pickup pointer, the MCP tools and the context file; after
`gemini extensions uninstall` a session runs no passdown at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv, run_gemini, run_passdown
from e2e.checks import ok
from e2e.hooked import (
    agent_extensions,
    handoff_json,
    hook_log,
    passdown_on_path,
    without_passdown,
)
from e2e.servers import GeminiServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

TASK = "Write usage notes for the calculator in NOTES.md"
MISSING = "passdown is not installed where this plugin looks"


POINTER = "passdown: an unfinished task was handed over from"


def test_gemini_extension_writes_the_handoff_and_uninstalls_cleanly(
    agent_env: AgentEnv, workspace: Path, tmp_path: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    extension = REPO_ROOT / "plugins" / "gemini"
    with GeminiServer([Step(text="Notes drafted. Next: document the add() edge cases.")]) as srv:
        env = agent_env.gemini_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"  # the extension's launcher finds it on PATH
        assert "successfully validated" in agent_extensions(
            "gemini", env, workspace, "validate", str(extension)
        )
        agent_extensions("gemini", env, workspace, "install", str(extension), "--consent")
        assert "passdown" in agent_extensions("gemini", env, workspace, "list")
        proc = run_gemini(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
    ran = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert "hook gemini" in ran, f"the extension's hooks never ran passdown\n{hook_log(agent_env)}"
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "gemini", hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK

    # the next session: the pointer (SessionStart), the MCP tools and the context file
    with GeminiServer([Step(text="Reading the handoff first.")]) as srv:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": srv.url}
        proc = run_gemini(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = srv.step_requests()[0].text()
    assert POINTER in first, hook_log(agent_env)
    assert "load_handoff" in first
    assert ".agent-handoff/HANDOFF.md" in first  # GEMINI.md, the extension's context file

    # passdown sees the extension: `install gemini` writes nothing, `doctor` lists it
    settings = agent_env.home / ".gemini" / "settings.json"
    before = settings.read_text(encoding="utf-8")
    installed = run_passdown(env, workspace, "install", "gemini")
    assert installed.returncode == 0, installed.stderr
    assert "Gemini CLI extension passdown" in installed.stdout + installed.stderr
    assert settings.read_text(encoding="utf-8") == before
    doctor = json.loads(ok(run_passdown(env, workspace, "doctor", "gemini", "--json"), "doctor"))
    assert doctor["agents"][0]["plugins"][0]["name"] == "passdown", doctor

    # no passdown where the launcher looks: the session is told (SessionStart's context)
    bare = without_passdown(env["PATH"])
    with GeminiServer([Step(text="Noted.")]) as srv:
        proc = run_gemini(
            {**env, "PATH": bare, "TMPDIR": str(tmp_path), "GOOGLE_GEMINI_BASE_URL": srv.url},
            workspace,
            "Hi",
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        told = srv.step_requests()[0].text()
    assert MISSING in told, told[-3000:]

    agent_extensions("gemini", env, workspace, "uninstall", "passdown")
    assert not (agent_env.home / ".gemini" / "extensions" / "passdown").exists()
    assert "hook gemini" not in settings.read_text(encoding="utf-8")
    before_calls = calls.read_text(encoding="utf-8")
    with GeminiServer([Step(text="Nothing to do.")]) as srv:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": srv.url}
        proc = run_gemini(env, workspace, "Say hello")
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert calls.read_text(encoding="utf-8") == before_calls, "a passdown hook ran after uninstall"
