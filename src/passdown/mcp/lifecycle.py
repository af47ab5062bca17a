"""The handoff lifecycle and the active-handoff pointer, over the public Store API.

These are the two operations the MCP tools and the HTTP API need from the coordinator
(issue 5): "load the latest handoff" and "mark it claimed/completed". The coordinator
is not there yet, so they are implemented here behind one function each
(`load_handoff`, `mark_handoff`) and can be switched to it later without touching the
tools.

Storage: the status of handoff H is the pointer `lifecycle:H` (a JSON document with the
status, who, when and the transitions so far) in the handoff's own scope, changed with
compare-and-swap so two agents racing to claim one handoff cannot both win. The
pointer `active-handoff` names the handoff the project currently hands over.
A stored handoff without a lifecycle pointer counts as `published` (it is in the store).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from passdown.errors import RecordConflict, RecordNotFound, UsageError
from passdown.records import Record, Scope
from passdown.store import Store

ACTIVE_POINTER = "active-handoff"
STATUSES = ("prepared", "published", "claimed", "completed", "rejected", "superseded")
# status -> the statuses it may move to; a repeat of the current status is a no-op.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "prepared": ("published", "claimed", "completed", "rejected", "superseded"),
    "published": ("claimed", "completed", "rejected", "superseded"),
    "claimed": ("completed", "rejected", "superseded"),
    "completed": (),
    "rejected": (),
    "superseded": (),
}
_CAS_ATTEMPTS = 5


def lifecycle_pointer(handoff_id: str) -> str:
    return f"lifecycle:{handoff_id}"


@dataclass(frozen=True, slots=True)
class LoadedHandoff:
    record: Record
    lifecycle: dict[str, Any]
    active_id: str | None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_lifecycle(store: Store, scope: Scope, handoff_id: str) -> dict[str, Any]:
    raw = store.get_pointer(scope, lifecycle_pointer(handoff_id))
    return _parse(raw) if raw else {"status": "published", "history": []}


def _parse(raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    return data if isinstance(data, dict) and "status" in data else {"status": "published", "history": []}


def load_handoff(store: Store, scope: Scope, handoff_id: str | None = None) -> LoadedHandoff:
    """The handoff `handoff_id`, or the project's latest one: the newest handoff record in
    scope (hooks store handoffs without moving the pointer, so the newest record wins over
    an older active pointer)."""
    if handoff_id is None:
        page = store.query(scope, type="handoff", limit=1)
        if not page.records:
            raise RecordNotFound(
                f"no handoff stored in project {scope.project!r} yet",
                hint="write one with `passdown export` or the prepare_handoff tool",
            )
        record = page.records[0]
    else:
        record = store.retrieve(scope, handoff_id)
        if record.type != "handoff":
            raise UsageError(f"record {handoff_id!r} is a {record.type} record, not a handoff")
    active = store.get_pointer(scope, ACTIVE_POINTER)
    return LoadedHandoff(record, read_lifecycle(store, scope, record.id), active)


def mark_handoff(
    store: Store, scope: Scope, handoff_id: str, status: str, *, by: str, note: str = ""
) -> dict[str, Any]:
    """Move a stored handoff to `status` (compare-and-swap); returns the new lifecycle."""
    if status not in STATUSES:
        raise UsageError(f"unknown status {status!r}: expected one of {', '.join(STATUSES)}")
    record = store.retrieve(scope, handoff_id)  # not found outside scope, like any record
    if record.type != "handoff":
        raise UsageError(f"record {handoff_id!r} is a {record.type} record, not a handoff")
    name = lifecycle_pointer(handoff_id)
    for _ in range(_CAS_ATTEMPTS):
        raw = store.get_pointer(scope, name)
        current = _parse(raw) if raw else {"status": "published", "history": []}
        if current["status"] == status:
            return current
        if status not in TRANSITIONS.get(current["status"], ()):
            raise RecordConflict(
                f"handoff {handoff_id!r} is {current['status']}"
                + (f" (by {current['by']})" if current.get("by") else "")
                + f"; it cannot become {status}"
            )
        entry = {"status": status, "by": by, "at": now_iso(), "note": note}
        updated = {**entry, "history": [*current.get("history", []), entry]}
        if store.set_pointer(scope, name, raw, json.dumps(updated, ensure_ascii=False)):
            return updated
    raise RecordConflict(f"handoff {handoff_id!r} is changing under us; try again")


def publish_handoff(store: Store, scope: Scope, handoff_id: str, *, by: str) -> None:
    """Mark a freshly stored handoff published and make it the active one."""
    mark_handoff(store, scope, handoff_id, "published", by=by)
    for _ in range(_CAS_ATTEMPTS):
        current = store.get_pointer(scope, ACTIVE_POINTER)
        if store.set_pointer(scope, ACTIVE_POINTER, current, handoff_id):
            return
