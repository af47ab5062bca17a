"""Sessions that end on an API error, with the real CLIs: a first turn that works, then a
resumed turn against a scripted server that answers HTTP 429 to every request (a sticky
rate limit). The handoff must say how the session ended wherever the CLI's files record
it, and say "normal" where they record nothing.

What each pinned CLI writes (provoked against the scripted servers, sticky 429 / 500 /
503 / 401 / usage limit / context length; see the issue 10 report for the whole table):

- Codex 0.171: `event_msg task_complete {error: {message, codex_error_info}}`; a 429 is
  `{response_too_many_failed_attempts: {http_status_code: 429}}` once its retries ran out.
- Qwen Code 0.24.4: a `system/ui_telemetry` record `qwen-code.api_error` {error_message,
  error_type: "RateLimitError", status_code: 429} per failed attempt; it retries a 429
  for minutes, so the test gives up on it like a user would (the records are already
  there).
- Copilot CLI 1.0.102: `session.error {errorType: "rate_limit", statusCode: 429,
  message}` after its 5 retries.
- pi 0.73.1: an assistant message with `stopReason: "error"` and `errorMessage` per
  attempt.
- opencode 1.18.33: the assistant message's `error {name: "APIError", data: {statusCode:
  429, message, ...}}` once its retries ran out.
- Gemini CLI 0.61.0 (`gemini -p`): nothing about the error, and it even rewrites its
  history (`$set messages`) without the prompt that failed, so the handoff's latest user
  message is the previous one. The interactive UI does record its notices (`type:
  "error"`, "[API Error: ...]"), which passdown reads (the last test here).
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import (
    GEMINI_MODEL,
    PROMPT_RUNNERS,
    AgentEnv,
    find_agent,
    init_git_workspace,
    run_passdown,
    update_json,
)
from e2e.checks import load_handoff, ok
from e2e.record import (
    _copilot_session,
    _opencode_session,
    _pi_session,
    _qwen_session,
)
from e2e.servers import (
    ChatCompletionsServer,
    GeminiServer,
    OpenAIResponsesServer,
    Step,
    _ScriptedServer,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

PROMPT_1 = "Check the workspace."
FINAL_1 = "The workspace is clean; nothing to do yet."
PROMPT_2 = "Now write the changelog."
RATE_LIMIT_TEXT = (
    "Rate limit reached for scripted-model on tokens per min (TPM): Limit 30000, "
    "Used 30000. Please try again in 20s."
)
OPENAI_429 = {
    "error": {"message": RATE_LIMIT_TEXT, "type": "tokens", "code": "rate_limit_exceeded"}
}
GEMINI_429 = {
    "error": {
        "code": 429,
        "message": "Resource has been exhausted (e.g. check quota).",
        "status": "RESOURCE_EXHAUSTED",
    }
}
# Ask the clients to retry at once: the SDKs honour these, which keeps the test short.
RETRY_NOW = {"retry-after": "0", "retry-after-ms": "10"}


@dataclass
class Case:
    agent: str
    server: Callable[[list[Step]], _ScriptedServer]
    shell: Step
    error_body: dict[str, Any]
    expected: str  # ended.reason in handoff.json
    # seconds after which the resumed turn is stopped (SIGTERM to its process group), for
    # a CLI that keeps retrying a 429 on its own for minutes
    give_up_after: float | None = None
    # Gemini CLI rewrites its history (`$set messages`) without the prompt that failed
    keeps_failed_prompt: bool = True


CASES = [
    Case(
        "codex",
        OpenAIResponsesServer,
        Step(tool="exec_command", input={"cmd": "git status --short"}),
        OPENAI_429,
        "rate_limit",
    ),
    Case(
        "gemini",
        GeminiServer,
        Step(
            tool="run_shell_command",
            input={"command": "git status --short", "description": "Check the workspace"},
        ),
        GEMINI_429,
        "normal",
        keeps_failed_prompt=False,
    ),
    Case(
        "qwen",
        ChatCompletionsServer,
        Step(
            tool="run_shell_command",
            input={
                "command": "git status --short",
                "is_background": False,
                "description": "Check the workspace",
            },
        ),
        OPENAI_429,
        "rate_limit",
        give_up_after=25,
    ),
    Case(
        "copilot",
        ChatCompletionsServer,
        Step(
            tool="bash",
            input={
                "command": "git status --short",
                "description": "Check the workspace",
                "mode": "sync",
                "initial_wait": 30,
            },
        ),
        OPENAI_429,
        "rate_limit",
    ),
    Case(
        "pi",
        ChatCompletionsServer,
        Step(tool="bash", input={"command": "git status --short"}),
        OPENAI_429,
        "rate_limit",
    ),
    Case(
        "opencode",
        ChatCompletionsServer,
        Step(
            tool="bash",
            input={"command": "git status --short", "description": "Check the workspace"},
        ),
        OPENAI_429,
        "rate_limit",
    ),
]


def _environ(agent_env: AgentEnv, agent: str, url: str) -> dict[str, str]:
    if agent == "codex":
        return agent_env.environ(openai_url=url)  # request/stream retries are 0 there
    env = {
        "gemini": agent_env.gemini_environ,
        "qwen": agent_env.qwen_environ,
        "copilot": agent_env.copilot_environ,
        "pi": agent_env.pi_environ,
        "opencode": agent_env.opencode_environ,
    }[agent](url)
    if agent == "gemini":  # 2 attempts instead of 10 with a 5 s+ backoff
        update_json(agent_env.home / ".gemini" / "settings.json", {"general": {"maxAttempts": 2}})
    if agent == "pi":
        update_json(
            agent_env.home / ".pi" / "agent" / "settings.json",
            {"retry": {"enabled": True, "maxRetries": 1, "baseDelayMs": 100}},
        )
    return env


def _resume_token(agent: str, agent_env: AgentEnv) -> str:
    if agent == "codex":
        return "--last"
    if agent == "gemini":
        return "latest"
    return {
        "qwen": _qwen_session,
        "copilot": _copilot_session,
        "pi": _pi_session,
        "opencode": _opencode_session,
    }[agent](agent_env)


def _second_turn(
    case: Case, env: dict[str, str], ws: Path, resume: str, agent_env: AgentEnv
) -> int | None:
    """The resumed turn; None when the test had to stop a CLI that kept retrying (once
    its session holds a failed attempt's record, or after `give_up_after` seconds)."""
    if case.give_up_after is None:
        run = PROMPT_RUNNERS[case.agent]
        return run(env, ws, PROMPT_2, resume=resume, timeout=300).returncode
    assert case.agent == "qwen"
    argv = [
        str(find_agent("qwen")),
        "--auth-type",
        "openai",
        "--approval-mode",
        "yolo",
        "-o",
        "text",
        "-r",
        resume,
        PROMPT_2,
    ]
    # its own process group, so a relaunched child stops with it
    proc = subprocess.Popen(
        argv,
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + case.give_up_after
    chats = sorted(agent_env.home.glob(".qwen/projects/*/chats/*.jsonl"))  # from turn 1
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc.returncode
        if any(b'"RateLimitError"' in chat.read_bytes() for chat in chats):
            break  # a failed attempt is recorded: the user gives up on the retries
        time.sleep(0.5)
    try:
        return proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        return None


@pytest.mark.parametrize("case", CASES, ids=[c.agent for c in CASES])
def test_a_sticky_rate_limit_is_how_the_session_ended(
    case: Case, agent_env: AgentEnv, tmp_path: Path
) -> None:
    ws = init_git_workspace(tmp_path / "ws")
    with case.server([case.shell, Step(text=FINAL_1)]) as srv:
        env = _environ(agent_env, case.agent, srv.url)
        assert FINAL_1 in ok(
            PROMPT_RUNNERS[case.agent](env, ws, PROMPT_1, timeout=240), f"{case.agent} turn 1"
        )
        assert srv.remaining == 0
        resume = _resume_token(case.agent, agent_env)
        srv.fail(429, case.error_body, headers=RETRY_NOW)
        started = time.monotonic()
        code = _second_turn(case, env, ws, resume, agent_env)
        elapsed = time.monotonic() - started
        errors = [r for r in srv.requests if r.kind == "error"]
        assert errors, f"{case.agent} never sent the second turn's request"
        assert PROMPT_2 in errors[0].text()
        srv.stop_failing()
    assert code != 0, f"{case.agent} exited 0 although every request failed"

    proc = run_passdown(env, ws, "export", "--from", case.agent, "--no-store")
    ok(proc, "passdown export")
    md, data = load_handoff(ws)
    ended = data["ended"]
    assert ended["reason"] == case.expected, (case.agent, ended, f"{elapsed:.0f}s")
    latest_prompt = PROMPT_2 if case.keeps_failed_prompt else PROMPT_1
    assert data["task"]["latest_user_message"] == latest_prompt
    assert data["task"]["latest_progress"] == FINAL_1  # the answer before the failure
    assert "**How it ended:**" in md
    if case.expected == "normal":
        assert ended["at"] is None and ended["message"] is None
        assert "How it ended:** normally" in md
    else:
        assert ended["at"], ended
        assert "429" in (ended["message"] or "") or "Rate limit" in (ended["message"] or "")
        assert "on a rate limit (HTTP 429)" in md


def _pump(fd: int, seconds: float, until: bytes, seen: bytearray) -> bool:
    """Read the terminal until `until` shows up (True) or the time is over (False)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return False
        seen.extend(chunk)
        if until in seen:
            return True
    return False


def test_interactive_gemini_records_its_api_error_notice(
    agent_env: AgentEnv, tmp_path: Path
) -> None:
    """Unlike `gemini -p`, the interactive CLI writes its error notice into the session
    (`type: "error"`, "[API Error: ...]"); an invalid key (HTTP 400, no retries and no
    quota dialog) is the error it shows at once."""
    ws = init_git_workspace(tmp_path / "ws")
    with GeminiServer([Step(text=FINAL_1)]) as srv:
        env = {**_environ(agent_env, "gemini", srv.url), "TERM": "xterm-256color"}
        argv = [
            str(find_agent("gemini")),
            "-m",
            GEMINI_MODEL,
            "--approval-mode",
            "yolo",
            "-i",
            PROMPT_1,
        ]
        pid, fd = pty.fork()
        if pid == 0:  # the child: the real CLI on a terminal
            os.chdir(ws)
            os.execve(argv[0], argv, env)
        seen = bytearray()
        try:
            assert _pump(fd, 120, FINAL_1.encode(), seen), bytes(seen[-2000:])
            srv.fail(
                400,
                {
                    "error": {
                        "code": 400,
                        "status": "INVALID_ARGUMENT",
                        "message": "API key not valid. Please pass a valid API key.",
                    }
                },
            )
            time.sleep(1)
            os.write(fd, PROMPT_2.encode())
            time.sleep(1)
            os.write(fd, b"\r")
            assert _pump(fd, 120, b"API Error", seen), bytes(seen[-2000:])
            time.sleep(1)  # the notice is written to the session as it is shown
        finally:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)

    ok(run_passdown(env, ws, "export", "--from", "gemini", "--no-store"), "passdown export")
    md, data = load_handoff(ws)
    assert data["ended"]["reason"] == "auth", data["ended"]
    assert "API key not valid" in (data["ended"]["message"] or "")
    assert data["task"]["latest_progress"] == FINAL_1
    assert "on an authentication error" in md
