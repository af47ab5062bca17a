"""Incremental export (passdown._checkpoint): exporting after every append through the
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
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passdown import _checkpoint as checkpoint
from passdown import _pipeline as pipeline
from passdown._extract import CODEX_SUMMARY_PREFIX
from passdown.agents import get_agent
from passdown.errors import SessionReadError
from workspace_probe import workspace_probed_once

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
FIXTURE = next((FIXTURES / "codex" / "full" / "sessions").rglob("rollout-*.jsonl"))
COPILOT_FIXTURE = next((FIXTURES / "copilot" / "full").rglob("events.jsonl"))
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
            f"python -m pytest tests/test_calc.py::test_add_{which}",
            1,
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
        compacted = {
            "timestamp": "2026-11-29T21:13:00.000Z",
            "type": "compacted",
            "payload": {"message": f"{CODEX_SUMMARY_PREFIX}\nSummary {n}: add() fixed."},
        }
        event = {
            "timestamp": "2026-11-29T21:13:00.001Z",
            "type": "event_msg",
            "payload": {"type": "context_compacted"},
        }
        return _line(compacted) + _line(event)

    def rate_limit(self) -> bytes:
        record = copy.deepcopy(TASK_COMPLETE)
        record["payload"]["error"] = {
            "message": "exceeded retry limit, last status: 429 Too Many Requests",
            "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}},
        }
        return _line(record)

    def interrupted(self) -> bytes:
        return _line(
            {
                "timestamp": "2026-11-29T21:14:00.000Z",
                "type": "event_msg",
                "payload": {"type": "turn_aborted", "reason": "interrupted"},
            }
        )

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


COPILOT: list[dict[str, Any]] = [
    json.loads(line) for line in COPILOT_FIXTURE.read_text().splitlines()
]
COPILOT_TURN_ONE = COPILOT[1:68]  # user.message .. session.shutdown
COPILOT_TURN_TWO = COPILOT[68:87]  # session.resume .. session.shutdown
WS = "/tmp/ws-copilot"


class CopilotTurnMaker(TurnMaker):
    """Real-shaped Copilot CLI events (from the recorded events.jsonl)."""

    def real_turn(self, records: list[dict[str, Any]]) -> bytes:
        n = self._next()
        out = []
        for record in records:
            record = copy.deepcopy(record)
            data = record.get("data") or {}
            for holder in [data, *(data.get("toolRequests") or [])]:
                if "toolCallId" in holder:
                    holder["toolCallId"] = f"{holder['toolCallId']}-{n}"
            if "messageId" in data:
                data["messageId"] = f"{data['messageId']}-{n}"
            out.append(_line(record))
        return b"".join(out)

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        return _line(
            {
                "type": kind,
                "data": data,
                "id": f"e{self._next()}",
                "timestamp": "2026-11-29T21:30:00.000Z",
                "parentId": None,
            }
        )

    def _call(self, name: str, args: dict[str, Any], content: str = "") -> tuple[str, bytes]:
        call_id = f"call-{self._next()}"
        request = {"toolCallId": call_id, "name": name, "arguments": args}
        line = self._event(
            "assistant.message",
            {"messageId": f"m-{call_id}", "content": content, "toolRequests": [request]},
        )
        return call_id, line

    def edit(self) -> bytes:
        """An edit whose result names the files Copilot changed (the reader adds them to
        the call it emitted earlier)."""
        n = self._next()
        call_id, call = self._call("edit", {"path": f"{WS}/src/calc.py"}, "Fixing add().")
        done = self._event(
            "tool.execution_complete",
            {
                "toolCallId": call_id,
                "success": True,
                "result": {"content": "File updated."},
                "fileEdits": [
                    {"path": f"{WS}/src/calc.py", "kind": "edit"},
                    {"path": f"{WS}/src/calc_{n}.py", "kind": "create"},
                ],
            },
        )
        return call + done

    def shell(self, command: str, exit_code: int, output: str) -> bytes:
        call_id, call = self._call("bash", {"command": command})
        done = self._event(
            "tool.execution_complete",
            {
                "toolCallId": call_id,
                "success": True,
                "result": {"content": output},
                "shellExecution": {"exitCode": exit_code},
            },
        )
        return call + done

    def reply_in_chunks(self) -> bytes:
        """One reply written as several events sharing a messageId."""
        message_id = f"reply-{self._next()}"
        return b"".join(
            self._event("assistant.message", {"messageId": message_id, "content": text})
            for text in ("Part one of the reply.", "Next steps:\n- run the suite", "- ship it")
        )

    def compaction(self) -> bytes:
        return self._event(
            "session.compaction_complete",
            {
                "success": True,
                "summaryContent": f"Summary {self._next()}: add() fixed.",
                "trigger": "auto",
            },
        )

    def rate_limit(self) -> bytes:
        return self._event(
            "session.error",
            {
                "errorType": "rate_limit",
                "statusCode": 429,
                "message": "Failed to get response from the AI model; retried 5 times. "
                "Last error: 429 Too Many Requests",
            },
        )

    def subagent(self) -> bytes:
        return self._event(
            "subagent.started",
            {
                "toolCallId": f"task-{self._next()}",
                "agentName": "explore",
                "agentDescription": "Find the tests",
            },
        )

    def user(self) -> bytes:
        return self._event(
            "user.message",
            {"messageId": f"u-{self._next()}", "content": f"Prompt {self.n}: keep going."},
        )


COPILOT_TURNS: list[Callable[[Any], bytes]] = [
    lambda m: m.real_turn(COPILOT_TURN_ONE),
    lambda m: m.real_turn(COPILOT_TURN_TWO),
    lambda m: m.edit(),
    lambda m: m.shell(
        "python -m pytest tests/test_calc.py", 1, "FAILED test_add\nFAILED (failures=1)"
    ),
    lambda m: m.shell("python -m pytest tests/test_calc.py", 0, "3 passed"),
    lambda m: m.reply_in_chunks(),
    lambda m: m.compaction(),
    lambda m: m.rate_limit(),
    lambda m: m.subagent(),
    lambda m: m.user(),
    lambda m: m.garbage(),
]


@dataclass(frozen=True)
class Case:
    """One agent's sessions for the property test."""

    agent: str
    header: bytes
    turns: list[Callable[[Any], bytes]]
    maker: Callable[[], TurnMaker]
    layout: Callable[[Path], Path]  # where the session file goes under a temp root


def _codex_layout(root: Path) -> Path:
    return root / "rollout-2026-11-29T21-12-24-01a22926-e5e1-7e83-acf2-37049be87d5c.jsonl"


def _copilot_layout(root: Path) -> Path:
    folder = root / ".copilot" / "session-state" / COPILOT_FIXTURE.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(COPILOT_FIXTURE.parent / "session.db", folder / "session.db")  # the todo plan
    return folder / "events.jsonl"


CASES = [
    Case("codex", _line(HEADER), TURNS, TurnMaker, _codex_layout),
    Case("copilot", _line(COPILOT[0]), COPILOT_TURNS, CopilotTurnMaker, _copilot_layout),
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


# How each checkpointed export of these tests read its file (`Selection.reading.how`)
READINGS: Counter[str] = Counter()


def _handoff(
    path: Path, workspace: Path, *, incremental: bool, agent_name: str = "codex"
) -> dict[str, Any]:
    """The handoff JSON (without its id and creation time) of the session at `path`."""
    agent = get_agent(agent_name)
    selection = pipeline.Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    with _env(checkpoint.DISABLE_ENV, None if incremental else "1"):
        data = pipeline.build_handoff(selection).model_dump(mode="json")
    assert selection.reading is not None
    if incremental:
        READINGS[selection.reading.how] += 1
    del data["id"], data["created_at"]
    return data


def _saved(path: Path, agent: str = "codex") -> checkpoint.Checkpoint:
    return msgspec.msgpack.decode(
        checkpoint.checkpoint_path(agent, path).read_bytes(), type=checkpoint.Checkpoint
    )


def _session(root: Path) -> tuple[Path, Path]:
    workspace = root / "ws"
    workspace.mkdir()
    return _codex_layout(root), workspace


def _outcome(path: Path, workspace: Path, *, incremental: bool, agent: str) -> dict[str, Any] | str:
    try:
        return _handoff(path, workspace, incremental=incremental, agent_name=agent)
    except SessionReadError as exc:  # e.g. nothing but a torn first line yet
        return exc.message


def _export_and_compare(path: Path, workspace: Path, agent: str = "codex") -> dict[str, Any] | str:
    incremental = _outcome(path, workspace, incremental=True, agent=agent)
    full = _outcome(path, workspace, incremental=False, agent=agent)
    assert incremental == full
    return incremental


def _assert_checkpoint_at_last_line_end(path: Path, agent: str = "codex") -> None:
    data = path.read_bytes()
    assert _saved(path, agent).offset == data.rfind(b"\n") + 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES),
    picks=st.lists(st.integers(0, 1000), min_size=1, max_size=12),
    cuts=st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=1, max_size=10),
)
def test_incremental_export_equals_full_read(
    case: Case, picks: list[int], cuts: list[tuple[bool, float]]
) -> None:
    maker = case.maker()
    turns = [case.turns[p % len(case.turns)] for p in picks]
    body = case.header + b"".join(turn(maker) for turn in turns)
    # append in chunks ending at a line end or at any byte (often inside a line)
    line_ends = [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    ends = sorted(
        {
            line_ends[int(f * (len(line_ends) - 1))] if at_line_end else int(f * len(body))
            for at_line_end, f in cuts
        }
        | {len(body)}
    )
    with tempfile.TemporaryDirectory() as tmp, workspace_probed_once():
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        path = case.layout(root)
        written = 0
        for end in ends:
            if end <= written:
                continue
            with open(path, "ab") as handle:
                handle.write(body[written:end])
            written = end
            handoff = _export_and_compare(path, workspace, case.agent)
            if b"\n" in body[:end]:
                _assert_checkpoint_at_last_line_end(path, case.agent)
        # the whole session went through (or, with no event at all, was refused)
        if isinstance(handoff, str):
            assert f"holds no readable {case.agent} record" in handoff
            return
        assert handoff["source"]["agent"] == case.agent
        real_turns = sum(turn in case.turns[:2] for turn in turns)
        assert handoff["task"]["messages_total"] >= real_turns


def _recorded_body() -> bytes:
    maker = TurnMaker()
    return (
        _line(HEADER)
        + maker.real_turn(TURN_ONE)
        + maker.failing_test(1)
        + maker.compaction()
        + maker.real_turn(TURN_TWO)
        + maker.plan(["completed", "in_progress"])
    )


def _with_a_changed_middle(path: Path, workspace: Path) -> tuple[dict[str, Any], bytes, TurnMaker]:
    """A long session exported once, and its bytes with one passing command in the middle
    (outside the fingerprinted head and tail) turned into a failure."""
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
    return first, bytes(changed), maker


def test_resumed_export_reads_only_the_appended_bytes(tmp_path: Path) -> None:
    """Proof that the prefix is not re-read: a change in its middle is not seen by the
    next export, while the appended turn is."""
    path, workspace = _session(tmp_path)
    first, changed, maker = _with_a_changed_middle(path, workspace)
    path.write_bytes(changed + maker.user())  # the same file, rewritten in place
    resumed = _handoff(path, workspace, incremental=True)
    full = _handoff(path, workspace, incremental=False)
    assert resumed["task"]["latest_user_message"] == full["task"]["latest_user_message"]
    assert resumed["task"]["latest_user_message"].endswith(": keep going.")
    assert full["state"]["commands_failed"] == first["state"]["commands_failed"] + 1
    assert resumed["state"]["commands_failed"] == first["state"]["commands_failed"]


def test_a_file_replaced_by_another_is_read_in_full(tmp_path: Path) -> None:
    """A new file at the session's path (written beside it and renamed over it) is read
    anew, even where the size and both fingerprinted ends match."""
    path, workspace = _session(tmp_path)
    first, changed, maker = _with_a_changed_middle(path, workspace)
    replacement = path.with_name("replacement.tmp")
    replacement.write_bytes(changed + maker.user())
    os.replace(replacement, path)
    after = _export_and_compare(path, workspace)
    assert isinstance(after, dict)
    assert after["state"]["commands_failed"] == first["state"]["commands_failed"] + 1


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


def test_rewritten_head_is_read_again(tmp_path: Path) -> None:
    """The first request rewritten in place (same length, in the fingerprinted head):
    the stale checkpoint is not served, the session is read again."""
    path, workspace = _session(tmp_path)
    body = _recorded_body()
    path.write_bytes(body)
    first = _export_and_compare(path, workspace)
    assert isinstance(first, dict)
    request = first["task"]["original_request"]
    at = body.find(request[:20].encode())
    assert 0 < at < checkpoint.FINGERPRINT_SPAN
    rewritten = body[:at] + b"Z" * 20 + body[at + 20 :]
    READINGS.clear()
    path.write_bytes(rewritten + TurnMaker().user())
    after = _export_and_compare(path, workspace)
    assert isinstance(after, dict)
    assert after["task"]["original_request"].startswith("Z" * 20)
    assert READINGS == {"refused": 1}


def test_a_checkpoint_of_another_format_is_ignored(tmp_path: Path) -> None:
    """A checkpoint of another format version, or of another shape, is not read: the
    session is read in full and a checkpoint of this format written."""
    path, workspace = _session(tmp_path)
    path.write_bytes(_recorded_body())
    _export_and_compare(path, workspace)
    store = checkpoint.checkpoint_path("codex", path)
    saved = _saved(path)
    later = msgspec.structs.replace(saved, format=checkpoint.CHECKPOINT_FORMAT + 1)
    for other in (
        msgspec.msgpack.encode(later),
        msgspec.msgpack.encode({"format": checkpoint.CHECKPOINT_FORMAT, "offset": saved.offset}),
        msgspec.msgpack.encode([1, 2, 3]),
    ):
        store.write_bytes(other)
        READINGS.clear()
        handoff = _export_and_compare(path, workspace)
        assert isinstance(handoff, dict) and handoff["state"]["plan"]
        assert READINGS == {"refused": 1}
        assert _saved(path).format == checkpoint.CHECKPOINT_FORMAT


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
    stale.extractor.replay.items.clear()
    store.write_bytes(msgspec.msgpack.encode(stale))
    assert _export_and_compare(path, workspace)["state"]["plan"]
    store.write_bytes(b"not a checkpoint")
    assert _export_and_compare(path, workspace)["state"]["plan"]
    # the right version, but an extractor state that cannot be restored: of another
    # definition of the state, or not one a pass reaches
    for breaks in ("shape", "first_request_at"):
        broken = _saved(path)
        if breaks == "shape":
            broken.extractor.shape = "another-definition"
        else:
            broken.extractor.first_request_at = broken.extractor.messages_total + 1
        broken.extractor.replay.items.clear()
        store.write_bytes(msgspec.msgpack.encode(broken))
        assert _export_and_compare(path, workspace)["state"]["plan"]
    assert _saved(path).offset == len(path.read_bytes())


def test_no_checkpoint_env_writes_none(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    path.write_bytes(_recorded_body())
    _handoff(path, workspace, incremental=False)
    assert not checkpoint.checkpoint_path("codex", path).exists()


def test_which_agents_support_checkpoints() -> None:
    from passdown.agents import load_agents

    supported = sorted(name for name, agent in load_agents().items() if agent.supports_checkpoint)
    assert supported == [
        *("claude", "codex", "copilot", "droid", "gemini", "gptme", "kimi", "pi", "qwen"),
    ]


def test_copilot_edit_completed_after_the_checkpoint_keeps_its_recorded_files(
    tmp_path: Path,
) -> None:
    """Copilot adds the files its result lists to the edit call emitted earlier: after a
    checkpoint between the call and its result, the restored reader must complete the
    call extraction is waiting on, not a copy of it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = _copilot_layout(tmp_path)
    maker = CopilotTurnMaker()
    created = f"{WS}/src/calc_{maker.n + 1}.py"
    edit = maker.edit()
    call, result = edit.splitlines(keepends=True)
    path.write_bytes(_line(COPILOT[0]) + maker.user() + call)
    _export_and_compare(path, workspace, "copilot")
    with open(path, "ab") as handle:
        handle.write(result)
    handoff = _export_and_compare(path, workspace, "copilot")
    assert isinstance(handoff, dict)
    touched = {f["path"]: f["confirmed"] for f in handoff["state"]["files_touched"]}
    assert touched == {f"{WS}/src/calc.py": True, created: True}


def test_copilot_reply_split_across_the_checkpoint_is_one_message(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = _copilot_layout(tmp_path)
    maker = CopilotTurnMaker()
    chunks = maker.reply_in_chunks().splitlines(keepends=True)
    path.write_bytes(_line(COPILOT[0]) + maker.user() + chunks[0])
    _export_and_compare(path, workspace, "copilot")
    with open(path, "ab") as handle:
        handle.write(b"".join(chunks[1:]))
    handoff = _export_and_compare(path, workspace, "copilot")
    assert isinstance(handoff, dict)
    assert handoff["task"]["latest_progress"] == (
        "Part one of the reply.\n\nNext steps:\n- run the suite\n\n- ship it"
    )
    assert handoff["state"]["plan"]  # the todo plan from session.db, read at the end


def test_progress_counts_offsets_in_the_file(tmp_path: Path) -> None:
    """A terminal's progress bar sees how far into the file the resumed read is."""
    from passdown._jsonl import read_progress

    path, workspace = _session(tmp_path)
    body = _recorded_body()
    path.write_bytes(body)
    _handoff(path, workspace, incremental=True)
    appended = TurnMaker().user()
    with open(path, "ab") as handle:
        handle.write(appended)
    seen: list[int] = []
    token = read_progress.set(lambda _path, done: seen.append(done))
    try:
        _handoff(path, workspace, incremental=True)
    finally:
        read_progress.reset(token)
    assert seen and max(seen) == len(body) + len(appended)


def test_checkpoints_unused_for_a_month_are_removed(tmp_path: Path) -> None:
    path, workspace = _session(tmp_path)
    path.write_bytes(_recorded_body())
    _handoff(path, workspace, incremental=True)
    store = checkpoint.checkpoint_path("codex", path)
    old = store.with_name("codex-" + "0" * 32 + ".msgpack")
    old.write_bytes(b"an old session's checkpoint")
    month_ago = time.time() - (checkpoint.STALE_AFTER_DAYS + 1) * 86400
    os.utime(old, (month_ago, month_ago))
    (tmp_path / "other").mkdir()
    other, _ = _session(tmp_path / "other")
    other.write_bytes(_recorded_body())
    _handoff(other, workspace, incremental=True)  # a new session's first checkpoint
    assert not old.exists()
    assert store.exists() and checkpoint.checkpoint_path("codex", other).exists()


def test_checkpoints_need_no_ctypes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkpoint's digest is hashlib's: with ctypes unimportable (a Python without
    it), an export after an append still reads only the appended bytes."""
    monkeypatch.setitem(sys.modules, "ctypes", None)
    path, workspace = _session(tmp_path)
    body = _recorded_body()
    cut = body.rfind(b"\n", 0, len(body) // 2) + 1
    path.write_bytes(body[:cut])
    _export_and_compare(path, workspace)
    READINGS.clear()
    with open(path, "ab") as handle:
        handle.write(body[cut:])
    handoff = _export_and_compare(path, workspace)
    assert READINGS == {"resumed": 1}
    assert isinstance(handoff, dict) and handoff["state"]["plan"]
    assert _saved(path).offset == len(body)
