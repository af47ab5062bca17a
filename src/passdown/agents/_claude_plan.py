"""Claude Code's plan: the branch's own TaskCreate/TaskUpdate/TodoWrite calls replayed,
and the CLI's task files (`<config>/tasks/<session>/<n>.json`) that only fill gaps."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, cast

import msgspec

from passdown._jsonl import read_side_file
from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS
from passdown.transcript import Plan, PlanItem, PlanOp, PlanStatus


class PlanArgs(Protocol):
    """The plan tools' arguments (the reader's decoded tool input)."""

    subject: str | None
    description: str | None
    activeForm: str | None
    taskId: str | int | None
    id: str | int | None
    status: str | None
    todos: list[dict[str, object]] | None


class TaskFile(msgspec.Struct):
    id: str | int = ""
    subject: str = ""
    description: str | None = None
    activeForm: str | None = None
    status: str = "pending"
    blockedBy: list[str | int] = []


_TASK = LazyDecoder(TaskFile)
PLAN_STATUSES = {"pending", "in_progress", "completed", "deleted", "blocked", "cancelled"}


def task_files(config_dir: Path, session_id: str) -> dict[str, TaskFile]:
    """Claude keeps each task's latest state in ~/.claude/tasks/<session>/<n>.json. That
    is whatever ran last, abandoned branches included, so it only fills gaps (see
    `PlanReplay.merged_with`)."""
    if not session_id or "/" in session_id or ".." in session_id:
        return {}
    try:
        files = [p for p in (config_dir / "tasks" / session_id).iterdir() if p.suffix == ".json"]
    except OSError:
        return {}
    tasks: dict[str, TaskFile] = {}
    for path in files:
        data = read_side_file(path)  # regular files only, size-bounded
        try:
            task = _TASK.decode(data) if data is not None else None
        except DECODE_ERRORS:
            continue
        if task is not None:
            tasks[str(task.id or path.stem)] = task
    return tasks


class PlanReplay:
    """The branch's plan as the CLI's task store saw it, replayed from the branch's own
    TaskCreate/TaskUpdate/TodoWrite calls (extraction replays the same calls into the
    same bounded `Plan`; this copy exists to check the task files against the branch).

    A forked session starts with an empty task store, so its new tasks reuse the ids of
    the tasks in the copied prefix: the new task takes the id and the earlier one, from
    an earlier plan, is counted (`Plan.set_aside`), not kept."""

    def __init__(self) -> None:
        self.plan = Plan()
        self.seen = False
        self.rekeyed = False  # an id was reused (kept for the reader's saved state)
        self.shared = False  # `share`: extraction replays into `plan`, not this replay

    @property
    def items(self) -> dict[str, PlanItem]:
        return self.plan.items

    @items.setter
    def items(self, items: dict[str, PlanItem]) -> None:
        self.plan.items = items

    @property
    def counter(self) -> int:
        return self.plan.counter

    @counter.setter
    def counter(self, counter: int) -> None:
        self.plan.counter = counter

    def share(self, plan: Plan) -> None:
        """Read extraction's own replay of the same calls instead of replaying them a
        second time (a read on one core: extraction applies each change right after the
        reader has handed over its result, and the task files are merged only at the
        end). It holds what this replay would: both replay the answered calls of the
        session, in order, into the same bounded `Plan` (extraction also replays a plan
        call left unanswered, past `PENDING_KEEP` waiting calls or at the end: after the
        merge)."""
        self.plan, self.shared = plan, True

    def apply(self, op: PlanOp, created_id: str | None) -> None:
        self.seen = True
        if not self.shared:
            self.rekeyed = self.plan.apply(op, created_id) or self.rekeyed
        elif op.op == "create" and not self.rekeyed:
            # extraction applies it next: whether it will reuse an id, as `Plan.apply` says
            self.rekeyed = _reuses_an_id(self.plan, op, created_id)

    def merged_with(self, task_files: dict[str, TaskFile]) -> PlanOp | None:
        """The branch's plan with gaps (description, active form, blocked-by) filled from
        the task files that agree with it (same id, same subject). A task file never adds
        a task or changes a status: it reflects whatever ran last, abandoned branches
        included. None when there is nothing to change."""
        if not self.seen:
            return None
        changed = False
        items = []
        for key, item in self.items.items():
            task = task_files.get(key)
            if task is not None and task.subject == item.subject:
                filled = PlanItem(
                    id=item.id,
                    subject=item.subject,
                    status=item.status,
                    description=item.description or task.description or None,
                    active_form=item.active_form or task.activeForm or None,
                    blocked_by=item.blocked_by or tuple(str(b) for b in task.blockedBy),
                )
                changed = changed or filled != item
                item = filled
            items.append(item)
        if not changed:
            return None
        plan = self.plan
        return PlanOp(
            op="replace", items=tuple(items), set_aside=plan.set_aside, dropped=plan.dropped
        )


def _reuses_an_id(plan: Plan, op: PlanOp, created_id: str | None) -> bool:
    """Whether replaying this create into `plan` reuses an id (`Plan.apply`'s answer)."""
    counter = plan.counter
    keys: set[str] = set()
    for item in op.items:
        counter += 1
        key = created_id or item.id or str(counter)
        if key in plan.items or key in keys:
            return True
        keys.add(key)
    return False


def plan_op(name: str, args: PlanArgs) -> PlanOp:
    # positional: a session makes many plan calls, and keywords cost more here
    if name == "TaskCreate":
        item = PlanItem(
            "", args.subject or "", "pending", args.description or None, args.activeForm or None
        )
        return PlanOp("create", (item,))
    if name == "TaskUpdate":
        status = args.status
        task_id = args.taskId if args.taskId is not None else args.id
        return PlanOp(
            "update",
            (),
            str(task_id) if task_id is not None else "",
            status if status in PLAN_STATUSES else None,  # type: ignore[arg-type]
            args.subject or None,
        )
    return PlanOp(op="replace", items=todo_items(args.todos))


def _opt_str(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def todo_items(todos: object) -> tuple[PlanItem, ...]:
    if not isinstance(todos, list):
        return ()
    items = []
    for n, todo in enumerate(todos, start=1):
        if not isinstance(todo, dict):
            continue
        status = todo.get("status")
        # a status of another JSON type (a list) is no status, and unhashable
        known = isinstance(status, str) and status in PLAN_STATUSES
        items.append(
            PlanItem(
                id=str(todo.get("id") or n),
                subject=str(todo.get("content") or todo.get("subject") or ""),
                status=cast(PlanStatus, status) if known else "pending",
                active_form=_opt_str(todo.get("activeForm")),
            )
        )
    return tuple(items)
