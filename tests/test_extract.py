"""Extraction rules that the recorded sessions do not exercise."""

from __future__ import annotations

from passdown._extract import extract
from passdown.transcript import Message, PlanItem, PlanOp, ToolCall, ToolResult


def _plan(*items: tuple[str, str, str, tuple[str, ...]]) -> PlanOp:
    return PlanOp(
        op="replace",
        items=tuple(
            PlanItem(id=i, subject=s, status=st, blocked_by=b)
            for i, s, st, b in items  # type: ignore[arg-type]
        ),
    )


def test_blockers_decisions_questions_and_next_steps() -> None:
    events = [
        Message(role="user", text="Ship the importer"),
        _plan(
            ("1", "Parse CSV", "completed", ()),
            ("2", "Load to DB", "pending", ("3",)),
            ("3", "Get DB credentials", "in_progress", ()),
        ),
        Message(
            role="assistant",
            text=(
                "Decision: use COPY instead of INSERT for speed.\n"
                "- I'll use psycopg 3 for the loader.\n"
                "Should the importer skip malformed rows or stop?\n"
                "Next steps:\n- wire the CLI\n- add a progress bar"
            ),
        ),
    ]
    ex = extract(iter(events), workspace=None)
    state = ex.state
    assert state.next_steps[:2] == ["Get DB credentials", "Load to DB"]
    assert "wire the CLI" in state.next_steps and "add a progress bar" in state.next_steps
    assert state.blockers == ["Load to DB (blocked by 3)"]
    assert "Decision: use COPY instead of INSERT for speed." in state.decisions
    assert "I'll use psycopg 3 for the loader." in state.decisions
    assert state.open_questions == ["Should the importer skip malformed rows or stop?"]


def test_an_unresolved_last_failure_is_a_blocker_and_a_later_success_resolves_it() -> None:
    def run(call_id: str, command: str, code: int) -> list[object]:
        return [
            ToolCall(call_id=call_id, name="Bash", action="command", command=command),
            ToolResult(
                call_id=call_id, is_error=code != 0, exit_code=code, error="boom" if code else None
            ),
        ]

    failing = extract(iter([Message(role="user", text="x"), *run("a", "make", 2)]), workspace=None)
    assert failing.state.last_failure and failing.state.last_failure.exit_code == 2
    assert any("make" in b for b in failing.state.blockers)
    fixed = extract(
        iter([Message(role="user", text="x"), *run("a", "make", 2), *run("b", "make", 0)]),
        workspace=None,
    )
    assert fixed.state.last_failure and fixed.state.last_failure.resolved_later
    assert not fixed.state.blockers


def test_edits_without_a_result_are_unconfirmed_and_failed_edits_touch_nothing() -> None:
    events = [
        Message(role="user", text="edit"),
        ToolCall(call_id="1", name="Edit", action="edit", paths=("/ws/a.py",)),
        ToolResult(call_id="1", is_error=True, error="String to replace not found"),
        ToolCall(call_id="2", name="Write", action="write", paths=("/ws/b.py",)),
    ]
    ex = extract(iter(events), workspace="/ws")
    assert [(f.path, f.confirmed) for f in ex.state.files_touched] == [("b.py", False)]
    assert [f.path for f in ex.state.failed_edits] == ["a.py"]


def test_plan_create_update_delete_with_ids_from_results() -> None:
    events = [
        Message(role="user", text="plan"),
        ToolCall(
            call_id="c1",
            name="TaskCreate",
            action="plan",
            plan=PlanOp(op="create", items=(PlanItem(id="", subject="A"),)),
        ),
        ToolResult(call_id="c1", created_item_id="7"),
        ToolCall(
            call_id="c2",
            name="TaskCreate",
            action="plan",
            plan=PlanOp(op="create", items=(PlanItem(id="", subject="B"),)),
        ),
        ToolResult(call_id="c2", created_item_id="8"),
        ToolCall(
            call_id="u1",
            name="TaskUpdate",
            action="plan",
            plan=PlanOp(op="update", item_id="7", status="completed"),
        ),
        ToolResult(call_id="u1"),
        ToolCall(
            call_id="u2",
            name="TaskUpdate",
            action="plan",
            plan=PlanOp(op="update", item_id="8", status="deleted"),
        ),
        ToolResult(call_id="u2"),
        ToolCall(
            call_id="u3",
            name="TaskUpdate",
            action="plan",
            plan=PlanOp(op="update", item_id="7", status="pending"),
        ),
        ToolResult(call_id="u3", is_error=True, error="denied"),
    ]
    ex = extract(iter(events), workspace=None)
    assert [(p.id, p.subject, p.status) for p in ex.state.plan] == [("7", "A", "completed")]


def test_failed_edits_keep_only_the_most_recent() -> None:
    """A long session's failed edits are a bounded window, newest last, not a list that
    grows with the session (memory stays flat on multi-GB files)."""
    from passdown._extract import RECENT_FAILED_EDITS

    def failed_edit(n: int) -> list[object]:
        return [
            ToolCall(call_id=f"e{n}", name="Edit", action="edit", paths=(f"/ws/f{n}.py",)),
            ToolResult(call_id=f"e{n}", is_error=True, error=f"old_string not found {n}"),
        ]

    events: list[object] = [Message(role="user", text="Fix everything")]
    for n in range(5000):
        events += failed_edit(n)
    state = extract(iter(events), workspace="/ws").state
    assert len(state.failed_edits) == RECENT_FAILED_EDITS
    keep = range(5000 - RECENT_FAILED_EDITS, 5000)
    assert [f.path for f in state.failed_edits] == [f"f{n}.py" for n in keep]
    assert state.omitted.failed_edits == 5000 - RECENT_FAILED_EDITS
    assert state.files_touched == []
