"""Cline CLI 3 as it really runs: the pinned npm `cline` takes a request, plans with its
`team_task` tool, writes a file, runs a command that fails, survives one 429 (retried
inside its HTTP client, never written down) and ends; passdown's handoff from its session
is asserted fact by fact. Resuming (`cline --id`) opens the TUI only, so there is no
second non-interactive turn to drive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import VERSIONS, AgentEnv, find_agent
from e2e.checks import Facts, export_and_check, ok
from e2e.cline_kimi import cline_environ, run_cline
from e2e.fixture_recording import record_fixture, recording_workspace
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run (no-such-test-dir is missing)."


def _script(ws: Path) -> list[Step]:
    return [
        Step(
            text="Planning the work.",
            tool="team_task",
            input={"action": "create", "title": "Write hello.txt", "description": "Greet"},
        ),
        Step(
            text="And the tests.",
            tool="team_task",
            input={"action": "create", "title": "Run the tests", "description": "Run them"},
        ),
        Step(
            text="Writing the file.",
            tool="editor",
            input={"path": str(ws / "hello.txt"), "new_text": "Hello, world!\n"},
        ),
        Step(text="Running the tests.", tool="run_commands", input={"commands": [FAILING]}),
        Step(
            text="First task done.",
            tool="team_task",
            input={"action": "complete", "taskId": "task_0001", "summary": "written"},
        ),
        # an open task would keep Cline going forever ("You still have team obligations")
        Step(
            text="The tests cannot run.",
            tool="team_task",
            input={"action": "block", "taskId": "task_0002", "reason": "no test dir"},
        ),
        Step(text=FINAL),
    ]


def test_cline_handoff_fact_by_fact(tmp_path: Path, agent_env: AgentEnv, workspace: Path) -> None:
    workspace = recording_workspace(workspace, "cline")
    with ChatCompletionsServer(_script(workspace)) as server:
        env = cline_environ(agent_env, server.url, workspace)
        server.fail(
            429,
            {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}},
            times=1,
            headers={"retry-after": "1"},
        )
        events = ok(run_cline(env, workspace, PROMPT), "cline")
        assert server.remaining == 0
    assert (workspace / "hello.txt").read_text() == "Hello, world!\n"
    result = [json.loads(line) for line in events.splitlines() if '"run_result"' in line]
    assert result and result[-1]["finishReason"] == "completed"

    data_dir = agent_env.home / ".cline" / "data"
    [folder] = list((data_dir / "sessions").iterdir())
    sid = folder.name
    facts = Facts(
        agent="cline",
        request=PROMPT,  # unwrapped from <user_input mode="act">
        session_id=sid,
        source={
            "agent_version": VERSIONS["cline"],
            "models": ["scripted-model"],
            "cwd": str(workspace),
        },
        latest_progress=FINAL,
        plan=[
            ("task_0001", "Write hello.txt", "completed"),
            ("task_0002", "Run the tests", "blocked"),
        ],
        plan_fields=("id", "subject", "status"),
        files={"hello.txt": None},
        commands=[(FAILING, 2, False)],
        failure=(FAILING, 2),
        failure_error="No such file or directory",
        # the 429 was retried inside Cline's HTTP client and left no trace: a normal ending
        ended="normal",
        in_markdown=("Run the tests (blocked)", FAILING),
    )
    export_and_check({**env, "PYTHONPATH": register(tmp_path / "site")}, workspace, facts)

    record_fixture(
        "cline",
        {
            f".cline/data/sessions/{sid}/{sid}.messages.json": folder / f"{sid}.messages.json",
            f".cline/data/sessions/{sid}/{sid}.json": folder / f"{sid}.json",
            ".cline/data/db/teams.db": data_dir / "db" / "teams.db",
        },
        {
            "session_path": f".cline/data/sessions/{sid}/{sid}.messages.json",
            "session_id": sid,
            "workspace": str(workspace),
            "cli_version": VERSIONS["cline"],
            "original_request": PROMPT,
            "latest_user_message": PROMPT,
            "final_assistant_message": FINAL,
            "turns": [PROMPT],
            "plan_tool": "team_task",
            "plan": [
                {"id": "task_0001", "subject": "Write hello.txt", "status": "completed"},
                {"id": "task_0002", "subject": "Run the tests", "status": "blocked"},
            ],
            "files_written": ["hello.txt"],
            "files_edited": [],
            "files_touched": ["hello.txt"],
            "commands": [{"command": FAILING, "exit_code": 2}],
            "failing_command": {
                "command": FAILING,
                "exit_code": 2,
                "error_line_contains": "No such file",
            },
            "ended": "normal",
            "store_layout": "relative to HOME: ~/.cline/data/sessions/<id>/<id>.json + "
            "<id>.messages.json, plan rows in ~/.cline/data/db/teams.db (checkpointed copy)",
        },
    )


def test_cline_takes_a_dash_prompt_as_one_argument(agent_env: AgentEnv, workspace: Path) -> None:
    """The launch argv's "--": a prompt that starts with "-" reaches the model whole."""
    from passdown.agents.cline import ClineCLI

    prompt = "-p is not plan mode: say done"
    spec = ClineCLI().launch_spec(prompt, workspace=workspace, interactive=False)
    assert spec.argv == ["cline", "--", prompt]
    with ChatCompletionsServer([Step(text="done")]) as server:
        env = cline_environ(agent_env, server.url, workspace)
        argv = [str(find_agent("cline")), "--json", *spec.argv[1:]]
        from e2e.cline_kimi import _run

        ok(_run(argv, {**env, **spec.env}, workspace, 90), "cline -- -p...")
        sent = server.step_requests()[0].text()
    assert prompt in sent
    [folder] = list((agent_env.home / ".cline" / "data" / "sessions").iterdir())
    manifest = json.loads((folder / f"{folder.name}.json").read_text())
    assert (
        manifest["prompt"] == prompt
        and manifest["metadata"]["sessionHistoryOrigin"]["mode"] == "user"
    )


def test_cline_gives_up_on_a_sticky_429(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """Every request a 429: Cline retries inside its HTTP client, then ends the run with
    an error message in the session; the handoff says it ended on a rate limit."""
    with ChatCompletionsServer([Step(text="never sent")]) as server:
        env = cline_environ(agent_env, server.url, workspace)
        server.fail(
            429,
            {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}},
            headers={"retry-after": "0"},
        )
        proc = run_cline(env, workspace, PROMPT, timeout=150)
    assert proc.returncode != 0
    result = [json.loads(line) for line in proc.stdout.splitlines() if '"run_result"' in line]
    assert result and result[-1]["finishReason"] == "error"
    facts = Facts(agent="cline", request=PROMPT, ended="rate_limit")
    _md, data = export_and_check(
        {**env, "PYTHONPATH": register(tmp_path / "site")}, workspace, facts
    )
    assert data["ended"]["message"] == "Rate limit reached"
