"""Record real session files from the real agent CLIs, as fixtures for the parser tests.

    bash .ci/install-agents.sh
    python tests/e2e/record.py                 # all scenarios
    python tests/e2e/record.py claude/full     # one scenario

Each scenario runs the real CLI against a scripted model server on 127.0.0.1 in a fresh git
workspace under /tmp/passdown-rec/<agent>-<scenario>, then copies the session files the CLI
wrote (layout relative to its config dir, bytes untouched) into
tests/fixtures/sessions/<agent>/<scenario>/ with an expected.json describing what a correct
handoff must contain. See tests/fixtures/sessions/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `e2e` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e.agents import (
    CHAT_MODEL,
    CODEX_MODEL,
    GEMINI_MODEL,
    REPO_ROOT,
    VERSIONS,
    AgentEnv,
    init_git_workspace,
    run_claude,
    run_codex,
    run_copilot,
    run_droid,
    run_gemini,
    run_kilo,
    run_opencode,
    run_pi,
    run_qwen,
)
from e2e.servers import (
    AnthropicServer,
    ChatCompletionsServer,
    GeminiServer,
    LoggedRequest,
    OpenAIResponsesServer,
    Step,
)

REC_ROOT = Path("/tmp/passdown-rec")
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sessions"

# Planted secrets: fake, but shaped like the real thing so detectors must catch them.
AWS_KEY = "AKIAQ4XJ7PASSDOWN5ZT"
GH_TOKEN = "ghp_passdownFAKE0123456789abcdefghijklmn"
ANTHROPIC_KEY = "sk-ant-api03-" + ("PassdownFakeKey0" * 6)[:93] + "AA"
SLACK_TOKEN = "xoxb-1234567890-1234567890123-PassdownFakeSlackTok"
OPENAI_KEY = (
    "sk-proj-PassdownFake"
    + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    + "T3BlbkFJ"
    + "Q7rS0tU3vW6xY9zA2bC5dE8f"
)

SEED_FILES = {
    "README.md": "# calc\n\nA tiny calculator.\n",
    "greet.py": 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n',
    ".gitignore": ".env.local\n",
}
# Untracked and ignored: a command prints it, so it reaches the transcript via tool output.
ENV_LOCAL = f"SLACK_BOT_TOKEN={SLACK_TOKEN}\n"

CALC_BUGGY = "def add(a: int, b: int) -> int:\n    return a - b\n"
CALC_FIXED = "def add(a: int, b: int) -> int:\n    return a + b\n"
TEST_CALC = (
    "import unittest\n\nfrom calc import add\n\n\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self) -> None:\n"
    "        self.assertEqual(add(2, 2), 4)\n\n\n"
    'if __name__ == "__main__":\n    unittest.main()\n'
)
# -B: no stale __pycache__ when calc.py is rewritten within the same second
TEST_CMD = "python3 -B -m unittest -q test_calc"


class RecordError(RuntimeError):
    """A scenario did not go as scripted (the agent failed, skipped a step, ...)."""


@dataclass
class Ctx:
    agent: str
    name: str
    workspace: Path
    env: AgentEnv
    expected: dict[str, Any] = field(default_factory=dict)


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        raise RecordError(
            f"{what} exited {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n"
            f"stderr:\n{proc.stderr[-3000:]}"
        )


def _all_steps_used(server: AnthropicServer | OpenAIResponsesServer, what: str) -> None:
    if server.remaining:
        raise RecordError(f"{what}: {server.remaining} scripted steps were never requested")


# -- checks on what the agent sent back (the request after a tool step holds its result) --
def _claude_tool_results(req: LoggedRequest) -> list[dict[str, Any]]:
    # The last *user* message: 2.1.197 may append role "system" reminders after it.
    msgs = [m for m in req.body.get("messages") or [] if m.get("role") == "user"]
    last = msgs[-1] if msgs else {}
    content = last.get("content") if isinstance(last, dict) else None
    return [b for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_result"]


def _verify_claude(server: AnthropicServer, steps: list[Step]) -> None:
    reqs = server.step_requests()
    for i, step in enumerate(steps):
        if not step.tool or i + 1 >= len(reqs):
            continue
        results = _claude_tool_results(reqs[i + 1])
        if not results:
            last = json.dumps(reqs[i + 1].body.get("messages", [])[-2:])[:3000]
            raise RecordError(
                f"claude step {i} ({step.tool}): no tool_result in next request: {last}"
            )
        is_error = bool(results[-1].get("is_error"))
        if step.tool == "Bash":  # a failing command is reported as an error result too
            continue
        if is_error != step.expect_error:
            raise RecordError(f"claude step {i} ({step.tool}) is_error={is_error}: {results[-1]}")


def _verify_codex(server: OpenAIResponsesServer, steps: list[Step]) -> None:
    reqs = server.step_requests()
    for i, step in enumerate(steps):
        if not step.tool or i + 1 >= len(reqs):
            continue
        outputs = [
            it
            for it in reqs[i + 1].body.get("input") or []
            if isinstance(it, dict) and it.get("type", "").endswith("_output")
        ]
        if not outputs:
            raise RecordError(f"codex step {i} ({step.tool}): no tool output in next request")
        out = json.dumps(outputs[-1].get("output"))
        failed = (
            "exited with code 0" not in out
            if step.tool == "exec_command"
            else ("error" in out.lower() or "failed" in out.lower())
        )
        if step.tool in ("apply_patch", "exec_command") and failed != step.expect_error:
            raise RecordError(f"codex step {i} ({step.tool}) failed={failed}: {out[:500]}")


# -- workspace helpers ------------------------------------------------------------------
def seed_workspace(path: Path) -> Path:
    """The scenarios' starting point: a git repo with SEED_FILES and an ignored .env.local."""
    ws = init_git_workspace(path, SEED_FILES)
    (ws / ".env.local").write_text(ENV_LOCAL, encoding="utf-8")
    return ws


def new_ctx(agent: str, name: str, workspace: Path, env: AgentEnv) -> Ctx:
    return Ctx(agent, name, seed_workspace(workspace), env)


def _fresh(agent: str, name: str) -> Ctx:
    base = REC_ROOT / f"{agent}-{name}"
    home_root = REC_ROOT / f"{agent}-{name}-home"
    for d in (base, home_root):
        shutil.rmtree(d, ignore_errors=True)
    return new_ctx(agent, name, base, AgentEnv.create(home_root))


def _git_state(ws: Path) -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ws, capture_output=True, text=True, check=True
        ).stdout

    return {
        "branch": git("rev-parse", "--abbrev-ref", "HEAD").strip(),
        "head": git("rev-parse", "HEAD").strip(),
        "status_porcelain": git("status", "--porcelain").splitlines(),
    }


# ---------------------------------------------------------------------------------------
# Claude Code scenarios
# ---------------------------------------------------------------------------------------
CLAUDE_FULL_ID = "5e551011-0000-4000-8000-00000000c1a0"
CLAUDE_TODO_ID = "5e551011-0000-4000-8000-00000000c1a1"

CLAUDE_PROMPT_1 = (
    "Create calc.py with an add() function and a unittest for it, make greet() say 'Hi' "
    "instead of 'Hello', and add a Usage section to the README. Track the work as tasks. "
    f"Deploy creds for later (do not commit them): AWS_ACCESS_KEY_ID={AWS_KEY} and "
    f"GITHUB_TOKEN={GH_TOKEN}"
)
CLAUDE_PROMPT_2 = "The test still fails. Fix add() in calc.py and re-run the tests."
CLAUDE_PROMPT_4 = "Continue with the README task."
CLAUDE_FINAL_1 = (
    "Progress: calc.py and test_calc.py are written and greet() now says Hi. The README "
    "edit failed (the text I targeted is not in README.md) and `python3 -B -m unittest -q "
    "test_calc` fails: add() returns a - b. Next step: fix add() and re-run the tests."
)
CLAUDE_FINAL_2 = "add() is fixed and the tests pass. Remaining: the README Usage section (task 3)."
CLAUDE_FINAL_4 = (
    "Working on the README Usage section now; next step is to append a Usage "
    "heading with an example call to add()."
)


def claude_full(ctx: Ctx) -> None:
    ws = ctx.workspace
    p = {n: str(ws / n) for n in ("calc.py", "test_calc.py", "greet.py", "README.md")}
    turn1 = [
        Step(
            text="I'll track this as tasks.",
            thinking="Plan: three tasks, then code.",
            tool="TaskCreate",
            input={
                "subject": "Write calc.py with add() and its test",
                "description": "calc.add plus unittest",
                "activeForm": "Writing calc.py",
            },
        ),
        Step(
            tool="TaskCreate",
            input={
                "subject": "Make greet() say Hi",
                "description": "Change the greeting in greet.py",
                "activeForm": "Changing the greeting",
            },
        ),
        Step(
            tool="TaskCreate",
            input={
                "subject": "Add a Usage section to README.md",
                "description": "Document add()",
                "activeForm": "Updating the README",
            },
        ),
        Step(tool="TaskUpdate", input={"taskId": "1", "status": "in_progress"}),
        Step(
            text="Writing calc.py.",
            tool="Write",
            input={"file_path": p["calc.py"], "content": CALC_BUGGY},
        ),
        Step(tool="Write", input={"file_path": p["test_calc.py"], "content": TEST_CALC}),
        Step(tool="TaskUpdate", input={"taskId": "1", "status": "completed"}),
        Step(tool="TaskUpdate", input={"taskId": "2", "status": "in_progress"}),
        # Edit needs a prior Read of the file in this session.
        Step(tool="Read", input={"file_path": p["greet.py"]}),
        Step(
            tool="Edit",
            input={"file_path": p["greet.py"], "old_string": "Hello", "new_string": "Hi"},
        ),
        Step(tool="TaskUpdate", input={"taskId": "2", "status": "completed"}),
        Step(tool="TaskUpdate", input={"taskId": "3", "status": "in_progress"}),
        Step(tool="Read", input={"file_path": p["README.md"]}),
        Step(
            text="Adding the Usage section.",
            tool="Edit",
            expect_error=True,
            input={
                "file_path": p["README.md"],
                "old_string": "## Installation",
                "new_string": "## Usage\n\n    from calc import add\n",
            },
        ),
        Step(
            tool="Bash",
            input={
                "command": f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'",
                "description": "Show the key export line",
            },
        ),
        Step(
            tool="Bash", input={"command": "cat .env.local", "description": "Show local env file"}
        ),
        Step(
            text="Running the tests.",
            tool="Bash",
            input={"command": TEST_CMD, "description": "Run the unit tests"},
        ),
        Step(text=CLAUDE_FINAL_1),
    ]
    turn2 = [
        Step(
            tool="Edit",
            input={
                "file_path": p["calc.py"],
                "old_string": "return a - b",
                "new_string": "return a + b",
            },
        ),
        Step(tool="Bash", input={"command": TEST_CMD, "description": "Re-run the unit tests"}),
        Step(text=CLAUDE_FINAL_2),
    ]
    turn4 = [
        Step(
            tool="TaskUpdate",
            input={
                "taskId": "3",
                "status": "in_progress",
                "activeForm": "Writing the Usage section",
            },
        ),
        Step(text=CLAUDE_FINAL_4),
    ]
    with AnthropicServer(turn1) as srv:
        assert isinstance(srv, AnthropicServer)
        env = ctx.env.environ(anthropic_url=srv.url)
        _check(run_claude(env, ws, CLAUDE_PROMPT_1, "--session-id", CLAUDE_FULL_ID), "turn 1")
        _all_steps_used(srv, "turn 1")
        _verify_claude(srv, turn1)
        srv.set_script(turn2)
        n = len(srv.requests)
        _check(run_claude(env, ws, CLAUDE_PROMPT_2, "--resume", CLAUDE_FULL_ID), "turn 2")
        _all_steps_used(srv, "turn 2")
        _verify_claude(_Slice(srv, n), turn2)  # type: ignore[arg-type]
        # Turn 3: compaction through the /compact slash command in a resumed -p run.
        srv.set_script([])
        n = len(srv.requests)
        proc = run_claude(env, ws, "/compact", "--resume", CLAUDE_FULL_ID)
        _check(proc, "turn 3 (/compact)")
        compact_reqs = [r for r in srv.requests[n:] if r.kind == "aux"]
        srv.set_script(turn4)
        n = len(srv.requests)
        _check(run_claude(env, ws, CLAUDE_PROMPT_4, "--resume", CLAUDE_FULL_ID), "turn 4")
        _all_steps_used(srv, "turn 4")
        srv.dump_log(str(ctx.env.root / "requests.jsonl"))
    ctx.expected.update(
        {
            "session_id": CLAUDE_FULL_ID,
            "original_request": CLAUDE_PROMPT_1,
            "latest_user_message": CLAUDE_PROMPT_4,
            "final_assistant_message": CLAUDE_FINAL_4,
            "turns": [CLAUDE_PROMPT_1, CLAUDE_PROMPT_2, "/compact", CLAUDE_PROMPT_4],
            "plan": [
                {
                    "id": "1",
                    "subject": "Write calc.py with add() and its test",
                    "status": "completed",
                },
                {"id": "2", "subject": "Make greet() say Hi", "status": "completed"},
                {"id": "3", "subject": "Add a Usage section to README.md", "status": "in_progress"},
            ],
            "files_written": ["calc.py", "test_calc.py"],
            "files_edited": ["greet.py", "calc.py"],
            "files_touched": ["calc.py", "greet.py", "test_calc.py"],
            "failed_edits": ["README.md"],
            "commands": [
                {"command": f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'", "exit_code": 0},
                {"command": "cat .env.local", "exit_code": 0},
                {"command": TEST_CMD, "exit_code": 1},
                {"command": TEST_CMD, "exit_code": 0},
            ],
            "failing_command": {
                "command": TEST_CMD,
                "exit_code": 1,
                "error_line_contains": "FAILED (failures=1)",
            },
            "secrets": [AWS_KEY, GH_TOKEN, ANTHROPIC_KEY, SLACK_TOKEN],
            "compaction": {
                "triggered": True,
                "trigger": "manual",
                "model_requests": len(compact_reqs),
                "summary_contains": "Primary Request and Intent",
            },
            "hidden_reasoning_planted": ["Plan: three tasks, then code."],
        }
    )


class _Slice:
    """View of a server's log from request n on, for per-turn checks."""

    def __init__(self, srv: AnthropicServer | OpenAIResponsesServer, n: int) -> None:
        self.requests = srv.requests[n:]

    def step_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.kind == "step"]


CLAUDE_TODO_PROMPT = (
    "Add a shout() helper to greet.py that upper-cases the greeting; keep a todo list."
)
CLAUDE_TODO_FINAL = "shout() is added. Next step: add a test for shout()."


def claude_todowrite(ctx: Ctx) -> None:
    """Older-style plan tool: TodoWrite (only offered when CLAUDE_CODE_ENABLE_TASKS=0)."""
    ws = ctx.workspace
    todos1 = [
        {
            "content": "Add shout() to greet.py",
            "status": "in_progress",
            "activeForm": "Adding shout()",
        },
        {
            "content": "Add a test for shout()",
            "status": "pending",
            "activeForm": "Adding a test for shout()",
        },
    ]
    todos2 = [dict(todos1[0], status="completed"), todos1[1]]
    steps = [
        Step(text="Planning.", tool="TodoWrite", input={"todos": todos1}),
        Step(tool="Read", input={"file_path": str(ws / "greet.py")}),
        Step(
            tool="Edit",
            input={
                "file_path": str(ws / "greet.py"),
                "old_string": 'return f"Hello, {name}!"\n',
                "new_string": 'return f"Hello, {name}!"\n\n\n'
                "def shout(name: str) -> str:\n"
                "    return greet(name).upper()\n",
            },
        ),
        Step(tool="TodoWrite", input={"todos": todos2}),
        Step(text=CLAUDE_TODO_FINAL),
    ]
    with AnthropicServer(steps) as srv:
        env = ctx.env.environ(anthropic_url=srv.url)
        env["CLAUDE_CODE_ENABLE_TASKS"] = "0"
        _check(run_claude(env, ws, CLAUDE_TODO_PROMPT, "--session-id", CLAUDE_TODO_ID), "run")
        _all_steps_used(srv, "todowrite")
        _verify_claude(srv, steps)  # type: ignore[arg-type]
        tools = srv.step_requests()[0].offered_tools()
        if "TodoWrite" not in tools:
            raise RecordError(f"TodoWrite not offered: {tools}")
    ctx.expected.update(
        {
            "session_id": CLAUDE_TODO_ID,
            "original_request": CLAUDE_TODO_PROMPT,
            "latest_user_message": CLAUDE_TODO_PROMPT,
            "final_assistant_message": CLAUDE_TODO_FINAL,
            "plan": [{"subject": t["content"], "status": t["status"]} for t in todos2],
            "files_written": [],
            "files_edited": ["greet.py"],
            "files_touched": ["greet.py"],
            "failed_edits": [],
            "commands": [],
            "failing_command": None,
            "secrets": [],
        }
    )


CLAUDE_SUB_ID = "5e551011-0000-4000-8000-00000000c1a2"
CLAUDE_SUB_PROMPT = "Find out which Python files define greet(), then summarise."
CLAUDE_SUB_FINAL = "greet() is defined in greet.py. Next step: none, the question is answered."


def claude_subagent(ctx: Ctx) -> None:
    """A sub-agent (Agent tool): its transcript goes to <id>/subagents/, not the main file."""
    steps = [
        Step(
            text="Delegating the search.",
            tool="Agent",
            input={
                "description": "Find greet definitions",
                "prompt": "List Python files that define greet().",
                "subagent_type": "general-purpose",
            },
        ),
        # The sub-agent's own requests consume the next steps (the main agent waits).
        Step(
            text="Searching.",
            tool="Bash",
            input={"command": "grep -l 'def greet' *.py", "description": "Find greet"},
        ),
        Step(text="Only greet.py defines greet()."),
        Step(text=CLAUDE_SUB_FINAL),
    ]
    with AnthropicServer(steps) as srv:
        env = ctx.env.environ(anthropic_url=srv.url)
        _check(
            run_claude(env, ctx.workspace, CLAUDE_SUB_PROMPT, "--session-id", CLAUDE_SUB_ID), "run"
        )
        _all_steps_used(srv, "subagent")
    ctx.expected.update(
        {
            "session_id": CLAUDE_SUB_ID,
            "original_request": CLAUDE_SUB_PROMPT,
            "latest_user_message": CLAUDE_SUB_PROMPT,
            "final_assistant_message": CLAUDE_SUB_FINAL,
            "plan": [],
            "files_written": [],
            "files_edited": [],
            "files_touched": [],
            "failed_edits": [],
            "commands": [],
            "failing_command": None,
            "secrets": [],
            # Only in the sub-agent file (its final answer also comes back to the main file
            # as the Agent tool_result). Its Bash command is the sub-agent's, not the session's.
            "subagent_only_text": ["Searching."],
            "subagent_commands": ["grep -l 'def greet' *.py"],
        }
    )


# ---------------------------------------------------------------------------------------
# Codex CLI scenarios
# ---------------------------------------------------------------------------------------
CODEX_PROMPT_1 = (
    "Create calc.py with an add() function and a unittest for it, make greet() say 'Hi' "
    "instead of 'Hello', and add a Usage section to the README. Keep a plan. "
    f"Deploy creds for later (do not commit them): AWS_ACCESS_KEY_ID={AWS_KEY} and "
    f"GITHUB_TOKEN={GH_TOKEN}"
)
CODEX_PROMPT_2 = f"Now fix add() and re-run the tests. Use OPENAI_API_KEY={OPENAI_KEY} if needed."
CODEX_FINAL_1 = (
    "Progress: calc.py and test_calc.py are added and greet() now says Hi (changed with "
    "sed). The README patch failed (its context line is not in README.md) and `python3 -B -m "
    "unittest -q test_calc` fails: add() returns a - b. Next step: fix add() and re-run."
)
CODEX_FINAL_2 = (
    "add() is fixed and the tests pass. Remaining: the README Usage section. "
    "Next step: append a Usage heading to README.md."
)


def _plan(*items: tuple[str, str]) -> dict[str, Any]:
    return {"plan": [{"step": s, "status": st} for s, st in items]}


def codex_full(ctx: Ctx) -> None:
    ws = ctx.workspace
    s1, s2, s3 = (
        "Write calc.py with add() and its test",
        "Make greet() say Hi",
        "Add a Usage section to README.md",
    )
    add_calc = (
        "*** Begin Patch\n*** Add File: calc.py\n"
        + "".join(f"+{line}\n" for line in CALC_BUGGY.splitlines())
        + "*** Add File: test_calc.py\n"
        + "".join(f"+{line}\n" for line in TEST_CALC.splitlines())
        + "*** End Patch\n"
    )
    bad_readme = (
        "*** Begin Patch\n*** Update File: README.md\n@@\n-## Installation\n"
        "+## Usage\n*** End Patch\n"
    )
    fix_calc = (
        "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n"
        "+    return a + b\n*** End Patch\n"
    )
    turn1 = [
        Step(
            text="Setting up a plan.",
            thinking="Three steps; start with calc.py.",
            tool="update_plan",
            input=_plan((s1, "in_progress"), (s2, "pending"), (s3, "pending")),
        ),
        Step(text="Adding calc.py and its test.", tool="apply_patch", input=add_calc),
        Step(
            tool="update_plan", input=_plan((s1, "completed"), (s2, "in_progress"), (s3, "pending"))
        ),
        # A file changed only through the shell: no patch record, only git shows it.
        Step(tool="exec_command", input={"cmd": "sed -i 's/Hello/Hi/' greet.py"}),
        Step(
            tool="update_plan",
            input=_plan((s1, "completed"), (s2, "completed"), (s3, "in_progress")),
        ),
        Step(tool="apply_patch", input=bad_readme, expect_error=True),
        Step(
            tool="exec_command", input={"cmd": f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'"}
        ),
        Step(tool="exec_command", input={"cmd": "cat .env.local"}),
        Step(
            text="Running the tests.",
            tool="exec_command",
            input={"cmd": TEST_CMD},
            expect_error=True,
        ),
        Step(text=CODEX_FINAL_1),
    ]
    turn2 = [
        Step(tool="apply_patch", input=fix_calc),
        Step(tool="exec_command", input={"cmd": TEST_CMD}),
        Step(
            tool="update_plan",
            input=_plan((s1, "completed"), (s2, "completed"), (s3, "in_progress")),
        ),
        Step(text=CODEX_FINAL_2),
    ]
    with OpenAIResponsesServer(turn1) as srv:
        assert isinstance(srv, OpenAIResponsesServer)
        env = ctx.env.environ(openai_url=srv.url)
        _check(run_codex(env, ws, CODEX_PROMPT_1), "turn 1")
        _all_steps_used(srv, "turn 1")
        _verify_codex(srv, turn1)
        sessions = sorted((ctx.env.codex_home / "sessions").rglob("rollout-*.jsonl"))
        if len(sessions) != 1:
            raise RecordError(f"expected one rollout, found {sessions}")
        first = json.loads(sessions[0].read_text(encoding="utf-8").splitlines()[0])
        session_id = first["payload"]["id"]
        srv.set_script(turn2)
        n = len(srv.requests)
        _check(run_codex(env, ws, CODEX_PROMPT_2, resume=session_id), "turn 2 (resume)")
        _all_steps_used(srv, "turn 2")
        _verify_codex(_Slice(srv, n), turn2)  # type: ignore[arg-type]
        srv.dump_log(str(ctx.env.root / "requests.jsonl"))
    ctx.expected.update(
        {
            "session_id": session_id,
            "original_request": CODEX_PROMPT_1,
            "latest_user_message": CODEX_PROMPT_2,
            "final_assistant_message": CODEX_FINAL_2,
            "turns": [CODEX_PROMPT_1, CODEX_PROMPT_2],
            "plan": [
                {"subject": s1, "status": "completed"},
                {"subject": s2, "status": "completed"},
                {"subject": s3, "status": "in_progress"},
            ],
            "files_written": ["calc.py", "test_calc.py"],
            "files_edited": ["calc.py"],
            "files_changed_by_shell": ["greet.py"],
            "files_touched": ["calc.py", "greet.py", "test_calc.py"],
            "failed_edits": ["README.md"],
            "commands": [
                {"command": "sed -i 's/Hello/Hi/' greet.py", "exit_code": 0},
                {"command": f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'", "exit_code": 0},
                {"command": "cat .env.local", "exit_code": 0},
                {"command": TEST_CMD, "exit_code": 1},
                {"command": TEST_CMD, "exit_code": 0},
            ],
            "failing_command": {
                "command": TEST_CMD,
                "exit_code": 1,
                "error_line_contains": "FAILED (failures=1)",
            },
            "secrets": [AWS_KEY, GH_TOKEN, ANTHROPIC_KEY, SLACK_TOKEN, OPENAI_KEY],
            "hidden_reasoning_planted": ["Three steps; start with calc.py."],
            "model": CODEX_MODEL,
        }
    )


# ---------------------------------------------------------------------------------------
# The five agents of issue 7: one `full` scenario each, driven by an AgentProfile
# ---------------------------------------------------------------------------------------
MORE_PROMPT_1 = (
    "Create calc.py with an add() function and a unittest for it, make greet() say 'Hi' "
    "instead of 'Hello', and add a Usage section to the README. Keep a todo list. "
    f"Deploy creds for later (do not commit them): AWS_ACCESS_KEY_ID={AWS_KEY} and "
    f"GITHUB_TOKEN={GH_TOKEN}"
)
MORE_PROMPT_2 = f"Now fix add() and re-run the tests. Use OPENAI_API_KEY={OPENAI_KEY} if needed."
MORE_FINAL_1 = (
    "Progress: calc.py and test_calc.py are written and greet() now says Hi. The README "
    "edit failed (the text I targeted is not in README.md) and `python3 -B -m unittest -q "
    "test_calc` fails: add() returns a - b. Next step: fix add() and re-run the tests."
)
MORE_FINAL_2 = (
    "add() is fixed and the tests pass. Remaining: the README Usage section. "
    "Next step: append a Usage heading to README.md."
)
PLAN_SUBJECTS = (
    "Write calc.py with add() and its test",
    "Make greet() say Hi",
    "Add a Usage section to README.md",
)
PlanState = list[tuple[str, str]]  # (subject, pending|in_progress|completed)
# A failed tool reports itself in its result text; these words say so for every agent here.
_ERROR_WORDS = re.compile(r"(?i)error|failed|not found|could not|no match|0 occurrences")


@dataclass
class AgentProfile:
    """How one agent's tools are called, how it is run and resumed, where its store is."""

    agent: str
    server: Callable[[list[Step]], ChatCompletionsServer | GeminiServer]
    environ: Callable[[AgentEnv, str], dict[str, str]]
    run: Callable[..., subprocess.CompletedProcess[str]]
    plan: Callable[[PlanState, bool], Step] | None
    write: Callable[[Path, str], Step]
    edit: Callable[[Path, str, str], Step]
    shell: Callable[[str], Step]
    read: Callable[[Path], Step] | None  # agents that refuse to edit an unread file
    session_id: Callable[[AgentEnv], str]
    copy: Callable[[AgentEnv, str, Path], list[str]]
    native_status: dict[str, str] = field(default_factory=dict)
    store_note: str = ""


def _gemini_plan(state: PlanState, first: bool) -> Step:
    return Step(
        tool="write_todos", input={"todos": [{"description": s, "status": st} for s, st in state]}
    )


def _qwen_plan(state: PlanState, first: bool) -> Step:
    return Step(
        tool="todo_write",
        input={
            "todos": [
                {"id": str(i), "content": s, "status": st} for i, (s, st) in enumerate(state, 1)
            ]
        },
    )


def _opencode_plan(state: PlanState, first: bool) -> Step:
    return Step(
        tool="todowrite",
        input={"todos": [{"content": s, "status": st, "priority": "high"} for s, st in state]},
    )


_COPILOT_IDS = ("write-calc", "greet-hi", "readme-usage")
_COPILOT_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "done"}


def _copilot_plan(state: PlanState, first: bool) -> Step:
    """Copilot has no todo tool: its prompt tells the model to keep todos in the `todos`
    table of the per-session database through the `sql` tool."""
    if first:
        rows = ", ".join(
            f"('{i}', '{s}', '{s}.', '{_COPILOT_STATUS[st]}')"
            for i, (s, st) in zip(_COPILOT_IDS, state, strict=True)
        )
        return Step(
            tool="sql",
            input={
                "description": "Insert task todos",
                "query": f"INSERT INTO todos (id, title, description, status) VALUES {rows};",
            },
        )
    cases = " ".join(
        f"WHEN '{i}' THEN '{_COPILOT_STATUS[st]}'"
        for i, (_s, st) in zip(_COPILOT_IDS, state, strict=True)
    )
    return Step(
        tool="sql",
        input={
            "description": "Update todo statuses",
            "query": f"UPDATE todos SET status = CASE id {cases} ELSE status END;",
        },
    )


def _first_line_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])


def _one(paths: list[Path], what: str) -> Path:
    if len(paths) != 1:
        raise RecordError(f"expected one {what}, found {paths}")
    return paths[0]


def _copy_tree(src_root: Path, paths: list[Path], dest: Path) -> list[str]:
    """Copy files keeping their layout relative to src_root (the agent's HOME)."""
    copied: list[str] = []
    for path in sorted(paths):
        if not path.is_file() or path.name.endswith(".lock"):
            continue
        rel = path.relative_to(src_root)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / rel)
        copied.append(str(rel))
    return copied


def _copy_sqlite(src: Path, dest: Path) -> None:
    """A consistent single-file copy of a live WAL-mode database: the backup API reads the
    WAL too; the copy is switched to a rollback journal so no -wal/-shm must travel."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    with (
        closing(sqlite3.connect(f"file:{src}?mode=ro", uri=True)) as s,
        closing(sqlite3.connect(dest)) as d,
    ):
        s.backup(d)
        d.execute("PRAGMA journal_mode=DELETE")


# -- store discovery and copying, per agent ----------------------------------------------
def _gemini_session(env: AgentEnv) -> str:
    path = _one(sorted(env.home.glob(".gemini/tmp/*/chats/session-*.jsonl")), "gemini chat")
    return str(_first_line_json(path)["sessionId"])


def _gemini_copy(env: AgentEnv, sid: str, dest: Path) -> list[str]:
    g = env.home / ".gemini"
    return _copy_tree(
        env.home, [g / "projects.json", *g.glob("tmp/**/*"), *g.glob("history/**/*")], dest
    )


def _qwen_session(env: AgentEnv) -> str:
    return _one(sorted(env.home.glob(".qwen/projects/*/chats/*.jsonl")), "qwen chat").stem


def _qwen_copy(env: AgentEnv, sid: str, dest: Path) -> list[str]:
    q = env.home / ".qwen"
    keep = [
        p
        for p in q.rglob("*")
        if sid in str(p.relative_to(q))
        or p.is_relative_to(q / "projects")
        or p.is_relative_to(q / "todos")
    ]
    return _copy_tree(env.home, keep, dest)


def _opencode_db(env: AgentEnv) -> Path:
    return env.home / ".local" / "share" / "opencode" / "opencode.db"


def _opencode_session(env: AgentEnv) -> str:
    with closing(sqlite3.connect(f"file:{_opencode_db(env)}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT id FROM session").fetchall()
    if len(rows) != 1:
        raise RecordError(f"expected one opencode session, found {rows}")
    return str(rows[0][0])


def _opencode_copy(env: AgentEnv, sid: str, dest: Path) -> list[str]:
    src = _opencode_db(env)
    rel = src.relative_to(env.home)
    _copy_sqlite(src, dest / rel)
    return [str(rel)]


def _kilo_db(env: AgentEnv) -> Path:
    return env.home / ".local" / "share" / "kilo" / "kilo.db"


def _kilo_session(env: AgentEnv) -> str:
    with closing(sqlite3.connect(f"file:{_kilo_db(env)}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT id FROM session").fetchall()
    if len(rows) != 1:
        raise RecordError(f"expected one kilo session, found {rows}")
    return str(rows[0][0])


def _kilo_copy(env: AgentEnv, sid: str, dest: Path) -> list[str]:
    src = _kilo_db(env)
    rel = src.relative_to(env.home)
    _copy_sqlite(src, dest / rel)
    return [str(rel)]


def _pi_session(env: AgentEnv) -> str:
    path = _one(sorted(env.home.glob(".pi/agent/sessions/*/*.jsonl")), "pi session")
    return str(_first_line_json(path)["id"])


def _pi_copy(env: AgentEnv, sid: str, dest: Path) -> list[str]:
    return _copy_tree(env.home, list(env.home.glob(".pi/agent/sessions/**/*")), dest)


def _copilot_session(env: AgentEnv) -> str:
    return _one(
        sorted(env.home.glob(".copilot/session-state/*/events.jsonl")), "copilot session"
    ).parent.name


def _copilot_copy(env: AgentEnv, sid: str, dest: Path) -> list[str]:
    c = env.home / ".copilot"
    files = [
        p
        for p in (c / "session-state" / sid).rglob("*")
        if not p.name.endswith((".db", ".db-wal", ".db-shm"))
    ]
    copied = _copy_tree(env.home, files, dest)
    # SQLite files (the session's own database with its `todos` table, the session index):
    # one consistent file each.
    for db in [*(c / "session-state" / sid).rglob("*.db"), *c.glob("*.db")]:
        rel = db.relative_to(env.home)
        _copy_sqlite(db, dest / rel)
        copied.append(str(rel))
    return sorted(copied)


def _abs(p: Path) -> str:
    return str(p)


PROFILES: dict[str, AgentProfile] = {
    "gemini": AgentProfile(
        agent="gemini",
        server=GeminiServer,
        environ=AgentEnv.gemini_environ,
        run=run_gemini,
        plan=_gemini_plan,
        write=lambda p, c: Step(tool="write_file", input={"file_path": _abs(p), "content": c}),
        edit=lambda p, o, n: Step(
            tool="replace",
            input={
                "file_path": _abs(p),
                "instruction": f"Replace {o!r} with {n!r}.",
                "old_string": o,
                "new_string": n,
            },
        ),
        shell=lambda c: Step(
            tool="run_shell_command", input={"command": c, "description": "Run a command"}
        ),
        read=None,
        session_id=_gemini_session,
        copy=_gemini_copy,
        store_note="relative to HOME: ~/.gemini/tmp/<project>/chats/ (project short name "
        "from ~/.gemini/projects.json)",
    ),
    "qwen": AgentProfile(
        agent="qwen",
        server=ChatCompletionsServer,
        environ=AgentEnv.qwen_environ,
        run=run_qwen,
        plan=_qwen_plan,
        write=lambda p, c: Step(tool="write_file", input={"file_path": _abs(p), "content": c}),
        edit=lambda p, o, n: Step(
            tool="edit", input={"file_path": _abs(p), "old_string": o, "new_string": n}
        ),
        shell=lambda c: Step(
            tool="run_shell_command",
            input={"command": c, "is_background": False, "description": "Run a command"},
        ),
        read=lambda p: Step(tool="read_file", input={"file_path": _abs(p)}),
        session_id=_qwen_session,
        copy=_qwen_copy,
        store_note="relative to HOME: ~/.qwen/projects/<cwd with / -> ->/chats/",
    ),
    "opencode": AgentProfile(
        agent="opencode",
        server=ChatCompletionsServer,
        environ=AgentEnv.opencode_environ,
        run=run_opencode,
        plan=_opencode_plan,
        write=lambda p, c: Step(tool="write", input={"filePath": _abs(p), "content": c}),
        edit=lambda p, o, n: Step(
            tool="edit", input={"filePath": _abs(p), "oldString": o, "newString": n}
        ),
        shell=lambda c: Step(tool="bash", input={"command": c, "description": "Run a command"}),
        read=lambda p: Step(tool="read", input={"filePath": _abs(p)}),
        session_id=_opencode_session,
        copy=_opencode_copy,
        store_note="relative to HOME: ~/.local/share/opencode/opencode.db "
        "($XDG_DATA_HOME/opencode); checkpointed copy, journal_mode=DELETE",
    ),
    "kilo": AgentProfile(
        agent="kilo",
        server=ChatCompletionsServer,
        environ=AgentEnv.kilo_environ,
        run=run_kilo,
        plan=_opencode_plan,  # opencode's todowrite: Kilo keeps the list in `todo` too
        write=lambda p, c: Step(tool="write", input={"filePath": _abs(p), "content": c}),
        edit=lambda p, o, n: Step(
            tool="edit", input={"filePath": _abs(p), "oldString": o, "newString": n}
        ),
        shell=lambda c: Step(tool="bash", input={"command": c, "description": "Run a command"}),
        read=lambda p: Step(tool="read", input={"filePath": _abs(p)}),
        session_id=_kilo_session,
        copy=_kilo_copy,
        store_note="relative to HOME: ~/.local/share/kilo/kilo.db "
        "($XDG_DATA_HOME/kilo); checkpointed copy, journal_mode=DELETE",
    ),
    "pi": AgentProfile(
        agent="pi",
        server=ChatCompletionsServer,
        environ=AgentEnv.pi_environ,
        run=run_pi,
        plan=None,  # pi has no plan/todo tool (read, bash, edit, write only)
        write=lambda p, c: Step(tool="write", input={"path": _abs(p), "content": c}),
        edit=lambda p, o, n: Step(
            tool="edit", input={"path": _abs(p), "edits": [{"oldText": o, "newText": n}]}
        ),
        shell=lambda c: Step(tool="bash", input={"command": c}),
        read=None,
        session_id=_pi_session,
        copy=_pi_copy,
        store_note="relative to HOME: ~/.pi/agent/sessions/--<cwd with / -> ->--/ "
        "(PI_CODING_AGENT_DIR replaces ~/.pi/agent)",
    ),
    "copilot": AgentProfile(
        agent="copilot",
        server=ChatCompletionsServer,
        environ=AgentEnv.copilot_environ,
        run=run_copilot,
        plan=_copilot_plan,
        write=lambda p, c: Step(tool="create", input={"path": _abs(p), "file_text": c}),
        edit=lambda p, o, n: Step(tool="edit", input={"path": _abs(p), "old_str": o, "new_str": n}),
        shell=lambda c: Step(
            tool="bash",
            input={
                "command": c,
                "description": "Run a command",
                "mode": "sync",
                "initial_wait": 30,
            },
        ),
        read=None,
        session_id=_copilot_session,
        copy=_copilot_copy,
        native_status={"completed": "done"},
        store_note="relative to HOME: ~/.copilot/session-state/<id>/",
    ),
}


def _plan_step(
    prof: AgentProfile, state: PlanState, first: bool = False, text: str = ""
) -> list[Step]:
    if prof.plan is None:
        return []
    step = prof.plan(state, first)
    step.text = text
    return [step]


def _tool_results(req: LoggedRequest) -> list[str]:
    """The tool results a request carries after the last assistant turn, as text."""
    body = req.body
    if "contents" in body:  # Gemini: functionResponse parts in the last user content
        last = (body.get("contents") or [{}])[-1]
        return [
            json.dumps(p["functionResponse"].get("response"), ensure_ascii=False)
            for p in last.get("parts") or []
            if "functionResponse" in p
        ]
    out: list[str] = []
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "assistant":
            break
        if msg.get("role") == "tool":
            c = msg.get("content")
            out.append(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False))
    return out


def _verify_more(prof: AgentProfile, reqs: list[LoggedRequest], steps: list[Step]) -> None:
    """Each tool step's result reaches the next request; planned failures (only they) fail."""
    step_reqs = [r for r in reqs if r.kind == "step"]
    for i, step in enumerate(steps):
        if not step.tool or i + 1 >= len(step_reqs):
            continue
        results = _tool_results(step_reqs[i + 1])
        if not results:
            raise RecordError(
                f"{prof.agent} step {i} ({step.tool}): no tool result in the "
                f"next request: {step_reqs[i + 1].text()[-1500:]}"
            )
        if step.tool == prof.shell("x").tool:
            continue  # a failing command is a successful tool call on some agents
        failed = bool(_ERROR_WORDS.search(results[-1]))
        if failed != step.expect_error:
            raise RecordError(
                f"{prof.agent} step {i} ({step.tool}) failed={failed}: {results[-1][:800]}"
            )


def more_full(ctx: Ctx) -> None:
    prof = PROFILES[ctx.agent]
    ws = ctx.workspace
    s1, s2, s3 = PLAN_SUBJECTS
    calc, test, greet, readme = (
        ws / n for n in ("calc.py", "test_calc.py", "greet.py", "README.md")
    )

    def read(p: Path) -> list[Step]:
        return [prof.read(p)] if prof.read else []

    bad = prof.edit(readme, "## Installation", "## Usage\n\n    from calc import add\n")
    bad.expect_error = True
    failing = prof.shell(TEST_CMD)
    failing.text = "Running the tests."
    failing.expect_error = True
    turn1 = [
        *_plan_step(
            prof,
            [(s1, "in_progress"), (s2, "pending"), (s3, "pending")],
            True,
            "I'll keep a todo list.",
        ),
        prof.write(calc, CALC_BUGGY),
        prof.write(test, TEST_CALC),
        *_plan_step(prof, [(s1, "completed"), (s2, "in_progress"), (s3, "pending")]),
        *read(greet),
        prof.edit(greet, "Hello", "Hi"),
        *_plan_step(prof, [(s1, "completed"), (s2, "completed"), (s3, "in_progress")]),
        *read(readme),
        bad,
        prof.shell(f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'"),
        prof.shell("cat .env.local"),
        failing,
        Step(text=MORE_FINAL_1),
    ]
    turn2 = [
        *read(calc),
        prof.edit(calc, "return a - b", "return a + b"),
        prof.shell(TEST_CMD),
        Step(text=MORE_FINAL_2),
    ]
    with prof.server(turn1) as srv:
        env = prof.environ(ctx.env, srv.url)
        _check(prof.run(env, ws, MORE_PROMPT_1), "turn 1")
        _all_steps_used(srv, "turn 1")  # type: ignore[arg-type]
        _verify_more(prof, srv.requests, turn1)
        session_id = prof.session_id(ctx.env)
        srv.set_script(turn2)
        n = len(srv.requests)
        _check(prof.run(env, ws, MORE_PROMPT_2, resume=session_id), "turn 2 (resume)")
        _all_steps_used(srv, "turn 2")  # type: ignore[arg-type]
        _verify_more(prof, srv.requests[n:], turn2)
        if prof.session_id(ctx.env) != session_id:
            raise RecordError("the resumed turn did not continue the same session")
        srv.dump_log(str(ctx.env.root / "requests.jsonl"))
        tool_names = sorted(
            {
                t.get("function", t).get("name", "")
                for t in srv.step_requests()[0].body.get("tools") or []
            }
            - {""}
        ) or sorted(
            d["name"]
            for t in srv.step_requests()[0].body.get("tools") or []
            for d in t.get("functionDeclarations") or []
        )
    if (ws / "calc.py").read_text(encoding="utf-8") != CALC_FIXED:
        raise RecordError("calc.py was not fixed by the resumed turn")
    plan = (
        []
        if prof.plan is None
        else [
            {"subject": s1, "status": "completed"},
            {"subject": s2, "status": "completed"},
            {"subject": s3, "status": "in_progress"},
        ]
    )
    ctx.expected.update(
        {
            "session_id": session_id,
            "original_request": MORE_PROMPT_1,
            "latest_user_message": MORE_PROMPT_2,
            "final_assistant_message": MORE_FINAL_2,
            "turns": [MORE_PROMPT_1, MORE_PROMPT_2],
            "plan": plan,
            "plan_native_status": prof.native_status,
            "plan_tool": (
                prof.plan(list(zip(PLAN_SUBJECTS, ("pending",) * 3, strict=True)), True).tool
                if prof.plan
                else None
            ),
            "files_written": ["calc.py", "test_calc.py"],
            "files_edited": ["greet.py", "calc.py"],
            "files_touched": ["calc.py", "greet.py", "test_calc.py"],
            "failed_edits": ["README.md"],
            "commands": [
                {"command": f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'", "exit_code": 0},
                {"command": "cat .env.local", "exit_code": 0},
                {"command": TEST_CMD, "exit_code": 1},
                {"command": TEST_CMD, "exit_code": 0},
            ],
            "failing_command": {
                "command": TEST_CMD,
                "exit_code": 1,
                "error_line_contains": "FAILED (failures=1)",
            },
            "secrets": [AWS_KEY, GH_TOKEN, ANTHROPIC_KEY, SLACK_TOKEN, OPENAI_KEY],
            "model": GEMINI_MODEL if prof.agent == "gemini" else CHAT_MODEL,
            "tools_offered": tool_names,
            "store_root": "HOME",
            "store_layout": prof.store_note,
        }
    )


# -- Factory Droid: `droid exec` only (resuming needs a Factory login) -------------------
DROID_429 = {
    "error": {
        "message": "Rate limit reached for scripted-model",
        "type": "tokens",
        "code": "rate_limit_exceeded",
    }
}


def _droid_session(env: AgentEnv) -> Path:
    return _one(sorted(env.home.glob(".factory/sessions/*/*.jsonl")), "droid session")


def _droid_copy(env: AgentEnv, dest: Path) -> list[str]:
    folder = _droid_session(env).parent
    return _copy_tree(env.home, [p for p in folder.iterdir() if p.suffix == ".jsonl"], dest)


def _droid_plan(state: PlanState) -> Step:
    todos = [{"id": str(i), "content": s, "status": st} for i, (s, st) in enumerate(state, 1)]
    return Step(tool="TodoWrite", input={"todos": todos})


def _droid_shell(command: str) -> Step:
    return Step(
        tool="Execute",
        input={
            "command": command,
            "riskLevel": "low",
            "riskLevelReason": "Runs a project command",
            "summary": "Run a project command",
        },
    )


def droid_full(ctx: Ctx) -> None:
    """One `droid exec` turn: the TodoWrite plan (which exec refuses: an error result),
    two files created, one edited, a failing edit, secrets in command output, a failing
    command, and a 429 the CLI retries before its last answer."""
    ws = ctx.workspace
    s1, s2, s3 = PLAN_SUBJECTS
    calc, test, greet, readme = (
        ws / n for n in ("calc.py", "test_calc.py", "greet.py", "README.md")
    )
    plan = _droid_plan([(s1, "in_progress"), (s2, "pending"), (s3, "pending")])
    plan.text, plan.expect_error = "I'll keep a todo list.", True
    bad = Step(
        tool="Edit",
        input={"file_path": str(readme), "old_str": "## Installation", "new_str": "## Usage\n"},
        expect_error=True,
    )
    failing = _droid_shell(TEST_CMD)
    failing.text, failing.expect_error = "Running the tests.", True
    steps = [
        plan,
        Step(tool="Create", input={"file_path": str(calc), "content": CALC_BUGGY}),
        Step(tool="Create", input={"file_path": str(test), "content": TEST_CALC}),
        Step(tool="Read", input={"file_path": str(greet)}),
        Step(
            tool="Edit",
            input={"file_path": str(greet), "old_str": "Hello", "new_str": "Hi"},
        ),
        Step(tool="Read", input={"file_path": str(readme)}),
        bad,
        _droid_shell(f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'"),
        _droid_shell("cat .env.local"),
        failing,
        Step(text=MORE_FINAL_1),
    ]
    with ChatCompletionsServer(steps) as srv:
        env = ctx.env.droid_environ(srv.url)
        # one 429 on the request that would get the last answer: Droid retries it
        srv.fail(
            429,
            DROID_429,
            times=1,
            headers={"retry-after": "0"},
            when=lambda body: srv.remaining == 1,
        )
        _check(run_droid(env, ws, MORE_PROMPT_1, timeout=240), "droid exec")
        _all_steps_used(srv, "droid exec")  # type: ignore[arg-type]
        if not any(r.kind == "error" for r in srv.requests):
            raise RecordError("the scripted 429 was never sent")
        srv.dump_log(str(ctx.env.root / "requests.jsonl"))
    path = _droid_session(ctx.env)
    ctx.expected.update(
        {
            "session_id": path.stem,
            "session_path": str(path.relative_to(ctx.env.home)),
            "original_request": MORE_PROMPT_1,
            "latest_user_message": MORE_PROMPT_1,
            "final_assistant_message": MORE_FINAL_1,
            "turns": [MORE_PROMPT_1],
            "plan": [],  # `droid exec` refuses TodoWrite: no plan was ever made
            "plan_tool": "TodoWrite",
            "plan_refused": True,
            "files_written": ["calc.py", "test_calc.py"],
            "files_edited": ["greet.py"],
            "files_touched": ["calc.py", "greet.py", "test_calc.py"],
            "failed_edits": ["README.md"],
            "commands": [
                {"command": f"echo 'export ANTHROPIC_API_KEY={ANTHROPIC_KEY}'", "exit_code": 0},
                {"command": "cat .env.local", "exit_code": 0},
                {"command": TEST_CMD, "exit_code": 1},
            ],
            "failing_command": {
                "command": TEST_CMD,
                "exit_code": 1,
                "error_line_contains": "FAILED (failures=1)",
            },
            "ended": "normal",  # the one 429 was retried: Droid wrote nothing about it
            "version_in_session": False,  # the log names no Droid version
            "secrets": [AWS_KEY, GH_TOKEN, ANTHROPIC_KEY, SLACK_TOKEN],
            "model": "custom:Scripted-0",
            "store_root": "HOME",
            "store_layout": "relative to HOME: ~/.factory/sessions/<cwd with / -> ->/<id>.jsonl",
        }
    )


def droid_rate_limit(ctx: Ctx) -> None:
    """A `droid exec` turn whose every model call gets a 429: Droid retries (about 85 s)
    and ends the turn with its note and the outcome `model_rate_limited`."""
    with ChatCompletionsServer([Step(text="never sent")]) as srv:
        env = ctx.env.droid_environ(srv.url)
        srv.fail(429, DROID_429, headers={"retry-after": "0"})
        proc = run_droid(env, ctx.workspace, "Write the changelog.", timeout=240)
        if proc.returncode == 0:
            raise RecordError("droid exec succeeded through a sticky 429")
    path = _droid_session(ctx.env)
    ctx.expected.update(
        {
            "session_id": path.stem,
            "session_path": str(path.relative_to(ctx.env.home)),
            "original_request": "Write the changelog.",
            "latest_user_message": "Write the changelog.",
            "final_assistant_message": None,
            "turns": ["Write the changelog."],
            "plan": [],
            "files_written": [],
            "files_edited": [],
            "files_touched": [],
            "failed_edits": [],
            "commands": [],
            "failing_command": None,
            "secrets": [],
            "version_in_session": False,
            "ended": "rate_limit",
            "ending_message_contains": "429 Rate limit reached",
            "store_root": "HOME",
        }
    )


SCENARIOS: dict[str, tuple[Callable[[Ctx], None], str]] = {
    "claude/full": (
        claude_full,
        "TaskCreate/TaskUpdate plan, Write/Edit with one failing "
        "Edit, secrets in prompt and command output, failing command, resumed "
        "second turn, /compact, post-compaction turn",
    ),
    "claude/todowrite": (
        claude_todowrite,
        "older-style TodoWrite plan (CLAUDE_CODE_ENABLE_TASKS=0), one Edit",
    ),
    "claude/subagent": (
        claude_subagent,
        "an Agent (sub-agent) call whose transcript lives "
        "in <id>/subagents/; its text is not the main session's",
    ),
    "codex/full": (
        codex_full,
        "update_plan plan, apply_patch add + one failing patch, a "
        "file changed by sed through exec_command, secrets in prompt and command "
        "output, failing command, `codex exec resume` second turn",
    ),
    **{
        f"{agent}/full": (
            more_full,
            "plan tool (if any) created and updated, two files "
            "written, one edited, one failing edit, secrets in prompt and "
            "command output, failing command, native resume second turn",
        )
        for agent in ("gemini", "qwen", "opencode", "pi", "copilot", "kilo")
    },
    "droid/full": (
        droid_full,
        "one `droid exec` turn: refused TodoWrite, two files created, one edited, one "
        "failing edit, secrets in prompt and command output, failing command, a retried 429",
    ),
    "droid/rate-limit": (
        droid_rate_limit,
        "a `droid exec` turn ended by a sticky 429 (outcome model_rate_limited)",
    ),
}


def _copy_claude(ctx: Ctx, dest: Path) -> list[str]:
    src = ctx.env.claude_dir
    sid = ctx.expected["session_id"]
    copied: list[str] = []
    for path in (
        sorted(src.glob(f"projects/*/{sid}.jsonl"))
        + sorted(src.glob(f"projects/*/{sid}/**/*"))
        + sorted(src.glob(f"tasks/{sid}/*"))
    ):
        if path.is_file():
            rel = path.relative_to(src)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / rel)
            copied.append(str(rel))
    return copied


def _copy_codex(ctx: Ctx, dest: Path) -> list[str]:
    src = ctx.env.codex_home
    copied: list[str] = []
    for path in sorted((src / "sessions").rglob("*.jsonl")):
        rel = path.relative_to(src)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / rel)
        copied.append(str(rel))
    return copied


def record(key: str, out_root: Path) -> Path:
    agent, name = key.split("/")
    fn, description = SCENARIOS[key]
    ctx = _fresh(agent, name)
    fn(ctx)
    dest = out_root / agent / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if agent == "claude":
        files = _copy_claude(ctx, dest)
    elif agent == "codex":
        files = _copy_codex(ctx, dest)
    elif agent == "droid":
        files = _droid_copy(ctx.env, dest)
    else:
        files = PROFILES[agent].copy(ctx.env, ctx.expected["session_id"], dest)
    if not files:
        raise RecordError(f"{key}: the agent wrote no session file")
    expected = {
        "agent": agent,
        "scenario": name,
        "description": description,
        "cli_version": VERSIONS[agent],
        "workspace": str(ctx.workspace),
        "config_dir_env": {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}.get(agent, "HOME"),
        "session_files": files,
        **ctx.expected,
        "git_after": _git_state(ctx.workspace),
        "note": "Paths in files_* are relative to workspace. Secrets must never appear "
        "in a handoff; hidden_reasoning_planted must never be exported.",
    }
    (dest / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="*", help=f"any of {', '.join(SCENARIOS)} (default all)")
    ap.add_argument("--out", type=Path, default=FIXTURES)
    args = ap.parse_args(argv)
    for key in args.scenarios or list(SCENARIOS):
        if key not in SCENARIOS:
            ap.error(f"unknown scenario {key}")
        print(f"recording {key} ...", flush=True)
        try:
            print(f"  -> {record(key, args.out)}", flush=True)
        except RecordError as exc:
            print(f"FAILED {key}: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
