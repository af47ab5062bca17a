"""What the pages show, computed from stored records with the store's public API only.

A handoff record written by passdown carries the whole handoff as `passdown_handoff`;
it is read here as plain JSON (not validated against today's model), so a record from an
older or newer passdown, or a coordinator package without a handoff, still shows what it
has. Lifecycle status is the coordinator's store pointer `handoff-status/<id>`; a stored
handoff with no status yet counts as published, as it does for the MCP tools.

A *task* is the trail of handoffs one piece of work left in a project: the handoffs of
the same project on the same git branch (a project is one repository; parallel children
work on branches of their own). Its handoffs, oldest first, give the previous/next links
and the columns of the plan-over-time grid.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from passdown._handoff_record import EXTRA_FIELD
from passdown.coordinator._lifecycle import Lifecycle, StatusEvent
from passdown.errors import RecordNotFound, UsageError
from passdown.records import Record, Scope, parse_timestamp
from passdown.store import Store

PAGE_SIZE = 50
TASK_SCAN_LIMIT = 500  # handoffs read on each side of a handoff to find its task's trail
PLAN_COLUMNS = 40  # handoffs shown in the plan-over-time grid
FILTER_SCAN_LIMIT = 1000  # records read to fill one filtered timeline page
STATUSES = ("prepared", "published", "claimed", "completed", "rejected", "superseded")
PLAN_STATUSES = ("pending", "in_progress", "completed", "blocked", "cancelled")

ENDED_LABELS = {
    "normal": "finished",
    "rate_limit": "rate limit",
    "usage_limit": "usage limit",
    "overloaded": "API overloaded",
    "auth": "auth error",
    "context_length": "context full",
    "error": "API error",
    "interrupted": "interrupted",
}


@dataclass(frozen=True, slots=True)
class PlanItem:
    subject: str
    status: str


@dataclass(slots=True)
class HandoffView:
    """One stored handoff as the pages show it."""

    id: str
    title: str
    agent: str
    session: str
    created_at: str
    status: str
    status_by: str | None
    ended: str
    ended_reason: str | None
    ended_message: str | None
    compactions: int
    plan: list[PlanItem]
    next_steps: list[str]
    blockers: list[str]
    files: list[str]
    branch: str | None
    data: dict[str, Any]  # the handoff JSON ({} for records passdown did not write)
    record: Record

    @property
    def plan_done(self) -> int:
        return sum(1 for p in self.plan if p.status == "completed")

    @property
    def next_step(self) -> str:
        return self.next_steps[0] if self.next_steps else ""

    def next_step_for(self, search: str) -> str:
        """The first next step holding a word of the search (why the row matched), else the
        first next step."""
        words = [w.strip("*").lower() for w in search.split() if w.strip("*")]
        matching = (s for s in self.next_steps if any(w in s.lower() for w in words))
        return next(matching, self.next_step) if words else self.next_step

    @property
    def task_key(self) -> str:
        return self.branch or ""

    @property
    def has_handoff(self) -> bool:
        return bool(self.data)


def handoff_data(record: Record) -> dict[str, Any]:
    extra = (record.model_extra or {}).get(EXTRA_FIELD)
    return extra if isinstance(extra, dict) else {}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _annotations(record: Record, kind: str) -> list[str]:
    lines: list[str] = []
    for note in record.annotations:
        if note.kind == kind:
            lines.extend(line for line in note.value.splitlines() if line.strip())
    return lines


def _plan(data: dict[str, Any]) -> list[PlanItem]:
    items = []
    for entry in _dict(data.get("state")).get("plan") or []:
        if isinstance(entry, dict) and isinstance(entry.get("subject"), str):
            items.append(PlanItem(entry["subject"], str(entry.get("status") or "pending")))
    return items


def _files(data: dict[str, Any], record: Record) -> list[str]:
    touched = _dict(data.get("state")).get("files_touched")
    if isinstance(touched, list):
        return [
            f["path"] for f in touched if isinstance(f, dict) and isinstance(f.get("path"), str)
        ]
    return [
        p.strip()
        for line in _annotations(record, "files_touched")
        for p in line.split(",")
        if p.strip()
    ]


def view_of(record: Record, event: StatusEvent | None) -> HandoffView:
    data = handoff_data(record)
    state = _dict(data.get("state"))
    ended = _dict(data.get("ended"))
    reason = _text(ended.get("reason"))
    compactions = _dict(data.get("task")).get("compactions")
    blockers = (
        _strings(state.get("blockers"))
        if data
        else [b for b in _annotations(record, "blockers") if b != "None."]
    )
    return HandoffView(
        id=record.id,
        title=record.title,
        agent=record.provenance.agent,
        session=record.provenance.session,
        created_at=record.created_at,
        status=event.status if event else "published",
        status_by=event.by if event else None,
        ended=ENDED_LABELS.get(reason, reason) if reason else ("unknown" if data else "—"),
        ended_reason=reason,
        ended_message=_text(ended.get("message")),
        compactions=compactions if isinstance(compactions, int) else 0,
        plan=_plan(data),
        next_steps=_strings(state.get("next_steps")) if data else _annotations(record, "next"),
        blockers=blockers,
        files=_files(data, record),
        branch=_text(_dict(data.get("workspace")).get("branch")),
        data=data,
        record=record,
    )


# -- reading the store ---------------------------------------------------------------------


@dataclass(slots=True)
class Filters:
    agent: str = ""
    status: str = ""
    since: str = ""  # YYYY-MM-DD, inclusive
    until: str = ""  # YYYY-MM-DD, inclusive (the whole day)
    text: str = ""

    @property
    def active(self) -> bool:
        return any((self.agent, self.status, self.since, self.until, self.text))

    def store_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"type": "handoff"}
        if self.since:
            args["since"] = _day(self.since, "since").isoformat()
        if self.until:
            args["until"] = (_day(self.until, "until") + timedelta(days=1)).isoformat()
        if self.text.strip():
            args["text"] = self.text.strip()
        return args

    def keeps(self, view: HandoffView) -> bool:
        return (not self.agent or view.agent == self.agent) and (
            not self.status or view.status == self.status
        )


def _day(value: str, name: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise UsageError(f"{name}: expected a date as YYYY-MM-DD, got {value!r}") from None


@dataclass(slots=True)
class TimelinePage:
    views: list[HandoffView]
    next_cursor: str | None
    agents: list[str] = field(default_factory=list)


class Reader:
    """The read-only queries of the pages, bound to one scope."""

    def __init__(self, store: Store, scope: Scope) -> None:
        self.store = store
        self.scope = scope
        self.lifecycle = Lifecycle(store, scope)

    def view(self, record: Record) -> HandoffView:
        return view_of(record, self.lifecycle.current(record.id))

    def handoff(self, handoff_id: str) -> HandoffView:
        record = self.store.retrieve(self.scope, handoff_id)  # another scope's: not found
        if record.type != "handoff":
            raise RecordNotFound(f"no handoff {handoff_id!r} in project {self.scope.project!r}")
        return self.view(record)

    def _records(self, page: int = PAGE_SIZE, **args: Any) -> Iterator[Record]:
        """Records newest first, `page` at a time."""
        cursor: str | None = None
        while True:
            found = self.store.query(self.scope, limit=page, cursor=cursor, **args)
            yield from found.records
            if found.next_cursor is None:
                return
            cursor = found.next_cursor

    def timeline(self, filters: Filters, cursor: str | None = None) -> TimelinePage:
        """Handoffs matching the filters, newest first, a store page at a time until at
        least PAGE_SIZE match. Agent and status are not store columns, so they are
        matched here; at most FILTER_SCAN_LIMIT records are read for one page."""
        views: list[HandoffView] = []
        scanned = 0
        while True:
            page = self.store.query(
                self.scope, limit=PAGE_SIZE, cursor=cursor, **filters.store_args()
            )
            scanned += len(page.records)
            views.extend(v for v in map(self.view, page.records) if filters.keeps(v))
            cursor = page.next_cursor
            if cursor is None or len(views) >= PAGE_SIZE or scanned >= FILTER_SCAN_LIMIT:
                return TimelinePage(views, cursor)

    def newer_than(self, filters: Filters, since: str | None, seen: set[str]) -> list[HandoffView]:
        """Handoffs stored since `since` (inclusive) that are not in `seen`, oldest first."""
        args = filters.store_args()
        if since:
            args["since"] = since
        page = self.store.query(self.scope, limit=PAGE_SIZE, **args)
        fresh = [r for r in page.records if r.id not in seen]
        views = [self.view(r) for r in reversed(fresh)]
        return [v for v in views if filters.keeps(v)]

    def recent(self, limit: int = TASK_SCAN_LIMIT) -> list[HandoffView]:
        found: list[HandoffView] = []
        for record in self._records(type="handoff"):
            found.append(view_of(record, None))  # statuses are not needed for the trail
            if len(found) >= limit:
                break
        return found

    def task(
        self, of: HandoffView, *, older: int = TASK_SCAN_LIMIT, newer: int = TASK_SCAN_LIMIT
    ) -> list[HandoffView]:
        """The handoffs of `of`'s task around it, oldest first (`of` included): at most
        `older` before it and `newer` after it. Order is the store's own, so handoffs
        written within the same second keep the order they were stored in. Each side reads
        at most TASK_SCAN_LIMIT records, and only as far as it needs to."""
        return [*self._before(of, older)[::-1], of, *self._after(of, newer)]

    def _before(self, of: HandoffView, count: int) -> list[HandoffView]:
        """Up to `count` handoffs of the task before `of`, newest first."""
        found: list[HandoffView] = []
        until = parse_timestamp(of.created_at) + timedelta(microseconds=1)
        passed = False  # records of the same time stored after `of` come first: skip them
        page = min(PAGE_SIZE, count + 4)
        for scanned, record in enumerate(self._records(type="handoff", until=until, page=page)):
            if record.id == of.id:
                passed = True
            elif passed and (view := view_of(record, None)).task_key == of.task_key:
                found.append(view)
            if len(found) >= count or scanned >= TASK_SCAN_LIMIT:
                break
        return found

    def _after(self, of: HandoffView, count: int) -> list[HandoffView]:
        """Up to `count` handoffs of the task after `of`, oldest first. The store reads
        newest first, so time windows after `of`, doubling in length, are read whole until
        enough are found: the cost follows the distance to the next one, not the trail."""
        found: list[HandoffView] = []
        lower = parse_timestamp(of.created_at)
        window = timedelta(minutes=1)
        end = datetime.now(UTC) + timedelta(days=1)  # created_at may run a little ahead
        scanned = 0
        while count and len(found) < count and lower < end and scanned < TASK_SCAN_LIMIT:
            batch = list(self._records(type="handoff", since=lower, until=lower + window))
            scanned += len(batch)
            if lower == parse_timestamp(of.created_at):  # the first window holds `of` itself
                ids = [r.id for r in batch]
                batch = batch[: ids.index(of.id)] if of.id in ids else batch
            for record in reversed(batch):
                if (view := view_of(record, None)).task_key == of.task_key:
                    found.append(view)
            lower, window = lower + window, window * 2
        return found[:count]

    def history(self, handoff_id: str) -> list[StatusEvent]:
        return self.lifecycle.events(handoff_id)


def neighbours(
    trail: list[HandoffView], handoff_id: str
) -> tuple[HandoffView | None, HandoffView | None]:
    ids = [v.id for v in trail]
    at = ids.index(handoff_id)
    return (trail[at - 1] if at > 0 else None, trail[at + 1] if at + 1 < len(trail) else None)


# -- compare and plan over time --------------------------------------------------------------


def _key(subject: str) -> str:
    return " ".join(subject.lower().split())


@dataclass(frozen=True, slots=True)
class PlanChange:
    subject: str
    before: str | None  # None: not in the older handoff's plan
    after: str | None  # None: not in the newer handoff's plan


@dataclass(slots=True)
class Comparison:
    older: HandoffView
    newer: HandoffView
    plan_changes: list[PlanChange]
    files_added: list[str]
    next_resolved: list[str]
    next_new: list[str]
    blockers_cleared: list[str]
    blockers_new: list[str]


def _minus(left: list[str], right: list[str]) -> list[str]:
    keys = {_key(item) for item in right}
    return [item for item in left if _key(item) not in keys]


def in_order(
    a: HandoffView, b: HandoffView, newest_first: list[str]
) -> tuple[HandoffView, HandoffView]:
    """(older, newer): by time, and for equal times by the store's order (`newest_first`)."""
    rank = {handoff_id: i for i, handoff_id in enumerate(newest_first)}

    def key(v: HandoffView) -> tuple[datetime, int]:
        return parse_timestamp(v.created_at), -rank.get(v.id, -1)

    older, newer = sorted((a, b), key=key)
    return older, newer


def compare(older: HandoffView, newer: HandoffView) -> Comparison:
    """What changed from the older handoff to the newer one."""
    before = {_key(p.subject): p for p in older.plan}
    after = {_key(p.subject): p for p in newer.plan}
    changes = []
    for key in dict.fromkeys([*before, *after]):
        old, new = before.get(key), after.get(key)
        if (old.status if old else None) != (new.status if new else None):
            subject = (new or old).subject  # type: ignore[union-attr]
            changes.append(
                PlanChange(subject, old.status if old else None, new.status if new else None)
            )
    return Comparison(
        older=older,
        newer=newer,
        plan_changes=changes,
        files_added=[f for f in newer.files if f not in set(older.files)],
        next_resolved=_minus(older.next_steps, newer.next_steps),
        next_new=_minus(newer.next_steps, older.next_steps),
        blockers_cleared=_minus(older.blockers, newer.blockers),
        blockers_new=_minus(newer.blockers, older.blockers),
    )


@dataclass(slots=True)
class PlanGrid:
    columns: list[HandoffView]
    rows: list[tuple[str, list[str | None]]]  # subject, status per column (None: absent)


def plan_grid(trail: list[HandoffView], max_columns: int = PLAN_COLUMNS) -> PlanGrid:
    columns = trail[-max_columns:]
    subjects: dict[str, str] = {}
    for view in columns:
        for item in view.plan:
            subjects.setdefault(_key(item.subject), item.subject)
    rows = []
    for key, subject in subjects.items():
        cells = []
        for view in columns:
            status = next((p.status for p in view.plan if _key(p.subject) == key), None)
            cells.append(status)
        rows.append((subject, cells))
    return PlanGrid(columns, rows)
