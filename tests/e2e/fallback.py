"""`passdown run SOURCE --fallback claude --non-interactive -- PROMPT` with a real source
CLI: the source's scripted model does some work (a plan, a file, a failing command), then
every request gets a 429; the source gives up on it, passdown reads the rate limit from
its session and launches the real Claude Code on the takeover prompt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e.agents import AgentEnv, target_environ
from e2e.checks import Facts, anthropic_user_texts, assert_facts, load_handoff
from e2e.servers import AnthropicServer, LoggedRequest, Step, _ScriptedServer

RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}
TOOK_OVER = "Read the handoff; continuing."


def rate_limit_after_script(server: _ScriptedServer) -> None:
    """Every request once the script is spent gets a 429 (no retry-after wait): the
    source did its work, then hit a limit that does not lift."""
    server.fail(
        429, RATE_LIMIT, headers={"retry-after": "0"}, when=lambda _body: server.remaining == 0
    )


def run_falling_over_to_claude(
    env: dict[str, str],
    agent_env: AgentEnv,
    workspace: Path,
    source: str,
    prompt: str,
    *,
    timeout: float = 240,  # a guard: under load 12 OpenHands alone took 100 s
) -> tuple[subprocess.CompletedProcess[str], list[LoggedRequest]]:
    """`passdown run SOURCE --fallback claude --non-interactive -- PROMPT` with Claude Code
    on a scripted server of its own (passdown exits 124 past `timeout`); returns
    passdown's process and Claude's model requests."""
    with AnthropicServer([Step(text=TOOK_OVER)]) as claude:
        run_env = {**env, **_claude_only(target_environ(agent_env, "claude", claude.url))}
        args = ["run", source, "--fallback", "claude", "--non-interactive", "--", prompt]
        # under `timeout`: past it, the whole process group goes (passdown and the agent
        # it launched), not passdown alone with the agent left running
        proc = subprocess.run(
            ["timeout", "-k", "5", str(int(timeout)), sys.executable, "-m", "passdown", *args],
            cwd=workspace,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=timeout + 30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        return proc, claude.step_requests()


def _claude_only(env: dict[str, str]) -> dict[str, str]:
    """Claude Code's variables, not the plain environment's PATH/PYTHONPATH (the source's
    environment keeps its own)."""
    return {k: v for k, v in env.items() if k.startswith(("ANTHROPIC_", "CLAUDE_"))}


def sticky_429_facts(agent: str, prompt: str, failing: str, ended_message: str) -> Facts:
    """What the handoff of a source stopped by the sticky 429 must hold: its script
    planned two tasks, wrote hello.txt and ran `failing` (exit 2) before the 429s."""
    return Facts(
        agent=agent,
        request=prompt,
        plan=[("Write hello.txt", "in_progress"), ("Run the tests", "pending")],
        files={"hello.txt": ["write"]},
        commands=[(failing, 2, False)],
        failure=(failing, 2),
        failure_error="No such file or directory",
        ended="rate_limit",
        ended_message=ended_message,
        in_markdown=(prompt, failing, "Write hello.txt (in_progress)"),
    )


def assert_claude_took_over(
    proc: subprocess.CompletedProcess[str],
    claude_steps: list[LoggedRequest],
    workspace: Path,
    facts: Facts,
    display_name: str,
) -> dict[str, Any]:
    """passdown exited with Claude Code's exit code (0) after saying why it fell over;
    the handoff holds `facts` (a rate-limit ending); Claude Code started on the takeover
    prompt: the handoff's path, the source's request, the ending, the plan and the failed
    command from the handoff's summary. Returns the handoff."""
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    said = f"passdown: {display_name} stopped on a rate limit; continuing in Claude Code"
    assert said in proc.stderr, proc.stderr[-3000:]
    md, data = load_handoff(workspace)
    assert_facts(md, data, facts)
    assert claude_steps, "claude was never started"
    prompt = "\n".join(anthropic_user_texts(claude_steps[0]))
    session = data["source"]["session_id"]
    assert f"You are taking over a coding task from {facts.agent} (session {session})" in prompt
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in prompt
    assert f"**Goal:** {facts.request}" in prompt, prompt
    assert "**How it ended:** on a rate limit (HTTP 429)" in prompt, prompt
    if facts.plan:
        done = sum(1 for row in facts.plan if row[-1] == "completed")
        assert f"**Plan:** {done}/{len(facts.plan)} done" in prompt, prompt
    if facts.failure is not None:
        command, exit_code = facts.failure
        assert f"last command failed (exit {exit_code}): {command}" in prompt, prompt
    return data
