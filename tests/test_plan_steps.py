"""A two-core worker's reduced plan changes (passdown._plan_steps) replay onto any plan
as the whole list of changes does: same items in the same order, same numbering, same
counts of set-aside and dropped items, same `rekeyed` of a tree reader's replay. And
what travels is O(plan size): thousands of reused task ids make a few steps."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from passdown import _half_extract, _plan_steps, transcript
from passdown._extract import new_extractor
from passdown._extract_state import extractor_state
from passdown.agents._claude_plan import PlanReplay
from passdown.transcript import Event, PlanItem, PlanOp, ToolCall, ToolResult

IDS = ["1", "2", "3", "4", ""]


def _items() -> st.SearchStrategy[PlanItem]:
    return st.builds(
        PlanItem,
        id=st.sampled_from(IDS),
        subject=st.sampled_from(["Write tests", "Fix add()", "Ship"]),
        status=st.sampled_from(["pending", "in_progress", "completed", "blocked"]),
    )


OPS = st.one_of(
    st.builds(PlanOp, op=st.just("replace"), items=st.lists(_items(), max_size=3).map(tuple)),
    st.builds(
        PlanOp, op=st.just("create"), items=st.lists(_items(), min_size=1, max_size=2).map(tuple)
    ),
    st.builds(
        PlanOp,
        op=st.just("update"),
        item_id=st.sampled_from(IDS),
        status=st.sampled_from([None, "completed", "deleted", "in_progress", "pending"]),
        subject=st.sampled_from([None, "Renamed", "Again"]),
    ),
)
# mostly creates of one item (as Claude Code's TaskCreate), ids given by the result
STEPS = st.lists(
    st.tuples(
        st.one_of(
            OPS,
            st.builds(PlanOp, op=st.just("create"), items=_items().map(lambda i: (i,))),
            st.builds(
                PlanOp,
                op=st.just("update"),
                item_id=st.sampled_from(IDS),
                status=st.sampled_from([None, "completed", "deleted"]),
            ),
        ),
        st.sampled_from([None, None, "1", "2", "3"]),
        st.sampled_from(["TaskCreate", "TodoWrite"]),
    ),
    max_size=60,
)


def _replayed(prefix: list[tuple[PlanOp, str | None, str]]) -> PlanReplay:
    replay = PlanReplay()
    for op, created_id, _ in copy.deepcopy(prefix):
        replay.apply(op, created_id)
    return replay


def _seen(replay: PlanReplay) -> object:
    plan = replay.plan
    return (
        [(k, v.id, v.subject, v.status, v.description) for k, v in plan.items.items()],
        plan.counter,
        plan.set_aside,
        plan.dropped,
        replay.rekeyed,
    )


@pytest.fixture
def small_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan is cut back past 8 items, so the hypothesis cases reach the cut."""
    monkeypatch.setattr(transcript, "PLAN_KEEP", 4)
    monkeypatch.setattr(_plan_steps, "KEYS_KEEP", 8)
    monkeypatch.setattr(_plan_steps, "STEPS_KEEP", 40)


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prefix=STEPS, half=STEPS)
def test_reduced_steps_replay_as_the_whole_list(
    small_plans: None,
    prefix: list[tuple[PlanOp, str | None, str]],
    half: list[tuple[PlanOp, str | None, str]],
) -> None:
    whole = _replayed(prefix + half)
    steps, created, creates_before = _plan_steps.PlanSteps(), 0, 0
    for op, created_id, source in copy.deepcopy(half):
        if op.op == "replace" and not steps.created:  # as `_half_extract._HalfExtractor`
            steps.clear()
            creates_before = created
        steps.add(op, source, created_id)
        created += len(op.items) if op.op == "create" else 0
    merged = _replayed(prefix)
    merged.plan.counter += creates_before
    if steps.overflow or _plan_steps.over_what_a_replay_keeps(len(merged.items), steps.keys):
        tally("refused")
        return
    tally("merged")
    for step in _plan_steps.steps_of(steps.packed()):
        merged.rekeyed = step.onto(merged.plan, merged.apply) or merged.rekeyed
    assert _seen(merged) == _seen(whole)


def _task_turn(ids: range) -> list[Event]:
    """Claude Code's TaskCreate for each id (the result names it), then TaskUpdates."""
    events: list[Event] = []
    for n in ids:
        op = PlanOp(op="create", items=(PlanItem(id="", subject=f"Task {n}"),))
        events += [
            ToolCall(call_id=f"c{n}", name="TaskCreate", action="plan", plan=op),
            ToolResult(call_id=f"c{n}", created_item_id=str(n)),
        ]
    for n in ids:
        op = PlanOp(op="update", item_id=str(n), status="completed" if n % 2 else "in_progress")
        events += [
            ToolCall(call_id=f"u{n}", name="TaskUpdate", action="plan", plan=op),
            ToolResult(call_id=f"u{n}"),
        ]
    return events


def _state(events: list[Event], half: list[Event] | None = None) -> tuple[Any, bool]:
    extractor = new_extractor(workspace="/ws", max_messages=4, max_chars=2000)
    for event in copy.deepcopy(events):
        extractor.feed(event)
    refused = False
    if half is not None:
        partial = _half_extract.reduce_events(
            copy.deepcopy(half), workspace="/ws", max_messages=4, max_chars=2000
        )
        partial = msgspec.msgpack.decode(
            msgspec.msgpack.encode(partial), type=_half_extract.Partial
        )
        refused = _half_extract.plan_unmergeable(extractor, partial, object(), None)
        if not refused:
            _half_extract.merge(extractor, partial)
            # O(plan), not O(changes): a create and an update per id
            assert len(list(partial.steps())) == 2 * partial.plan_keys
    return msgspec.to_builtins(extractor_state(extractor)), refused


@pytest.mark.parametrize("tasks", [3, 900])
def test_thousands_of_task_ids_reused_across_the_cut_merge_as_one_pass(tasks: int) -> None:
    """The same ids created again and again on both sides of the cut (a plan-grown
    session: a forked session numbers its tasks from 1 again)."""
    copies = 3000 // tasks + 1
    before = _task_turn(range(1, tasks + 1)) * copies
    half = _task_turn(range(1, tasks + 1)) * copies
    single, _ = _state(before + half)
    merged, refused = _state(before, half)
    assert not refused
    assert merged == single
    assert single["plan_set_aside"] == tasks * (2 * copies - 1)


def test_a_half_that_could_push_the_plan_past_its_cut_back_is_refused() -> None:
    """1,500 ids before the cut and 1,500 more after it: one pass cuts the plan back
    (`Plan._bound`) by rules the reduction does not follow; the main process reads on."""
    before = _task_turn(range(1, 1501))
    half = _task_turn(range(1501, 3001))
    _, refused = _state(before, half)
    assert refused


def test_a_half_with_more_ids_than_a_plan_keeps_is_not_merged() -> None:
    """2,100 distinct ids after the cut: past `KEYS_KEEP` the worker stops keeping steps
    (`overflow`) and sends none; the merge is refused whatever came before."""
    partial = _half_extract.reduce_events(
        _task_turn(range(1, 2101)), workspace="/ws", max_messages=4, max_chars=2000
    )
    assert partial.plan_overflow and partial.plan_steps == b""
    assert _half_extract.plan_unmergeable(
        new_extractor(workspace="/ws", max_messages=4, max_chars=2000), partial, object(), None
    )
