"""Continue CLI (`cn`) as it really runs: the pinned npm `@continuedev/cli` against the
scripted chat-completions server on 127.0.0.1 (a local `~/.continue/config.yaml`, no
Continue Hub login). One session takes a request, plans with `Checklist`, writes a file,
runs a command that fails, survives one 429 (retried by the CLI, written nowhere) and
ends; a second turn resumes it (`--resume`); passdown's handoff is asserted fact by fact.
Then `passdown switch --from continue --to codex` hands it to the real Codex CLI, and
Continue's own launch argv takes a prompt that starts with "-". Continue has no hooks
that fire, so there is nothing to install (tests/test_agent_continue.py checks that
`passdown install continue` says so)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, find_agent
from e2e.auggie_continue import continue_environ, passdown, register, run, run_continue
from e2e.checks import Facts, export_and_check, ok
from e2e.fixture_recording import record_fixture, recording_workspace
from e2e.servers import ChatCompletionsServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run. Next step: create no-such-test-dir."
RESUME = "Now create the folder."
FINAL_2 = "Not done yet: the folder still needs creating."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}


def _script(ws: Path) -> list[Step]:
    return [
        Step(
            text="Planning the work.",
            tool="Checklist",
            input={"checklist": "- [ ] Write hello.txt\n- [ ] Run the tests"},
        ),
        Step(
            text="Writing the file.",
            tool="Write",
            input={"filepath": str(ws / "hello.txt"), "content": "Hello, world!\n"},
        ),
        Step(text="Running the tests.", tool="Bash", input={"command": FAILING}),
        Step(
            text="Updating the plan.",
            tool="Checklist",
            input={"checklist": "- [x] Write hello.txt\n- [ ] Run the tests"},
        ),
        Step(text=FINAL),
    ]


def test_continue_session_resume_and_switch(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    started = time.monotonic()
    workspace = recording_workspace(workspace, "continue")
    site = tmp_path / "site"
    with ChatCompletionsServer(_script(workspace)) as server:
        env = continue_environ(agent_env, server.url)
        server.fail(429, RATE_LIMIT, times=1, headers={"retry-after": "1"})
        ok(run_continue(env, workspace, PROMPT), "cn -p")
        assert server.remaining == 0
        assert [r.kind for r in server.requests].count("error") == 1  # the 429 was served
        server.set_script([Step(text=FINAL_2)])
        ok(run_continue(env, workspace, RESUME, "--resume"), "cn -p --resume")
    assert (workspace / "hello.txt").read_text() == "Hello, world!\n"
    sessions = agent_env.home / ".continue" / "sessions"
    [session] = [p for p in sessions.glob("*.json") if p.name != "sessions.json"]

    facts = Facts(
        agent="continue",
        request=PROMPT,
        session_id=session.stem,
        # Continue writes no version into a session
        source={"cwd": str(workspace), "models": ["scripted-model"], "agent_version": None},
        latest_user_message=RESUME,
        latest_progress=FINAL_2,
        plan=[("Write hello.txt", "completed"), ("Run the tests", "pending")],
        plan_source="Checklist",
        files={"hello.txt": None},
        commands=[(FAILING, 2, False)],
        failure=(None, 2),
        failure_error="No such file or directory",
        ended="normal",  # the retried 429 left no trace
        in_markdown=("Run the tests", FAILING),
    )
    _md, data = export_and_check({**env, "PYTHONPATH": register(site)}, workspace, facts)
    assert not data["state"]["last_failure"]["error"].startswith("Error executing tool")
    _record(agent_env, workspace, session)

    # from Continue to the real Codex CLI
    with OpenAIResponsesServer([Step(text="Read the handoff; continuing.")]) as codex:
        env_c = {**agent_env.environ(openai_url=codex.url), "PYTHONPATH": register(site)}
        args = ["switch", "--from", "continue", "--to", "codex", "--session", str(session)]
        args += ["--workspace", str(workspace), "--non-interactive"]
        ok(passdown(env_c, workspace, site, *args, timeout=150), "passdown switch")
        sent = "\n".join(r.text() for r in codex.step_requests())
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in sent and PROMPT in sent
    print(f"continue e2e: {time.monotonic() - started:.1f} s")


def test_continue_launch_argv_takes_a_dash_prompt(agent_env: AgentEnv, workspace: Path) -> None:
    """The argv passdown builds, run for real: `cn -p -- -v...` reaches the model whole."""
    from passdown.agents.continue_cli import ContinueCLI

    prompt = "-v: read .agent-handoff/HANDOFF.md and continue"
    spec = ContinueCLI().launch_spec(prompt, workspace=workspace, interactive=False)
    assert spec.argv == ["cn", "-p", "--", prompt]
    with ChatCompletionsServer([Step(text="On it.")]) as server:
        env = {**continue_environ(agent_env, server.url), **spec.env}
        ok(run([str(find_agent("cn")), *spec.argv[1:]], env, workspace), "cn -p --")
        assert prompt in server.step_requests()[0].text()


def _record(agent_env: AgentEnv, workspace: Path, session: Path) -> None:
    record_fixture(
        "continue",
        {
            f".continue/sessions/{session.name}": session,
            ".continue/sessions/sessions.json": session.with_name("sessions.json"),
        },
        {
            "session_path": f".continue/sessions/{session.name}",
            "session_id": session.stem,
            "workspace": str(workspace),
            "cli_version": None,
            "original_request": PROMPT,
            "latest_user_message": RESUME,
            "final_assistant_message": FINAL_2,
            "turns": [PROMPT, RESUME],
            "plan_tool": "Checklist",
            "plan": [
                {"id": "1", "subject": "Write hello.txt", "status": "completed"},
                {"id": "2", "subject": "Run the tests", "status": "pending"},
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
            "store_layout": "relative to HOME: ~/.continue/sessions/<id>.json + the index "
            "~/.continue/sessions/sessions.json",
        },
    )
