"""Issue 5: examples/harness_loop.py runs a two-session harness loop end to end with the
real Claude Code and Codex CLIs against the scripted model servers: session 1 works, the
coordinator publishes a session handoff, the target side loads, verifies and claims it,
session 2 starts on the takeover prompt, and the handoff is completed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.agents import REPO_ROOT, AgentEnv
from e2e.checks import anthropic_user_texts, openai_user_texts
from e2e.servers import AnthropicServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

EXAMPLE = REPO_ROOT / "examples" / "harness_loop.py"
FEATURES = [
    {"id": "docs-001", "description": "Write NOTES.md", "passes": False},
    {"id": "docs-002", "description": "Append a Usage heading to README.md", "passes": False},
]


def test_harness_loop_with_real_claude(
    agent_bin: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    (workspace / "feature_list.json").write_text(json.dumps(FEATURES, indent=2) + "\n")
    anthropic_server.set_script(
        [
            # session 1: one real tool call, then it stops with its next step
            Step(
                text="Writing the notes.",
                tool="Write",
                input={"file_path": str(workspace / "NOTES.md"), "content": "# Notes\n"},
            ),
            Step(text="NOTES.md is written.\n\nNext steps:\n- append a Usage heading to README.md"),
            # session 2: the takeover
            Step(text="Read the handoff; continuing from the next step."),
        ]
    )
    env = agent_env.environ(anthropic_url=anthropic_server.url)
    env["PATH"] = f"{agent_bin}:{env['PATH']}"  # the pinned CLIs, wherever HOME points now
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--workspace",
            str(workspace),
            "--agent",
            "claude",
            "--task",
            "Write NOTES.md, then append a Usage heading to README.md",
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["first_session_exit"] == 0
    (handoff,) = report["handoffs"]
    assert handoff["status"] == "completed" and handoff["exit_code"] == 0
    assert handoff["session_number"] == 1
    assert "append a Usage heading to README.md" in handoff["next_steps"]
    assert [e["status"] for e in handoff["events"]] == [
        "prepared",
        "published",
        "claimed",
        "completed",
    ]
    assert handoff["events"][2]["by"] == "claude#2"
    assert report["history"] == [{"id": handoff["id"], "status": "completed"}]

    steps = anthropic_server.step_requests()
    assert len(steps) == 3 and anthropic_server.remaining == 0
    takeover = "\n".join(anthropic_user_texts(steps[2]))
    assert "HANDOFF.md" in takeover and "append a Usage heading" in takeover
    markdown = (workspace / ".agent-handoff" / "HANDOFF.md").read_text()
    assert "NOTES.md" in markdown  # the file session 1 wrote is in the handoff
    assert "Session 1 stopped" in markdown


def test_harness_loop_with_real_codex(
    agent_bin: Path, agent_env: AgentEnv, workspace: Path, openai_server: OpenAIResponsesServer
) -> None:
    (workspace / "feature_list.json").write_text(json.dumps(FEATURES, indent=2) + "\n")
    openai_server.set_script(
        [
            # session 1: a real shell edit (no patch record: passdown sees it through git)
            Step(
                text="Writing the notes.",
                tool="exec_command",
                input={"cmd": "printf '# Notes\\n' > NOTES.md"},
            ),
            Step(text="NOTES.md is written.\n\nNext steps:\n- append a Usage heading to README.md"),
            # session 2: the takeover
            Step(text="Read the handoff; continuing from the next step."),
        ]
    )
    env = agent_env.environ(openai_url=openai_server.url)
    env["PATH"] = f"{agent_bin}:{env['PATH']}"
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--workspace",
            str(workspace),
            "--agent",
            "codex",
            "--task",
            "Write NOTES.md, then append a Usage heading to README.md",
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    (handoff,) = report["handoffs"]
    assert handoff["status"] == "completed" and handoff["exit_code"] == 0
    assert "append a Usage heading to README.md" in handoff["next_steps"]
    assert [e["status"] for e in handoff["events"]] == [
        "prepared",
        "published",
        "claimed",
        "completed",
    ]
    steps = openai_server.step_requests()
    assert len(steps) == 3 and openai_server.remaining == 0
    takeover = "\n".join(openai_user_texts(steps[2]))
    assert "HANDOFF.md" in takeover and "append a Usage heading" in takeover
    assert "NOTES.md" in (workspace / ".agent-handoff" / "HANDOFF.md").read_text()
