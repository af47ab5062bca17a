"""Incremental export (passdown.checkpoint): exporting after every append through the
session's checkpoint gives exactly the handoff a full read gives.

The sessions are built from the recorded Codex rollout (tests/fixtures/sessions/codex):
its two real turns, and records of the same shape for failing and passing test runs,
plan updates, compactions, a rate-limit ending, an interruption, new prompts, a call
that never gets its output and an unreadable line, appended in random chunks that cut
lines anywhere (a torn last line must never be checkpointed past).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passdown import checkpoint, pipeline
from passdown.agents.codex import CodexCLI
from passdown.errors import SessionReadError
from passdown.extract import CODEX_SUMMARY_PREFIX

FIXTURE = next(
    (Path(__file__).parent / "fixtures" / "sessions" / "codex" / "full" / "sessions").rglob(
        "rollout-*.jsonl"
    )
)
RECORDS: list[dict[str, Any]] = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
HEADER = RECORDS[0]  # session_meta
TURN_ONE = RECORDS[1:63]  # task_started .. task_complete
TURN_TWO = RECORDS[63:87]
CALL = RECORDS[41]  # function_call exec_command
CALL_OUTPUT = RECORDS[44]
PLAN_CALL = RECORDS[13]
PLAN_OUTPUT = RECORDS[15]
ASSISTANT = RECORDS[12]
USER = RECORDS[66]
TASK_COMPLETE = RECORDS[62]


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


class TurnMaker:
    """Real-shaped Codex records; call ids stay unique across repeated turns."""

    def __init__(self) -> None:
        self.n = 0

    def _next(self) -> int:
        self.n += 1
        return self.n

    def real_turn(self, records: list[dict[str, Any]]) -> bytes:
        n = self._next()
        out = []
        for record in records:
            record = copy.deepcopy(record)
            payload = record.get("payload") or {}
            if "call_id" in payload:
                payload["call_id"] = f"{payload['call_id']}-{n}"
            out.append(_line(record))
        return b"".join(out)

    def command(self, cmd: str, exit_code: int | None, error: str = "") -> bytes:
        n = self._next()
        call = copy.deepcopy(CALL)
        call["payload"]["arguments"] = json.dumps({"cmd": cmd})
        call["payload"]["call_id"] = f"call-cmd-{n}"
        if exit_code is None:  # the session stops before the output
            return _line(call)
        output = copy.deepcopy(CALL_OUTPUT)
        output["payload"]["call_id"] = f"call-cmd-{n}"
        output["payload"]["output"] = (
            f"Chunk ID: {n:06x}\nWall time: 0.1 seconds\nProcess exited with code {exit_code}\n"
            f"Output:\n{error}\n"
        )
        return _line(call) + _line(output)

    def failing_test(self, which: int) -> bytes:
        return self.command(
            f"python -m pytest tests/test_calc.py::test_add_{which}", 1,
            f"FAILED tests/test_calc.py::test_add_{which} - AssertionError: assert -1 == 3",
        )

    def passing_tests(self) -> bytes:
        return self.command("python -m pytest tests/test_calc.py", 0, "3 passed in 0.01s")

    def plan(self, statuses: list[str]) -> bytes:
        n = self._next()
        call = copy.deepcopy(PLAN_CALL)
        steps = [{"step": f"Step {i} of plan {n}", "status": s} for i, s in enumerate(statuses)]
        call["payload"]["arguments"] = json.dumps({"plan": steps})
        call["payload"]["call_id"] = f"call-plan-{n}"
        output = copy.deepcopy(PLAN_OUTPUT)
        output["payload"]["call_id"] = f"call-plan-{n}"
        return _line(call) + _line(output)

    def compaction(self) -> bytes:
        n = self._next()
        compacted = {"timestamp": "2026-11-29T21:13:00.000Z", "type": "compacted",
                     "payload": {"message": f"{CODEX_SUMMARY_PREFIX}\nSummary {n}: add() fixed."}}
        event = {"timestamp": "2026-11-29T21:13:00.001Z", "type": "event_msg",
                 "payload": {"type": "context_compacted"}}
        return _line(compacted) + _line(event)

    def rate_limit(self) -> bytes:
        record = copy.deepcopy(TASK_COMPLETE)
        record["payload"]["error"] = {
            "message": "exceeded retry limit, last status: 429 Too Many Requests",
            "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}},
        }
        return _line(record)

    def interrupted(self) -> bytes:
        return _line({"timestamp": "2026-11-29T21:14:00.000Z", "type": "event_msg",
                      "payload": {"type": "turn_aborted", "reason": "interrupted"}})

    def user(self) -> bytes:
        record = copy.deepcopy(USER)
        record["payload"]["content"][0]["text"] = f"Prompt {self._next()}: keep going."
        return _line(record)

    def assistant(self) -> bytes:
        record = copy.deepcopy(ASSISTANT)
        n = self._next()
        record["payload"]["content"][0]["text"] = (
            f"Reply {n}. Decision: use unittest.\nNext steps:\n- fix add() {n}\n- re-run the suite"
        )
        return _line(record)

    def garbage(self) -> bytes:
        return b'{"type":"response_item","payload":{not json\n'


TURNS: list[Callable[[TurnMaker], bytes]] = [
    lambda m: m.real_turn(TURN_ONE),
    lambda m: m.real_turn(TURN_TWO),
    lambda m: m.failing_test(1),
    lambda m: m.failing_test(2),
    lambda m: m.passing_tests(),
    lambda m: m.command("grep -r missing .", 1),
    lambda m: m.command("make build", None),  # a call still waiting for its output
    lambda m: m.plan(["completed", "in_progress", "pending"]),
    lambda m: m.plan(["completed", "completed", "completed"]),
    lambda m: m.compaction(),
    lambda m: m.rate_limit(),
    lambda m: m.interrupted(),
    lambda m: m.user(),
    lambda m: m.assistant(),
    lambda m: m.garbage(),
]


@contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _handoff(path: Path, workspace: Path, *, incremental: bool) -> dict[str, Any]:
    """The handoff JSON (without its id and creation time) of the session at `path`."""
    agent = CodexCLI()
    selection = pipeline.Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    with _env(checkpoint.DISABLE_ENV, None if incremental else "1"):
        data = pipeline.build_handoff(selection).model_dump(mode="json")
    del data["id"], data["created_at"]
    return data


def _saved(path: Path) -> checkpoint.Checkpoint:
    return msgspec.msgpack.decode(
        checkpoint.checkpoint_path("codex", path).read_bytes(), type=checkpoint.Checkpoint
    )


def _session(root: Path) -> tuple[Path, Path]:
    workspace = root / "ws"
    workspace.mkdir()
    path = root / "rollout-2026-11-29T21-12-24-01a22926-e5e1-7e83-acf2-37049be87d5c.jsonl"
    return path, workspace


def _outcome(path: Path, workspace: Path, *, incremental: bool) -> dict[str, Any] | str:
    try:
        return _handoff(path, workspace, incremental=incremental)
    except SessionReadError as exc:  # e.g. nothing but a torn first line yet
        return exc.message


def _export_and_compare(path: Path, workspace: Path) -> dict[str, Any] | str:
    incremental = _outcome(path, workspace, incremental=True)
    full = _outcome(path, workspace, incremental=False)
    assert incremental == full
    return incremental


def _assert_checkpoint_at_last_line_end(path: Path) -> None:
    data = path.read_bytes()
    assert _saved(path).offset == data.rfind(b"\n") + 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(st.integers(0, len(TURNS) - 1), min_size=1, max_size=12),
    cuts=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
)
def test_incremental_export_equals_full_read(turns: list[int], cuts: list[float]) -> None:
    maker = TurnMaker()
    body = _line(HEADER) + b"".join(TURNS[i](maker) for i in turns)
    # append in chunks ending at random byte positions (often inside a line)
    ends = sorted({int(c * len(body)) for c in cuts} | {len(body)})
    with tempfile.TemporaryDirectory() as tmp:
        path, workspace = _session(Path(tmp))
        written = 0
        for end in ends:
            if end <= written:
                continue
            with open(path, "ab") as handle:
                handle.write(body[written:end])
            written = end
            handoff = _export_and_compare(path, workspace)
            if b"\n" in body[:end]:
                _assert_checkpoint_at_last_line_end(path)
        # the whole session went through (or, with no event at all, was refused)
        if isinstance(handoff, str):
            assert "holds no readable codex record" in handoff
            return
        assert handoff["source"]["session_id"] == HEADER["payload"]["id"]
        assert handoff["task"]["messages_total"] >= sum(TURNS[i] is TURNS[0] for i in turns)


def _recorded_body() -> bytes:
    maker = TurnMaker()
    return (
        _line(HEADER) + maker.real_turn(TURN_ONE) + maker.failing_test(1) + maker.compaction()
        + maker.real_turn(TURN_TWO) + maker.plan(["completed", "in_progress"])
    )


def test_resumed_export_reads_only_the_appended_bytes(tmp_path: Path) -> None:
    """Proof that the prefix is not re-read: a change in its middle (outside the
    fingerprinted head and tail) is not seen by the next export, while the appended
    turn is."""
    path, workspace = _session(tmp_path)
    maker = TurnMaker()
    padding = b"".join(maker.real_turn(TURN_TWO) for _ in range(8))
    middle = maker.command("make lint", 0, "ok")
    body = _line(HEADER) + padding + middle + padding
    path.write_bytes(body)
    first = _export_and_compare(path, workspace)
    assert isinstance(first, dict)
    at = body.index(middle) + middle.index(b"exited with code 0")
    assert checkpoint.FINGERPRINT_SPAN < at < len(body) - checkpoint.FINGERPRINT_SPAN
    changed = bytearray(body)
    changed[at + len("exited with code ")] = ord("2")  # the same length, now a failure
    path.write_bytes(bytes(changed) + maker.user())
    resumed = _handoff(path, workspace, incremental=True)
    full = _handoff(path, workspace, incremental=False)
    assert resumed["task"]["latest_user_message"] == full["task"]["latest_user_message"]
    assert resumed["task"]["latest_user_message"].endswith(": keep going.")
    assert full["state"]["commands_failed"] == first["state"]["commands_failed"] + 1
    assert resumed["state"]["commands_failed"] == first["state"]["commands_failed"]


def test_truncated_session_falls_back_to_a_full_read(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    maker = TurnMaker()
    head = _line(HEADER) + maker.real_turn(TURN_ONE)
    path.write_bytes(head + maker.failing_test(1) + maker.rate_limit())
    before = _export_and_compare(path, workspace)
    assert before["ended"]["reason"] == "rate_limit"
    path.write_bytes(head)  # the last turns are gone
    after = _export_and_compare(path, workspace)
    assert after["ended"]["reason"] == "normal"
    assert _saved(path).offset == len(head)


def test_rewritten_prefix_falls_back_to_a_full_read(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    body = _recorded_body()
    path.write_bytes(body)
    _export_and_compare(path, workspace)
    # same length, changed near the end of the checkpointed part (inside the tail print)
    tail_at = body.rfind(b"Step 1 of plan")
    rewritten = body[:tail_at] + b"Step X of plan" + body[tail_at + 14 :]
    path.write_bytes(rewritten + TurnMaker().user())
    after = _export_and_compare(path, workspace)
    assert [p["subject"] for p in after["state"]["plan"]][1].startswith("Step X of plan")


def test_torn_last_line_is_read_but_not_checkpointed(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    maker = TurnMaker()
    complete = _line(HEADER) + maker.real_turn(TURN_ONE)
    rate_limit = maker.rate_limit()
    path.write_bytes(complete + rate_limit[:-1])  # valid JSON, no newline yet
    handoff = _export_and_compare(path, workspace)
    assert handoff["ended"]["reason"] == "rate_limit"
    assert _saved(path).offset == len(complete)
    path.write_bytes(complete + rate_limit[:40])  # now torn mid-record
    handoff = _export_and_compare(path, workspace)
    assert handoff["ended"]["reason"] == "normal"
    assert any("incomplete" in w for w in handoff["warnings"])


def test_checkpoint_of_other_version_or_options_is_ignored(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    path.write_bytes(_recorded_body())
    _export_and_compare(path, workspace)
    store = checkpoint.checkpoint_path("codex", path)
    assert store.stat().st_mode & 0o777 == 0o600
    saved = _saved(path)
    # a checkpoint whose state claims another plan, from another passdown version
    stale = msgspec.structs.replace(saved, passdown_version="0.0.0-other")
    stale.extractor.plan = []
    store.write_bytes(msgspec.msgpack.encode(stale))
    assert _export_and_compare(path, workspace)["state"]["plan"]
    store.write_bytes(b"not a checkpoint")
    assert _export_and_compare(path, workspace)["state"]["plan"]
    assert _saved(path).offset == len(path.read_bytes())


def test_no_checkpoint_env_writes_none(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    path.write_bytes(_recorded_body())
    _handoff(path, workspace, incremental=False)
    assert not checkpoint.checkpoint_path("codex", path).exists()


@pytest.mark.parametrize("agent", ["claude", "gemini", "copilot"])
def test_agents_without_checkpoint_support_read_in_full(agent: str) -> None:
    from passdown.agents import get_agent

    assert not get_agent(agent).supports_checkpoint
