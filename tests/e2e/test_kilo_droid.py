"""Issue 23, Kilo Code and Factory Droid: the real pinned CLIs (`@kilocode/cli-linux-x64`
7.7.9, `@factory/cli-linux-x64` 0.225.2) run a session against a scripted chat-completions
server on 127.0.0.1: a request, a plan with the agent's own tool, a file written, a command
that fails, a 429 the CLI retries, the end (and for Kilo a second turn resuming it). The
handoff `passdown export` writes is checked fact by fact. Then passdown launches each of
them with a takeover prompt; switches run from and to each of them with Claude Code and
Codex; their hooks (Droid's settings.json hooks, Kilo's plugin) write the handoff and the
next session picks it up; and `passdown run` falls over from Kilo to Codex and from Claude
Code to Kilo on a rate limit.

What cannot run offline: Droid resumes a session only with a Factory login (`droid exec
-s ID` fetches the session from api.factory.ai), and `droid exec` refuses TodoWrite
("not available for the active model or session"), so a Droid plan is tested from
hand-made records (tests/test_agent_droid.py); a sticky 429 makes Droid retry for about
85 s before it records `model_rate_limited`, so that ending is tested from its recording
(tests/fixtures/sessions/droid/rate-limit)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import (
    DROID_MODEL,
    VERSIONS,
    AgentEnv,
    find_agent,
    run_droid,
    run_kilo,
    run_passdown,
    target_environ,
)
from e2e.checks import load_handoff, ok, rel
from e2e.hooked import handoff_json, hook_log, passdown_on_path, with_hooks
from e2e.record import _droid_session, _kilo_session, seed_workspace
from e2e.servers import ChatCompletionsServer, Step, chat_has_tools
from e2e.test_switch_matrix import (
    assert_target_got_handoff,
    expected,
    install_source,
    server_for,
    session_arg,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REQUEST = "Create hello.txt saying hello, then run the tests in the tests folder."
PLAN_1 = [("Write hello.txt", "in_progress"), ("Run the tests", "pending")]
PLAN_2 = [("Write hello.txt", "completed"), ("Run the tests", "in_progress")]
FAILING = "ls no-such-test-dir && echo ok"  # exit 2: no such folder
FINAL = "hello.txt is written; the tests folder is missing. Next step: create no-such-test-dir."
RESUME = "Now create the folder."
FINAL_2 = "Not done yet: the folder still needs creating."
STICKY = "Write the changelog."
RATE_LIMIT = {
    "error": {
        "message": "Rate limit reached for scripted-model",
        "type": "tokens",
        "code": "rate_limit_exceeded",
    }
}
RETRY_NOW = {"retry-after": "0", "retry-after-ms": "10"}


def _kilo_plan(state: list[tuple[str, str]], text: str = "") -> Step:
    todos = [{"content": s, "status": st, "priority": "high"} for s, st in state]
    return Step(text=text, tool="todowrite", input={"todos": todos})


def _fail_once_before_last_step(srv: ChatCompletionsServer) -> None:
    """One 429 on the request that would get the final answer: the CLI retries it."""
    srv.fail(
        429,
        RATE_LIMIT,
        times=1,
        headers=RETRY_NOW,
        when=lambda body: chat_has_tools(body) and srv.remaining == 1,
    )


def _export(env: dict[str, str], ws: Path, agent: str) -> dict[str, Any]:
    out = ok(run_passdown(env, ws, "export", "--from", agent, "--json"), f"export --from {agent}")
    json.loads(out)
    _md, data = load_handoff(ws)
    return data


def _assert_kilo_stayed_local(agent_env: AgentEnv) -> None:
    """Kilo's own log names every provider whose model list it fetched: only the scripted
    one may be there (its built-in Kilo Gateway would be api.kilo.ai). And the native
    library each start unpacks went to the test's TMPDIR, not /tmp."""
    logs = list((agent_env.home / ".local" / "share" / "kilo" / "log").glob("*.log"))
    assert logs, "Kilo wrote no log"
    fetched = {
        line.split("providerID=")[1].split()[0]
        for log in logs
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
        if "service=model-cache" in line and "providerID=" in line and "fetch" in line
    }
    assert "kilo" not in fetched, fetched
    assert list(agent_env.bun_tmp().glob(".*.so")), "Kilo unpacked its library outside TMPDIR"


def _assert_common_facts(data: dict[str, Any], ws: Path, agent: str, session_id: str) -> None:
    assert data["source"]["agent"] == agent
    assert data["source"]["session_id"] == session_id
    assert data["task"]["original_request"] == REQUEST
    touched = {rel(f["path"], ws) for f in data["state"]["files_touched"]}
    assert "hello.txt" in touched, touched
    assert (ws / "hello.txt").read_text().startswith("hello")
    failure = data["state"]["last_failure"]
    assert failure["command"] == FAILING and failure["exit_code"] == 2, failure
    assert "no-such-test-dir" in (failure.get("error") or ""), failure
    commands = [(c["command"], c.get("exit_code")) for c in data["state"]["commands"]]
    assert (FAILING, 2) in commands, commands


@pytest.mark.parametrize("agent", ["kilo", "droid"])
def test_pinned_version_installed(agent_bin: Path, tmp_path: Path, agent: str) -> None:
    proc = subprocess.run(
        [str(find_agent(agent)), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        stdin=subprocess.DEVNULL,
        env={"PATH": f"{agent_bin}:/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert VERSIONS[agent] in proc.stdout + proc.stderr


def test_kilo_session_to_handoff(agent_env: AgentEnv, workspace: Path) -> None:
    """Three turns of one Kilo session, each exported: the first (a plan, a file written,
    a failing command, a 429 Kilo retries), a resumed second that ends normally, and a
    resumed third that a sticky 429 ends."""
    hello = workspace / "hello.txt"
    steps = [
        _kilo_plan(PLAN_1, "I'll keep a todo list."),
        Step(tool="write", input={"filePath": str(hello), "content": "hello\n"}),
        _kilo_plan(PLAN_2),
        Step(tool="bash", input={"command": FAILING, "description": "Run the tests"}),
        Step(text=FINAL),
    ]
    with ChatCompletionsServer(steps) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = agent_env.kilo_environ(srv.url)
        _fail_once_before_last_step(srv)
        ok(run_kilo(env, workspace, REQUEST, timeout=150), "kilo run")
        assert srv.remaining == 0 and any(r.kind == "error" for r in srv.requests)
        assert "todowrite" in srv.step_requests()[0].text()  # Kilo offered its plan tool
        session_id = _kilo_session(agent_env)
        srv.set_script([Step(text=FINAL_2)])
        ok(run_kilo(env, workspace, RESUME, resume=session_id, timeout=150), "kilo run -s")
        assert _kilo_session(agent_env) == session_id  # the same session, a second turn
        data = _export(env, workspace, "kilo")
        _assert_common_facts(data, workspace, "kilo", session_id)
        assert data["task"]["latest_user_message"] == RESUME
        assert data["task"]["latest_progress"] == FINAL_2
        plan = [(p["subject"], p["status"]) for p in data["state"]["plan"]]
        assert plan == PLAN_2
        assert data["source"]["agent_version"] == VERSIONS["kilo"]
        # Kilo keeps no record of the 429 it retried: the session ended normally
        assert data["ended"]["reason"] == "normal"
        # the third turn: every request gets a 429 until Kilo gives up
        srv.fail(429, RATE_LIMIT, headers=RETRY_NOW)
        run_kilo(env, workspace, STICKY, resume=session_id, timeout=200)
        assert _kilo_session(agent_env) == session_id
    data = _export(env, workspace, "kilo")
    assert data["task"]["latest_user_message"] == STICKY
    assert data["ended"]["reason"] == "rate_limit", data["ended"]
    assert "Rate limit" in (data["ended"].get("message") or "")
    _assert_kilo_stayed_local(agent_env)


def test_droid_session_to_handoff(agent_env: AgentEnv, workspace: Path) -> None:
    hello = workspace / "hello.txt"
    todos = [{"id": str(n), "content": s, "status": st} for n, (s, st) in enumerate(PLAN_1, 1)]
    steps = [
        Step(text="I'll keep a todo list.", tool="TodoWrite", input={"todos": todos}),
        Step(tool="Create", input={"file_path": str(hello), "content": "hello\n"}),
        Step(
            tool="Execute",
            input={
                "command": FAILING,
                "riskLevel": "low",
                "riskLevelReason": "Lists a folder",
                "summary": "Run the tests",
            },
        ),
        Step(text=FINAL),
    ]
    with ChatCompletionsServer(steps) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = agent_env.droid_environ(srv.url)
        _fail_once_before_last_step(srv)
        ok(run_droid(env, workspace, REQUEST, timeout=200), "droid exec")
        assert srv.remaining == 0 and any(r.kind == "error" for r in srv.requests)
        assert srv.step_requests()[0].body["model"] == "scripted-model"
    session = _droid_session(agent_env)
    data = _export(env, workspace, "droid")
    _assert_common_facts(data, workspace, "droid", session.stem)
    assert data["task"]["latest_progress"] == FINAL
    assert data["source"]["models"] == [DROID_MODEL]
    # `droid exec` refused TodoWrite (an error result): there is no plan to hand over
    assert data["state"]["plan"] == []
    assert "TodoWrite" in session.read_text()
    assert data["ended"]["reason"] == "normal"  # the retried 429 left no record


# -- launching them, and switching from them ----------------------------------------------
@pytest.mark.parametrize("agent", ["kilo", "droid"])
def test_launch_argv_delivers_a_prompt_that_starts_with_a_dash(
    agent: str, agent_env: AgentEnv, workspace: Path
) -> None:
    """The non-interactive argv passdown builds, run for real: the prompt (starting with
    "-") reaches the model as the user's words, not as an option."""
    from passdown.agents.droid import DroidCLI
    from passdown.agents.kilo import KiloCode

    prompt = "-v: read .agent-handoff/HANDOFF.md and continue"
    spec = {"kilo": KiloCode, "droid": DroidCLI}[agent]().launch_spec(
        prompt, workspace=workspace, interactive=False
    )
    with ChatCompletionsServer([Step(text="On it.")]) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = target_environ(agent_env, agent, srv.url)
        proc = subprocess.run(
            [str(find_agent(agent)), *spec.argv[1:]],
            cwd=spec.cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=150,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        ok(proc, " ".join(spec.argv[:-1]))
        steps = srv.step_requests()
        assert steps, [(r.kind, r.path) for r in srv.requests]
        assert prompt in steps[0].text()


# Kilo and Droid each once as the source and once as the target, Claude Code and Codex
# each once on either side (every other pair of sources and targets: test_switch_matrix)
SWITCHES = [
    ("claude", "kilo"),
    ("codex", "droid"),
    ("kilo", "codex"),
    ("droid", "claude"),
]


@pytest.mark.parametrize(("source", "target"), SWITCHES, ids=[f"{s}-to-{t}" for s, t in SWITCHES])
def test_switch(source: str, target: str, tmp_path: Path, agent_env: AgentEnv) -> None:
    exp = expected(source)
    session = install_source(source, agent_env)
    ws = seed_workspace(tmp_path / "ws")
    with server_for(target) as srv:
        srv.set_script([Step(text="Read the handoff; continuing from the next step.")])
        env = target_environ(agent_env, target, srv.url)
        proc = run_passdown(
            env,
            ws,
            "switch",
            "--from",
            source,
            "--to",
            target,
            "--session",
            session_arg(source, session),
            "--workspace",
            str(ws),
            "--non-interactive",
            timeout=150,
        )
        out = ok(proc, f"passdown switch --from {source} --to {target}")
        handoff_md = ws / ".agent-handoff" / "HANDOFF.md"
        assert_target_got_handoff(target, srv, exp, handoff_md, out)
        if (source, target) == ("claude", "kilo"):
            # Kilo's own "continue here" picks up the takeover session passdown started
            before = len(srv.step_requests())
            srv.set_script([Step(text="Resumed.")])
            argv = [str(find_agent("kilo")), "run", "--continue", "Carry on."]
            resumed = subprocess.run(
                argv, cwd=ws, env=env, capture_output=True, text=True, timeout=150, check=False
            )
            ok(resumed, "kilo run --continue")
            body = srv.step_requests()[before].text()
            assert str(handoff_md) in body and "Carry on." in body


# -- Droid's hooks: the handoff written at a turn's end, picked up at the next start -----
POINTER = "passdown: an unfinished task was handed over from"


def test_droid_hooks_write_the_handoff_and_the_next_session_picks_it_up(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown install droid`: a `droid exec` session's Stop/SessionEnd hooks write the
    handoff (its payload's `transcript_path` names the session); a new `droid exec` session
    in the workspace gets the pointer through its SessionStart hook's additionalContext;
    the uninstall takes the hooks out again."""
    bindir, _calls = passdown_on_path(tmp_path)
    task = "Write usage notes for the calculator in NOTES.md"
    with ChatCompletionsServer([Step(text="Notes drafted. Next step: document add().")]) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = agent_env.droid_environ(srv.url)
        settings = agent_env.home / ".factory" / "settings.json"
        env = with_hooks(env, bindir, workspace, "droid")
        ok(run_droid(env, workspace, task, timeout=200), "droid exec")
    handoff = handoff_json(workspace)
    session = _droid_session(agent_env)
    assert handoff["source"]["agent"] == "droid", hook_log(agent_env)
    assert handoff["source"]["session_id"] == session.stem
    assert handoff["task"]["original_request"] == task
    with ChatCompletionsServer([Step(text="Reading the handoff first.")]) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = agent_env.droid_environ(srv.url)  # rewrites the model, keeps the hooks
        env["PATH"] = f"{bindir}:{env['PATH']}"
        ok(run_droid(env, workspace, "Continue where the last session stopped"), "droid exec")
        first = srv.step_requests()[0].text()
    assert POINTER in first and f"droid session {session.stem}" in first, hook_log(agent_env)
    assert "document add()" in first
    assert f"pickup droid claimed {handoff['id']}" in hook_log(agent_env)
    ok(run_passdown(env, workspace, "uninstall", "droid"), "passdown uninstall droid")
    data = json.loads(settings.read_text())
    assert "hooks" not in data or not data["hooks"], data


def test_kilo_plugin_writes_the_handoff_and_the_next_session_picks_it_up(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown install kilo` writes opencode's plugin into ~/.config/kilo/plugins: a turn's
    end (`session.idle`) exports in a detached process; the next `kilo run` session gets
    the pointer appended to its system prompt; uninstall removes the plugin."""
    bindir, _calls = passdown_on_path(tmp_path)
    task = "Write usage notes for the calculator in NOTES.md"
    with ChatCompletionsServer([Step(text="Notes drafted. Next step: document add().")]) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = with_hooks(agent_env.kilo_environ(srv.url), bindir, workspace, "kilo")
        ok(run_kilo(env, workspace, task), "kilo run")
    session_id = _kilo_session(agent_env)
    deadline = time.monotonic() + 60  # the plugin's export outlives `kilo run`
    handoff_file = workspace / ".agent-handoff" / "handoff.json"
    while not handoff_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    handoff = handoff_json(workspace)
    assert handoff["source"]["agent"] == "kilo", hook_log(agent_env)
    assert handoff["source"]["session_id"] == session_id
    assert handoff["task"]["original_request"] == task
    with ChatCompletionsServer([Step(text="Reading the handoff first.")]) as srv:
        assert isinstance(srv, ChatCompletionsServer)
        env = agent_env.kilo_environ(srv.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        ok(run_kilo(env, workspace, "Continue where the last session stopped"), "kilo run")
        first = srv.step_requests()[0].text()
    assert POINTER in first and f"kilo session {session_id}" in first, hook_log(agent_env)
    assert not (agent_env.home / ".npm").exists(), "kilo reached for the npm registry"
    plugin = agent_env.home / ".config" / "kilo" / "plugins" / "passdown.js"
    assert plugin.is_file()
    ok(run_passdown(env, workspace, "uninstall", "kilo"), "passdown uninstall kilo")
    assert not plugin.exists()


def test_run_falls_over_from_kilo_to_codex_on_a_rate_limit(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """`passdown run kilo --fallback codex`: Kilo writes a file, then every request gets a
    429 until Kilo gives up; passdown reads how the session ended and launches Codex on
    the handoff."""
    from e2e.servers import OpenAIResponsesServer

    task = "Write usage notes for the calculator in NOTES.md"
    steps = [
        Step(
            text="Writing the notes file. Next step: document the add() edge cases.",
            tool="write",
            input={"filePath": str(workspace / "NOTES.md"), "content": "usage notes\n"},
        )
    ]
    with (
        ChatCompletionsServer(steps) as chat,
        OpenAIResponsesServer([Step(text="Continuing from the handoff.")]) as openai,
    ):
        assert isinstance(chat, ChatCompletionsServer)
        assert isinstance(openai, OpenAIResponsesServer)
        chat.fail(
            429,
            RATE_LIMIT,
            headers=RETRY_NOW,
            when=lambda body: chat.remaining == 0 and chat_has_tools(body),
        )
        env = {
            **agent_env.kilo_environ(chat.url),
            **{k: v for k, v in agent_env.environ(openai_url=openai.url).items()},
            "TMPDIR": str(agent_env.bun_tmp()),
        }
        proc = run_passdown(
            env,
            workspace,
            "run",
            "kilo",
            "--fallback",
            "codex",
            "--non-interactive",
            "--",
            task,
            timeout=280,
        )
        assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-3000:])
        first = openai.step_requests()[0].text()
    assert "You are taking over a coding task from kilo" in first, first[-3000:]
    assert task in first and "document the add() edge cases" in first
    assert "on a rate limit" in proc.stderr and "continuing in Codex CLI" in proc.stderr


def test_run_falls_over_from_claude_to_kilo_on_a_rate_limit(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """The other direction: Claude Code's server answers 429 mid-task; `passdown run
    claude --fallback kilo` launches Kilo on the handoff."""
    from e2e.test_continuity import _claude_hits_the_limit

    bindir, _calls = passdown_on_path(tmp_path)
    env, anthropic = _claude_hits_the_limit(agent_env, bindir, workspace)
    with ChatCompletionsServer([Step(text="Continuing from the handoff.")]) as chat:
        assert isinstance(chat, ChatCompletionsServer)
        env = {**agent_env.kilo_environ(chat.url), **env, "TMPDIR": str(agent_env.bun_tmp())}
        try:
            ok(run_passdown(env, workspace, "install", "claude"), "passdown install claude")
            proc = run_passdown(
                env,
                workspace,
                "run",
                "claude",
                "--fallback",
                "kilo",
                "--non-interactive",
                "--",
                "Write usage notes for the calculator in NOTES.md",
                timeout=360,
            )
        finally:
            anthropic.stop()
        assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-3000:])
        first = chat.step_requests()[0].text()
    assert "You are taking over a coding task from claude" in first, first[-3000:]
    assert "document the add() edge cases" in first
    assert "on a rate limit" in proc.stderr and "continuing in Kilo Code" in proc.stderr
