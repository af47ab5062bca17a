"""Two-core reads (passdown._two_core): the second half reduced by a worker and merged
gives exactly what one pass gives.

Two levels:
- extraction: random event lists cut in three (before the cut | the worker's half |
  what comes later, as an incremental export would feed it): the extractor that read
  the first part and merged the reduced half (sent through msgpack, as the worker does)
  has the very state of the extractor that read it all, before and after the rest;
- real-shaped Codex and Copilot CLI sessions (grown from tests/fixtures/sessions/, with
  failing and passing test runs, plan updates, edits, replies in chunks, compactions,
  endings and unanswered calls inserted)
  cut at random line boundaries: the handoff and the checkpoint written equal the
  single-core ones, whether the merge was used or refused (then the main process read
  the second half itself).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from passdown import _half_extract, _two_core
from passdown._checkpoint import Checkpoint
from passdown._extract import _Extractor, new_extractor
from passdown._extract_state import extractor_state
from passdown._pipeline import Selection, build_handoff
from passdown.agents import get_agent
from passdown.agents._split import CodexSplitter, CopilotSplitter
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import realshape

from test_incremental import COPILOT_TURNS, TURNS, CopilotTurnMaker, TurnMaker
from worker_procs import assert_killed_export_leaves_no_worker, hook_exports, start_export

WS = "/ws"
_REAL_CUT = CodexSplitter.cut
_REAL_COPILOT_CUT = CopilotSplitter.cut
MAX_MESSAGES = 4  # a small ring, so the reduction has to drop messages


# extraction level ------------------------------------------------------------------
def _plan_items() -> st.SearchStrategy[PlanItem]:
    return st.builds(
        PlanItem,
        id=st.sampled_from(["1", "2", "3", ""]),
        subject=st.sampled_from(["Write tests", "Fix add()", "Ship"]),
        status=st.sampled_from(["pending", "in_progress", "completed", "blocked"]),
        blocked_by=st.sampled_from([(), ("1",)]),
    )


PLAN_OPS = st.one_of(
    st.builds(PlanOp, op=st.just("replace"), items=st.lists(_plan_items(), max_size=3).map(tuple)),
    st.builds(PlanOp, op=st.just("create"), items=_plan_items().map(lambda item: (item,))),
    st.builds(
        PlanOp,
        op=st.just("update"),
        item_id=st.sampled_from(["1", "2", "3", "goal"]),
        status=st.sampled_from([None, "completed", "deleted", "in_progress"]),
        subject=st.sampled_from([None, "Renamed"]),
    ),
)
COMMANDS = [
    "python -m pytest tests/test_a.py::test_x",
    "python -m pytest tests/test_a.py",
    "pytest",
    "pytest -k slow",
    "make build",
    "grep -r needle .",
    "ruff check src",
    "  ruff   check src ",
]
TEXTS = [
    "Fix the failing test in calc.py",
    "Done. Decision: use unittest.\nNext steps:\n- run the suite\n- ship",
    "I am blocked on the missing API key. Should I mock it?",
    "x" * 300,
    "Keep going.",
]


def _events(ids: list[str]) -> st.SearchStrategy[Event]:
    call_ids = st.sampled_from(ids)
    return st.one_of(
        st.builds(
            Message,
            role=st.sampled_from(["user", "assistant"]),
            text=st.sampled_from(TEXTS),
            timestamp=st.sampled_from([None, "2026-11-30T10:00:00Z"]),
            synthetic=st.sampled_from([False, False, False, True]),
        ),
        st.builds(
            ToolCall,
            call_id=call_ids,
            name=st.sampled_from(["exec_command", "apply_patch", "update_plan", "Task"]),
            action=st.sampled_from(
                ["edit", "write", "delete", "command", "command", "plan", "subagent", "read"]
            ),
            paths=st.lists(
                st.sampled_from(["/ws/a.py", "/ws/b.py", "c.py", "/elsewhere/d.py"]), max_size=2
            ).map(tuple),
            command=st.sampled_from(COMMANDS),
            plan=st.one_of(st.none(), PLAN_OPS),
            by=st.sampled_from([None, None, "agent-1"]),
        ),
        st.builds(
            ToolResult,
            call_id=call_ids,
            is_error=st.sampled_from([False, False, True]),
            exit_code=st.sampled_from([None, 0, 0, 1, 2]),
            error=st.sampled_from([None, "E   assert 1 == 2"]),
            created_item_id=st.sampled_from([None, None, "7"]),
        ),
        PLAN_OPS,
        st.builds(Compaction, summary=st.sampled_from([None, "", "Summary: add() fixed."])),
        st.builds(SubagentNote, agent_id=st.sampled_from(["agent-1", "agent-2"])),
        st.builds(
            SessionEnding,
            reason=st.sampled_from(["rate_limit", "interrupted"]),
            message=st.sampled_from([None, "429"]),
        ),
    )


def _state(extractor: _Extractor) -> Any:
    return msgspec.to_builtins(extractor_state(extractor))


def _fed(events: list[Event], extractor: _Extractor | None = None) -> _Extractor:
    extractor = extractor or new_extractor(workspace=WS, max_messages=MAX_MESSAGES, max_chars=2000)
    for event in copy.deepcopy(events):
        extractor.feed(event)
    return extractor


def _through_worker(events: list[Event]) -> _half_extract.Partial:
    partial = _half_extract.reduce_events(
        copy.deepcopy(events), workspace=WS, max_messages=MAX_MESSAGES, max_chars=2000
    )
    return msgspec.msgpack.decode(msgspec.msgpack.encode(partial), type=_half_extract.Partial)


def _merged(before: list[Event], half: list[Event]) -> _Extractor:
    extractor = _fed(before)
    _half_extract.merge(extractor, _through_worker(half))
    return extractor


def _finished(extractor: _Extractor) -> Any:
    done = extractor.finish()
    return (done.task.model_dump(), done.state.model_dump(), done.ended.model_dump())


def _assert_same(one: _Extractor, two: _Extractor) -> None:
    assert _state(two) == _state(one)
    assert _finished(two) == _finished(one)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.lists(_events(["a1", "a2", "a3", "shared"]), max_size=30),
    half=st.lists(_events(["b1", "b2", "b3", "b4", "shared"]), max_size=60),
    after=st.lists(_events(["a1", "b1", "c1", "shared"]), max_size=15),
)
def test_merged_half_is_the_single_pass_state(
    before: list[Event], half: list[Event], after: list[Event]
) -> None:
    prefix = _fed(before)
    if set(prefix.pending) & _half_extract.call_ids(half):
        # the worker's half names a call still pending before the cut: the split read
        # refuses to merge (the main process reads the half itself)
        assert _half_extract.conflicting_ids(prefix.pending, _ids(half))
        tally("refused: a call pending at the cut")
        return
    tally("merged")
    single = _fed(before + half)
    merged = _merged(before, half)
    assert _state(merged) == _state(single)
    # and on from there, as an incremental export continues from a checkpoint
    _assert_same(_fed(after, single), _fed(after, merged))


def _ids(events: list[Event]) -> _half_extract._IdFilter:
    ids = _half_extract._IdFilter()
    for call_id in _half_extract.call_ids(events):
        ids.add(call_id)
    return ids


def _command(
    call_id: str, command: str, exit_code: int, *, error: str | None = None
) -> list[Event]:
    return [
        ToolCall(call_id=call_id, name="exec_command", action="command", command=command),
        ToolResult(call_id=call_id, exit_code=exit_code, error=error),
    ]


def test_a_failure_before_the_cut_is_resolved_by_a_pass_after_it() -> None:
    before = [
        Message(role="user", text="Fix the test"),
        *_command("a1", "python -m pytest tests/test_a.py::test_x", 1, error="FAILED test_x"),
        *_command("a2", "make build", 2, error="make: *** [all] Error 2"),
    ]
    half = [
        *_command("b1", "ruff check src", 0),
        *_command("b2", "python -m pytest tests/test_a.py", 0),
        Message(role="assistant", text="Fixed."),
    ]
    merged = _merged(before, half)
    _assert_same(_fed(before + half), merged)
    done = merged.finish().state
    assert done.last_failure is not None and done.last_failure.command == "make build"
    assert not done.last_failure.resolved_later  # the newest unresolved one is the blocker
    assert [run.command for run in done.commands][-1] == "python -m pytest tests/test_a.py"
    # the pytest failure before the cut was closed by the passing run after it
    assert [o.failure.command for o in merged.open_failures] == ["make build"]


def test_failures_after_the_cut_push_out_those_before_it() -> None:
    before: list[Event] = []
    for i in range(10):
        before += _command(f"a{i}", f"cmd-{i} --flag", 1)
    half: list[Event] = []
    for i in range(12):
        half += _command(f"b{i}", f"other-{i}", 3)
    half += _command("b-pass", "cmd-3 --flag", 0)  # would close cmd-3: it was pushed out
    half += _command("b-pass2", "cmd-8 --flag", 0)  # closes cmd-8, still open
    merged = _merged(before, half)
    _assert_same(_fed(before + half), merged)
    open_now = [o.failure.command for o in merged.open_failures]
    assert open_now == ["cmd-6 --flag", "cmd-7 --flag", "cmd-9 --flag"] + [
        f"other-{i}" for i in range(12)
    ]


def test_plan_ops_on_both_sides_of_the_cut() -> None:
    before: list[Event] = [
        PlanOp(op="create", items=(PlanItem(id="", subject="Write tests"),)),
        PlanOp(op="create", items=(PlanItem(id="", subject="Fix add()"),)),
    ]
    half: list[Event] = [
        PlanOp(op="update", item_id="1", status="completed"),
        PlanOp(op="create", items=(PlanItem(id="", subject="Ship"),)),
        PlanOp(op="update", item_id="2", status="in_progress"),
    ]
    merged = _merged(before, half)
    _assert_same(_fed(before + half), merged)
    plan = merged.finish().state.plan
    assert [(p.id, p.subject, p.status) for p in plan] == [
        ("1", "Write tests", "completed"),
        ("2", "Fix add()", "in_progress"),
        ("3", "Ship", "pending"),  # numbered after the two created before the cut
    ]


def test_a_replacement_after_the_cut_drops_the_changes_before_it_unless_one_created() -> None:
    """The changes before a replacement are overwritten, but a tree reader replays the
    same changes onto its own plan, where a created id the plan before the cut holds
    renames the older item: changes that created an item are kept."""
    before: list[Event] = [PlanOp(op="create", items=(PlanItem(id="", subject="Old"),))]
    updated_first: list[Event] = [
        PlanOp(op="update", item_id="1", status="completed"),
        PlanOp(op="replace", items=(PlanItem(id="1", subject="New plan"),)),
        PlanOp(op="create", items=(PlanItem(id="", subject="After"),)),
    ]
    created_first: list[Event] = [
        PlanOp(op="create", items=(PlanItem(id="", subject="Dropped"),)),
        PlanOp(op="replace", items=(PlanItem(id="1", subject="New plan"),)),
        PlanOp(op="create", items=(PlanItem(id="", subject="After"),)),
    ]
    kept = {
        "updated first": ["replace", "create"],
        "created first": ["create", "replace", "create"],
    }
    for name, half in (("updated first", updated_first), ("created first", created_first)):
        partial = _through_worker(half)
        assert [step.op.op for step in partial.steps()] == kept[name]
        assert partial.plan_creates_before == 0
        merged = _merged(before, half)
        _assert_same(_fed(before + half), merged)
        assert [p.subject for p in merged.plan.values()] == ["New plan", "After"]
        # numbered after the one created before the cut (and the dropped one)
        assert list(merged.plan) == ["1", "2" if name == "updated first" else "3"]


def test_messages_the_ring_drops_are_counted_and_the_first_request_kept() -> None:
    before: list[Event] = [Message(role="assistant", text="Hello, what shall I do?")]
    half: list[Event] = [Message(role="user", text="First request")]
    half += [Message(role="assistant", text=f"Step {i}") for i in range(10)]
    partial = _through_worker(half)
    # the first request, then the ring (4): the other six travel as a count
    assert [m.text for m in partial.kept_messages] == [
        "First request",
        *(f"Step {i}" for i in range(6, 10)),
    ]
    merged = _merged(before, half)
    _assert_same(_fed(before + half), merged)
    task = merged.finish().task
    assert task.original_request == "First request"
    assert task.latest_user_message == "First request"
    assert task.messages_total == 12


def test_an_ending_after_the_cut_survives_only_if_nothing_follows_it() -> None:
    before: list[Event] = [SessionEnding(reason="rate_limit", message="429")]
    quiet: list[Event] = [Compaction(summary="Summary")]
    recovered: list[Event] = [Message(role="assistant", text="Back.")]
    hit: list[Event] = [
        Message(role="assistant", text="Back."),
        SessionEnding(reason="interrupted"),
    ]
    for half, reason in ((quiet, "rate_limit"), (recovered, "normal"), (hit, "interrupted")):
        merged = _merged(before, half)
        _assert_same(_fed(before + half), merged)
        assert merged.finish().ended.reason == reason


def test_files_touched_on_both_sides_merge_in_order_of_last_touch() -> None:
    def edit(call_id: str, path: str, action: str = "edit") -> list[Event]:
        return [
            ToolCall(call_id=call_id, name="apply_patch", action=action, paths=(path,)),  # type: ignore[arg-type]
            ToolResult(call_id=call_id),
        ]

    before = [*edit("a1", "/ws/a.py", "write"), *edit("a2", "/ws/b.py")]
    half = [*edit("b1", "/ws/a.py"), *edit("b2", "/ws/c.py", "write"), *edit("b3", "/ws/b.py")]
    merged = _merged(before, half)
    _assert_same(_fed(before + half), merged)
    files = merged.finish().state.files_touched
    assert [(f.path, f.actions) for f in files] == [
        ("a.py", ["write", "edit"]),
        ("c.py", ["write"]),
        ("b.py", ["edit"]),
    ]


def test_a_call_pending_at_the_cut_whose_result_comes_after_it_is_a_conflict() -> None:
    before = [ToolCall(call_id="x1", name="exec_command", action="command", command="make")]
    half: list[Event] = [ToolResult(call_id="x1", exit_code=0)]
    prefix = _fed(before)
    assert _half_extract.conflicting_ids(prefix.pending, _ids(half))
    assert not _half_extract.conflicting_ids(prefix.pending, _ids([ToolResult(call_id="y1")]))


def test_the_id_filter_knows_every_id_it_was_given() -> None:
    ids = _half_extract._IdFilter()
    given_ids = [f"call_{n:08x}" for n in range(20_000)]
    for call_id in given_ids:
        ids.add(call_id)
    assert all(call_id in ids for call_id in given_ids)
    others = [f"other_{n}" for n in range(10_000)]
    assert sum(call_id in ids for call_id in others) < 10  # rare false positives
    sent = _half_extract._IdFilter(bytes(ids.payload()))  # as the worker sends it
    assert all(call_id in sent for call_id in given_ids)


# real-shaped Codex sessions ---------------------------------------------------------
def _grow(tmp_path_factory: pytest.TempPathFactory, agent: str) -> bytes:
    fixture = realshape.fixtures()[agent]
    root = tmp_path_factory.mktemp("grown")
    path = realshape.install(fixture, root / agent)
    realshape.Grower(fixture).write(path, 600_000)
    return path.read_bytes()


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _grow(tmp_path_factory, "codex")


@pytest.fixture(scope="module")
def grown_copilot(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _grow(tmp_path_factory, "copilot")


def _session(tmp: Path, data: bytes, agent: str = "codex") -> Path:
    fixture = realshape.fixtures()[agent]
    root = tmp / agent
    shutil.rmtree(root, ignore_errors=True)
    path = realshape.install(fixture, root)
    path.write_bytes(data)
    return path


def _export(
    path: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch, *, single: bool, agent: str = "codex"
) -> tuple[dict[str, Any], dict[str, Any]]:
    data_dir = tmp / ("single" if single else "split")
    shutil.rmtree(data_dir, ignore_errors=True)
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(data_dir))
    monkeypatch.setenv(realshape.fixtures()[agent].env_var, str(tmp / agent))
    if single:
        monkeypatch.setenv("PASSDOWN_SINGLE_CORE", "1")
    else:
        monkeypatch.delenv("PASSDOWN_SINGLE_CORE", raising=False)
    agent = get_agent(agent)
    handoff = build_handoff(Selection(agent=agent, ref=agent.ref_for_path(path), workspace=tmp))
    out = json.loads(handoff.to_json())
    del out["id"], out["created_at"]
    saved = msgspec.msgpack.decode(
        next((data_dir / "checkpoints").glob("*.msgpack")).read_bytes(), type=Checkpoint
    )
    checkpoint = msgspec.to_builtins(msgspec.structs.replace(saved, reader=None))
    checkpoint["reader"] = msgspec.msgpack.decode(saved.reader)
    return out, checkpoint


def _lines_with(grown: bytes, pieces: list[tuple[int, int]], agent: str = "codex") -> bytes:
    """The grown session with real-shaped pieces inserted at line positions."""
    lines = grown.splitlines(keepends=True)
    maker, turns = (TurnMaker(), TURNS) if agent == "codex" else (CopilotTurnMaker(), COPILOT_TURNS)
    for position, which in sorted(pieces, reverse=True):
        at = 1 + position % (len(lines) - 1)  # never before the session header
        lines.insert(at, turns[which % len(turns)](maker))
    return b"".join(lines)


@pytest.fixture
def split_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Force the split on small files, at the line start the test picks."""
    chosen: list[int] = []
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setattr(CodexSplitter, "cut", lambda self, fd, start, end: chosen[0])
    monkeypatch.setattr(CopilotSplitter, "cut", lambda self, fd, start, end: chosen[0])
    yield chosen


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    pieces=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, len(TURNS) - 1)), max_size=12),
    where=st.floats(0.02, 0.98),
)
@pytest.mark.fork_checkpoint
def test_codex_split_at_any_line_equals_the_single_pass(
    grown: bytes,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],
    pieces: list[tuple[int, int]],
    where: float,
) -> None:
    tmp = tmp_path_factory.mktemp("split")
    data = _lines_with(grown, pieces)
    path = _session(tmp, data)
    cut = data.index(b"\n", int(len(data) * where)) + 1
    split_at[:] = [cut]
    single = _export(path, tmp, monkeypatch, single=True)
    assert _two_core.LAST == {}
    split = _export(path, tmp, monkeypatch, single=False)
    assert _two_core.LAST["cut"] == cut  # the split did run (merged or refused)
    tally("merged" if _two_core.LAST["merged"] else f"refused: {_two_core.LAST['reason']}")
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    pieces=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 100)), max_size=12),
    where=st.floats(0.02, 0.98),
)
@pytest.mark.fork_checkpoint
def test_copilot_split_at_any_line_equals_the_single_pass(
    grown_copilot: bytes,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],
    pieces: list[tuple[int, int]],
    where: float,
) -> None:
    tmp = tmp_path_factory.mktemp("split")
    data = _lines_with(grown_copilot, pieces, "copilot")
    path = _session(tmp, data, "copilot")
    cut = data.index(b"\n", int(len(data) * where)) + 1
    split_at[:] = [cut]
    single = _export(path, tmp, monkeypatch, single=True, agent="copilot")
    split = _export(path, tmp, monkeypatch, single=False, agent="copilot")
    assert _two_core.LAST["cut"] == cut
    tally("merged" if _two_core.LAST["merged"] else f"refused: {_two_core.LAST['reason']}")
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()


@pytest.mark.fork_checkpoint
def test_copilot_reply_buffered_at_a_clean_cut_is_flushed_before_the_half(
    grown_copilot: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    """A cut right after an assistant chunk: the reply is still buffered before the cut,
    and the half's first event flushes it."""
    maker = CopilotTurnMaker()
    path = _session(tmp_path, grown_copilot, "copilot")
    with os.fdopen(os.open(path, os.O_RDONLY), "rb") as handle:
        clean = _REAL_COPILOT_CUT(
            CopilotSplitter(), handle.fileno(), len(grown_copilot) // 2, len(grown_copilot)
        )
    assert clean is not None
    data = grown_copilot[:clean] + maker.reply_in_chunks() + maker.user() + grown_copilot[clean:]
    path.write_bytes(data)
    single = _export(path, tmp_path, monkeypatch, single=True, agent="copilot")
    split_at[:] = [data.index(b'{"type":"user.message","data":{"messageId":"u-')]
    assert _export(path, tmp_path, monkeypatch, single=False, agent="copilot") == single
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    # a cut between two chunks of one reply is refused
    second_chunk = data.index(b"Next steps:\\n- run the suite")
    split_at[:] = [data.rindex(b"\n", 0, second_chunk) + 1]
    assert _export(path, tmp_path, monkeypatch, single=False, agent="copilot") == single
    assert _two_core.LAST["merged"] is False
    assert "reply runs across the cut" in _two_core.LAST["reason"]
    _assert_no_children()


@pytest.mark.fork_checkpoint
def test_a_clean_cut_is_merged_and_a_cut_inside_a_call_is_refused(
    grown: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path = _session(tmp_path, grown)
    single = _export(path, tmp_path, monkeypatch, single=True)
    with os.fdopen(os.open(path, os.O_RDONLY), "rb") as handle:
        clean = _REAL_CUT(CodexSplitter(), handle.fileno(), 0, len(grown))
    assert clean is not None
    split_at[:] = [clean]
    assert _export(path, tmp_path, monkeypatch, single=False) == single
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    # a cut between a call and its output: the output names a call the first half holds
    call = grown.index(b'"type":"function_call"', len(grown) // 2)
    split_at[:] = [grown.index(b"\n", call) + 1]
    assert _export(path, tmp_path, monkeypatch, single=False) == single
    assert _two_core.LAST["merged"] is False
    assert "at the cut is named after it" in _two_core.LAST["reason"]
    _assert_no_children()


@pytest.mark.fork_checkpoint
def test_a_failing_worker_costs_a_reread_never_a_wrong_handoff(
    grown: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path = _session(tmp_path, grown)
    single = _export(path, tmp_path, monkeypatch, single=True)
    split_at[:] = [grown.index(b"\n", len(grown) // 2) + 1]

    def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_two_core, "_read_half", broken)
    assert _export(path, tmp_path, monkeypatch, single=False) == single
    assert _two_core.LAST["merged"] is False
    assert "disk on fire" in _two_core.LAST["reason"]
    _assert_no_children()


def test_an_error_in_the_first_half_stops_and_reaps_the_worker(
    grown: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path = _session(tmp_path, grown)
    split_at[:] = [grown.index(b"\n", len(grown) // 2) + 1]

    def feed(self: _Extractor, event: Event) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_Extractor, "feed", feed)
    with pytest.raises(KeyboardInterrupt):
        _export(path, tmp_path, monkeypatch, single=False)
    _assert_no_children()


@pytest.mark.fork_checkpoint
def test_the_switch_and_the_size_threshold_keep_it_single_core(
    grown: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path, grown)
    _export(path, tmp_path, monkeypatch, single=False)  # 600 KB: under MIN_BYTES
    assert _two_core.LAST == {}
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    _export(path, tmp_path, monkeypatch, single=True)  # PASSDOWN_SINGLE_CORE=1
    assert _two_core.LAST == {}


@pytest.mark.fork_checkpoint
def test_an_incremental_export_reads_the_appended_tail_on_one_core(
    grown: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path, grown)
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.delenv("PASSDOWN_SINGLE_CORE", raising=False)
    agent = get_agent("codex")
    build_handoff(Selection(agent=agent, ref=agent.ref_for_path(path), workspace=tmp_path))
    assert "cut" in _two_core.LAST  # the first export read the file from its start
    with path.open("ab") as out:
        out.write(TurnMaker().passing_tests())
    _two_core.LAST.clear()
    build_handoff(Selection(agent=agent, ref=agent.ref_for_path(path), workspace=tmp_path))
    assert _two_core.LAST == {}  # through the checkpoint: only the tail, no worker


def _assert_no_children() -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


# the command line: a hook's export ------------------------------------------------
@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real-shaped Codex session just over the size that turns two cores on."""
    fixture = realshape.fixtures()["codex"]
    root = tmp_path_factory.mktemp("big") / "codex"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, _two_core.MIN_BYTES + 4 * 1024 * 1024)
    return path


def _home(session: Path) -> dict[str, str]:
    """Where the grown session's Codex store is."""
    return {"CODEX_HOME": str(session.parents[4])}


@pytest.mark.fork_checkpoint
def test_a_hooks_export_on_two_cores_writes_the_single_core_handoff(
    big_session: Path, tmp_path: Path
) -> None:
    """Run as a hook runs it: the handoff equals the single-core one."""
    (single, _, _), (split, _, _) = hook_exports(
        "codex", big_session, tmp_path, home=_home(big_session)
    )
    assert split == single
    assert single["task"]["original_request"]


def test_a_killed_export_leaves_no_worker_running(big_session: Path, tmp_path: Path) -> None:
    export = start_export("codex", big_session, tmp_path, single=False, home=_home(big_session))
    assert_killed_export_leaves_no_worker(export)
