"""Switching to and from Cline CLI and Kimi CLI with the real CLIs: `passdown switch
--non-interactive` from Claude Code's and Codex's recorded sessions launches the real `cline` / `kimi`
on the handoff (the argv passdown builds, never through a shell), and from their recorded
sessions launches the real Claude Code and Codex, each receiving the handoff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv, run_passdown, target_environ
from e2e.checks import ok
from e2e.cline_kimi import cline_environ, kimi_environ
from e2e.pyagents import pyagent
from e2e.record import seed_workspace
from e2e.servers import Step
from e2e.test_switch_matrix import (
    expected,
    install_source,
    request_opening,
    server_for,
    session_arg,
    user_texts,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPLY = "Read the handoff; continuing."


def _environ(agent_env: AgentEnv, target: str, url: str, ws: Path, site: Path) -> dict[str, str]:
    if target == "cline":
        env = cline_environ(agent_env, url, ws)
    elif target == "kimi":
        env = kimi_environ(agent_env, url)
        env["PATH"] = f"{pyagent('kimi').parent}{os.pathsep}{env['PATH']}"
    else:
        env = target_environ(agent_env, target, url)
    env["PYTHONPATH"] = register(site)
    return env


def _switch(env: dict[str, str], ws: Path, source: str, target: str, session: str) -> str:
    proc = run_passdown(
        env,
        ws,
        *("switch", "--from", source, "--to", target, "--session", session),
        *("--workspace", str(ws), "--non-interactive"),
        timeout=200,
    )
    return ok(proc, f"passdown switch --from {source} --to {target}")


@pytest.mark.parametrize(
    ("source", "target"),
    [("claude", "cline"), ("claude", "kimi"), ("codex", "cline"), ("codex", "kimi")],
)
def test_switch_from_claude_and_codex_launches_the_real_cli(
    source: str, target: str, tmp_path: Path, agent_env: AgentEnv
) -> None:
    exp = expected(source)
    session = install_source(source, agent_env)
    ws = seed_workspace(tmp_path / "ws")
    with server_for(target) as srv:
        srv.set_script([Step(text=REPLY)])
        env = _environ(agent_env, target, srv.url, ws, tmp_path / "site")
        _switch(env, ws, source, target, session_arg(source, session))
        steps = srv.step_requests()
        assert steps, f"{target} sent no model request"
        user = "\n".join(user_texts(target, steps[0]))
        handoff_md = ws / ".agent-handoff" / "HANDOFF.md"
        assert str(handoff_md) in user
        assert request_opening(exp) in handoff_md.read_text(encoding="utf-8")
        for secret in exp["secrets"]:
            assert secret not in user and secret not in steps[0].text()
        assert srv.remaining == 0


@pytest.mark.parametrize(
    ("source", "target"),
    [("cline", "claude"), ("cline", "codex"), ("kimi", "claude"), ("kimi", "codex")],
)
def test_switch_from_the_recorded_session_to_claude_and_codex(
    source: str, target: str, tmp_path: Path, agent_env: AgentEnv
) -> None:
    exp = expected(source)
    session = install_source(source, agent_env)
    ws = seed_workspace(tmp_path / "ws")
    with server_for(target) as srv:
        srv.set_script([Step(text=REPLY)])
        env = _environ(agent_env, target, srv.url, ws, tmp_path / "site")
        _switch(env, ws, source, target, str(session))
        steps = srv.step_requests()
        assert steps, f"{target} sent no model request"
        handoff_md = ws / ".agent-handoff" / "HANDOFF.md"
        assert str(handoff_md) in "\n".join(user_texts(target, steps[0]))
        md = handoff_md.read_text(encoding="utf-8")
        assert exp["original_request"] in md
        assert exp["failing_command"]["command"] in md
        for item in exp["plan"]:
            assert item["subject"] in md
