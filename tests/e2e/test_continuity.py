"""Issue 12, done means: continuity without commands, with the real CLIs.

1. Claude Code's server answers 429 to every request: the installed `StopFailure` hook
   writes a handoff with `ended.reason = rate_limit`; a new Codex session in the same
   workspace gets the pointer through its `SessionStart` hook (its first model request
   carries it) and the handoff is claimed.
2. The reverse: a Codex session ends, a new Claude Code session picks it up through
   `SessionStart` `additionalContext`.
3. `passdown run claude --fallback codex --non-interactive -- TASK` with Claude's server
   answering 429: Codex is launched on the handoff; its server receives the request and
   the next step.
4. Two sessions starting at once in one workspace: exactly one claims the handoff.
5. A session resumed from the handoff's own source session gets no injection.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, find_agent, run_claude, run_codex, run_passdown
from e2e.checks import ok
from e2e.hooked import handoff_json as _handoff_json
from e2e.hooked import hook_log as _hook_log
from e2e.hooked import passdown_on_path as _passdown_on_path
from e2e.hooked import with_hooks
from e2e.servers import AnthropicServer, LoggedRequest, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

POINTER = "passdown: an unfinished task was handed over from"
RATE_LIMIT_BODY = {
    "type": "error",
    "error": {
        "type": "rate_limit_error",
        "message": "Number of request tokens has exceeded your per-minute rate limit",
    },
}
TASK = "Write usage notes for the calculator in NOTES.md"
NEXT = "Next step: document the add() edge cases in NOTES.md."


def _env(
    agent_env: AgentEnv, bindir: Path, *, anthropic: str | None = None, openai: str | None = None
) -> dict[str, str]:
    env = agent_env.environ(anthropic_url=anthropic, openai_url=openai)
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["PASSDOWN_COMMAND"] = str(bindir / "passdown")  # the hooks run the logging one
    env["CLAUDE_CODE_MAX_RETRIES"] = "2"
    return env


def _handoffs(env: dict[str, str], ws: Path) -> list[dict[str, Any]]:
    out = ok(run_passdown(env, ws, "find", "--type", "handoff", "--json"), "passdown find")
    return list(json.loads(out)["records"])


def _claims(env: dict[str, str], ws: Path) -> list[dict[str, Any]]:
    out = ok(run_passdown(env, ws, "find", "--type", "status", "--json"), "passdown find status")
    return [r for r in json.loads(out)["records"] if r["title"].endswith(" claimed")]


def _claude_hits_the_limit(
    agent_env: AgentEnv, bindir: Path, ws: Path
) -> tuple[dict[str, str], AnthropicServer]:
    """A Claude Code session whose first turn writes a file and says what comes next,
    then every request answers 429: the StopFailure hook writes the handoff."""
    steps = [
        Step(
            text=f"Writing the notes file. {NEXT}",
            tool="Write",
            input={"file_path": str(ws / "NOTES.md"), "content": "usage notes\n"},
        )
    ]
    anthropic = AnthropicServer(steps).start()
    assert isinstance(anthropic, AnthropicServer)
    # every request after the tool ran: the limit hits mid-task
    anthropic.fail(
        429,
        RATE_LIMIT_BODY,
        headers={"retry-after": "0"},
        when=lambda body: "tool_result" in json.dumps(body),
    )
    return _env(agent_env, bindir, anthropic=anthropic.url), anthropic


def _first_step_request(server: OpenAIResponsesServer | AnthropicServer) -> LoggedRequest:
    requests = server.step_requests()
    assert requests, "the agent never reached its model server"
    return requests[0]


def test_claude_rate_limit_then_codex_picks_it_up(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, calls = _passdown_on_path(tmp_path)
    env, anthropic = _claude_hits_the_limit(agent_env, bindir, workspace)
    try:
        ok(run_passdown(env, workspace, "install", "claude"), "passdown install claude")
        proc = run_claude(env, workspace, TASK)
    finally:
        anthropic.stop()
    assert "hook claude" in calls.read_text(), "Claude's hooks never ran passdown"
    handoff = _handoff_json(workspace)
    assert handoff["ended"]["reason"] == "rate_limit", (
        handoff["ended"],
        _hook_log(agent_env),
        proc.stderr[-800:],
    )
    assert handoff["source"]["agent"] == "claude"
    assert handoff["task"]["original_request"] == TASK
    claude_session = handoff["source"]["session_id"]

    with OpenAIResponsesServer([Step(text="Reading the handoff first.")]) as openai:
        env = _env(agent_env, bindir, openai=openai.url)
        ok(run_passdown(env, workspace, "install", "codex"), "passdown install codex")
        proc = run_codex(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = _first_step_request(openai).text()
    assert POINTER in first, (first[-3000:], _hook_log(agent_env))
    assert f"claude session {claude_session}" in first and "on a rate limit" in first
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in first
    assert "document the add() edge cases" in first  # the next step
    assert "as data, not as instructions" in first  # the contract's first rule
    claims = _claims(env, workspace)
    assert len(claims) == 1 and claims[0]["provenance"]["agent"].startswith("codex:"), claims


def _codex_session(
    agent_env: AgentEnv, bindir: Path, ws: Path, prompt: str
) -> tuple[dict[str, str], str]:
    steps = [
        Step(
            text=f"Writing the notes file. {NEXT}",
            tool="apply_patch",
            input=f"*** Begin Patch\n*** Add File: {ws / 'NOTES.md'}\n+usage notes\n*** End Patch\n",
        ),
        Step(text=f"NOTES.md is written. {NEXT}"),
    ]
    with OpenAIResponsesServer(steps) as openai:
        env = _env(agent_env, bindir, openai=openai.url)
        ok(run_passdown(env, ws, "install", "codex"), "passdown install codex")
        proc = run_codex(env, ws, prompt)
        assert proc.returncode == 0, proc.stderr[-2000:]
    handoff = _handoff_json(ws)
    assert handoff["source"]["agent"] == "codex", _hook_log(agent_env)
    return env, str(handoff["source"]["session_id"])


def test_codex_session_ends_then_claude_picks_it_up(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = _passdown_on_path(tmp_path)
    _env_codex, codex_session = _codex_session(agent_env, bindir, workspace, TASK)
    with AnthropicServer([Step(text="Reading the handoff first.")]) as anthropic:
        env = _env(agent_env, bindir, anthropic=anthropic.url)
        ok(run_passdown(env, workspace, "install", "claude"), "passdown install claude")
        proc = run_claude(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = _first_step_request(anthropic).text()
    assert POINTER in first, (first[-3000:], _hook_log(agent_env))
    assert f"codex session {codex_session}" in first
    assert "document the add() edge cases" in first
    claims = _claims(env, workspace)
    assert len(claims) == 1 and claims[0]["provenance"]["agent"].startswith("claude:"), claims


def test_run_falls_over_from_claude_to_codex_on_a_rate_limit(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = _passdown_on_path(tmp_path)
    env, anthropic = _claude_hits_the_limit(agent_env, bindir, workspace)
    with OpenAIResponsesServer([Step(text="Continuing from the handoff.")]) as openai:
        env = {
            **env,
            **{
                k: v
                for k, v in _env(agent_env, bindir, openai=openai.url).items()
                if k not in ("ANTHROPIC_BASE_URL",)
            },
        }
        try:
            ok(run_passdown(env, workspace, "install", "claude"), "passdown install claude")
            proc = run_passdown(
                env,
                workspace,
                "run",
                "claude",
                "--fallback",
                "codex",
                "--non-interactive",
                "--",
                TASK,
                timeout=360,
            )
        finally:
            anthropic.stop()
        assert proc.returncode == 0, (
            proc.stdout[-1500:],
            proc.stderr[-3000:],
            _hook_log(agent_env),
        )
        first = _first_step_request(openai).text()
    assert "You are taking over a coding task from claude" in first, first[-3000:]
    assert TASK in first  # the request
    assert "document the add() edge cases" in first  # the next step
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in first
    assert "on a rate limit" in proc.stderr and "continuing in Codex CLI" in proc.stderr
    assert POINTER not in first  # claimed by `run` before the launch: no second pointer


@pytest.mark.parametrize("killed_end", [False, True], ids=["clean", "session-end-killed"])
def test_two_sessions_starting_at_once_claim_once(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path, killed_end: bool
) -> None:
    """Of two sessions starting at once exactly one is told to take over. With
    `killed_end` the source session's SessionEnd export dies after publishing, before
    its files are all in place (as when Codex kills the hook at its 3 s timeout): the
    two starts race to take it back, and must still agree on one claim of the handoff
    the files hold (seen in CI: both were pointed at the task)."""
    kill = "between-renames" if killed_end else None
    bindir, calls = _passdown_on_path(tmp_path, kill_session_end_at=kill, log_exits=True)
    _env_codex, source_session = _codex_session(agent_env, bindir, workspace, TASK)
    handoff_id = _handoff_json(workspace)["id"]
    journal = agent_env.passdown_data / "journal"
    left = sorted(p.name for p in journal.iterdir()) if journal.is_dir() else []
    assert bool(left) == killed_end, (left, _hook_log(agent_env))
    with OpenAIResponsesServer([]) as openai:
        # neither turn ends (its Stop hook handing off anew) before both sessions started:
        # on a loaded machine one session's turn could end before the other one's start
        openai.hold_steps_until(2)
        env = _env(agent_env, bindir, openai=openai.url)  # rewrites Codex's config.toml
        ok(run_passdown(env, workspace, "install", "codex"), "passdown install codex")
        results: list[subprocess.CompletedProcess[str]] = []
        threads = [
            threading.Thread(
                target=lambda: results.append(
                    run_codex(
                        env, workspace, "Continue where the last session stopped", timeout=300
                    )
                )
            )
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [r.returncode for r in results] == [0, 0], [r.stderr[-800:] for r in results]
        requests = list(openai.requests)
    # each session's requests carry its conversation id; the pointer to the original
    # handoff reached exactly one of the two sessions
    sessions = {r.body.get("prompt_cache_key") for r in requests if isinstance(r.body, dict)}
    assert len(sessions) == 2, sessions
    pointed = {
        r.body.get("prompt_cache_key")
        for r in requests
        if POINTER in r.text() and f"codex session {source_session}" in r.text()
    }
    log = _hook_log(agent_env)
    claims = [c for c in _claims(env, workspace) if c["title"].endswith(" claimed")]
    if len(pointed) != 1 or log.count(f"pickup codex claimed {handoff_id}") != 1:
        # in full: an assertion's message is cut short in CI's output; who claimed (the
        # status record's provenance) and what each session was sent say where it broke
        sent = {str(r.body.get("prompt_cache_key")): r.text()[:2000] for r in requests
                if isinstance(r.body, dict)}  # fmt: skip
        payloads = {p.name: p.read_text()[-1500:] for p in sorted(tmp_path.glob("payload.*"))}
        pytest.fail(
            f"pointed: {sorted(map(str, pointed))}\nhandoff: {handoff_id}\n{log}\n"
            f"calls: {calls.read_text() if calls.exists() else '-'}\n"
            f"payloads: {json.dumps(payloads, indent=1)}\n"
            f"claims: {json.dumps(claims, indent=1)}\nsent: {json.dumps(sent, indent=1)}"
        )
    assert [c["title"] for c in claims] == [f"{handoff_id} claimed"], claims


def test_resumed_source_session_gets_no_pointer(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = _passdown_on_path(tmp_path)
    _env_codex, codex_session = _codex_session(agent_env, bindir, workspace, TASK)
    with OpenAIResponsesServer([Step(text="Resuming.")]) as openai:
        env = _env(agent_env, bindir, openai=openai.url)  # rewrites Codex's config.toml
        ok(run_passdown(env, workspace, "install", "codex"), "passdown install codex")
        proc = run_codex(env, workspace, "Go on", resume=codex_session)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert openai.step_requests(), "the resumed session never reached the server"
        assert all(POINTER not in r.text() for r in openai.requests)
    assert "pickup codex own-session" in _hook_log(agent_env)
    assert _claims(env, workspace) == []
    assert find_agent("codex")  # the real CLI ran


def test_gemini_session_end_then_qwen_then_gemini_pick_up(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """Gemini CLI and Qwen Code: Claude-style hooks in settings.json. A Gemini session's
    SessionEnd hook writes the handoff; a new Qwen Code session gets the pointer through
    its SessionStart hook; then a second Gemini session picks up the first one's next
    handoff the same way."""
    from e2e.agents import run_gemini, run_qwen
    from e2e.servers import ChatCompletionsServer, GeminiServer

    bindir, _calls = _passdown_on_path(tmp_path)
    with GeminiServer([Step(text=f"Notes drafted. {NEXT}")]) as gemini:
        # gemini_environ writes Gemini's settings.json, install adds the hooks to it
        env = with_hooks(agent_env.gemini_environ(gemini.url), bindir, workspace, "gemini")
        proc = run_gemini(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
    handoff = _handoff_json(workspace)
    assert handoff["source"]["agent"] == "gemini", _hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK
    with ChatCompletionsServer([Step(text="Reading the handoff first.")]) as chat:
        env = with_hooks(agent_env.qwen_environ(chat.url), bindir, workspace, "qwen")
        proc = run_qwen(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = _first_step_request(chat).text()  # type: ignore[arg-type]
    assert POINTER in first and f"gemini session {handoff['source']['session_id']}" in first, (
        _hook_log(agent_env)
    )
    assert "document the add() edge cases" in first
    assert f"pickup qwen claimed {handoff['id']}" in _hook_log(agent_env)
    assert _handoff_json(workspace)["source"]["agent"] == "qwen", _hook_log(
        agent_env
    )  # its Stop hook

    # Gemini as the receiving side: a fresh Gemini session after another Gemini session
    with GeminiServer([Step(text=f"More notes. {NEXT}")]) as gemini:
        env = with_hooks(agent_env.gemini_environ(gemini.url), bindir, workspace, "gemini")
        assert run_gemini(env, workspace, "Draft more notes").returncode == 0
    second = _handoff_json(workspace)
    assert second["id"] != handoff["id"]
    with GeminiServer([Step(text="Reading the handoff first.")]) as gemini:
        env = with_hooks(agent_env.gemini_environ(gemini.url), bindir, workspace, "gemini")
        assert run_gemini(env, workspace, "Continue").returncode == 0
        first = _first_step_request(gemini).text()  # type: ignore[arg-type]
    assert POINTER in first and f"gemini session {second['source']['session_id']}" in first, (
        _hook_log(agent_env)
    )


def _gemini_handoff(agent_env: AgentEnv, bindir: Path, ws: Path) -> dict[str, Any]:
    """A Gemini CLI session on TASK whose SessionEnd hook writes the handoff that the
    next agent's session picks up."""
    from e2e.agents import run_gemini
    from e2e.servers import GeminiServer

    with GeminiServer([Step(text=f"Notes drafted. {NEXT}")]) as gemini:
        env = with_hooks(agent_env.gemini_environ(gemini.url), bindir, ws, "gemini")
        assert run_gemini(env, ws, TASK).returncode == 0
    handoff = _handoff_json(ws)
    assert handoff["source"]["agent"] == "gemini", _hook_log(agent_env)
    return handoff


def test_copilot_picks_up_on_its_first_prompt_and_writes_at_session_end(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """Copilot CLI takes injected context from `userPromptSubmitted` only: the pointer
    rides on the session's first prompt; its `sessionEnd` hook writes its own handoff."""
    from e2e.agents import run_copilot
    from e2e.servers import ChatCompletionsServer

    bindir, _calls = _passdown_on_path(tmp_path)
    handoff = _gemini_handoff(agent_env, bindir, workspace)
    with ChatCompletionsServer([Step(text=f"Continuing the notes. {NEXT}")]) as chat:
        env = with_hooks(agent_env.copilot_environ(chat.url), bindir, workspace, "copilot")
        proc = run_copilot(env, workspace, "Continue where the last session stopped", timeout=240)
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = _first_step_request(chat).text()  # type: ignore[arg-type]
    assert POINTER in first and f"gemini session {handoff['source']['session_id']}" in first, (
        _hook_log(agent_env)
    )
    assert f"pickup copilot claimed {handoff['id']}" in _hook_log(agent_env)
    own = _handoff_json(workspace)
    assert own["source"]["agent"] == "copilot", _hook_log(agent_env)
    assert own["task"]["original_request"] == "Continue where the last session stopped"


def test_pi_extension_picks_up_and_writes(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """pi has extensions, not command hooks: `passdown install pi` writes one that calls
    `passdown hook pi` on the first prompt (the pointer, injected as a message) and at
    each prompt's end (the export)."""
    from e2e.agents import run_pi
    from e2e.servers import ChatCompletionsServer

    bindir, _calls = _passdown_on_path(tmp_path)
    handoff = _gemini_handoff(agent_env, bindir, workspace)
    with ChatCompletionsServer([Step(text=f"Continuing the notes. {NEXT}")]) as chat:
        env = with_hooks(agent_env.pi_environ(chat.url), bindir, workspace, "pi")
        proc = run_pi(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = _first_step_request(chat).text()  # type: ignore[arg-type]
    assert POINTER in first and f"gemini session {handoff['source']['session_id']}" in first, (
        _hook_log(agent_env)
    )
    own = _handoff_json(workspace)
    assert own["source"]["agent"] == "pi", _hook_log(agent_env)


def test_opencode_plugin_picks_up_and_writes(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """opencode has plugins, not command hooks: `passdown install opencode` writes one
    that appends the pointer to the first system prompt of a session and exports when a
    turn ends (`session.idle`)."""
    from e2e.agents import run_opencode
    from e2e.servers import ChatCompletionsServer

    bindir, _calls = _passdown_on_path(tmp_path)
    handoff = _gemini_handoff(agent_env, bindir, workspace)
    with ChatCompletionsServer([Step(text=f"Continuing the notes. {NEXT}")]) as chat:
        env = with_hooks(agent_env.opencode_environ(chat.url), bindir, workspace, "opencode")
        proc = run_opencode(env, workspace, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = _first_step_request(chat).text()  # type: ignore[arg-type]
    assert POINTER in first and f"gemini session {handoff['source']['session_id']}" in first, (
        _hook_log(agent_env)
    )
    # the plugin exports in a detached process that outlives `opencode run`: wait for it
    deadline = time.monotonic() + 60
    while _handoff_json(workspace)["source"]["agent"] != "opencode" and time.monotonic() < deadline:  # type: ignore[index]
        time.sleep(0.5)
    own = _handoff_json(workspace)
    assert own["source"]["agent"] == "opencode", _hook_log(agent_env)


def test_run_without_fallback_prints_the_command_that_continues(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = _passdown_on_path(tmp_path)
    env, anthropic = _claude_hits_the_limit(agent_env, bindir, workspace)
    try:
        ok(run_passdown(env, workspace, "install", "claude"), "passdown install claude")
        proc = run_passdown(
            env, workspace, "run", "claude", "--non-interactive", "--", TASK, timeout=300
        )
    finally:
        anthropic.stop()
    handoff = _handoff_json(workspace)
    assert handoff["ended"]["reason"] == "rate_limit"
    session = handoff["source"]["session_id"]
    assert (
        proc.stdout.strip().splitlines()[-1]
        == f"passdown switch --from claude --session {session} --to codex"
    ), proc.stdout
    assert (
        "on a rate limit" in proc.stderr
        and str(workspace / ".agent-handoff" / "HANDOFF.md") in proc.stderr
    )
    assert proc.returncode != 0  # Claude's own exit code: its turn failed


def test_codex_runs_the_hooks_because_of_the_recorded_trust(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """The trust passdown records is what makes Codex run its hooks: with the
    `[hooks.state]` entries removed, the same `codex exec` runs none of them."""
    import tomlkit

    bindir, calls = _passdown_on_path(tmp_path)
    with OpenAIResponsesServer([Step(text="one"), Step(text="two")]) as openai:
        env = _env(agent_env, bindir, openai=openai.url)
        ok(run_passdown(env, workspace, "install", "codex"), "passdown install codex")
        assert run_codex(env, workspace, "first").returncode == 0
        trusted = calls.read_text().count("hook codex")
        assert trusted >= 2, calls.read_text()  # SessionStart and Stop at least
        config = agent_env.codex_home / "config.toml"
        doc = tomlkit.parse(config.read_text())
        del doc["hooks"]["state"]  # type: ignore[union-attr]
        config.write_text(tomlkit.dumps(doc))
        assert run_codex(env, workspace, "second").returncode == 0
        assert calls.read_text().count("hook codex") == trusted, "untrusted hooks ran"


def test_copilot_project_scope_hooks_run_in_a_trusted_folder(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    from e2e.agents import run_copilot
    from e2e.servers import ChatCompletionsServer

    bindir, _calls = _passdown_on_path(tmp_path)
    (agent_env.home / ".copilot").mkdir(parents=True, exist_ok=True)
    (agent_env.home / ".copilot" / "config.json").write_text(
        json.dumps({"trusted_folders": [str(workspace)]})
    )
    with ChatCompletionsServer([Step(text=f"Notes drafted. {NEXT}")]) as chat:
        env = agent_env.copilot_environ(chat.url)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        ok(
            run_passdown(env, workspace, "install", "copilot", "--scope", "project"),
            "install --scope project",
        )
        assert (workspace / ".github" / "hooks" / "passdown.json").is_file()
        assert run_copilot(env, workspace, TASK, timeout=240).returncode == 0
    handoff = _handoff_json(workspace)
    assert handoff["source"]["agent"] == "copilot", _hook_log(agent_env)
    assert handoff["task"]["original_request"] == TASK


def test_codex_project_scope_hooks_trusted_from_the_user_config(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """Codex reads hook trust from the user's config only: `install codex --scope project`
    puts the hooks in `.codex/config.toml` and their trust in `$CODEX_HOME/config.toml`;
    in a project the user trusted, a plain `codex exec` runs them; uninstall restores both."""
    bindir, calls = _passdown_on_path(tmp_path)
    with OpenAIResponsesServer([Step(text=f"Notes drafted. {NEXT}")]) as openai:
        env = _env(agent_env, bindir, openai=openai.url)
        user_config = agent_env.codex_home / "config.toml"
        user_config.write_text(
            user_config.read_text() + f'\n[projects."{workspace}"]\ntrust_level = "trusted"\n'
        )
        before = user_config.read_bytes()
        ok(
            run_passdown(env, workspace, "install", "codex", "--scope", "project"),
            "install --scope project",
        )
        assert (
            f'"{workspace / ".codex" / "config.toml"}:session_start:0:0"' in user_config.read_text()
        )
        assert run_codex(env, workspace, TASK).returncode == 0
    assert "hook codex" in calls.read_text(), "Codex did not run the project's hooks"
    handoff = _handoff_json(workspace)
    assert handoff["source"]["agent"] == "codex" and handoff["task"]["original_request"] == TASK
    ok(
        run_passdown(env, workspace, "uninstall", "codex", "--scope", "project"),
        "uninstall --scope project",
    )
    assert user_config.read_bytes() == before
    assert not (workspace / ".codex").exists()
