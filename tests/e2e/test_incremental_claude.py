"""Incremental export with the real Claude Code 2.1.197 and its installed hooks: the
`SessionEnd` hook's export after the second turn reads only what that turn appended
(through the checkpoint the first turn's hook wrote) and gives the handoff a full read
gives; after a rewind (`--resume-session-at` an older message) the hook reads the file
in full, again equal to a full read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from e2e.agents import AgentEnv, run_claude, run_passdown
from e2e.checks import ok
from e2e.servers import AnthropicServer, Step
from e2e.test_continuity import _env, _hook_log, _passdown_on_path

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SESSION = "10c1a0de-0000-4000-8000-00000000c4e1"
A_DONE = "a.txt is written.\n\nNext steps:\n- write b.txt"


def _saved(agent_env: AgentEnv) -> Any:
    from passdown._checkpoint import Checkpoint

    files = list((agent_env.passdown_data / "checkpoints").glob("claude-*.msgpack"))
    assert len(files) == 1, (files, _hook_log(agent_env))
    assert files[0].stat().st_mode & 0o777 == 0o600
    return msgspec.msgpack.decode(files[0].read_bytes(), type=Checkpoint)


def _session_file(agent_env: AgentEnv) -> Path:
    return next((agent_env.claude_dir / "projects").rglob(f"{SESSION}.jsonl"))


def _read_part(handoff: dict[str, Any]) -> dict[str, Any]:
    """What comes from reading the session (the hook adds its own notes elsewhere)."""
    return {"source": handoff["source"], "task": handoff["task"], "state": handoff["state"]}


def _hook_handoff(ws: Path) -> dict[str, Any]:
    return _read_part(json.loads((ws / ".agent-handoff" / "handoff.json").read_text()))


def _full_read(env: dict[str, str], ws: Path) -> dict[str, Any]:
    run_env = {**env, "PASSDOWN_NO_CHECKPOINT": "1"}
    argv = ["export", "--from", "claude", "--session", SESSION, "--no-store", "--quiet"]
    ok(run_passdown(run_env, ws, *argv), "passdown export (full read)")
    return _hook_handoff(ws)


def _turn(
    server: AnthropicServer,
    env: dict[str, str],
    ws: Path,
    prompt: str,
    steps: list[Step],
    *extra: str,
) -> None:
    server.set_script(steps)
    ok(run_claude(env, ws, prompt, *extra, timeout=240), f"claude -p {prompt!r}")
    assert server.remaining == 0, f"{server.remaining} scripted steps never requested"


def _uuid_of(agent_env: AgentEnv, kind: str, needle: str) -> str:
    for line in _session_file(agent_env).read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == kind and needle in json.dumps(record.get("message")):
            return str(record["uuid"])
    raise AssertionError(f"no {kind} record with {needle!r}")


def test_claude_hook_export_resumes_from_the_checkpoint(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, calls = _passdown_on_path(tmp_path)
    server = AnthropicServer([]).start()
    assert isinstance(server, AnthropicServer)
    try:
        env = _env(agent_env, bindir, anthropic=server.url)
        ok(run_passdown(env, workspace, "install", "claude", "--no-pickup"), "install claude")
        _turn(
            server,
            env,
            workspace,
            "Write a.txt and track it as a task",
            [
                Step(tool="TaskCreate", input={"subject": "Write a.txt", "description": "a"}),
                Step(tool="TaskUpdate", input={"taskId": "1", "status": "in_progress"}),
                Step(tool="Write", input={"file_path": str(workspace / "a.txt"), "content": "a"}),
                Step(text=A_DONE),
            ],
            "--session-id",
            SESSION,
        )
        first = _saved(agent_env)
        session = _session_file(agent_env)
        assert first.offset == session.stat().st_size and first.resumed_from == 0
        _turn(
            server,
            env,
            workspace,
            "Now write b.txt",
            [
                Step(tool="TaskCreate", input={"subject": "Write b.txt", "description": "b"}),
                Step(tool="TaskUpdate", input={"taskId": "1", "status": "completed"}),
                Step(tool="Write", input={"file_path": str(workspace / "b.txt"), "content": "b"}),
                Step(text="b.txt is written.\n\nNext steps:\n- check both files"),
            ],
            "--resume",
            SESSION,
        )
        second = _saved(agent_env)
        # the second hook run read from where the first one stopped
        assert second.resumed_from == first.offset, _hook_log(agent_env)
        assert second.offset == session.stat().st_size > first.offset
        resumed = _hook_handoff(workspace)
        assert resumed == _full_read(env, workspace)
        assert [(p["subject"], p["status"]) for p in resumed["state"]["plan"]] == [
            ("Write a.txt", "completed"),
            ("Write b.txt", "pending"),
        ]
        assert resumed["task"]["latest_user_message"] == "Now write b.txt"

        # a rewind to turn one's answer: the appended branch does not continue the
        # checkpoint's leaf, so the hook reads the file in full
        resume_at = _uuid_of(agent_env, "assistant", "a.txt is written")
        _turn(
            server,
            env,
            workspace,
            "Instead write c.txt",
            [
                Step(tool="Write", input={"file_path": str(workspace / "c.txt"), "content": "c"}),
                Step(text="c.txt is written."),
            ],
            "--resume",
            SESSION,
            "--resume-session-at",
            resume_at,
        )
    finally:
        server.stop()
    assert "hook claude" in calls.read_text(), "Claude's hooks never ran passdown"
    third = _saved(agent_env)
    assert third.resumed_from == 0 and third.offset == session.stat().st_size
    rewound = _hook_handoff(workspace)
    assert rewound == _full_read(env, workspace)
    assert [(p["subject"], p["status"]) for p in rewound["state"]["plan"]] == [
        ("Write a.txt", "in_progress")
    ]
    assert rewound["task"]["latest_user_message"] == "Instead write c.txt"
