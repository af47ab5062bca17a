"""The extractor's state is the checkpoint: `ExtractorState` encoded to msgpack and
decoded into a new extractor goes on exactly like the extractor that was never stopped,
for the recorded sessions of every agent with checkpoints and for generated streams, and
no field of the state is lost on the way."""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passdown import _extract
from passdown._extract import (
    Extracted,
    ExtractorState,
    _Extractor,
    extractor_state,
    new_extractor,
    restore_extractor,
)
from passdown.agents import get_agent, load_agents
from passdown.transcript import (
    Compaction,
    Event,
    Message,
    PlanItem,
    PlanOp,
    SessionEnding,
    SubagentNote,
    ToolCall,
    ToolResult,
)
from recorded import Recorded, scenarios

WS = "/tmp/passdown-state/ws"
CHECKPOINTED = sorted(name for name, agent in load_agents().items() if agent.supports_checkpoint)
RECORDED = [r for name in CHECKPOINTED for r in scenarios(name)]


def _outcome(extracted: Extracted) -> dict[str, Any]:
    return {
        "task": extracted.task.model_dump(),
        "state": extracted.state.model_dump(),
        "ended": extracted.ended.model_dump(),
    }


def _through_bytes(extractor: _Extractor) -> _Extractor:
    """What a checkpoint does: the state to msgpack bytes and back into an extractor."""
    data = msgspec.msgpack.encode(extractor_state(extractor))
    return restore_extractor(msgspec.msgpack.decode(data, type=ExtractorState))


def _fresh(frozen: bytes) -> list[Event]:
    """The events as new objects for each pass: extraction keeps (and a plan replay
    changes) the objects it is fed."""
    events: list[Event] = pickle.loads(frozen)
    return events


def _resumed_at(frozen: bytes, cuts: list[int], max_messages: int) -> dict[str, Any]:
    events = _fresh(frozen)
    extractor = new_extractor(workspace=WS, max_messages=max_messages, max_chars=2_000)
    done = 0
    for cut in [*cuts, len(events)]:
        for event in events[done:cut]:
            extractor.feed(event)
        done = max(done, cut)
        if cut < len(events):
            extractor = _through_bytes(extractor)
    return _outcome(extractor.finish())


def _uninterrupted(frozen: bytes, max_messages: int) -> dict[str, Any]:
    return _resumed_at(frozen, [], max_messages)


def _recorded_events(rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """The recorded session read through its agent's reader, from a copy in tmp_path."""
    path = rec.install(tmp_path / "store", monkeypatch)
    agent = get_agent(rec.agent)
    events = list(agent.read(agent.ref_for_path(path)).events())
    shutil.rmtree(tmp_path / "store")
    assert events
    return pickle.dumps(events)


def test_every_checkpointed_agent_has_a_recorded_session() -> None:
    assert CHECKPOINTED  # the agents with `supports_checkpoint`
    assert sorted({r.agent for r in RECORDED}) == CHECKPOINTED


@pytest.mark.parametrize("max_messages", [2, 24])
@pytest.mark.parametrize("rec", [pytest.param(r, id=r.id) for r in RECORDED])
def test_a_resume_at_any_event_gives_the_handoff_of_a_full_read(
    rec: Recorded, max_messages: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = _recorded_events(rec, tmp_path, monkeypatch)
    count = len(pickle.loads(frozen))
    whole = _uninterrupted(frozen, max_messages)
    for cut in range(count + 1):
        assert _resumed_at(frozen, [cut], max_messages) == whole, f"resumed at event {cut}"
    # and a checkpoint after every event, each export resuming the last one
    assert _resumed_at(frozen, list(range(1, count)), max_messages) == whole


# -- generated streams: every relation the state holds, the bounds reached -------------
_COMMANDS = ["pytest tests/test_a.py::test_x", "pytest tests", "make", "grep -q x f"]
_PATHS = [f"{WS}/a.py", f"{WS}/b.py", "/elsewhere/c.py", f"{WS}/d/e.py"]
_CALL_IDS = st.sampled_from([f"c{i}" for i in range(8)])
_BY = st.sampled_from([None, None, "agent-1"])
_ITEM = st.builds(
    PlanItem,
    id=st.sampled_from(["1", "2", "3"]),
    subject=st.sampled_from(["write", "test", "ship"]),
    status=st.sampled_from(["pending", "in_progress", "completed"]),
)
_PLAN = st.one_of(
    st.builds(PlanOp, op=st.just("create"), items=st.tuples(_ITEM)),
    st.builds(
        PlanOp,
        op=st.just("update"),
        item_id=st.sampled_from(["1", "2", "3"]),
        status=st.sampled_from(["in_progress", "completed", "deleted"]),
    ),
    st.builds(PlanOp, op=st.just("replace"), items=st.lists(_ITEM, max_size=3).map(tuple)),
)
_CALL = st.one_of(
    st.builds(
        ToolCall,
        call_id=_CALL_IDS,
        name=st.just("Bash"),
        action=st.just("command"),
        command=st.sampled_from(_COMMANDS),
        by=_BY,
    ),
    st.builds(
        ToolCall,
        call_id=_CALL_IDS,
        name=st.just("Edit"),
        action=st.sampled_from(["edit", "write", "delete"]),
        paths=st.lists(st.sampled_from(_PATHS), min_size=1, max_size=2).map(tuple),
        by=_BY,
    ),
    st.builds(
        ToolCall, call_id=_CALL_IDS, name=st.just("TodoWrite"), action=st.just("plan"), plan=_PLAN
    ),
    st.builds(ToolCall, call_id=_CALL_IDS, name=st.just("Task"), action=st.just("subagent")),
)


def _result(call_id: st.SearchStrategy[str]) -> st.SearchStrategy[ToolResult]:
    return st.builds(
        ToolResult,
        call_id=call_id,
        is_error=st.booleans(),
        exit_code=st.sampled_from([None, 0, 0, 1, 2]),
        error=st.sampled_from([None, "boom"]),
        created_item_id=st.sampled_from([None, None, "7"]),
    )


_MESSAGE = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant"]),
    text=st.sampled_from(["fix add()", "Decision: use ints. Next: run the tests", "ok"]),
    synthetic=st.sampled_from([False, False, False, True]),
)
_LONE = st.one_of(
    _CALL,  # its result comes later, or never
    _result(_CALL_IDS),
    _PLAN,
    st.builds(Compaction, summary=st.sampled_from([None, "", "the importer is half done"])),
    st.builds(SubagentNote, agent_id=st.sampled_from(["agent-1", "agent-2"])),
    st.builds(SessionEnding, reason=st.sampled_from(["rate_limit", "error", "interrupted"])),
)


@st.composite
def _stream(draw: st.DrawFn) -> list[Event]:
    """A session's events: mostly calls answered right away (a failure, then the run that
    fixes it) and messages, with calls never answered, stray results and the rest."""
    events: list[Event] = []
    for step in draw(st.lists(st.sampled_from("cccmmml"), min_size=4, max_size=40)):
        if step == "c":
            call = draw(_CALL)
            events += [call, draw(_result(st.just(call.call_id)))]
        else:
            events.append(draw(_MESSAGE if step == "m" else _LONE))
    return events


@contextmanager
def _small_bounds() -> Iterator[None]:
    """The extractor's bounds cut down, so short streams reach every one of them."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "FILES_KEEP": 2,
            "RECENT_COMMANDS": 3,
            "RECENT_FAILED_EDITS": 2,
            "SUBAGENTS_KEEP": 2,
            "OPEN_FAILURES": 2,
            "PENDING_KEEP": 3,
        }.items():
            patch.setattr(_extract, name, value)
        yield


@settings(max_examples=300, deadline=None)
@given(events=_stream(), max_messages=st.integers(min_value=2, max_value=4), data=st.data())
def test_a_resume_anywhere_in_a_generated_stream_changes_nothing(
    events: list[Event], max_messages: int, data: st.DataObject
) -> None:
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(events)), max_size=3))
    frozen = pickle.dumps(events)
    with _small_bounds():
        whole = _uninterrupted(frozen, max_messages)
        resumed = _resumed_at(frozen, sorted(cuts), max_messages)
    assert resumed == whole


# -- no field of the state is lost -----------------------------------------------------
def _is_default(field: msgspec.structs.FieldInfo, value: object) -> bool:
    if field.default is not msgspec.NODEFAULT:
        return bool(value == field.default)
    if field.default_factory is not msgspec.NODEFAULT:
        return bool(value == field.default_factory())
    return False


def _busy_states() -> list[ExtractorState]:
    """Two states that between them hold every field of `ExtractorState` away from its
    default (the newest failure is open in the first, resolved in the second)."""
    states = []
    for fix_it in (False, True):
        extractor = new_extractor(workspace=WS, max_messages=3, max_chars=1_000)
        events: list[Event] = [
            Message(role="user", text="fix add()"),
            Message(role="assistant", text="on it"),
            Compaction(summary="the importer is half done"),
            ToolCall(
                call_id="p",
                name="TodoWrite",
                action="plan",
                plan=PlanOp(op="create", items=(PlanItem("1", "fix"),)),
            ),
            ToolResult(call_id="p"),
            SubagentNote(agent_id="agent-1", description="look around"),
            ToolCall(call_id="s", name="Task", action="subagent"),
            ToolCall(call_id="x", name="Edit", action="edit", paths=(f"{WS}/x.py",)),
            ToolResult(call_id="x", is_error=True, error="old_string not found"),
            *[
                event
                for i in range(3)
                for event in (
                    ToolCall(
                        call_id=f"e{i}", name="Write", action="write", paths=(f"{WS}/{i}.py",)
                    ),
                    ToolResult(call_id=f"e{i}"),
                )
            ],
            ToolCall(call_id="t", name="Bash", action="command", command="pytest tests"),
            ToolResult(call_id="t", exit_code=1, error="1 failed"),
            Message(role="user", text="and now?"),
            Message(role="assistant", text="fixing"),
            ToolCall(call_id="w", name="Bash", action="command", command="make"),
        ]
        if fix_it:
            events += [
                ToolCall(call_id="t2", name="Bash", action="command", command="pytest tests"),
                ToolResult(call_id="t2", exit_code=0),
            ]
        events.append(SessionEnding(reason="rate_limit"))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_extract, "FILES_KEEP", 2)
            for event in events:
                extractor.feed(event)
        states.append(extractor_state(extractor))
    return states


def test_every_field_of_the_state_survives_encoding() -> None:
    states = _busy_states()
    fields = msgspec.structs.fields(ExtractorState)
    at_default = [f.name for f in fields if all(_is_default(f, getattr(s, f.name)) for s in states)]
    assert at_default == [], "give these fields a value in _busy_states"
    for state in states:
        decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=ExtractorState)
        for f in fields:
            assert getattr(decoded, f.name) == getattr(state, f.name), f.name
        assert decoded == state


def test_a_state_of_another_shape_or_out_of_reach_is_not_restored() -> None:
    state = _busy_states()[0]
    assert restore_extractor(state).state is state
    for change in (
        {"shape": "another-definition"},
        {"first_request_at": state.messages_total + 1},
        {"recent_start": len(state.recent)},
        {"recent": [*state.recent, *state.recent]},
        {"open_failures": [], "newest_failure_open": True},
    ):
        with pytest.raises(ValueError):
            restore_extractor(msgspec.structs.replace(state, **change))
