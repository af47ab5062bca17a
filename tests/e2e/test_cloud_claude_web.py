"""Issue 32, cloud agents, with the real Claude Code: the hooks `passdown install cloud`
commits to `.claude/settings.json`, fired by the real CLI.

Clone A pushed a handoff; clone B, fresh, in another HOME, runs the real `claude -p` with
`CLAUDE_CODE_REMOTE=true` (what Claude Code on the web sets) against the scripted server:
its SessionStart hook pulls, the model's first request carries the pickup pointer, and
the Stop hook at the end of the turn pushes the web session's own handoff. The same
clone without `CLAUDE_CODE_REMOTE`, beside `passdown install claude --scope project`:
passdown's own hook picks up once and the cloud hooks run nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, run_claude
from e2e.checks import ok
from e2e.hooked import hook_log, passdown_on_path
from e2e.servers import AnthropicServer, Step
from share_world import Side, git, make_remote, make_side, refs_on

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

POINTER = "passdown: an unfinished task was handed over from"


def _passdown(bindir: Path, cwd: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [str(bindir / "passdown"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return ok(proc, f"passdown {' '.join(args)}")


def _pushed_handoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bindir: Path
) -> tuple[Path, Side, str]:
    """The bare remote, clone A (it committed `install cloud`'s files and pushed a
    handoff of a recorded Claude session) and that handoff's id."""
    remote = make_remote(tmp_path)
    a = make_side(tmp_path, "a", remote, monkeypatch)
    a.use()
    _passdown(bindir, a.clone, dict(os.environ), "install", "cloud")
    git(a.clone, "add", "-A")
    git(a.clone, "commit", "-q", "-m", "cloud agents pull the handoff")
    git(a.clone, "push", "-q", "origin", "main")
    handoff = a.export()
    _passdown(bindir, a.clone, dict(os.environ), "push")
    return remote, a, handoff


def test_claude_code_on_the_web_pulls_picks_up_and_pushes_back(
    tmp_path: Path, agent_env: AgentEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    remote, _a, handoff = _pushed_handoff(tmp_path, monkeypatch, bindir)
    clone = agent_env.root / "web" / "repo"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    before = set(refs_on(remote))
    calls.unlink(missing_ok=True)

    with AnthropicServer([Step(text="Reading the handoff first.")]) as anthropic:
        env = agent_env.environ(anthropic_url=anthropic.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        env["CLAUDE_CODE_REMOTE"] = "true"
        proc = run_claude(env, clone, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = anthropic.step_requests()[0].text()

    ran = calls.read_text(encoding="utf-8").splitlines()
    assert (clone / ".agent-handoff" / "HANDOFF.md").is_file(), (ran, proc.stderr[-2000:])
    assert POINTER in first, (first[-3000:], ran, hook_log(agent_env))
    assert handoff[:8] in first or str(clone / ".agent-handoff" / "HANDOFF.md") in first
    assert sum(line.startswith("pull") for line in ran) == 1
    assert sum(line.startswith("push") for line in ran) >= 1  # each Stop pushes
    back = set(refs_on(remote)) - before
    assert back, (ran, hook_log(agent_env))  # the web session's own handoff went back


def test_a_local_session_beside_install_claude_runs_passdown_once(
    tmp_path: Path, agent_env: AgentEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    remote, _a, _handoff = _pushed_handoff(tmp_path, monkeypatch, bindir)
    clone = agent_env.root / "local" / "repo"
    git(tmp_path, "clone", "-q", str(remote), str(clone))

    with AnthropicServer([Step(text="Nothing to do.")]) as anthropic:
        env = agent_env.environ(anthropic_url=anthropic.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        env.pop("CLAUDE_CODE_REMOTE", None)
        env["PASSDOWN_COMMAND"] = str(bindir / "passdown")
        _passdown(bindir, clone, env, "install", "claude", "--scope", "project")
        calls.unlink(missing_ok=True)
        proc = run_claude(env, clone, "Say hello")
        assert proc.returncode == 0, proc.stderr[-2000:]

    ran = calls.read_text(encoding="utf-8").splitlines()
    pickups = [line for line in hook_log(agent_env).splitlines() if " pickup claude " in line]
    assert len(pickups) == 1, (ran, hook_log(agent_env))  # passdown's own SessionStart hook
    assert not any(line.startswith(("pull", "push")) for line in ran), ran
    settings = json.loads((clone / ".claude" / "settings.json").read_text("utf-8"))
    session_start = [h["command"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    assert len(session_start) == 2  # passdown's own and the cloud one: only one ran passdown
