"""The two coordinator operations the tools need: "load the latest handoff" and "mark it
claimed/completed", one function each, over the coordinator's store lifecycle
(`passdown.coordinator.lifecycle.Lifecycle`: status pointer `handoff-status/<id>` changed
by compare-and-swap, a `status` record per transition, the `active-handoff` pointer), so
the MCP tools, the HTTP API and `HandoffCoordinator` agree on every handoff's status.

Two differences from `HandoffCoordinator.load_handoff`, both because hooks store handoffs
through the plain pipeline (no lifecycle, no pointer move):
- "latest" is the newer of the active pointer's handoff and the newest handoff record;
- a stored handoff with no status yet counts as published: marking it first records
  prepared -> published (it is in the store), then the requested status; `completed`
  on a handoff nobody claimed records the claim first, by the same agent.
"""

from __future__ import annotations

from dataclasses import dataclass

from passdown.coordinator.lifecycle import ACTIVE_POINTER, HandoffStateError, Lifecycle
from passdown.errors import RecordNotFound, UsageError
from passdown.records import Record, Scope, timestamp_us
from passdown.store import Store

MARKABLE = ("claimed", "completed", "rejected")
# the steps that lead from each status to the requested one
_PATHS: dict[str, dict[str | None, tuple[str, ...]]] = {
    "claimed": {None: ("prepared", "published", "claimed"), "prepared": ("published", "claimed"),
                "published": ("claimed",)},
    "completed": {None: ("prepared", "published", "claimed", "completed"),
                  "prepared": ("published", "claimed", "completed"),
                  "published": ("claimed", "completed"), "claimed": ("completed",)},
    "rejected": {None: ("prepared", "rejected"), "prepared": ("rejected",),
                 "published": ("rejected",), "claimed": ("rejected",)},
}


@dataclass(frozen=True, slots=True)
class LoadedHandoff:
    record: Record
    status: str
    active_id: str | None


def load_handoff(store: Store, scope: Scope, handoff_id: str | None = None) -> LoadedHandoff:
    lc = Lifecycle(store, scope)
    active = lc.active()
    record = _handoff(store, scope, handoff_id) if handoff_id else _latest(store, scope, active)
    event = lc.current(record.id)
    return LoadedHandoff(record, event.status if event else "published", active)


def _latest(store: Store, scope: Scope, active: str | None) -> Record:
    page = store.query(scope, type="handoff", limit=1)
    newest = page.records[0] if page.records else None
    pointed = None
    if active:
        try:
            pointed = _handoff(store, scope, active)
        except (RecordNotFound, UsageError):
            pointed = None  # a dangling pointer: fall back to the newest record
    candidates = [r for r in (pointed, newest) if r is not None]
    if not candidates:
        raise RecordNotFound(
            f"no handoff stored in project {scope.project!r} yet",
            hint="write one with `passdown export` or the prepare_handoff tool",
        )
    return max(candidates, key=lambda r: timestamp_us(r.created_at))


def _handoff(store: Store, scope: Scope, handoff_id: str) -> Record:
    record = store.retrieve(scope, handoff_id)  # another scope's id: not found, like any
    if record.type != "handoff":
        raise UsageError(f"record {handoff_id!r} is a {record.type} record, not a handoff")
    return record


def mark_handoff(
    store: Store, scope: Scope, handoff_id: str, status: str, *, by: str, note: str = ""
) -> str:
    """Move a stored handoff to `status`; returns the status it has afterwards.
    A transition the lifecycle forbids (claiming a handoff someone else claimed, or
    one already completed) raises HandoffStateError."""
    if status not in MARKABLE:
        raise UsageError(f"unknown status {status!r}: expected one of {', '.join(MARKABLE)}")
    _handoff(store, scope, handoff_id)
    lc = Lifecycle(store, scope)
    event = lc.current(handoff_id)
    current = event.status if event else None
    if current == status:
        if status == "claimed" and event is not None and event.by != by:
            raise HandoffStateError(f"handoff {handoff_id} is already claimed by {event.by}")
        return status
    steps = _PATHS[status].get(current, (status,))  # unknown path: let Lifecycle refuse it
    for step in steps:
        lc.transition(handoff_id, step, by=by, note=note or None)  # type: ignore[arg-type]
    return status


def publish_handoff(store: Store, scope: Scope, handoff_id: str, *, by: str) -> None:
    """A handoff the prepare tool just stored: prepared -> published, and active."""
    lc = Lifecycle(store, scope)
    lc.transition(handoff_id, "prepared", by=by)
    lc.transition(handoff_id, "published", by=by)
    for _ in range(10):
        current = lc.active()
        if lc.swap_active(current, handoff_id):
            return


__all__ = ["ACTIVE_POINTER", "LoadedHandoff", "load_handoff", "mark_handoff", "publish_handoff"]
