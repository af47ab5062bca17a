"""Auggie as it really runs: the pinned npm `@augmentcode/auggie` against a scripted
Augment backend on 127.0.0.1 (it has no OpenAI/Anthropic base URL; a fake session token
needs no login). One session takes a request, plans with `add_tasks`/`update_tasks`,
writes a file, runs a command that fails, survives one 429 (Auggie retries it and writes
nothing down) and ends; passdown's hooks (`passdown install auggie`) write the handoff at
its Stop/SessionEnd, which is asserted fact by fact (there is no pickup: Auggie drops
what a SessionStart hook prints); the uninstall restores settings.json byte for byte. Then
`passdown switch --from auggie --to claude` hands the session to the real Claude Code,
Auggie's own launch argv takes a prompt that starts with "-", and `passdown run claude
--fallback auggie` falls over into the real Auggie. (The other direction cannot fall over:
Auggie writes no reason when its retries run out; tests/test_agent_auggie.py shows
`passdown run auggie --fallback claude` passing Auggie's exit code on instead.)"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, find_agent
from e2e.auggie_continue import (
    AugmentServer,
    auggie_environ,
    passdown,
    register,
    run,
    run_auggie,
)
from e2e.checks import Facts, export_and_check, load_handoff, ok
from e2e.fixture_recording import record_fixture, recording_workspace
from e2e.hooked import hook_log, passdown_on_path
from e2e.servers import AnthropicServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run. Next step: create no-such-test-dir."
SETTINGS = '{\n  "theme": "dark"\n}\n'  # the user's own settings, kept byte for byte


def _script(ws: Path) -> list[Step]:
    return [
        Step(
            text="Planning the work.",
            tool="add_tasks",
            input={
                "tasks": [
                    {"name": "Write hello.txt", "description": "Greet", "state": "IN_PROGRESS"},
                    {"name": "Run the tests", "description": "Run them"},
                ]
            },
        ),
        Step(
            text="Writing the file.",
            tool="save-file",
            input={"path": "hello.txt", "file_content": "Hello, world!\n"},
        ),
        Step(
            text="Running the tests.",
            tool="launch-process",
            input={"command": FAILING, "wait": True, "max_wait_seconds": 30, "cwd": str(ws)},
        ),
        Step(
            text="Updating the plan.",
            tool="update_tasks",
            # "@task:NAME": the short id Auggie gave the task, filled in by the server
            input={
                "tasks": [
                    {"task_id": "@task:Write hello.txt", "state": "COMPLETE"},
                    {"task_id": "@task:Run the tests", "state": "CANCELLED"},
                ]
            },
        ),
        Step(text=FINAL),
    ]


def _is_chat(body: object) -> bool:
    return isinstance(body, dict) and "chat_history" in body


def test_auggie_session_hooks_and_switch(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    started = time.monotonic()
    workspace = recording_workspace(workspace, "auggie")
    site = tmp_path / "site"
    bindir, _calls = passdown_on_path(tmp_path)
    augment = agent_env.home / ".augment"
    augment.mkdir(parents=True, exist_ok=True)
    (augment / "settings.json").write_text(SETTINGS, encoding="utf-8")
    with AugmentServer(_script(workspace), hooks=True) as server:
        env = auggie_environ(agent_env, server.url)
        env["PYTHONPATH"] = register(site)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        env["PASSDOWN_COMMAND"] = str(bindir / "passdown")
        ok(passdown(env, workspace, site, "install", "auggie"), "passdown install auggie")
        server.fail(429, {"error": "Too many requests"}, times=1, when=_is_chat)
        proc = run_auggie(env, workspace, PROMPT)
        ok(proc, "auggie --print")
        assert server.remaining == 0 and "Rate limit reached" in proc.stderr + proc.stdout
        assert [r.kind for r in server.requests].count("error") == 1  # the 429 was served
    assert (workspace / "hello.txt").read_text() == "Hello, world!\n"
    [session] = list((augment / "sessions").glob("*.json"))

    # the Stop/SessionEnd hooks wrote the handoff: fact by fact
    _md, hooked = load_handoff(workspace)
    assert hooked["source"]["agent"] == "auggie", hook_log(agent_env)
    assert hooked["source"]["session_id"] == session.stem
    assert hooked["task"]["latest_progress"] == FINAL, hook_log(agent_env)
    facts = Facts(
        agent="auggie",
        request=PROMPT,
        session_id=session.stem,
        # Auggie writes no version into a session
        source={"cwd": str(workspace), "agent_version": None},
        latest_progress=FINAL,
        plan=[("Write hello.txt", "completed"), ("Run the tests", "cancelled")],
        plan_source="task files",  # the task tree Auggie keeps beside it
        files={"hello.txt": None},
        commands=[(FAILING, 2, False)],
        failure=(None, 2),
        failure_error="No such file or directory",
        ended="normal",  # the retried 429 left no trace
        in_markdown=("Run the tests", FAILING),
    )
    export_and_check({**env, "PYTHONPATH": register(site)}, workspace, facts)
    _record(agent_env, workspace, session)

    # Stop and SessionEnd only: Auggie drops what a SessionStart hook prints
    installed = json.loads((augment / "settings.json").read_text(encoding="utf-8"))
    assert sorted(installed["hooks"]) == ["SessionEnd", "Stop"] and installed["theme"] == "dark"
    assert " ok auggie turn_complete stored=" in hook_log(agent_env)
    assert " ok auggie session_end stored=" in hook_log(agent_env)
    ok(passdown(env, workspace, site, "uninstall", "auggie"), "passdown uninstall auggie")
    assert (augment / "settings.json").read_text(encoding="utf-8") == SETTINGS

    # from Auggie to the real Claude Code
    with AnthropicServer([Step(text="Read the handoff; continuing.")]) as claude:
        env_c = {**agent_env.environ(anthropic_url=claude.url), "PYTHONPATH": register(site)}
        args = ["switch", "--from", "auggie", "--to", "claude", "--session", str(session)]
        args += ["--workspace", str(workspace), "--non-interactive"]
        ok(passdown(env_c, workspace, site, *args, timeout=150), "passdown switch")
        sent = "\n".join(r.text() for r in claude.step_requests())
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in sent and PROMPT in sent
    print(f"auggie e2e: {time.monotonic() - started:.1f} s")


def test_auggie_launch_argv_takes_a_dash_prompt(agent_env: AgentEnv, workspace: Path) -> None:
    """The argv passdown builds, run for real: `--instruction=-v...` reaches the model."""
    from passdown.agents.auggie import Auggie

    prompt = "-v: read .agent-handoff/HANDOFF.md and continue"
    spec = Auggie().launch_spec(prompt, workspace=workspace, interactive=False)
    assert spec.argv == ["auggie", "--print", f"--instruction={prompt}"]
    with AugmentServer([Step(text="On it.")]) as server:
        env = {**auggie_environ(agent_env, server.url), **spec.env}
        ok(run([str(find_agent("auggie")), *spec.argv[1:]], env, workspace), "auggie")
        assert prompt in server.step_requests()[0].text()


def _record(agent_env: AgentEnv, workspace: Path, session: Path) -> None:
    storage = agent_env.home / ".augment" / "task-storage"
    files = {f".augment/sessions/{session.name}": session}
    for path in sorted(storage.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(agent_env.home))] = path
    record_fixture(
        "auggie",
        files,
        {
            "session_path": f".augment/sessions/{session.name}",
            "session_id": session.stem,
            "workspace": str(workspace),
            "cli_version": None,
            "model": None,
            "original_request": PROMPT,
            "latest_user_message": PROMPT,
            "final_assistant_message": FINAL,
            "turns": [PROMPT],
            "plan_tool": "add_tasks/update_tasks",
            "plan": [
                {"subject": "Write hello.txt", "status": "completed"},
                {"subject": "Run the tests", "status": "cancelled"},
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
            "store_layout": "relative to HOME: ~/.augment/sessions/<id>.json, the task tree "
            "in ~/.augment/task-storage/tasks/<uuid> (+ manifest/manifest)",
        },
    )


def test_run_falls_over_into_auggie(tmp_path: Path, agent_env: AgentEnv, workspace: Path) -> None:
    """`passdown run claude --fallback auggie`: a stand-in `claude` writes a Claude Code
    session that ends on a 429 and exits 1 (tests/test_run_fallback.py's); passdown hands
    the task to the real Auggie, whose backend gets the takeover prompt."""
    from passdown.agents.claude import encode_cwd
    from test_run_fallback import FAKE_CLAUDE, NEXT, TASK

    bindir = tmp_path / "bin"
    bindir.mkdir()
    folder = agent_env.claude_dir / "projects" / encode_cwd(str(workspace))
    script = FAKE_CLAUDE.format(
        python=sys.executable,
        workspace=str(workspace),
        folder=str(folder),
        task=TASK,
        progress=f"Found it. {NEXT}",
    )
    (bindir / "claude").write_text(script)
    (bindir / "claude").chmod(0o755)
    with AugmentServer([Step(text="Took over from the handoff.")]) as server:
        env = auggie_environ(agent_env, server.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        args = ["run", "claude", "--fallback", "auggie", "--non-interactive", "--", TASK]
        proc = passdown(env, workspace, tmp_path / "site", *args, timeout=150)
        ok(proc, "passdown run claude --fallback auggie")
        sent = server.step_requests()[0].text()
    assert "continuing in Auggie" in proc.stderr
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in sent and TASK in sent
    assert "add a test for negative numbers" in sent  # the next step
