"""A long, messy Codex session with the real Codex 0.171 CLI: `codex exec`, then
`codex exec resume --last` twice; failing `apply_patch` calls, files changed through
`exec_command` (`sed -i`, `git mv`), `update_plan` across the turns and an automatic
compaction in the middle. The handoff must still be right: the first request, the plan as
the last turn left it, the files really touched (a failed patch touched nothing), the
compaction summary without Codex's preamble, the next steps stated in prose, and a normal
ending."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, init_git_workspace, run_codex, run_passdown
from e2e.checks import load_handoff, ok, rel
from e2e.servers import OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

PROMPT_1 = (
    "Add calc.py with add() and a unittest, make greet() say Hi, rename greet.py to "
    "hello.py, and add a Usage section to the README. Keep a plan."
)
PROMPT_2 = "Continue: fix add() so the tests pass, then do the rename."
PROMPT_3 = "Continue with what is left."
S1, S2, S3 = (
    "Write calc.py with add() and its test",
    "Make greet() say Hi and rename it",
    "Add a Usage section to README.md",
)
TEST_CMD = "python3 -B -m unittest -q test_calc"
CALC_BUGGY = "def add(a: int, b: int) -> int:\n    return a - b\n"
TEST_CALC = (
    "import unittest\n\nfrom calc import add\n\n\nclass TestAdd(unittest.TestCase):\n"
    "    def test_add(self) -> None:\n        self.assertEqual(add(2, 2), 4)\n"
)
COMPACT_LIMIT = 20_000
# What the scripted model answers to Codex's compaction request; Codex stores it prefixed
# with its own instructions for the model that continues.
SUMMARY = (
    "## Checkpoint\n- calc.py and test_calc.py exist; add() was fixed in turn two.\n"
    "- greet() says Hi; greet.py was renamed to hello.py with git mv.\n"
    "- The README Usage section is still open."
)
FINAL_3 = (
    "greet.py is now hello.py and add() is fixed; the README patch still does not "
    "apply.\n\nNext: run the full suite and add the README Usage section by hand."
)


def _patch(*body: str) -> str:
    return "*** Begin Patch\n" + "".join(body) + "*** End Patch\n"


def _add(path: str, text: str) -> str:
    return f"*** Add File: {path}\n" + "".join(f"+{line}\n" for line in text.splitlines())


def _plan(*statuses: str) -> dict[str, Any]:
    return {
        "plan": [{"step": s, "status": st} for s, st in zip((S1, S2, S3), statuses, strict=True)]
    }


BAD_README = _patch("*** Update File: README.md\n@@\n-## Installation\n+## Usage\n")


class CompactingServer(OpenAIResponsesServer):
    """The Responses server, plus: the steps named in `heavy_steps` report more input
    tokens than the compaction limit (so Codex compacts automatically), and Codex's
    compaction request is answered with a summary without consuming a step."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(steps)
        self.heavy_steps: set[int] = set()
        self.compaction_requests = 0
        self._heavy_now = False

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        text = json.dumps(body) if isinstance(body, dict) else ""
        if method == "POST" and "CONTEXT CHECKPOINT COMPACTION" in text:
            self.compaction_requests += 1
            self._log(h, method, body, "aux")
            self._heavy_now = False
            return self._reply(h, body, Step(text=SUMMARY))
        with self._lock:
            self._heavy_now = bool(
                isinstance(body, dict) and body.get("tools") and self._cursor in self.heavy_steps
            )
        super().handle(h, method, body)

    def send_sse(
        self,
        h: BaseHTTPRequestHandler,  # type: ignore[override]
        events: list[tuple[str, dict[str, Any]]],
    ) -> None:
        if self._heavy_now:
            for name, data in events:
                if name == "response.completed":
                    data["response"]["usage"].update(
                        input_tokens=COMPACT_LIMIT * 3, total_tokens=COMPACT_LIMIT * 3 + 50
                    )
        OpenAIResponsesServer.send_sse(h, events)


def _codex_config(agent_env: AgentEnv, url: str) -> dict[str, str]:
    env = agent_env.environ(openai_url=url)
    config = agent_env.codex_home / "config.toml"
    text = config.read_text(encoding="utf-8")
    # top-level keys must come before the first table
    config.write_text(
        f"model_auto_compact_token_limit = {COMPACT_LIMIT}\n" + text, encoding="utf-8"
    )
    return env


def _turns() -> list[list[Step]]:
    turn1 = [
        Step(
            text="Planning.", tool="update_plan", input=_plan("in_progress", "pending", "pending")
        ),
        Step(
            text="Adding calc.py and its test.",
            tool="apply_patch",
            input=_patch(_add("calc.py", CALC_BUGGY), _add("test_calc.py", TEST_CALC)),
        ),
        Step(tool="apply_patch", input=BAD_README, expect_error=True),
        Step(tool="exec_command", input={"cmd": "sed -i 's/Hello/Hi/' greet.py"}),
        Step(tool="update_plan", input=_plan("in_progress", "in_progress", "pending")),
        Step(
            text="Running the tests.",
            tool="exec_command",
            input={"cmd": TEST_CMD},
            expect_error=True,
        ),
        Step(
            text="Turn one: calc.py is added, greet() says Hi; the tests fail (add() "
            "subtracts) and the README patch did not apply."
        ),
    ]
    turn2 = [
        Step(
            tool="apply_patch",
            input=_patch("*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n"),
        ),
        # this response reports more input tokens than the limit: Codex compacts next
        Step(tool="exec_command", input={"cmd": TEST_CMD}),
        Step(tool="update_plan", input=_plan("completed", "in_progress", "pending")),
        Step(tool="exec_command", input={"cmd": "git mv greet.py hello.py"}),
        Step(tool="apply_patch", input=BAD_README, expect_error=True),
        Step(text="Turn two: add() is fixed and the tests pass; greet.py is hello.py now."),
    ]
    turn3 = [
        Step(tool="update_plan", input=_plan("completed", "completed", "in_progress")),
        Step(tool="exec_command", input={"cmd": "git status --short"}),
        Step(text=FINAL_3),
    ]
    return [turn1, turn2, turn3]


def _export_md(env: dict[str, str], ws: Path) -> tuple[str, dict[str, Any]]:
    ok(run_passdown(env, ws, "export", "--from", "codex", "--no-store"), "passdown export")
    return load_handoff(ws)


def _export(env: dict[str, str], ws: Path) -> dict[str, Any]:
    return _export_md(env, ws)[1]


def _plan_of(handoff: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["subject"], p["status"]) for p in handoff["state"]["plan"]]


def _rollout(agent_env: AgentEnv) -> Path:
    rollouts = sorted((agent_env.codex_home / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1, rollouts  # resume appends to the same file
    return rollouts[0]


def _rollout_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_long_codex_session_with_resumes_failed_patches_shell_edits_and_compaction(
    agent_env: AgentEnv, tmp_path: Path
) -> None:
    ws = init_git_workspace(
        tmp_path / "ws",
        {
            "README.md": "# calc\n\nA tiny calculator.\n",
            "greet.py": 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n',
        },
    )
    turn1, turn2, turn3 = _turns()
    # turn two's first step (index 0 of its script) reports the heavy usage
    with CompactingServer(turn1) as srv:
        assert isinstance(srv, CompactingServer)
        env = _codex_config(agent_env, srv.url)
        ok(run_codex(env, ws, PROMPT_1, timeout=240), "codex exec (turn 1)")
        assert srv.remaining == 0
        after_1 = _export(env, ws)
        srv.set_script(turn2)
        srv.heavy_steps = {0}
        ok(run_codex(env, ws, PROMPT_2, resume="--last", timeout=240), "codex exec resume (turn 2)")
        assert srv.remaining == 0
        after_2 = _export(env, ws)
        srv.set_script(turn3)
        srv.heavy_steps = set()
        ok(run_codex(env, ws, PROMPT_3, resume="--last", timeout=240), "codex exec resume (turn 3)")
        assert srv.remaining == 0
        srv.dump_log(str(tmp_path / "requests.jsonl"))
        assert srv.compaction_requests >= 1, "Codex never compacted"

    # the session really holds what the test is about
    records = _rollout_records(_rollout(agent_env))
    compacted = [r["payload"] for r in records if r["type"] == "compacted"]
    assert compacted, "no compacted record in the rollout"
    assert (ws / "hello.py").exists() and not (ws / "greet.py").exists()
    assert "Hi" in (ws / "hello.py").read_text()
    assert "## Usage" not in (ws / "README.md").read_text()

    # after turn one: its plan, and the failing test run is the open blocker
    assert _plan_of(after_1) == [(S1, "in_progress"), (S2, "in_progress"), (S3, "pending")]
    fail_1 = after_1["state"]["last_failure"]
    assert fail_1["command"] == TEST_CMD and fail_1["resolved_later"] is False
    assert any(TEST_CMD in b for b in after_1["state"]["blockers"])
    assert after_1["task"]["compactions"] == 0
    # after turn two: the plan moved on, the same test command passed, Codex compacted
    assert _plan_of(after_2) == [(S1, "completed"), (S2, "in_progress"), (S3, "pending")]
    assert after_2["state"]["last_failure"]["resolved_later"] is True
    assert after_2["task"]["compactions"] >= 1

    md, data = _export_md(env, ws)
    task, state = data["task"], data["state"]

    assert task["original_request"] == PROMPT_1
    assert task["latest_user_message"] == PROMPT_3
    assert task["latest_progress"] == FINAL_3

    # the plan as the third turn left it (it changed in every turn)
    assert _plan_of(data) == [(S1, "completed"), (S2, "completed"), (S3, "in_progress")]
    assert state["plan_source"] == "update_plan"

    touched = {rel(f["path"], ws): f for f in state["files_touched"]}
    assert {"calc.py", "test_calc.py", "hello.py"} <= set(touched), touched
    assert touched["calc.py"]["source"] in ("tool", "tool+git")
    assert touched["hello.py"]["source"] == "git"  # git mv through exec_command
    # greet.py was edited with sed -i, then renamed: git reports it as the rename's origin
    assert "greet.py" in touched or "greet.py" in json.dumps(touched["hello.py"])
    assert "README.md" not in touched, "a failed apply_patch touched nothing"
    assert [rel(f["path"], ws) for f in state["failed_edits"]] == ["README.md", "README.md"]

    # the failing test run was fixed by the same command later: not the open blocker
    fail = state["last_failure"]
    assert fail and fail["command"] == TEST_CMD and fail["exit_code"] == 1
    assert fail["resolved_later"] is True
    assert "AssertionError" in (fail["error"] or ""), fail
    assert not [b for b in state["blockers"] if TEST_CMD in b]

    summary = task["compaction_summary"] or ""
    assert task["compactions"] >= 1
    assert summary.startswith("## Checkpoint"), summary[:200]
    assert "Another language model" not in summary and "Another language model" not in md
    assert "README Usage section is still open" in summary

    assert "run the full suite and add the README Usage section by hand." in state["next_steps"]
    assert state["next_steps"][0] == S3  # the plan's in-progress item comes first
    assert data["ended"]["reason"] == "normal"
    assert "## Next steps" in md or "Next steps" in md
