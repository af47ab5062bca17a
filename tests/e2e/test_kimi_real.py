"""Kimi CLI as it really runs: the pinned PyPI `kimi-cli` 1.51.0 (Python 3.13, its own
venv; 1.52 is a stub whose bare `kimi` curls an installer, never run) takes a request,
plans with `SetTodoList`, writes a file, runs a command that fails, survives a 429 its
HTTP client retried, and ends; a second turn continues the session (`-C`). passdown's
handoff is asserted fact by fact. A third test makes every request a 429: Kimi retries
the step, gives up, and the handoff says the session ended on a rate limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv
from e2e.checks import Facts, export_and_check, ok
from e2e.cline_kimi import kimi_environ, run_kimi
from e2e.fixture_recording import record_fixture, recording_workspace, scenario_facts
from e2e.pyagents import PYAGENT_VERSIONS, pyagent
from e2e.servers import ChatCompletionsServer, Step
from passdown.agents.kimi import folder_name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
SECOND = "Now add a goodbye line."
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run (no-such-test-dir is missing)."
LAST = "Goodbye added; the tests still need a test folder."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}


def _todos(*pairs: tuple[str, str]) -> dict[str, object]:
    return {"todos": [{"title": t, "status": s} for t, s in pairs]}


def _first_turn() -> list[Step]:
    return [
        Step(
            text="Planning the work.",
            tool="SetTodoList",
            input=_todos(("Write hello.txt", "in_progress"), ("Run the tests", "pending")),
        ),
        Step(
            text="Writing the file.",
            tool="WriteFile",
            input={"path": "hello.txt", "content": "Hello, world!\n"},
        ),
        Step(text="Running the tests.", tool="Shell", input={"command": FAILING}),
        Step(
            text="Updating the plan.",
            tool="SetTodoList",
            input=_todos(("Write hello.txt", "done"), ("Run the tests", "in_progress")),
        ),
        Step(text=FINAL),
    ]


def _second_turn() -> list[Step]:
    return [
        Step(
            text="Adding goodbye.",
            tool="StrReplaceFile",
            input={
                "path": "hello.txt",
                "edit": {"old": "Hello, world!", "new": "Hello, world!\nGoodbye!"},
            },
        ),
        Step(
            text="Plan updated.",
            tool="SetTodoList",
            input=_todos(
                ("Write hello.txt", "done"),
                ("Run the tests", "in_progress"),
                ("Say goodbye", "done"),
            ),
        ),
        Step(text=LAST),
    ]


def test_pinned_kimi_installed(agent_env: AgentEnv) -> None:
    proc = ok(
        __import__("subprocess").run(
            [str(pyagent("kimi")), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ),
        "kimi --version",
    )
    assert PYAGENT_VERSIONS["kimi"] == "1.51.0" and "1.51.0" in proc


def test_kimi_handoff_fact_by_fact(tmp_path: Path, agent_env: AgentEnv, workspace: Path) -> None:
    workspace = recording_workspace(workspace, "kimi")
    with ChatCompletionsServer(_first_turn()) as server:
        env = kimi_environ(agent_env, server.url)
        server.fail(429, RATE_LIMIT, times=1, headers={"retry-after": "1"})
        ok(run_kimi(env, workspace, PROMPT), "kimi first turn")
        assert server.remaining == 0
        server.set_script(_second_turn())
        ok(run_kimi(env, workspace, SECOND, "-C"), "kimi -C second turn")
        assert server.remaining == 0
    assert (workspace / "hello.txt").read_text() == "Hello, world!\nGoodbye!\n"
    [folder] = list((agent_env.home / ".kimi" / "sessions" / folder_name(str(workspace))).iterdir())

    facts = Facts(
        agent="kimi",
        request=PROMPT,
        session_id=folder.name,
        source={"cwd": str(workspace)},
        latest_user_message=SECOND,  # both turns: one session
        latest_progress=LAST,
        plan=[
            ("Write hello.txt", "completed"),
            ("Run the tests", "in_progress"),
            ("Say goodbye", "completed"),
        ],
        files={"hello.txt": {"write", "edit"}},
        commands=[(FAILING, 2, False)],
        failure=(FAILING, 2),
        failure_error="No such file or directory",
        ended="normal",  # the retried 429 left no trace
        in_markdown=(FAILING, "Run the tests"),
    )
    export_and_check({**env, "PYTHONPATH": register(tmp_path / "site")}, workspace, facts)

    session = f".kimi/sessions/{folder.parent.name}/{folder.name}"
    files = {f"{session}/{name}": folder / name for name in ("wire.jsonl", "state.json")}
    files[f"{session}/context.jsonl"] = folder / "context.jsonl"
    files[".kimi/kimi.json"] = agent_env.home / ".kimi" / "kimi.json"
    record_fixture(
        "kimi",
        files,
        {
            "session_path": f"{session}/wire.jsonl",
            "session_id": folder.name,
            "workspace": str(workspace),
            "cli_version": PYAGENT_VERSIONS["kimi"],
            "version_in_session": False,  # neither the version nor the model is written
            "plan_tool": "SetTodoList",
            **scenario_facts(PROMPT, SECOND, LAST, FAILING),
            "store_layout": "relative to HOME: ~/.kimi/sessions/<md5 of cwd>/<id>/wire.jsonl "
            "(+ state.json, context.jsonl); ~/.kimi/kimi.json maps folders to cwds",
        },
    )


def test_kimi_gives_up_on_a_sticky_429(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    with ChatCompletionsServer([Step(text="never sent")]) as server:
        env = kimi_environ(agent_env, server.url)
        server.fail(429, RATE_LIMIT, headers={"retry-after": "0"})
        proc = run_kimi(env, workspace, PROMPT, timeout=150)
    assert "429" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    facts = Facts(agent="kimi", request=PROMPT, ended="rate_limit", ended_message="429")
    export_and_check({**env, "PYTHONPATH": register(tmp_path / "site")}, workspace, facts)


def test_kimi_takes_a_dash_prompt_as_one_argument(agent_env: AgentEnv, workspace: Path) -> None:
    """The launch argv's "--prompt=...": a prompt that starts with "-" reaches the model."""
    from passdown.agents.kimi import KimiCLI

    prompt = "-C is no flag here: say done"
    spec = KimiCLI().launch_spec(prompt, workspace=workspace, interactive=False)
    with ChatCompletionsServer([Step(text="done")]) as server:
        env = kimi_environ(agent_env, server.url)
        argv = [str(pyagent("kimi")), *spec.argv[1:]]
        proc = __import__("subprocess").run(
            argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        ok(proc, "kimi --print --prompt=-C...")
        assert prompt in server.step_requests()[0].text()
