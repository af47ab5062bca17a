"""Hermes Agent as it really runs: the pinned PyPI `hermes-agent` 0.19.0 (Python 3.12, its
own venv), with passdown's hooks installed (and approved in Hermes's allowlist, so no
consent prompt), takes a request, plans with its `todo` tool (a replace, then a merge),
writes a file, runs a command that fails, gets past a 429 it retried, and ends; its
`on_session_end` hook writes the handoff. The handoff is asserted fact by fact; a switch
to Claude Code prints its launch argv; `passdown uninstall hermes` gives both files back
byte for byte.

`passdown run hermes --fallback claude`: Hermes works, then every request gets a 429;
allowed one attempt (`agent.api_max_retries: 1`: its default three take about 40 s) it
gives up, and the real Claude Code takes over on the handoff.

One Hermes start costs about 20 s here, so the module runs no more sessions: the resumed
turn (`--continue`) and a give-up after Hermes's default three attempts are recorded
sessions read by tests/test_agent_hermes.py instead."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import CHAT_MODEL, AgentEnv, hermes_environ, run_hermes, run_passdown
from e2e.checks import Facts, export_and_check, load_handoff, ok
from e2e.fixture_recording import record_fixture, recording_workspace
from e2e.hooked import hook_log, passdown_on_path, with_hooks
from e2e.pyagents import PYAGENT_VERSIONS
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run (no-such-test-dir is missing)."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}
ORIGINAL_ALLOWLIST = '{\n  "approvals": []\n}'


def _todo(*items: tuple[str, str, str], merge: bool = False) -> dict[str, object]:
    todos = [{"id": i, "content": c, "status": s} for i, c, s in items]
    return {"todos": todos, "merge": merge} if merge else {"todos": todos}


def _steps() -> list[Step]:
    return [
        Step(
            text="Planning.",
            tool="todo",
            input=_todo(("1", "Write hello.txt", "in_progress"), ("2", "Run the tests", "pending")),
        ),
        Step(
            text="Writing the file.",
            tool="write_file",
            input={"path": "hello.txt", "content": "Hello, world!\n"},
        ),
        Step(text="Running the tests.", tool="terminal", input={"command": FAILING}),
        Step(
            text="Updating the plan.",
            tool="todo",
            input=_todo(("1", "", "completed"), ("2", "", "in_progress"), merge=True),
        ),
        Step(text=FINAL),
    ]


def test_hermes_handoff_fact_by_fact(tmp_path: Path, agent_env: AgentEnv, workspace: Path) -> None:
    workspace = recording_workspace(workspace, "hermes")
    bindir, calls = passdown_on_path(tmp_path)
    with ChatCompletionsServer(_steps()) as server:
        env = hermes_environ(agent_env, server.url)
        env["PYTHONPATH"] = register(tmp_path / "site")
        home = agent_env.home / ".hermes"
        config, allowlist = home / "config.yaml", home / "shell-hooks-allowlist.json"
        original = config.read_bytes()
        allowlist.write_text(ORIGINAL_ALLOWLIST, encoding="utf-8")
        with_hooks(env, bindir, workspace, "hermes")
        assert b"hook hermes" in config.read_bytes() and b"hook hermes" in allowlist.read_bytes()
        server.fail(429, RATE_LIMIT, times=1, headers={"retry-after": "0"})
        ok(run_hermes(env, workspace, PROMPT), "hermes chat")
        assert server.remaining == 0
        # the Hermes model call saw no pointer (no other session's handoff to pick up)
        assert "HANDOFF.md" not in server.step_requests()[0].text()
    assert (workspace / "hello.txt").read_text() == "Hello, world!\n"
    _md, hooked = load_handoff(workspace)  # written by the on_session_end hook
    assert hooked["source"]["agent"] == "hermes"
    assert hooked["state"]["last_failure"]["command"] == FAILING
    assert "hook hermes" in calls.read_text()
    log = hook_log(agent_env)
    assert "ok hermes turn_complete" in log and " error " not in log, log
    assert "pickup hermes" in log  # pre_llm_call ran the pickup (nothing to pick up)

    db = home / "state.db"
    [sid] = [
        r[0]
        for r in sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("SELECT id FROM sessions")
    ]
    facts = Facts(
        agent="hermes",
        request=PROMPT,
        session_id=sid,
        source={"cwd": str(workspace), "models": [CHAT_MODEL]},
        latest_user_message=PROMPT,
        latest_progress=FINAL,
        plan=[("Write hello.txt", "completed"), ("Run the tests", "in_progress")],
        files={"hello.txt": ["write"]},
        commands=[(FAILING, 2, False)],
        failure=(FAILING, 2),
        failure_error="No such file or directory",
        ended="normal",  # the retried 429 left no trace
        in_markdown=(FAILING, "Run the tests"),
    )
    export_and_check(env, workspace, facts)

    _switch_to_claude(env, workspace, sid)
    ok(run_passdown(env, workspace, "uninstall", "hermes"), "passdown uninstall hermes")
    assert config.read_bytes() == original
    assert allowlist.read_text(encoding="utf-8") == ORIGINAL_ALLOWLIST

    record_fixture(
        "hermes",
        {".hermes/state.db": db},
        {
            "session_path": ".hermes/state.db",
            "session_id": sid,
            "workspace": str(workspace),
            "cli_version": PYAGENT_VERSIONS["hermes"],
            "version_in_session": False,
            "original_request": PROMPT,
            "latest_user_message": PROMPT,
            "final_assistant_message": FINAL,
            "turns": [PROMPT],
            "plan_tool": "todo",
            "plan": [
                {"subject": "Write hello.txt", "status": "completed"},
                {"subject": "Run the tests", "status": "in_progress"},
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
            "store_layout": "relative to HOME: ~/.hermes/state.db (SQLite; the -wal folded in)",
        },
    )


def _switch_to_claude(env: dict[str, str], workspace: Path, sid: str) -> None:
    """`passdown switch --from hermes --to claude --dry-run --json`: Claude Code's argv on
    the takeover prompt, from this session, nothing launched or written."""
    before = (workspace / ".agent-handoff" / "handoff.json").read_bytes()
    out = json.loads(
        ok(
            run_passdown(
                env,
                workspace,
                *("switch", "--from", "hermes", "--to", "claude", "--session", sid),
                *("--workspace", str(workspace), "--dry-run", "--json"),
            ),
            "passdown switch --from hermes --to claude --dry-run",
        )
    )
    assert out["target"] == "claude" and out["argv"][0] == "claude"
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in out["argv"][-1]
    assert (workspace / ".agent-handoff" / "handoff.json").read_bytes() == before


def test_run_falls_over_from_hermes_to_claude_on_a_sticky_429(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown run hermes --fallback claude`: Hermes plans, writes a file and runs a
    failing command, then every request gets a 429. With `agent.api_max_retries: 1` in
    its config.yaml (one attempt; its default 3 with backoff takes about 40 s) it gives
    up at once and dumps the failed request, which the handoff reads as a rate limit;
    passdown launches the real Claude Code on the takeover prompt."""
    from e2e.fallback import (
        assert_claude_took_over,
        rate_limit_after_script,
        run_falling_over_to_claude,
        sticky_429_facts,
    )
    from e2e.pyagents import pyagent

    with ChatCompletionsServer(_steps()[:3]) as server:
        env = {
            **hermes_environ(agent_env, server.url, api_max_retries=1),
            "PYTHONPATH": register(tmp_path / "site"),
        }
        env["PATH"] = f"{pyagent('hermes').parent}:{env['PATH']}"
        rate_limit_after_script(server)
        proc, claude_steps = run_falling_over_to_claude(env, agent_env, workspace, "hermes", PROMPT)
        assert server.remaining == 0
        assert [r.kind for r in server.requests].count("error") == 1  # no retry
    facts = sticky_429_facts("hermes", PROMPT, FAILING, "HTTP 429")
    assert_claude_took_over(proc, claude_steps, workspace, facts, "Hermes Agent")
