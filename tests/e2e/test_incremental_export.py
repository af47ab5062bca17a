"""Incremental export with the real Codex 0.171 CLI: `passdown export` after each turn
resumes from the session's checkpoint (the resumed turn appends to the same rollout,
with an automatic compaction), and gives the handoff a full read gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from e2e.agents import AgentEnv, init_git_workspace, run_codex, run_passdown
from e2e.checks import load_handoff, ok
from e2e.test_messy_codex import (
    PROMPT_1,
    PROMPT_2,
    S1,
    S2,
    S3,
    TEST_CMD,
    CompactingServer,
    _codex_config,
    _rollout,
    _turns,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


READS: list[dict[str, Any]] = []  # what each export's --json said of its read


def _export(env: dict[str, str], ws: Path, *, checkpoint: bool) -> dict[str, Any]:
    run_env = env if checkpoint else {**env, "PASSDOWN_NO_CHECKPOINT": "1"}
    proc = run_passdown(run_env, ws, "export", "--from", "codex", "--no-store", "--json")
    ok(proc, "passdown export")
    READS.append(json.loads(proc.stdout)["read"])
    data = load_handoff(ws)[1]
    del data["id"], data["created_at"]
    return data


def _checkpoint_offset(agent_env: AgentEnv) -> int:
    from passdown._checkpoint import Checkpoint

    files = list((agent_env.passdown_data / "checkpoints").glob("codex-*.msgpack"))
    assert len(files) == 1, files
    assert files[0].stat().st_mode & 0o777 == 0o600
    return msgspec.msgpack.decode(files[0].read_bytes(), type=Checkpoint).offset


def test_export_after_each_codex_turn_resumes_from_the_checkpoint(
    agent_env: AgentEnv, tmp_path: Path
) -> None:
    ws = init_git_workspace(
        tmp_path / "ws",
        {
            "README.md": "# calc\n\nA tiny calculator.\n",
            "greet.py": 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n',
        },
    )
    turn1, turn2, _ = _turns()
    with CompactingServer(turn1) as srv:
        assert isinstance(srv, CompactingServer)
        env = _codex_config(agent_env, srv.url)
        ok(run_codex(env, ws, PROMPT_1, timeout=240), "codex exec (turn 1)")
        after_1 = _export(env, ws, checkpoint=True)
        rollout = _rollout(agent_env)
        first_offset = _checkpoint_offset(agent_env)
        assert first_offset == rollout.stat().st_size  # Codex ends every line
        assert READS[-1] == {"checkpoint": "full", "offset": 0, "bytes": first_offset}
        srv.set_script(turn2)
        srv.heavy_steps = {0}  # Codex compacts during turn two
        ok(run_codex(env, ws, PROMPT_2, resume="--last", timeout=240), "codex exec resume (turn 2)")
        assert srv.remaining == 0

    resumed = _export(env, ws, checkpoint=True)
    size = rollout.stat().st_size
    assert _checkpoint_offset(agent_env) == size > first_offset
    # only what turn two appended was read
    assert READS[-1] == {
        "checkpoint": "resumed",
        "offset": first_offset,
        "bytes": size - first_offset,
    }
    full = _export(env, ws, checkpoint=False)
    assert resumed == full

    # and it is the right handoff: turn one's failure fixed in turn two, after a compaction
    assert [(p["subject"], p["status"]) for p in after_1["state"]["plan"]] == [
        (S1, "in_progress"),
        (S2, "in_progress"),
        (S3, "pending"),
    ]
    assert after_1["state"]["last_failure"]["resolved_later"] is False
    assert [(p["subject"], p["status"]) for p in resumed["state"]["plan"]] == [
        (S1, "completed"),
        (S2, "in_progress"),
        (S3, "pending"),
    ]
    failure = resumed["state"]["last_failure"]
    assert failure["command"] == TEST_CMD and failure["resolved_later"] is True
    assert resumed["task"]["compactions"] >= 1
    assert resumed["task"]["original_request"] == PROMPT_1
    assert resumed["task"]["latest_user_message"] == PROMPT_2
    assert resumed["source"]["transcript_sha256"] == full["source"]["transcript_sha256"]
