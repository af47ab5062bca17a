"""Issue 12: the handoff-writing events never seen firing before, each provoked with the
pinned real CLI against a scripted server, and the handoff that event wrote checked.

How each one is provoked (found in the CLI's own source, docs or bundle):

- Codex 0.171 `PreCompact`: automatic compaction, a low `model_auto_compact_token_limit`
  and a response that reports more input tokens than that (`codex exec`).
- Codex 0.171 `SessionEnd`: runs when `codex exec` shuts its session down. It never ran
  before because Codex cuts a SessionEnd hook's timeout to 3 s and hashes the cut value
  into the hook's trust, so the trust passdown recorded (for 30 s) did not match and Codex
  skipped the hook ("1 hook needs review" in the TUI). passdown now registers it with 3 s.
  In the TUI, exiting only detaches from the session (it lives on in Codex's app-server
  daemon); SessionEnd runs when that daemon shuts the session down.
- Copilot CLI 1.0.102 `preCompact`: a "context limit" answer (HTTP 413,
  `context_length_exceeded`) to a request makes Copilot compact the history and retry
  (compaction trigger `context_limit_retry`), in a plain `copilot -p`.
- opencode 1.18.33 `session.compacted`: automatic compaction when a response's reported
  token usage reaches the model's context limit minus its output limit (the `limit` of
  the model in opencode.json; `SessionCompaction.isOverflow`), in `opencode run`.
- pi 0.73.1 `session_compact`: the RPC command `{"type": "compact"}` (`pi --mode rpc`).

Each test reads the hook log line `ok AGENT EVENT stored=ID` and the record ID: the
handoff that event published, with the request and the progress of that moment.

Then an interactive `passdown run claude --fallback codex` in a terminal (tmux): Claude
Code stops on a sticky 429, the user leaves it with /exit, and passdown starts Codex's
TUI on the handoff.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import (
    CHAT_MODEL,
    CHAT_PROVIDER,
    CLAUDE_TOOLS,
    AgentEnv,
    run_codex,
    run_copilot,
    run_opencode,
    run_passdown,
)
from e2e.checks import load_handoff, ok
from e2e.hooked import hook_log, passdown_on_path, stored_by, with_hooks
from e2e.servers import AnthropicServer, ChatCompletionsServer, OpenAIResponsesServer, Step
from e2e.terminal import PiRpc, Terminal, answer_first_run_questions, stop_codex_daemons
from e2e.test_continuity import RATE_LIMIT_BODY
from e2e.test_messy_codex import CompactingServer, _codex_config

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

TASK = "Write usage notes for the calculator in NOTES.md"
NEXT = "Next step: document the add() edge cases in NOTES.md."
BEFORE = f"Drafting NOTES.md. {NEXT}"  # the progress before the compaction
AFTER = f"NOTES.md is written. {NEXT}"  # the progress after it
SUMMARY = "## Checkpoint\n- NOTES.md drafted; the add() edge cases are still to document."


# -- what a hook wrote ------------------------------------------------------------------
def _record(env: dict[str, str], ws: Path, record_id: str) -> dict[str, Any]:
    return dict(json.loads(ok(run_passdown(env, ws, "retrieve", record_id), "passdown retrieve")))


def _field(content: str, name: str) -> str:
    """A `- **Name:** value` line of HANDOFF.md."""
    prefix = f"- **{name}:** "
    for line in content.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :]
    raise AssertionError(f"no {name!r} line in the handoff:\n{content[:2000]}")


def _assert_written_by(
    env: dict[str, str],
    ws: Path,
    agent_env: AgentEnv,
    agent: str,
    event: str,
    progress: tuple[str, ...],
    wait: float = 0,
) -> dict[str, Any]:
    """The handoff the hook of `event` stored: from this agent, on the request, with
    the progress of that moment (one of `progress`)."""
    ids = stored_by(agent_env, agent, event, wait)
    assert ids, f"{agent}'s {event} hook stored no handoff; the hook log:\n{hook_log(agent_env)}"
    record = _record(env, ws, ids[0])
    content = record["content"]
    assert record["type"] == "handoff" and record["provenance"]["agent"] == agent, record
    assert record["title"] == f"Handoff from {agent}: {TASK}"
    assert _field(content, "Goal") == TASK
    assert _field(content, "Latest request") == TASK
    assert _field(content, "Where it stands") in progress, content[:2000]
    assert "document the add() edge cases" in _field(content, "Next step")
    return record


# -- Codex: PreCompact and SessionEnd ----------------------------------------------------
def test_codex_pre_compact_and_session_end_write_the_handoff(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    steps = [
        Step(text=BEFORE, tool="exec_command", input={"cmd": "echo notes > NOTES.md"}),
        Step(text=AFTER),
    ]
    with CompactingServer(steps) as srv:
        assert isinstance(srv, CompactingServer)
        srv.heavy_steps = {0}  # its answer reports more tokens than the limit: Codex compacts
        env = with_hooks(_codex_config(agent_env, srv.url), bindir, workspace, "codex")
        proc = run_codex(env, workspace, TASK)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert srv.compaction_requests == 1, "Codex never compacted"
    # Codex ran both (SessionEnd after its last output) with the trust passdown recorded
    assert "hook: PreCompact Completed" in proc.stderr, proc.stderr[-3000:]
    assert "clamping SessionEnd hook timeout" not in proc.stderr
    log = hook_log(agent_env)
    assert log.index(" ok codex pre_compact ") < log.index(" ok codex session_end "), log
    # PreCompact runs before the summary replaces the history: the progress of then
    _assert_written_by(env, workspace, agent_env, "codex", "pre_compact", (BEFORE,))
    end = _assert_written_by(env, workspace, agent_env, "codex", "session_end", (AFTER,))
    assert "**How it ended:** normally" in end["content"]
    assert calls.read_text().count("hook codex") >= 4  # SessionStart x2, PreCompact, Stop, End
    _md, handoff = load_handoff(workspace)  # the last export is SessionEnd's, after compaction
    assert handoff["id"] == end["id"] and handoff["task"]["compactions"] == 1


def test_codex_tui_session_end_runs_when_its_daemon_closes_the_session(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    """Codex 0.171's TUI runs the session in its app-server daemon: leaving the TUI only
    detaches ("Any running work continues"), so SessionEnd runs when the daemon closes
    the session, here when it is stopped. The TUI asks for no hook review: the trust
    passdown recorded holds for every hook, SessionEnd's too."""
    bindir, _calls = passdown_on_path(tmp_path)
    with OpenAIResponsesServer([Step(text=AFTER)]) as srv:
        env = agent_env.environ(openai_url=srv.url)
        answer_first_run_questions("codex", agent_env, workspace, env)
        env = with_hooks(env, bindir, workspace, "codex")
        argv = ["codex", "--dangerously-bypass-approvals-and-sandbox", TASK]
        shell = f"{shlex.join(argv)}; echo CODEX-EXITED; sleep 600"
        term = Terminal(["sh", "-c", shell], env, workspace)
        try:
            term.wait_for(AFTER, 120)  # a hook review screen would have stopped it first
            term.wait_for("Ask Codex to do anything", 60)
            term.type("/exit")
            term.keys("Enter")
            screen = term.wait_for("CODEX-EXITED", 60)
            assert "Any running work continues" in screen, screen
            time.sleep(3)
            assert stored_by(agent_env, "codex", "session_end") == [], hook_log(agent_env)
            assert stored_by(agent_env, "codex", "turn_complete"), hook_log(agent_env)
        finally:
            term.close()
            stop_codex_daemons(agent_env.codex_home)
        _assert_written_by(env, workspace, agent_env, "codex", "session_end", (AFTER,), wait=60)


# -- Copilot CLI: preCompact ---------------------------------------------------------------
COPILOT_SUMMARY_REQUEST = "Please create a detailed summary of the conversation so far"
CONTEXT_LIMIT_BODY = {
    "error": {
        "message": "Request too large",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _summary_for(marker: str) -> Callable[[dict[str, Any]], str | None]:
    """The scripted answer to the agent's own summary request (it carries tools too)."""
    return lambda body: SUMMARY if marker in _last_user_text(body) else None


def _after_a_tool_ran(body: Any) -> bool:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return any(m.get("role") == "tool" for m in messages if isinstance(m, dict))


def test_copilot_pre_compact_writes_the_handoff(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = passdown_on_path(tmp_path)
    steps = [
        Step(
            text=BEFORE,
            tool="create",
            input={"path": str(workspace / "NOTES.md"), "file_text": "notes\n"},
        ),
        Step(text=AFTER),
    ]
    with ChatCompletionsServer(steps, aux=_summary_for(COPILOT_SUMMARY_REQUEST)) as srv:
        env = with_hooks(agent_env.copilot_environ(srv.url), bindir, workspace, "copilot")
        # the request after the tool ran is "too large" once: Copilot compacts and retries
        srv.fail(413, CONTEXT_LIMIT_BODY, times=1, when=_after_a_tool_ran)
        proc = run_copilot(env, workspace, TASK, timeout=240)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert any(COPILOT_SUMMARY_REQUEST in _last_user_text(r.body) for r in srv.requests)
        assert srv.remaining == 0  # the retry after the compaction got the last step
    _assert_written_by(env, workspace, agent_env, "copilot", "pre_compact", (BEFORE,))
    # the error Copilot recovered from is no ending: nothing says the session ended on it
    for record_id in stored_by(agent_env, "copilot", "stop_failure"):
        content = _record(env, workspace, record_id)["content"]
        assert _field(content, "How it ended").startswith("normally"), content[:1500]
    assert stored_by(agent_env, "copilot", "session_end"), hook_log(agent_env)


# -- opencode: session.compacted -----------------------------------------------------------
class HeavyUsageChatServer(ChatCompletionsServer):
    """Chat completions whose answers to the steps in `heavy_steps` report `tokens`
    prompt tokens, so an agent that compacts on its reported usage compacts after them."""

    def __init__(
        self,
        steps: list[Step],
        heavy_steps: set[int],
        tokens: int,
        aux: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        super().__init__(steps, aux)
        self.heavy_steps = heavy_steps
        self.tokens = tokens
        self._heavy_now = False

    def _next_step(self) -> tuple[int | None, Step]:
        index, step = super()._next_step()
        self._heavy_now = index in self.heavy_steps
        return index, step

    def send_sse_data(  # type: ignore[override]
        self, h: BaseHTTPRequestHandler, items: list[dict[str, Any] | str]
    ) -> None:
        if self._heavy_now:
            self._heavy_now = False
            for item in items:
                if isinstance(item, dict) and item.get("usage"):
                    item["usage"] = {
                        "prompt_tokens": self.tokens,
                        "completion_tokens": 50,
                        "total_tokens": self.tokens + 50,
                    }
        ChatCompletionsServer.send_sse_data(h, items)


OPENCODE_LIMIT = {"context": 50_000, "output": 4_000}  # compacts at 46k tokens used
OPENCODE_SUMMARY_REQUEST = "Here is the conversation so far"


def test_opencode_session_compacted_writes_the_handoff(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = passdown_on_path(tmp_path)
    steps = [
        Step(
            text=BEFORE,
            tool="write",
            input={"filePath": str(workspace / "NOTES.md"), "content": "notes\n"},
        ),
        Step(text=AFTER),
    ]
    server = HeavyUsageChatServer(steps, {0}, 60_000, aux=_summary_for(OPENCODE_SUMMARY_REQUEST))
    with server as srv:
        env = with_hooks(agent_env.opencode_environ(srv.url), bindir, workspace, "opencode")
        config = agent_env.home / ".config" / "opencode" / "opencode.json"
        data = json.loads(config.read_text(encoding="utf-8"))
        data["provider"][CHAT_PROVIDER]["models"][CHAT_MODEL]["limit"] = OPENCODE_LIMIT
        config.write_text(json.dumps(data, indent=2), encoding="utf-8")
        proc = run_opencode(env, workspace, TASK, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert any(OPENCODE_SUMMARY_REQUEST in _last_user_text(r.body) for r in srv.requests)
        assert srv.remaining == 0
    # the plugin exports in a detached process that may outlive `opencode run` and that
    # may read the session once the turn after the compaction ran: either progress
    _assert_written_by(
        env, workspace, agent_env, "opencode", "pre_compact", (BEFORE, AFTER), wait=60
    )


# -- pi: session_compact ---------------------------------------------------------------------
PI_SUMMARY_REQUEST = "The messages above are a conversation to summarize"


def test_pi_session_compact_writes_the_handoff(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, _calls = passdown_on_path(tmp_path)
    steps = [
        Step(
            text=BEFORE,
            tool="write",
            input={"path": str(workspace / "NOTES.md"), "content": "notes\n"},
        ),
        Step(text=AFTER),
    ]
    with ChatCompletionsServer(steps, aux=_summary_for(PI_SUMMARY_REQUEST)) as srv:
        env = with_hooks(agent_env.pi_environ(srv.url), bindir, workspace, "pi")
        rpc = PiRpc(env, workspace)
        try:
            rpc.prompt(TASK)
            assert srv.remaining == 0
            compacted = rpc.call("compact")["data"]
            assert compacted["summary"] == SUMMARY, compacted
            ids = stored_by(agent_env, "pi", "pre_compact", wait=60)
        finally:
            rpc.close()
    assert len(ids) == 1, hook_log(agent_env)
    record = _assert_written_by(env, workspace, agent_env, "pi", "pre_compact", (AFTER,))
    # session_compact runs once the compaction is saved: its handoff carries the summary
    _md, handoff = load_handoff(workspace)
    assert handoff["id"] == record["id"]
    assert handoff["task"]["compactions"] == 1
    assert "add() edge cases are still to document" in (handoff["task"]["compaction_summary"] or "")


# -- interactive `passdown run`: Claude Code falls over to Codex's TUI ----------------------
def _wait(condition: Callable[[], bool], seconds: float, what: str, term: Terminal) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened; the screen:\n{term.screen()}")
        time.sleep(0.5)


def _rate_limited(ws: Path) -> bool:
    path = ws / ".agent-handoff" / "handoff.json"
    if not path.exists():
        return False
    return bool(json.loads(path.read_text(encoding="utf-8"))["ended"]["reason"] == "rate_limit")


def test_interactive_run_falls_over_from_claude_to_codex(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)
    first = Step(
        text=f"Writing the notes file. {NEXT}",
        tool="Write",
        input={"file_path": str(workspace / "NOTES.md"), "content": "usage notes\n"},
    )
    with (
        AnthropicServer([first]) as anthropic,
        OpenAIResponsesServer([Step(text="Continuing from the handoff.")]) as openai,
    ):
        # every request after the tool ran: the limit hits mid-task, and stays
        anthropic.fail(
            429,
            RATE_LIMIT_BODY,
            headers={"retry-after": "0"},
            when=lambda body: "tool_result" in json.dumps(body),
        )
        env = agent_env.environ(anthropic_url=anthropic.url, openai_url=openai.url)
        env["CLAUDE_CODE_MAX_RETRIES"] = "2"
        answer_first_run_questions("claude", agent_env, workspace, env)
        answer_first_run_questions("codex", agent_env, workspace, env)
        env = with_hooks(env, bindir, workspace, "claude")
        run = [sys.executable, "-m", "passdown", "run", "claude", "--fallback", "codex"]
        claude_flags = ["--permission-mode", "acceptEdits", "--allowedTools", CLAUDE_TOOLS]
        shell = f"{shlex.join([*run, '--', *claude_flags])}; echo PASSDOWN-EXITED $?; sleep 600"
        term = Terminal(["sh", "-c", shell], env, workspace)
        try:
            term.wait_for("accept edits on", 120)  # Claude's input box is up
            term.type(TASK)
            term.keys("Enter")
            _wait(lambda: _rate_limited(workspace), 120, "Claude's StopFailure handoff", term)
            term.wait_for("429", 60)
            assert not openai.requests, "Codex started before Claude's session ended"
            term.type("/exit")  # the user leaves Claude, as after any failed turn
            term.keys("Enter")
            _wait(lambda: bool(openai.step_requests()), 180, "Codex's first request", term)
            term.wait_for("Continuing from the handoff.", 60)
            term.type("/exit")
            term.keys("Enter")
            screen = term.wait_for("PASSDOWN-EXITED", 60)
        finally:
            term.close()
            stop_codex_daemons(agent_env.codex_home)
        first_request = openai.step_requests()[0].text()
    assert "PASSDOWN-EXITED 0" in screen, screen  # Codex's own exit code
    assert "You are taking over a coding task from claude" in first_request, first_request[-3000:]
    assert TASK in first_request  # the request
    assert "document the add() edge cases" in first_request  # the next step
    assert "on a rate limit" in first_request
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in first_request
    handoff = load_handoff(workspace)[1]
    assert handoff["source"]["agent"] == "claude" and handoff["ended"]["reason"] == "rate_limit"
    # Claude's hooks wrote it: StopFailure when the limit hit, SessionEnd kept the limit
    log = hook_log(agent_env)
    assert " ok claude stop_failure " in log and " ok claude session_end " in log, log
    assert "hook claude" in calls.read_text()
