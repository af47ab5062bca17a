"""Mistral Vibe as it really runs: the pinned PyPI `mistral-vibe` 3.0.3 (Python 3.12, its
own venv) with passdown's `post_agent` hook installed takes a request, plans with `todo`,
writes a file, runs a command that fails, survives a 429 its client retried, and ends; the
hook's handoff (written while the turn is still only in the store's recovery journal) and a
second turn that continues the session (`-c`, an `edit`, a prompt starting with "-") are
asserted fact by fact, then `passdown uninstall vibe` leaves no hooks.toml behind.
`passdown run vibe --fallback claude`: a sticky 429 with a short retry budget ends Vibe's
turn on a rate limit and the real Claude Code takes over; `passdown run claude --fallback
vibe`: Claude Code hits a 429 and passdown launches the real Vibe with its own argv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import AgentEnv, run_passdown, run_vibe, target_environ, vibe_environ
from e2e.checks import Facts, anthropic_user_texts, assert_facts, export_and_check, load_handoff, ok
from e2e.fixture_recording import (
    FIXTURES,
    record_fixture,
    recording,
    recording_workspace,
    scenario_facts,
)
from e2e.pyagents import PYAGENT_VERSIONS, pyagent
from e2e.servers import AnthropicServer, ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
SECOND = "-c is no flag here: now add a goodbye line."  # passed as `--prompt=-c ...`
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run (no-such-test-dir is missing)."
LAST = "Goodbye added; the tests still need a test folder."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}


def _todos(*rows: tuple[str, str, str]) -> dict[str, object]:
    return {
        "action": "write",
        "todos": [{"id": i, "content": c, "status": s, "priority": "medium"} for i, c, s in rows],
    }


def _first_turn() -> list[Step]:
    return [
        Step(
            text="Planning the work.",
            tool="todo",
            input=_todos(
                ("1", "Write hello.txt", "in_progress"), ("2", "Run the tests", "pending")
            ),
        ),
        Step(
            text="Writing the file.",
            tool="write_file",
            input={"path": "hello.txt", "content": "Hello, world!\n"},
        ),
        Step(text="Running the tests.", tool="bash", input={"command": FAILING}),
        Step(
            text="Updating the plan.",
            tool="todo",
            input=_todos(
                ("1", "Write hello.txt", "completed"), ("2", "Run the tests", "in_progress")
            ),
        ),
        Step(text=FINAL),
    ]


def _second_turn(workspace: Path) -> list[Step]:
    return [
        Step(
            text="Adding goodbye.",
            tool="edit",
            input={
                "file_path": str(workspace / "hello.txt"),
                "old_string": "Hello, world!",
                "new_string": "Hello, world!\nGoodbye!",
            },
        ),
        Step(
            text="Plan updated.",
            tool="todo",
            input=_todos(
                ("1", "Write hello.txt", "completed"),
                ("2", "Run the tests", "in_progress"),
                ("3", "Say goodbye", "completed"),
            ),
        ),
        Step(text=LAST),
    ]


def _hook_command(tmp_path: Path) -> Path:
    hook = tmp_path / "bin" / "passdown"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f'#!/bin/sh\nexec {sys.executable} -m passdown "$@"\n')
    hook.chmod(0o755)
    return hook


def _facts(data: dict[str, object]) -> tuple[object, ...]:
    task, state = data["task"], data["state"]
    assert isinstance(task, dict) and isinstance(state, dict)
    plan = [(p["subject"], p["status"]) for p in state["plan"]]
    commands = [(c["command"], c["exit_code"], c["ok"]) for c in state["commands"]]
    return task["original_request"], plan, commands


def test_vibe_turns_hooks_and_handoff_fact_by_fact(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    version = subprocess.run(
        [str(pyagent("vibe")), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert version.stdout.split() == ["vibe", PYAGENT_VERSIONS["vibe"]]  # the pinned CLI ran
    workspace = recording_workspace(workspace, "vibe")
    hooks_toml = agent_env.home / ".vibe" / "hooks.toml"
    with ChatCompletionsServer(_first_turn()) as server:
        env = vibe_environ(agent_env, server.url)
        env["PYTHONPATH"] = register(tmp_path / "site")
        out = run_passdown(
            env, workspace, "install", "vibe", "--command", str(_hook_command(tmp_path))
        )
        ok(out, "passdown install vibe")
        assert 'type = "post_agent"' in hooks_toml.read_text() and " hook vibe" in (
            hooks_toml.read_text()
        )
        server.fail(429, RATE_LIMIT, times=1, headers={"retry-after": "1"})
        ok(run_vibe(env, workspace, PROMPT), "vibe first turn")
        assert server.remaining == 0

        # the post_agent hook wrote the handoff before Vibe wrote the turn's generation
        _md, hooked = load_handoff(workspace)
        assert hooked["source"]["agent"] == "vibe"
        assert _facts(hooked) == (
            PROMPT,
            [("Write hello.txt", "completed"), ("Run the tests", "in_progress")],
            [(FAILING, 2, False)],
        )
        assert hooked["task"]["latest_progress"] == FINAL
        assert hooked["ended"]["reason"] == "normal"

        server.set_script(_second_turn(workspace))
        ok(run_vibe(env, workspace, SECOND, "-c"), "vibe -c second turn")
        assert server.remaining == 0
        assert SECOND in server.step_requests()[-1].text()  # one argument, not an option
    assert (workspace / "hello.txt").read_text() == "Hello, world!\nGoodbye!\n"
    unified = agent_env.home / ".vibe" / "logs" / "session" / "unified"
    [folder] = [p for p in unified.iterdir() if p.is_dir()]  # -c continued the same one

    facts = Facts(
        agent="vibe",
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
    export_and_check(env, workspace, facts)

    log = (agent_env.passdown_data / "logs" / "hooks.log").read_text()
    assert log.count("ok vibe turn_complete") == 2 and "error" not in log, log
    ok(run_passdown(env, workspace, "uninstall", "vibe"), "passdown uninstall vibe")
    assert not hooks_toml.exists()  # passdown created it: uninstall takes it away

    _record(folder, workspace, agent_env)


def _record(folder: Path, workspace: Path, agent_env: AgentEnv) -> None:
    """The session's files, relative to HOME; the context chunk first (the fuzz test
    mutates the first file)."""
    home = agent_env.home
    files = {str(p.relative_to(home)): p for p in sorted(folder.rglob("*")) if p.is_file()}
    current = (folder / "CURRENT").read_text()
    generation = current.split('"generation":"')[1].split('"')[0]
    manifest = (folder / "generations" / generation / "manifest.json").read_text()
    chunk = manifest.split('"checkpoint":{')[1].split('"chunks":["')[1].split('"')[0]
    main = str((folder / "chunks" / f"{chunk}.json").relative_to(home))
    record_fixture(
        "vibe",
        {main: files.pop(main), **files},
        {
            "session_path": main,
            "session_id": folder.name,
            "workspace": str(workspace),
            "cli_version": PYAGENT_VERSIONS["vibe"],
            "version_in_session": False,  # the model is written, the version is not
            "plan_tool": "todo",
            **scenario_facts(PROMPT, SECOND, LAST, FAILING),
            "store_layout": "relative to HOME: ~/.vibe/logs/session/unified/<id>/ CURRENT -> "
            "generations/<N>/manifest.json -> chunks/<sha256>.json (+ meta.json, journal/)",
        },
    )


def _record_files(agent: str, scenario: str, folder: Path, home: Path) -> None:
    """With $PASSDOWN_RECORD_FIXTURES set: the session's files as recorded (relative to
    HOME) under tests/fixtures/sessions/<agent>/<scenario>, read by tests/test_agent_vibe.py."""
    if not recording():
        return
    target = FIXTURES / agent / scenario
    shutil.rmtree(target, ignore_errors=True)
    for path in folder.rglob("*"):
        if path.is_file():
            dest = target / path.relative_to(home)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)


def test_run_falls_over_from_vibe_to_claude_on_a_sticky_429(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown run vibe --fallback claude`: Vibe retries a 429 until its retry budget is
    spent (1 s here, 300 s by default), the turn ends `failed`, which the handoff reports
    as a rate limit, and passdown launches the real Claude Code on it."""
    with (
        ChatCompletionsServer([Step(text="never sent")]) as server,
        AnthropicServer([Step(text="Read the handoff; continuing.")]) as claude,
    ):
        env = {  # Claude's server last: vibe_environ starts from the plain environment
            **vibe_environ(agent_env, server.url, retry_budget_s=1.0),
            **target_environ(agent_env, "claude", claude.url),
            "PYTHONPATH": register(tmp_path / "site"),
        }
        env["PATH"] = f"{pyagent('vibe').parent}{os.pathsep}{env['PATH']}"
        server.fail(429, RATE_LIMIT, headers={"retry-after": "0"})
        proc = run_passdown(
            env,
            workspace,
            *("run", "vibe", "--fallback", "claude", "--non-interactive", "--", PROMPT),
            timeout=240,
        )
        ok(proc, "passdown run vibe --fallback claude")
        assert server.requests, "vibe never asked its (rate-limited) server"
        steps = claude.step_requests()
        assert steps, "claude was never started"
    assert "on a rate limit" in proc.stderr and "continuing in Claude Code" in proc.stderr
    handoff_md = workspace / ".agent-handoff" / "HANDOFF.md"
    assert str(handoff_md) in "\n".join(anthropic_user_texts(steps[0]))
    md, data = load_handoff(workspace)
    assert_facts(md, data, Facts("vibe", PROMPT, ended="rate_limit", ended_message="429"))
    unified = agent_env.home / ".vibe" / "logs" / "session" / "unified"
    [folder] = [p for p in unified.iterdir() if p.is_dir()]
    _record_files("vibe", "ratelimit", folder, agent_env.home)


def test_run_falls_over_from_claude_to_vibe_on_a_rate_limit(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """The other direction: Claude Code's server answers 429 mid-task; `passdown run
    claude --fallback vibe` launches the real Vibe with passdown's own argv on the
    handoff."""
    from e2e.hooked import passdown_on_path
    from e2e.test_continuity import NEXT, _claude_hits_the_limit

    bindir, _calls = passdown_on_path(tmp_path)
    env, anthropic = _claude_hits_the_limit(agent_env, bindir, workspace)
    with ChatCompletionsServer([Step(text="Continuing from the handoff.")]) as chat:
        env = {**vibe_environ(agent_env, chat.url), **env, "PYTHONPATH": register(tmp_path / "s")}
        env["PATH"] = f"{pyagent('vibe').parent}{os.pathsep}{env['PATH']}"
        try:
            ok(run_passdown(env, workspace, "install", "claude"), "passdown install claude")
            proc = run_passdown(
                env,
                workspace,
                *("run", "claude", "--fallback", "vibe", "--non-interactive", "--"),
                "Write usage notes for the calculator in NOTES.md",
                timeout=360,
            )
        finally:
            anthropic.stop()
        assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-3000:])
        first = chat.step_requests()[0].text()
    assert "You are taking over a coding task from claude" in first, first[-3000:]
    assert NEXT.split(":")[-1].strip()[:20] in first
    assert "on a rate limit" in proc.stderr and "continuing in Mistral Vibe" in proc.stderr
