"""Issue 30, item 1, with the real Claude Code: a session whose first prompt is a 300 KB
paste (its first records, the queue record and the first user record that holds the
cwd, lie past the 256 KiB head discovery reads first) is the one `passdown export`
hands off, not the older session of the same workspace."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, find_agent, run_claude, run_passdown
from e2e.checks import load_handoff, ok
from e2e.servers import AnthropicServer, Step
from passdown.agents.claude import encode_cwd

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

OLD_ID = "5e551011-0000-4000-8000-0000000c3001"
NEW_ID = "5e551011-0000-4000-8000-0000000c3002"
HEAD = 256 * 1024


def test_a_300_kb_first_prompt_is_the_session_handed_off(
    workspace: Path, agent_env: AgentEnv, anthropic_server: AnthropicServer
) -> None:
    env = agent_env.environ(anthropic_url=anthropic_server.url)
    anthropic_server.set_script([Step(text="Done with the small task.")])
    ok(run_claude(env, workspace, "SMALL TASK: rename greet()", "--session-id", OLD_ID), "old")

    # too long for one argument (128 KiB on Linux): `claude -p` reads it from stdin
    line = "Traceback (most recent call last): File 'app.py', line 12, in main\n"
    big = "BIG TASK: find why app.py crashes.\n" + line * (300 * 1024 // len(line))
    anthropic_server.set_script([Step(text="Done with the big task.")])
    argv = [str(find_agent("claude")), "-p", "--permission-mode", "acceptEdits"]
    proc = subprocess.run(
        [*argv, "--session-id", NEW_ID],
        input=big,
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    ok(proc, "claude with a 300 KB prompt")

    session = agent_env.claude_dir / "projects" / encode_cwd(str(workspace)) / f"{NEW_ID}.jsonl"
    with session.open("rb") as handle:
        head = handle.read(HEAD)
    # the layout that hid it: no whole record naming the cwd within the head
    assert all(b'"cwd"' not in line for line in head.split(b"\n")[:-1])

    out = ok(run_passdown(env, workspace, "sessions", "--from", "claude"), "passdown sessions")
    [row] = [r for r in out.splitlines() if NEW_ID in r]
    assert row.endswith(str(workspace))
    ok(run_passdown(env, workspace, "export", "--from", "claude"), "passdown export")
    markdown, data = load_handoff(workspace)
    assert data["source"]["session_id"] == NEW_ID
    assert "BIG TASK: find why app.py crashes." in markdown
    assert "SMALL TASK" not in markdown
