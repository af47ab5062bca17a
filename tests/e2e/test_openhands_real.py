"""OpenHands CLI as it really runs: the pinned PyPI `openhands` 1.16.0 (SDK 1.21, Python
3.12, its own venv) with passdown's hooks installed takes a request, plans with
`task_tracker`, creates a file, runs a command that fails, survives a 429 LiteLLM retried,
and finishes; its Stop and SessionEnd hooks write the handoff. A second run resumes the
conversation (`--resume ID`, a `str_replace` edit) and the export is asserted fact by fact;
a new conversation's first prompt carries the pointer to that handoff (UserPromptSubmit);
`passdown uninstall openhands` leaves no hooks.json behind; the handoff then launches the
real Codex (`switch`). OpenHands starts slowly (seconds per run even on a quiet machine),
so its rate-limit ending with its default retries (LiteLLM retries a 429 for about 3
minutes) is tested from a recorded session (tests/test_agent_openhands.py); `passdown run
openhands --fallback claude` runs it on stored model settings with LiteLLM allowed no
retry: the sticky 429 ends its conversation at once and the real Claude Code takes over."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv, openhands_environ, run_openhands, run_passdown, target_environ
from e2e.checks import Facts, export_and_check, load_handoff, ok, openai_user_texts
from e2e.fixture_recording import record_fixture, recording_workspace, scenario_facts
from e2e.pyagents import PYAGENT_VERSIONS, pyagent
from e2e.servers import ChatCompletionsServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
SECOND = "-t is no flag here: now add a goodbye line."  # passed as `--task=-t ...`
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run (no-such-test-dir is missing)."
LAST = "Goodbye added; the tests still need a test folder."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}
LOW = {"security_risk": "LOW"}  # OpenHands refuses a call without it


def _plan(*rows: tuple[str, str]) -> dict[str, object]:
    tasks = [{"title": t, "notes": "", "status": s} for t, s in rows]
    return {"command": "plan", "task_list": tasks, **LOW}


def _first_turn(workspace: Path) -> list[Step]:
    hello = str(workspace / "hello.txt")
    return [
        Step(
            text="Planning the work.",
            tool="task_tracker",
            input=_plan(("Write hello.txt", "in_progress"), ("Run the tests", "todo")),
        ),
        Step(
            text="Writing the file.",
            tool="file_editor",
            input={"command": "create", "path": hello, "file_text": "Hello, world!\n", **LOW},
        ),
        Step(text="Running the tests.", tool="terminal", input={"command": FAILING, **LOW}),
        Step(
            text="Updating the plan.",
            tool="task_tracker",
            input=_plan(("Write hello.txt", "done"), ("Run the tests", "in_progress")),
        ),
        Step(tool="finish", input={"message": FINAL}),
    ]


def _second_turn(workspace: Path) -> list[Step]:
    hello = str(workspace / "hello.txt")
    return [
        Step(
            text="Adding goodbye.",
            tool="file_editor",
            input={
                "command": "str_replace",
                "path": hello,
                "old_str": "Hello, world!",
                "new_str": "Hello, world!\nGoodbye!",
                **LOW,
            },
        ),
        Step(
            text="Plan updated.",
            tool="task_tracker",
            input=_plan(
                ("Write hello.txt", "done"),
                ("Run the tests", "in_progress"),
                ("Say goodbye", "done"),
            ),
        ),
        Step(tool="finish", input={"message": LAST}),
    ]


def _hook_command(tmp_path: Path) -> Path:
    hook = tmp_path / "bin" / "passdown"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f'#!/bin/sh\nexec {sys.executable} -m passdown "$@"\n')
    hook.chmod(0o755)
    return hook


def test_openhands_runs_hooks_resume_and_switch_fact_by_fact(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    python = pyagent("openhands").parent / "python"  # `openhands --version` takes seconds
    installed = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('openhands'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert installed.stdout.strip() == PYAGENT_VERSIONS["openhands"]  # the pinned CLI runs
    workspace = recording_workspace(workspace, "openhands")
    hooks_json = agent_env.home / ".openhands" / "hooks.json"
    with ChatCompletionsServer(_first_turn(workspace)) as server:
        env = openhands_environ(agent_env, server.url)
        env["PYTHONPATH"] = register(tmp_path / "site")
        hook = str(_hook_command(tmp_path))
        ok(run_passdown(env, workspace, "install", "openhands", "--command", hook), "install")
        assert '"Stop"' in hooks_json.read_text() and " hook openhands" in hooks_json.read_text()
        server.fail(429, RATE_LIMIT, times=1, headers={"retry-after": "1"})
        ok(run_openhands(env, workspace, PROMPT), "openhands first run")
        assert server.remaining == 0

        # the Stop / SessionEnd hooks wrote the handoff of the first run
        _md, hooked = load_handoff(workspace)
        assert hooked["source"]["agent"] == "openhands"
        assert hooked["task"]["original_request"] == PROMPT
        assert hooked["task"]["latest_progress"] == FINAL
        assert [(c["command"], c["exit_code"]) for c in hooked["state"]["commands"]] == [
            (FAILING, 2)
        ]
        conversations = agent_env.home / ".openhands" / "conversations"
        [folder] = list(conversations.iterdir())

        server.set_script(_second_turn(workspace))
        resumed = run_openhands(env, workspace, SECOND, "--resume", folder.name)
        ok(resumed, "openhands --resume")
        assert server.remaining == 0
        assert SECOND in server.step_requests()[-1].text()  # one argument, not an option
        assert list(conversations.iterdir()) == [folder]  # the same conversation went on

        # a new conversation: its first prompt carries the pointer to the hooks' handoff
        server.set_script([Step(tool="finish", input={"message": "Picked it up."})])
        ok(run_openhands(env, workspace, "Carry on."), "openhands new conversation")
        first = server.step_requests()[-1].text()
        assert f"handed over from openhands session {folder.name}" in first, first[-2000:]
        assert str(workspace / ".agent-handoff" / "HANDOFF.md") in first
    assert (workspace / "hello.txt").read_text() == "Hello, world!\nGoodbye!\n"

    facts = Facts(
        agent="openhands",
        request=PROMPT,
        session_id=folder.name,
        source={"cwd": str(workspace)},
        latest_user_message=SECOND,
        latest_progress=LAST,
        plan=[
            ("Write hello.txt", "completed"),
            ("Run the tests", "in_progress"),
            ("Say goodbye", "completed"),
        ],
        files={"hello.txt": {"write", "edit"}},
        failure=(FAILING, 2),
        failure_error="No such file or directory",
        ended="normal",  # the retried 429 left no trace
        in_markdown=(FAILING, "Run the tests"),
    )
    export_and_check(env, workspace, facts, "--session", folder.name)

    log = (agent_env.passdown_data / "logs" / "hooks.log").read_text()
    assert "ok openhands turn_complete" in log and "ok openhands session_end" in log, log
    assert "error" not in log, log
    ok(run_passdown(env, workspace, "uninstall", "openhands"), "uninstall")
    assert not hooks_json.exists()  # passdown created it: uninstall takes it away

    _record(folder, workspace, agent_env)
    _switch_to_codex(folder.name, agent_env, workspace, env["PYTHONPATH"])


def _switch_to_codex(session: str, agent_env: AgentEnv, workspace: Path, path: str) -> None:
    with OpenAIResponsesServer() as codex:
        codex.set_script([Step(text="Read the handoff; continuing.")])
        env = {**target_environ(agent_env, "codex", codex.url), "PYTHONPATH": path}
        switch = run_passdown(
            env,
            workspace,
            *("switch", "--from", "openhands", "--session", session, "--to", "codex"),
            "--non-interactive",
            timeout=200,
        )
        ok(switch, "passdown switch --from openhands --to codex")
        steps = codex.step_requests()
        assert steps, "codex sent no model request"
    handoff_md = workspace / ".agent-handoff" / "HANDOFF.md"
    assert str(handoff_md) in "\n".join(openai_user_texts(steps[0]))
    assert PROMPT.split(",")[0] in handoff_md.read_text()


def _record(folder: Path, workspace: Path, agent_env: AgentEnv) -> None:
    """The conversation's files relative to HOME; base_state.json first (the fuzz test
    mutates the first file; the events are side files)."""
    home = agent_env.home
    files = {
        str(p.relative_to(home)): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }
    main = str((folder / "base_state.json").relative_to(home))
    record_fixture(
        "openhands",
        {main: files.pop(main), **files},
        {
            "session_path": main,
            "session_id": folder.name,
            "workspace": str(workspace),
            "cli_version": PYAGENT_VERSIONS["openhands"],
            "version_in_session": False,  # the model is written, the CLI version is not
            "model": "openai/scripted-model",
            "plan_tool": "task_tracker",
            **scenario_facts(PROMPT, SECOND, LAST, FAILING),
            "store_layout": "relative to HOME: ~/.openhands/conversations/<id>/base_state.json "
            "+ events/event-<seq>-<uuid>.json + TASKS.json",
        },
    )


def test_run_falls_over_from_openhands_to_claude_on_a_sticky_429(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown run openhands --fallback claude`: passdown's own argv (`openhands
    --headless --task=...`, no `--override-with-envs`) runs OpenHands on the model
    settings a user stores (agent_settings.json; LiteLLM allowed no retry); it plans,
    creates a file and runs a failing command, then every request gets a 429: the
    conversation ends with a ConversationErrorEvent (LLMRateLimitError), which the
    handoff reads as a rate limit, and passdown launches the real Claude Code on the
    takeover prompt."""
    from e2e.agents import end_openhands_tmux, save_openhands_settings
    from e2e.fallback import (
        assert_claude_took_over,
        rate_limit_after_script,
        run_falling_over_to_claude,
        sticky_429_facts,
    )

    with ChatCompletionsServer(_first_turn(workspace)[:3]) as server:
        env = {
            **openhands_environ(agent_env, server.url),
            "PYTHONPATH": register(tmp_path / "site"),
        }
        for name in ("LLM_MODEL", "LLM_BASE_URL", "LLM_API_KEY"):
            del env[name]  # the model comes from the stored settings, as a user has it
        save_openhands_settings(agent_env.home, server.url, num_retries=0)
        env["PATH"] = f"{pyagent('openhands').parent}:{env['PATH']}"
        rate_limit_after_script(server)
        try:
            proc, claude_steps = run_falling_over_to_claude(
                env, agent_env, workspace, "openhands", PROMPT
            )
        finally:
            end_openhands_tmux(env)
        assert server.remaining == 0
        # no LiteLLM retry; the OpenAI client under it tries a 429 up to 3 times, at once
        assert 1 <= [r.kind for r in server.requests].count("error") <= 3
    facts = sticky_429_facts("openhands", PROMPT, FAILING, "RateLimitError")
    assert_claude_took_over(proc, claude_steps, workspace, facts, "OpenHands CLI")
