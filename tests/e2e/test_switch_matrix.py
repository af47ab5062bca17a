"""Issue 7: the switch matrix. From each of the seven agents (its real recorded session, from
tests/fixtures/sessions/<agent>/full) `passdown switch --non-interactive` launches the REAL
pinned CLI of two other agents against their scripted model servers, and the target's server
receives the handoff: the original request, the next step and the HANDOFF.md path, and none
of the planted secrets.

Each target run is one scripted step that only answers with text, so a run costs about an
agent start-up. The pairs run one after another: the runs share nothing, but two of them at
once on a 2-core machine only make each slower and the start-up timeouts tighter.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, run_passdown, target_environ
from e2e.checks import anthropic_user_texts, assert_no_secrets, ok, openai_user_texts
from e2e.record import seed_workspace
from e2e.servers import (
    AnthropicServer,
    ChatCompletionsServer,
    GeminiServer,
    LoggedRequest,
    OpenAIResponsesServer,
    Step,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
AGENTS = ("claude", "codex", "gemini", "qwen", "opencode", "pi", "copilot")
# source -> targets: every agent is a source twice and a target twice.
MATRIX: dict[str, tuple[str, str]] = {
    "claude": ("codex", "gemini"),
    "codex": ("claude", "qwen"),
    "gemini": ("opencode", "pi"),
    "qwen": ("copilot", "claude"),
    "opencode": ("codex", "copilot"),
    "pi": ("gemini", "opencode"),
    "copilot": ("qwen", "pi"),
}
PAIRS = [(s, t) for s, targets in MATRIX.items() for t in targets]
TAKEOVER_REPLY = "Read the handoff; continuing from the next step."
# One target start-up against a local server takes a few seconds; this bounds a hang.
LAUNCH_TIMEOUT = 120
# Each agent's native "continue the latest session here" command, non-interactive. After
# the first switch to an agent, it must continue the takeover session passdown started.
RESUME_PROMPT = "Carry on with the handoff's next step."
RESUME: dict[str, list[str]] = {
    "claude": ["claude", "--continue", "-p", RESUME_PROMPT],
    "codex": ["codex", "exec", "resume", "--last", RESUME_PROMPT],
    "gemini": ["gemini", "--resume", "latest", "-p", RESUME_PROMPT],
    "qwen": ["qwen", "--continue", RESUME_PROMPT],
    "opencode": ["opencode", "run", "--continue", RESUME_PROMPT],
    "pi": ["pi", "--continue", "-p", RESUME_PROMPT],
    "copilot": ["copilot", "--continue", "-p", RESUME_PROMPT],
}
RESUMED_AFTER = {t: next(p for p in PAIRS if p[1] == t) for t in AGENTS}


def test_matrix_covers_every_agent_twice() -> None:
    assert set(MATRIX) == set(AGENTS)
    for agent in AGENTS:
        assert sum(t == agent for _, t in PAIRS) >= 2, agent
        assert agent not in MATRIX[agent]


# -- the recorded source session --------------------------------------------------------
def fixture_dir(agent: str) -> Path:
    return FIXTURES / agent / "full"


def expected(agent: str) -> dict[str, Any]:
    return json.loads((fixture_dir(agent) / "expected.json").read_text(encoding="utf-8"))


def install_source(agent: str, agent_env: AgentEnv) -> Path:
    """Copy the recorded store into the test's isolated HOME (or CLAUDE_CONFIG_DIR /
    CODEX_HOME) and return the session file (for opencode: its database)."""
    exp = expected(agent)
    dest = {"claude": agent_env.claude_dir, "codex": agent_env.codex_home}.get(
        agent, agent_env.home
    )
    shutil.copytree(
        fixture_dir(agent), dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("expected.json")
    )
    main = exp.get("session_path") or next(
        f for f in exp["session_files"] if f.endswith((".jsonl", ".db"))
    )
    path = dest / main
    assert path.is_file(), path
    return path


def session_arg(agent: str, path: Path) -> str:
    """What `--session` gets: the file, or the id for opencode (one database, many
    sessions)."""
    return expected(agent)["session_id"] if path.suffix == ".db" else str(path)


def request_opening(exp: dict[str, Any]) -> str:
    """The request's secret-free opening words, which survive redaction verbatim."""
    return str(exp["original_request"]).split(". ")[0]


def next_step(exp: dict[str, Any]) -> str:
    """The next step the source's final message names ("next step is to append a Usage
    heading ..." / "Next step: append a Usage heading ..."): its first four words."""
    match = re.search(r"[Nn]ext step(?: is to|:| is)\s+(.+)", exp["final_assistant_message"])
    assert match, exp["final_assistant_message"]
    return " ".join(match.group(1).split()[:4])


# -- the target's scripted server and what it received ------------------------------------
Server = AnthropicServer | OpenAIResponsesServer | ChatCompletionsServer | GeminiServer


@contextmanager
def server_for(target: str) -> Iterator[Server]:
    cls: type[Server] = {
        "claude": AnthropicServer,
        "codex": OpenAIResponsesServer,
        "gemini": GeminiServer,
    }.get(target, ChatCompletionsServer)
    with cls() as srv:
        assert isinstance(srv, cls)
        yield srv


def chat_user_texts(req: LoggedRequest) -> list[str]:
    texts: list[str] = []
    for msg in req.body.get("messages") or []:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.extend(c.get("text", "") for c in content or [] if isinstance(c, dict))
    return texts


def gemini_user_texts(req: LoggedRequest) -> list[str]:
    return [
        part.get("text", "")
        for c in req.body.get("contents") or []
        if isinstance(c, dict) and c.get("role") == "user"
        for part in c.get("parts") or []
        if isinstance(part, dict)
    ]


def user_texts(target: str, req: LoggedRequest) -> list[str]:
    reader = {
        "claude": anthropic_user_texts,
        "codex": openai_user_texts,
        "gemini": gemini_user_texts,
    }.get(target, chat_user_texts)
    return reader(req)


def assert_target_got_handoff(
    target: str, srv: Server, exp: dict[str, Any], handoff_md: Path, stdout: str
) -> None:
    steps = srv.step_requests()
    assert steps, (
        f"the real {target} never sent a model request to its scripted server: "
        f"{[(r.method, r.path, r.kind) for r in srv.requests]}"
    )
    user = "\n".join(user_texts(target, steps[0]))
    assert str(handoff_md) in user, f"{target} did not get the HANDOFF.md path:\n{user[:3000]}"
    assert request_opening(exp) in user, user[:3000]
    assert next_step(exp) in user, user[:3000]
    # No planted secret anywhere in what the target sent (any request) or passdown printed.
    assert_no_secrets(
        exp["secrets"],
        stdout=stdout,
        **{f"{target}_request_{i}": r.text() for i, r in enumerate(srv.requests)},
    )


# -- the matrix -----------------------------------------------------------------------------
@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s}-to-{t}" for s, t in PAIRS])
def test_switch(source: str, target: str, tmp_path: Path, agent_env: AgentEnv) -> None:
    exp = expected(source)
    session = install_source(source, agent_env)
    workspace = seed_workspace(tmp_path / "ws")
    with server_for(target) as srv:
        srv.set_script([Step(text=TAKEOVER_REPLY)])
        env = target_environ(agent_env, target, srv.url)
        started = time.monotonic()
        proc = run_passdown(
            env,
            workspace,
            "switch",
            "--from",
            source,
            "--to",
            target,
            "--session",
            session_arg(source, session),
            "--workspace",
            str(workspace),
            "--non-interactive",
            timeout=LAUNCH_TIMEOUT,
        )
        elapsed = time.monotonic() - started
        out = ok(proc, f"passdown switch --from {source} --to {target}")
        handoff_md = workspace / ".agent-handoff" / "HANDOFF.md"
        assert handoff_md.is_file()
        md = handoff_md.read_text(encoding="utf-8")
        assert request_opening(exp) in md
        assert_no_secrets(exp["secrets"], handoff_md=md, stderr=proc.stderr)
        assert_target_got_handoff(target, srv, exp, handoff_md, out)
        assert srv.remaining == 0, "the takeover step was not consumed"
        # The target ran to the end (one text step) rather than being cut off by the timeout.
        assert elapsed < LAUNCH_TIMEOUT
        if target == "copilot":  # its ~230 MB runtime came from the warmed shared cache
            assert not (agent_env.home / ".cache" / "copilot").exists()
        if RESUMED_AFTER[target] == (source, target):
            assert_native_resume_continues(target, srv, env, workspace, handoff_md)


def assert_native_resume_continues(
    target: str, srv: Server, env: dict[str, str], workspace: Path, handoff_md: Path
) -> None:
    """The agent's own resume command picks up the session passdown launched: its next
    request carries the takeover prompt and reply, then the new prompt."""
    before = len(srv.step_requests())
    srv.set_script([Step(text="Resumed.")])
    proc = subprocess.run(
        RESUME[target],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=LAUNCH_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    ok(proc, " ".join(RESUME[target][:-1]))
    steps = srv.step_requests()[before:]
    assert steps, f"{RESUME[target][:-1]} sent no model request"
    body = steps[0].text()
    assert str(handoff_md) in body, f"{target} resumed without the takeover turn"
    assert TAKEOVER_REPLY in body, f"{target} resumed without the takeover reply"
    assert RESUME_PROMPT in "\n".join(user_texts(target, steps[0]))
