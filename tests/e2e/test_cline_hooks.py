"""Cline CLI continuity with the real `cline` 3.0.65: `passdown install cline` writes its
hook scripts to ~/.cline/hooks/, Cline runs `TaskComplete` at the run's end and
`TaskError` when a run fails on a sticky 429, each writing the handoff (the latter with a
rate-limit ending); `passdown uninstall cline` leaves the hooks folder as it was, the
user's own hook included."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv
from e2e.checks import load_handoff, ok
from e2e.cline_kimi import cline_environ, run_cline
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PROMPT = "Run the tests."
FAILING = "ls no-such-test-dir && echo ok"
MINE = "#!/bin/sh\necho my own start hook >/dev/null\n"


def _passdown(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return ok(proc, f"passdown {' '.join(args)}")


def _handoff_after(workspace: Path, since: float, timeout: float = 30) -> dict[str, object]:
    """Cline runs its hooks detached: wait for the handoff they write."""
    path = workspace / ".agent-handoff" / "handoff.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_mtime >= since:
            time.sleep(0.5)  # let a second hook of the same run finish its write
            return load_handoff(workspace)[1]
        time.sleep(0.2)
    raise AssertionError("no handoff was written by the hook")


def test_cline_hooks_write_the_handoff_and_uninstall_cleanly(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    hooks = agent_env.home / ".cline" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "TaskStart").write_text(MINE)
    with ChatCompletionsServer() as server:
        env = cline_environ(agent_env, server.url, workspace)
        env["PYTHONPATH"] = register(tmp_path / "site")
        hook = tmp_path / "bin" / "passdown"
        hook.parent.mkdir()
        hook.write_text(f'#!/bin/sh\nexec {sys.executable} -m passdown "$@"\n')
        hook.chmod(0o755)
        _passdown(env, workspace, "install", "cline", "--command", str(hook))
        assert sorted(p.name for p in hooks.iterdir()) == sorted(
            ["TaskStart", "TaskComplete", "TaskError", "PreCompact", "TaskCancel"]
        )

        server.set_script(
            [
                Step(text="Running them.", tool="run_commands", input={"commands": [FAILING]}),
                Step(text="The tests cannot run: no test folder."),
            ]
        )
        started = time.time()
        ok(run_cline(env, workspace, PROMPT), "cline")
        data = _handoff_after(workspace, started)
        assert data["source"]["agent"] == "cline"  # type: ignore[index]
        assert data["task"]["original_request"] == PROMPT  # type: ignore[index]
        assert data["task"]["latest_progress"] == "The tests cannot run: no test folder."  # type: ignore[index]
        failure = data["state"]["last_failure"]  # type: ignore[index]
        assert failure["command"] == FAILING and failure["exit_code"] == 2

        server.fail(429, {"error": {"message": "Rate limit reached"}}, headers={"retry-after": "0"})
        started = time.time()
        run_cline(env, workspace, "Try again.", timeout=150)
        data = _handoff_after(workspace, started)
        assert data["ended"]["reason"] == "rate_limit", data["ended"]  # type: ignore[index]

        log = (agent_env.passdown_data / "logs" / "hooks.log").read_text()
        assert "ok cline turn_complete" in log and "ok cline stop_failure" in log, log
        _passdown(env, workspace, "uninstall", "cline")
    assert [p.name for p in hooks.iterdir()] == ["TaskStart"]
    assert (hooks / "TaskStart").read_text() == MINE
