"""gptme as it really runs: the pinned PyPI `gptme` 0.35.1 (Python 3.12, its own venv),
with passdown's `session.end` hook installed, takes a request, plans with its `todo` tool,
writes a file (`save`, a real tool call), runs a command that fails, gets past a 429 its
client retried, and ends with `complete`; the hook writes the handoff. A second run
resumes the conversation (`-r`). The handoff is asserted fact by fact; a switch to Claude
Code prints its launch argv; `passdown uninstall gptme` gives the config back byte for
byte; passdown's own argv for gptme runs the real CLI with a prompt that starts with "-",
against a server that answers 429 to everything: gptme (allowed one attempt instead of
its default 11, backing off to 60 s) gives up, records it, and the handoff ends on the
rate limit. `passdown run gptme --fallback claude`: gptme works, then every request gets a
429; allowed one attempt it gives up, and the real Claude Code takes over on the handoff."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_entry_points import register
from e2e.agents import CHAT_MODEL, AgentEnv, gptme_environ, run_gptme, run_passdown
from e2e.checks import Facts, export_and_check, load_handoff, ok
from e2e.fixture_recording import record_fixture, recording_workspace, scenario_facts
from e2e.hooked import hook_log, passdown_on_path, with_hooks
from e2e.pyagents import PYAGENT_VERSIONS, pyagent
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PROMPT = "Write hello.txt with a greeting, then run the tests."
SECOND = "Now add a goodbye line."
FAILING = "ls no-such-test-dir && echo ok"
FINAL = "hello.txt is written; the tests could not run (no-such-test-dir is missing)."
LAST = "Goodbye added; the tests still need a test folder."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}
ORIGINAL_CONFIG = '# mine\n[user]\nname = "User"\n\n[hooks]\nscripts = []\n'


def _todo(*lines: str) -> str:
    return "```todo write\n" + "\n".join(lines) + "\n```"


def _first_turn() -> list[Step]:
    return [
        Step(text="Planning.\n" + _todo('add "Write hello.txt"', 'add "Run the tests"')),
        Step(text="Starting.\n" + _todo("update 1 in_progress")),
        Step(
            text="Writing the file.",
            tool="save",
            input={"path": "hello.txt", "content": "Hello, world!\n"},
        ),
        Step(text="Running the tests.", tool="shell", input={"command": FAILING}),
        Step(text="Updating the plan.\n" + _todo("update 1 completed", "update 2 in_progress")),
        Step(text=FINAL, tool="complete", input={}),
    ]


def _second_turn() -> list[Step]:
    return [
        Step(
            text="Adding goodbye.",
            tool="append",
            input={"path": "hello.txt", "content": "Goodbye!\n"},
        ),
        Step(text="Plan updated.\n" + _todo('add "Say goodbye"', "update 3 completed")),
        Step(text=LAST, tool="complete", input={}),
    ]


def test_gptme_handoff_fact_by_fact(tmp_path: Path, agent_env: AgentEnv, workspace: Path) -> None:
    workspace = recording_workspace(workspace, "gptme")
    config = agent_env.home / ".config" / "gptme" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(ORIGINAL_CONFIG, encoding="utf-8")
    bindir, calls = passdown_on_path(tmp_path)
    with ChatCompletionsServer(_first_turn()) as server:
        env = gptme_environ(agent_env, server.url)
        env["PYTHONPATH"] = register(tmp_path / "site")
        with_hooks(env, bindir, workspace, "gptme")
        assert b"hook gptme" in config.read_bytes()
        server.fail(429, RATE_LIMIT, times=1, headers={"retry-after": "1"})
        ok(run_gptme(env, workspace, PROMPT), "gptme first run")
        assert server.remaining == 0
        # the session.end hook wrote the handoff of the run that just ended
        _md, hooked = load_handoff(workspace)
        assert hooked["source"]["agent"] == "gptme"
        assert hooked["task"]["latest_user_message"] == PROMPT
        assert hooked["state"]["last_failure"]["command"] == FAILING
        assert "hook gptme" in calls.read_text()
        server.set_script(_second_turn())
        ok(run_gptme(env, workspace, SECOND, "-r"), "gptme -r second run")
        assert server.remaining == 0
    assert (workspace / "hello.txt").read_text() == "Hello, world!\nGoodbye!\n"
    [folder] = list((agent_env.home / ".local" / "share" / "gptme" / "logs").iterdir())

    facts = Facts(
        agent="gptme",
        request=PROMPT,
        session_id=folder.name,
        source={
            "cwd": str(workspace),
            "agent_version": PYAGENT_VERSIONS["gptme"],
            "models": [f"local/{CHAT_MODEL}"],
        },
        latest_user_message=SECOND,  # both runs: one conversation
        latest_progress=LAST,
        plan=[
            ("Write hello.txt", "completed"),
            ("Run the tests", "in_progress"),
            ("Say goodbye", "completed"),
        ],
        files={"hello.txt": {"write", "edit"}},
        commands=[(FAILING, 2, False)],
        failure=(FAILING, 2),
        ended="normal",  # the retried 429 left no trace
        in_markdown=(FAILING, "Run the tests"),
    )
    _md, data = export_and_check(env, workspace, facts)
    failure = data["state"]["last_failure"]
    assert failure["error"].startswith("ls: cannot access 'no-such-test-dir'")
    log = hook_log(agent_env)
    assert log.count("ok gptme session_end") == 2 and " error " not in log, log

    _switch_to_claude(env, workspace, folder)
    ok(run_passdown(env, workspace, "uninstall", "gptme"), "passdown uninstall gptme")
    assert config.read_text(encoding="utf-8") == ORIGINAL_CONFIG

    session = f".local/share/gptme/logs/{folder.name}"
    files = {f"{session}/{n}": folder / n for n in ("conversation.jsonl", "config.toml")}
    record_fixture(
        "gptme",
        files,
        {
            "session_path": f"{session}/conversation.jsonl",
            "session_id": folder.name,
            "workspace": str(workspace),
            "cli_version": PYAGENT_VERSIONS["gptme"],
            "version_in_session": True,  # "You are gptme v0.35.1" in the system prompt
            "model": f"local/{CHAT_MODEL}",
            "plan_tool": "todo",
            **scenario_facts(PROMPT, SECOND, LAST, FAILING),
            "store_layout": "relative to HOME: ~/.local/share/gptme/logs/<date>-<name>/"
            "conversation.jsonl (+ config.toml with [chat] workspace; the `workspace` "
            "symlink is not kept in the fixture)",
        },
    )
    # after the recording: a new conversation, launched with passdown's own argv
    _dash_prompt_reaches_the_model(env, workspace, tmp_path / "site")


def _switch_to_claude(env: dict[str, str], workspace: Path, folder: Path) -> None:
    """`passdown switch --from gptme --to claude --dry-run --json`: Claude Code's argv on
    the takeover prompt, from this session, nothing launched or written."""
    before = (workspace / ".agent-handoff" / "handoff.json").read_bytes()
    out = json.loads(
        ok(
            run_passdown(
                env,
                workspace,
                *("switch", "--from", "gptme", "--to", "claude", "--session", folder.name),
                *("--workspace", str(workspace), "--dry-run", "--json"),
            ),
            "passdown switch --from gptme --to claude --dry-run",
        )
    )
    assert out["target"] == "claude" and out["argv"][0] == "claude"
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in out["argv"][-1]
    assert (workspace / ".agent-handoff" / "handoff.json").read_bytes() == before


def _dash_prompt_reaches_the_model(env: dict[str, str], workspace: Path, site: Path) -> None:
    """passdown's argv for gptme (`gptme -n -- PROMPT`) run for real: a prompt starting
    with "-" is the prompt, not an option (the model comes from $MODEL, as for a user).
    Every request gets a 429 and gptme may try once (GPTME_LLM_MAX_RETRIES): it gives up
    at once, records that, and the handoff says the run ended on a rate limit."""
    from passdown.agents.gptme import Gptme

    prompt = "-r is no flag here: say done"
    spec = Gptme().launch_spec(prompt, workspace=workspace, interactive=False)
    with ChatCompletionsServer([Step(text="never sent")]) as server:
        server.fail(429, RATE_LIMIT)
        run_env = {
            **env,
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "MODEL": f"local/{CHAT_MODEL}",
            "GPTME_LLM_MAX_RETRIES": "1",
        }
        argv = [str(pyagent("gptme")), *spec.argv[1:]]
        proc = subprocess.run(
            ["timeout", "-k", "5", "90", *argv],
            cwd=workspace,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode not in (0, 124), proc.stderr[-2000:]  # it gave up, on its own
        [request] = [r for r in server.requests if r.kind == "error"]
        assert prompt in request.text()
    facts = Facts(agent="gptme", request=prompt, ended="rate_limit", ended_message="429")
    export_and_check({**run_env, "PYTHONPATH": register(site)}, workspace, facts)


def test_run_falls_over_from_gptme_to_claude_on_a_sticky_429(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown run gptme --fallback claude`: gptme plans, writes a file and runs a
    failing command, then every request gets a 429; allowed one attempt
    (GPTME_LLM_MAX_RETRIES=1, its least: 0 means its default 11) it gives up at once and
    records the error, which the handoff reads as a rate limit, and passdown launches the
    real Claude Code on the takeover prompt."""
    from e2e.fallback import (
        assert_claude_took_over,
        rate_limit_after_script,
        run_falling_over_to_claude,
        sticky_429_facts,
    )

    steps = _first_turn()[:4]  # the plan, the file, the failing command; no `complete`
    with ChatCompletionsServer(steps) as server:
        env = {
            **gptme_environ(agent_env, server.url),
            "MODEL": f"local/{CHAT_MODEL}",  # passdown's argv names no model: gptme's own
            "GPTME_LLM_MAX_RETRIES": "1",  # its least: one attempt, no retry
            "PYTHONPATH": register(tmp_path / "site"),
        }
        env["PATH"] = f"{pyagent('gptme').parent}:{env['PATH']}"
        rate_limit_after_script(server)
        proc, claude_steps = run_falling_over_to_claude(env, agent_env, workspace, "gptme", PROMPT)
        assert server.remaining == 0
        assert [r.kind for r in server.requests].count("error") == 1  # no retry
    facts = sticky_429_facts("gptme", PROMPT, FAILING, "Error code: 429")
    assert_claude_took_over(proc, claude_steps, workspace, facts, "gptme")
