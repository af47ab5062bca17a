"""Issue 10, the Claude Code part: messy real sessions written by the real Claude Code
2.1.197 against the scripted Anthropic server, exported with `passdown export`, and the
handoff's content checked (rewinds, forks, API-error endings, repeated compactions, a
session started in a subdirectory, a sub-agent that edits files)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, find_agent, run_claude, run_passdown
from e2e.checks import load_handoff, ok
from e2e.servers import AnthropicServer, Step, anthropic_error

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

SESSION = "10c1a0de-0000-4000-8000-0000000000a1"


def _env(agent_env: AgentEnv, server: AnthropicServer, **extra: str) -> dict[str, str]:
    env = agent_env.environ(anthropic_url=server.url)
    env.update(extra)
    return env


def _turn(
    server: AnthropicServer,
    env: dict[str, str],
    cwd: Path,
    prompt: str,
    steps: list[Step],
    *extra: str,
) -> subprocess.CompletedProcess[str]:
    """One scripted `claude -p` turn that must succeed and use every step."""
    server.set_script(steps)
    proc = run_claude(env, cwd, prompt, *extra, timeout=180)
    ok(proc, f"claude -p {prompt!r}")
    assert server.remaining == 0, f"{server.remaining} scripted steps never requested"
    return proc


def _export(
    env: dict[str, str], cwd: Path, *args: str, root: Path | None = None
) -> tuple[str, dict[str, Any]]:
    """`passdown export` run in `cwd`; the handoff is written at the repository root."""
    ok(run_passdown(env, cwd, "export", "--from", "claude", *args), "passdown export")
    return load_handoff(root or cwd)


def _plan(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["subject"], p["status"]) for p in data["state"]["plan"]]


def _session_records(agent_env: AgentEnv, session_id: str) -> list[dict[str, Any]]:
    path = next((agent_env.claude_dir / "projects").rglob(f"{session_id}.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _uuid_of(records: list[dict[str, Any]], kind: str, needle: str) -> str:
    for rec in records:
        if rec.get("type") == kind and needle in json.dumps(rec.get("message")):
            return str(rec["uuid"])
    raise AssertionError(f"no {kind} record mentions {needle!r}")


def _task_file(agent_env: AgentEnv, session_id: str, task_id: str) -> dict[str, Any]:
    path = agent_env.claude_dir / "tasks" / session_id / f"{task_id}.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


# -- rewind and fork ------------------------------------------------------------------
A_DONE = "a.txt written. Next step: review a.txt."
C_DONE = "c.txt written.\n\nNext steps:\n- review c.txt"
ABANDONED_TASK = "Abandoned task B"
ABANDONED_STEP = "polish the abandoned b.txt"


def _two_turns_then_rewind(
    agent_env: AgentEnv, server: AnthropicServer, ws: Path, *fork: str
) -> dict[str, str]:
    """Turn 1 creates task 1 (in progress) and a.txt; turn 2 creates the abandoned task 2,
    completes task 1 and writes b.txt. The files are rewound to before turn 2 and the
    session resumes at turn 1's last message: the new branch creates c.txt's task."""
    env = _env(agent_env, server, CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="1")
    _turn(
        server,
        env,
        ws,
        "Write a.txt and track it as a task",
        [
            Step(
                tool="TaskCreate",
                input={
                    "subject": "Write a.txt",
                    "description": "the a file",
                    "activeForm": "Writing a.txt",
                },
            ),
            Step(tool="TaskUpdate", input={"taskId": "1", "status": "in_progress"}),
            Step(tool="Write", input={"file_path": str(ws / "a.txt"), "content": "a\n"}),
            Step(text=A_DONE),
        ],
        "--session-id",
        SESSION,
    )
    _turn(
        server,
        env,
        ws,
        "Now write b.txt",
        [
            Step(
                tool="TaskCreate",
                input={
                    "subject": ABANDONED_TASK,
                    "description": "b",
                    "activeForm": "Writing b.txt",
                },
            ),
            Step(tool="TaskUpdate", input={"taskId": "1", "status": "completed"}),
            Step(tool="Write", input={"file_path": str(ws / "b.txt"), "content": "b\n"}),
            Step(text=f"b.txt written.\n\nNext steps:\n- {ABANDONED_STEP}"),
        ],
        "--resume",
        SESSION,
    )
    records = _session_records(agent_env, SESSION)
    turn2 = _uuid_of(records, "user", "Now write b.txt")
    resume_at = _uuid_of(records, "assistant", "a.txt written")
    rewind = subprocess.run(
        [str(find_agent("claude")), "--resume", SESSION, "--rewind-files", turn2],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    ok(rewind, "claude --rewind-files")
    assert not (ws / "b.txt").exists(), "--rewind-files restored the files"
    _turn(
        server,
        env,
        ws,
        "Instead write c.txt",
        [
            Step(
                tool="TaskCreate",
                input={
                    "subject": "Write c.txt",
                    "description": "the c file",
                    "activeForm": "Writing c.txt",
                },
            ),
            Step(tool="Write", input={"file_path": str(ws / "c.txt"), "content": "c\n"}),
            Step(text=C_DONE),
        ],
        "--resume",
        SESSION,
        "--resume-session-at",
        resume_at,
        *fork,
    )
    return env


# task 1 was left in progress on this branch (the abandoned one completed it)
BRANCH_PLAN = [("Write a.txt", "in_progress"), ("Write c.txt", "pending")]


def _assert_active_branch(
    md: str, data: dict[str, Any], plan: list[tuple[str, str]] = BRANCH_PLAN
) -> None:
    assert data["task"]["original_request"] == "Write a.txt and track it as a task"
    assert data["task"]["latest_user_message"] == "Instead write c.txt"
    assert data["task"]["latest_progress"] == C_DONE
    assert _plan(data) == plan
    assert "review c.txt" in data["state"]["next_steps"]
    assert ABANDONED_STEP not in json.dumps(data["state"])
    assert ABANDONED_TASK not in md and ABANDONED_TASK not in json.dumps(data)
    touched = {f["path"] for f in data["state"]["files_touched"]}
    assert {"a.txt", "c.txt"} <= touched and "b.txt" not in touched, touched


def test_rewind_with_resume_session_at(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    env = _two_turns_then_rewind(agent_env, anthropic_server, workspace)
    # The CLI's task store kept what ran last: the abandoned task, task 1 completed.
    assert _task_file(agent_env, SESSION, "2")["subject"] == ABANDONED_TASK
    assert _task_file(agent_env, SESSION, "1")["status"] == "completed"
    md, data = _export(env, workspace)
    assert data["source"]["session_id"] == SESSION
    _assert_active_branch(md, data)
    assert [p["id"] for p in data["state"]["plan"]] == ["1", "3"]
    # the task files still fill what the branch agrees on
    assert data["state"]["plan"][0]["description"] == "the a file"


def test_fork_session(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    env = _two_turns_then_rewind(agent_env, anthropic_server, workspace, "--fork-session")
    forks = [p for p in (agent_env.claude_dir / "projects").rglob("*.jsonl") if p.stem != SESSION]
    assert len(forks) == 1, forks
    fork_id = forks[0].stem
    # The fork's own task store started empty, so its new task reused id 1.
    assert _task_file(agent_env, fork_id, "1")["subject"] == "Write c.txt"
    md, data = _export(env, workspace)
    assert data["source"]["session_id"] == fork_id
    # the fork's task list holds only its own task 1: the copied prefix's task 1 belongs
    # to the plan before the fork, counted as set aside, not listed (issue 20)
    _assert_active_branch(md, data, plan=[("Write c.txt", "pending")])
    assert data["state"]["omitted"]["plan_set_aside"] == 1
    # the original session, exported explicitly, is still its own abandoned-branch story
    _md, original = _export(env, workspace, "--session", SESSION)
    assert _plan(original) == [("Write a.txt", "completed"), (ABANDONED_TASK, "pending")]


# -- API-error endings ----------------------------------------------------------------
FIRST_DONE = "hello.py is written. Next step: add a test for hello()."


def _first_turn(env: dict[str, str], server: AnthropicServer, ws: Path) -> None:
    _turn(
        server,
        env,
        ws,
        "Write hello.py",
        [
            Step(
                tool="Write",
                input={
                    "file_path": str(ws / "hello.py"),
                    "content": "def hello() -> str:\n    return 'hi'\n",
                },
            ),
            Step(text=FIRST_DONE),
        ],
        "--session-id",
        SESSION,
    )


def test_sticky_429_ends_on_rate_limit(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    env = _env(agent_env, anthropic_server, CLAUDE_CODE_MAX_RETRIES="2")
    _first_turn(env, anthropic_server, workspace)
    anthropic_server.fail(
        429,
        anthropic_error(
            "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
        ),
    )
    proc = run_claude(env, workspace, "Now add the test", "--resume", SESSION, timeout=240)
    assert proc.returncode != 0 and "429" in proc.stdout + proc.stderr
    md, data = _export(env, workspace)
    ended = data["ended"]
    assert ended["reason"] == "rate_limit", ended
    assert "429" in ended["message"] and ended["at"]
    # the CLI's error text is not the agent's progress; the request that failed is known
    assert data["task"]["latest_progress"] == FIRST_DONE
    assert data["task"]["latest_user_message"] == "Now add the test"
    assert "API Error" not in json.dumps(data["task"]["transcript"])
    summary = md.split("\n## ", 1)[0]
    assert "**How it ended:**" in summary and "rate limit" in summary.lower(), summary


def test_529_on_the_first_request_of_a_turn(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    env = _env(agent_env, anthropic_server, CLAUDE_CODE_MAX_RETRIES="0")
    _first_turn(env, anthropic_server, workspace)
    anthropic_server.fail(529, anthropic_error("overloaded_error", "Overloaded"), times=1)
    proc = run_claude(env, workspace, "Now add the test", "--resume", SESSION, timeout=240)
    assert proc.returncode != 0
    md, data = _export(env, workspace)
    assert data["ended"]["reason"] == "overloaded", data["ended"]
    assert "Overloaded" in data["ended"]["message"]
    assert data["task"]["latest_progress"] == FIRST_DONE
    assert "**How it ended:**" in md
    # the next turn goes through: the session recovered, so it ended normally
    _turn(
        anthropic_server,
        env,
        workspace,
        "Try again",
        [Step(text="Test added.")],
        "--resume",
        SESSION,
    )
    _md, data = _export(env, workspace)
    assert data["ended"]["reason"] == "normal", data["ended"]
    assert data["task"]["latest_progress"] == "Test added."


@pytest.mark.parametrize(
    ("status", "error_type", "message", "reason"),
    [
        (401, "authentication_error", "invalid x-api-key", "auth"),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "context_length",
        ),
        (429, "rate_limit_error", "You've hit your limit", "usage_limit"),
    ],
)
def test_other_api_error_endings(
    tmp_path: Path,
    agent_env: AgentEnv,
    workspace: Path,
    anthropic_server: AnthropicServer,
    status: int,
    error_type: str,
    message: str,
    reason: str,
) -> None:
    env = _env(agent_env, anthropic_server, CLAUDE_CODE_MAX_RETRIES="0")
    anthropic_server.fail(status, anthropic_error(error_type, message))
    proc = run_claude(env, workspace, "Write hello.py", "--session-id", SESSION, timeout=240)
    assert proc.returncode != 0
    md, data = _export(env, workspace)
    assert data["ended"]["reason"] == reason, data["ended"]
    assert data["task"]["original_request"] == "Write hello.py"
    assert data["task"]["latest_progress"] is None  # the CLI's error text is not progress
    assert "**How it ended:**" in md


# -- three compactions ------------------------------------------------------------------
COMPACT_REQUEST = "Build the parser in three steps and track them as tasks"
CLI_INSTRUCTIONS = (
    "without asking the user",
    "Continue the conversation",
    "If you need specific details",
    "read the full transcript",
    "This session is being continued",
)


def test_three_compactions_keep_plan_and_request(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    env = _env(agent_env, anthropic_server)
    server = anthropic_server

    def compact() -> None:
        server.set_script([])
        ok(run_claude(env, workspace, "/compact", "-c", timeout=180), "claude -p /compact -c")

    _turn(
        server,
        env,
        workspace,
        COMPACT_REQUEST,
        [
            Step(
                tool="TaskCreate",
                input={"subject": "Tokenize", "description": "t", "activeForm": "Tokenizing"},
            ),
            Step(
                tool="TaskCreate",
                input={"subject": "Parse", "description": "p", "activeForm": "Parsing"},
            ),
            Step(tool="TaskUpdate", input={"taskId": "1", "status": "in_progress"}),
            Step(text="Tokenizing first."),
        ],
        "--session-id",
        SESSION,
    )
    compact()
    _turn(
        server,
        env,
        workspace,
        "Go on",
        [
            Step(tool="TaskUpdate", input={"taskId": "1", "status": "completed"}),
            Step(tool="TaskUpdate", input={"taskId": "2", "status": "in_progress"}),
            Step(text="Tokenizer done; parsing now."),
        ],
        "-c",
    )
    compact()
    _turn(
        server,
        env,
        workspace,
        "Continue and add an evaluator task",
        [
            Step(
                tool="TaskCreate",
                input={"subject": "Evaluate", "description": "e", "activeForm": "Evaluating"},
            ),
            Step(tool="TaskUpdate", input={"taskId": "2", "status": "completed"}),
            Step(tool="TaskUpdate", input={"taskId": "3", "status": "in_progress"}),
            Step(text="Parser done. Next step: write the evaluator."),
        ],
        "-c",
    )
    compact()
    records = _session_records(agent_env, SESSION)
    assert sum(1 for r in records if r.get("subtype") == "compact_boundary") == 3
    md, data = _export(env, workspace)
    task = data["task"]
    assert task["compactions"] == 3
    assert task["original_request"] == COMPACT_REQUEST
    assert task["latest_user_message"] == "Continue and add an evaluator task"
    assert _plan(data) == [
        ("Tokenize", "completed"),
        ("Parse", "completed"),
        ("Evaluate", "in_progress"),
    ]
    summary = task["compaction_summary"] or ""
    assert "Primary Request and Intent" in summary
    for instruction in CLI_INSTRUCTIONS:
        assert instruction not in summary, instruction
        assert instruction not in md, instruction


# -- a session started in a subdirectory ------------------------------------------------
def test_session_started_in_a_subdirectory(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    sub = workspace / "pkg"
    sub.mkdir()
    env = _env(agent_env, anthropic_server)
    _turn(
        anthropic_server,
        env,
        sub,
        "Add pkg/mod.py and list the folder",
        [
            Step(tool="Write", input={"file_path": str(sub / "mod.py"), "content": "X = 1\n"}),
            Step(tool="Bash", input={"command": "ls", "description": "List the folder"}),
            Step(text="mod.py added. Next step: import it from greet.py."),
        ],
        "--session-id",
        SESSION,
    )
    for where in (workspace, sub):
        shutil.rmtree(workspace / ".agent-handoff", ignore_errors=True)
        md, data = _export(env, where, root=workspace)
        assert data["source"]["session_id"] == SESSION, where
        assert data["workspace"]["path"] == str(workspace), where
        touched = [f["path"] for f in data["state"]["files_touched"]]
        assert "pkg/mod.py" in touched, (where, touched)
        assert "pkg/mod.py" in md
        assert data["task"]["original_request"] == "Add pkg/mod.py and list the folder"
        assert ("ls", 0) in [(c["command"], c["exit_code"]) for c in data["state"]["commands"]]


# -- a sub-agent that edits files ---------------------------------------------------------
SUB_REQUEST = "Have a helper agent write helper.py and check it, then report"
SUB_PROMPT = "Create helper.py with a double() function, then run the check command."
FAILING = "python3 -c 'import sys; print(\"check failed: double() missing\"); sys.exit(3)'"


def test_subagent_that_edits_files(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, anthropic_server: AnthropicServer
) -> None:
    env = _env(agent_env, anthropic_server)
    _turn(
        anthropic_server,
        env,
        workspace,
        SUB_REQUEST,
        [
            Step(
                text="Delegating.",
                tool="Agent",
                input={
                    "description": "Write helper.py",
                    "prompt": SUB_PROMPT,
                    "subagent_type": "general-purpose",
                },
            ),
            # the sub-agent's own requests take the next steps while the main agent waits
            Step(
                tool="Write",
                input={
                    "file_path": str(workspace / "helper.py"),
                    "content": "def double(x: int) -> int:\n    return 2 * x\n",
                },
            ),
            Step(tool="Bash", input={"command": FAILING, "description": "Run the check"}),
            Step(text="helper.py is written; the check fails."),
            Step(
                text="The helper agent wrote helper.py; its check failed. Next step: fix the check."
            ),
        ],
        "--session-id",
        SESSION,
    )
    folder = next((agent_env.claude_dir / "projects").rglob(f"{SESSION}/subagents"))
    agent_id = next(folder.glob("agent-*.jsonl")).stem.removeprefix("agent-")
    md, data = _export(env, workspace)
    state, task = data["state"], data["task"]
    assert task["original_request"] == SUB_REQUEST
    assert task["latest_user_message"] == SUB_REQUEST
    assert SUB_PROMPT not in json.dumps(task)
    assert [(s["id"], s["agent_type"], s["task"]) for s in state["subagents"]] == [
        (agent_id, "general-purpose", "Write helper.py")
    ]
    files = {f["path"]: f for f in state["files_touched"]}
    assert files["helper.py"]["by"] == agent_id and files["helper.py"]["confirmed"]
    runs = [c for c in state["commands"] if c["command"] == FAILING]
    assert runs and runs[0]["by"] == agent_id and runs[0]["exit_code"] == 3, runs
    failure = state["last_failure"]
    assert failure["command"] == FAILING and failure["by"] == agent_id, failure
    assert "check failed" in (failure["error"] or ""), failure
    assert data["ended"]["reason"] == "normal"
    assert "helper.py" in md and FAILING in md
