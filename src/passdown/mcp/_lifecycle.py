"""The two coordinator operations the tools need: "load the active handoff" and "mark it
claimed/completed", one function each, over the coordinator's store lifecycle
(`passdown.coordinator._lifecycle.Lifecycle`: status pointer `handoff-status/<id>` changed
by compare-and-swap, a `status` record per transition, the `active-handoff` pointer), so
the MCP tools, the HTTP API and `HandoffCoordinator` agree on every handoff's status.

- Without an id, the handoff loaded is the one the active pointer names: the lifecycle
  decides which handoff is current, never a `created_at` a client wrote (a record stored
  with a date in 2099 is not "the latest"). Every door publishes through the lifecycle
  (`passdown.coordinator._doors`), so a handoff passdown wrote is always reachable.
- A handoff record stored by a client with no status yet counts as published: marking
  it first records prepared -> published (it is in the store), then the requested
  status; `completed` on a handoff nobody claimed records the claim first, by the same
  agent. Marking never makes it the active handoff.
"""

from __future__ import annotations

from dataclasses import dataclass

from passdown.coordinator._lifecycle import ACTIVE_POINTER, Lifecycle
from passdown.errors import HandoffStateError, RecordNotFound, UsageError
from passdown.records import Record, Scope
from passdown.store import Store

MARKABLE = ("claimed", "completed", "rejected")
# the steps that lead from each status to the requested one
_PATHS: dict[str, dict[str | None, tuple[str, ...]]] = {
    "claimed": {
        None: ("prepared", "published", "claimed"),
        "prepared": ("published", "claimed"),
        "published": ("claimed",),
    },
    "completed": {
        None: ("prepared", "published", "claimed", "completed"),
        "prepared": ("published", "claimed", "completed"),
        "published": ("claimed", "completed"),
        "claimed": ("completed",),
    },
    "rejected": {
        None: ("prepared", "rejected"),
        "prepared": ("rejected",),
        "published": ("rejected",),
        "claimed": ("rejected",),
    },
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
    if active:
        try:
            return _handoff(store, scope, active)
        except (RecordNotFound, UsageError):
            pass  # a dangling pointer: no active handoff
    if not store.query(scope, type="handoff", limit=1).records:
        raise RecordNotFound(
            f"no handoff stored in project {scope.project!r} yet",
            hint="write one with `passdown export` or the prepare_handoff tool",
        )
    raise RecordNotFound(
        f"no active handoff in project {scope.project!r}",
        hint="load a stored handoff by id (find_records type=handoff lists them), or write "
        "one with `passdown export` or the prepare_handoff tool",
    )


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


__all__ = ["ACTIVE_POINTER", "LoadedHandoff", "load_handoff", "mark_handoff"]
