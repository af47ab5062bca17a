"""The handoff lifecycle, kept in the store with nothing but its public API.

    prepared -> published -> claimed -> completed
         \\__________\\___________\\_____> rejected | superseded

- The current status of a package is a store pointer, `handoff-status/<id>`, whose
  value is a small JSON event (`status`, `by`, `at`, `note`). Every transition is a
  compare-and-swap on that pointer, so of two racing transitions exactly one wins.
- Each transition is also stored as a `status` record (`<id>#<status>`, who and when
  in its provenance), the history a later session can read. The pointer is the truth;
  the record is written right after the swap that made it true.
- The project's active handoff is the pointer `active-handoff`; publishing swaps it
  from the package's `previous_id` to its id, so two coordinators that prepared from
  the same state cannot both publish.
- A launch is claimed with the pointer `handoff-launch/<id>` before the agent starts,
  so running execute again never launches twice.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from passdown._package_status import STATUSES as STATUSES
from passdown._package_status import LifecycleStatus as LifecycleStatus
from passdown.errors import HandoffStateError, RecordNotFound

if TYPE_CHECKING:
    from passdown._wal import WriteAhead
    from passdown.records import Record, Scope
    from passdown.store import Store

ACTIVE_POINTER = "active-handoff"
TERMINAL = frozenset({"completed", "rejected", "superseded"})
ALLOWED: dict[str | None, frozenset[str]] = {
    None: frozenset({"prepared"}),
    "prepared": frozenset({"published", "rejected", "superseded"}),
    "published": frozenset({"claimed", "rejected", "superseded"}),
    "claimed": frozenset({"completed", "rejected", "superseded"}),
}
MAX_CAS_ATTEMPTS = 50  # each retry means another writer made progress; give up eventually


class StatusEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built when first used

    status: LifecycleStatus
    by: str
    at: str
    note: str | None = None


def now_us() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def now_us_series(count: int) -> list[str]:
    """`count` times from now on, a microsecond apart (events announced ahead, in order)."""
    start = datetime.now(UTC)
    return [
        (start + timedelta(microseconds=n))
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
        for n in range(count)
    ]


def status_pointer(package_id: str) -> str:
    return f"handoff-status/{package_id}"


def launch_pointer(package_id: str) -> str:
    return f"handoff-launch/{package_id}"


@dataclass
class Journal:
    """What one publish changes in the store, so that an export failing later can take
    back exactly that and nothing another writer did meanwhile: each change is noted
    before it is made (`entries`: a record it creates; a pointer's name, value before
    and after, the time `before` was set, the status records that go with it), and
    marked done once made. With a write-ahead journal (`wal`, see `passdown._wal`),
    each note is on disk before its change, so a killed export is taken back too."""

    wal: WriteAhead | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    done: list[bool] = field(default_factory=list)

    def declare(self, entries: list[dict[str, Any]]) -> None:
        """Announce changes about to be made, in one write (one sync to disk instead of
        one per change). A change made as declared is not written again (`note`); one
        that turns out different (a retried compare-and-swap) is, when it is made."""
        if self.wal is not None:
            self.wal.note(*entries)
        self.entries.extend(entries)
        self.done.extend(False for _ in entries)

    def note(self, entry: dict[str, Any]) -> int:
        """Announce a change (on disk first, with a `wal`) unless it was announced and not
        made yet; returns its index for `made`."""
        for index, (noted, done) in enumerate(zip(self.entries, self.done, strict=True)):
            if not done and noted == entry:
                return index
        self.declare([entry])
        return len(self.entries) - 1

    def sets(self, name: str, value: str | None) -> bool:
        """Whether this journal announced setting `name` to `value` (an undo of that
        change removes the value again, so its stamp needs no keeping)."""
        return any(e.get("name") == name and e.get("after") == value for e in self.entries)

    def made(self, index: int) -> None:
        self.done[index] = True

    @property
    def empty(self) -> bool:
        return not any(self.done)

    def undo(self, store: Store, scope: Scope) -> None:
        """Newest change first; each pointer by compare-and-swap (with its old stamp), so
        a pointer another writer moved on since is left as that writer set it; a status
        record once its pointer holds the value before it again. Raises StoreError."""
        from passdown._wal import undo_store

        undo_store(store, scope, [e for e, d in zip(self.entries, self.done, strict=True) if d])
        self.entries.clear()
        self.done.clear()


class Lifecycle:
    def __init__(self, store: Store, scope: Scope, journal: Journal | None = None) -> None:
        self.store = store
        self.scope = scope
        self.journal = journal  # set while publishing: every change is noted there

    def _set(
        self, name: str, before: str | None, after: str | None, records: tuple[str, ...] = ()
    ) -> bool:
        """Compare-and-swap `name`; with a journal, announced first (`records`: the
        status records created right after a successful swap)."""
        if self.journal is None:
            return self.store.set_pointer(self.scope, name, before, after)
        own = self.journal.sets(name, before)
        index = self.journal.note(self.pointer_change(name, before, after, records, own=own))
        done = self.store.set_pointer(self.scope, name, before, after)
        if done:
            self.journal.made(index)
        return done

    def pointer_change(
        self,
        name: str,
        before: str | None,
        after: str | None,
        records: tuple[str, ...] = (),
        *,
        own: bool = False,
    ) -> dict[str, Any]:
        """A journal entry for a pointer change, with the time `before` was set, which an
        undo puts back (none when `own`: `before` was set by the same journal)."""
        keep = before is not None and not own
        stamp = self.store.pointer_stamp(self.scope, name) if keep else None
        return {
            "kind": "pointer",
            "name": name,
            "before": before,
            "after": after,
            "stamp": stamp,
            "records": list(records),
        }

    def status_change(
        self,
        package_id: str,
        before: str | None,
        to: LifecycleStatus,
        by: str,
        at: str,
        note: str | None = None,
        *,
        own: bool = False,
    ) -> dict[str, Any]:
        """The journal entry of `transition(package_id, to, by=by, note=note, at=at)` from
        the status pointer's value `before` (`own`: set by the same journal)."""
        event = StatusEvent(status=to, by=by, at=at, note=note).model_dump_json()
        records = (f"{package_id}#{to}",)
        return self.pointer_change(status_pointer(package_id), before, event, records, own=own)

    def store_new(self, record: dict[str, object] | Record) -> None:
        """Store a record; with a journal, a record this call creates is announced first."""
        record_id = record.id if not isinstance(record, dict) else str(record["id"])
        if self.journal is None or self.exists(record_id):
            self.store.store(record)
            return
        index = self.journal.note({"kind": "record", "id": record_id})
        self.store.store(record)
        self.journal.made(index)

    def exists(self, record_id: str) -> bool:
        try:
            self.store.retrieve(self.scope, record_id)
        except RecordNotFound:
            return False
        return True

    # -- status ----------------------------------------------------------------------------
    def current(self, package_id: str) -> StatusEvent | None:
        raw = self.store.get_pointer(self.scope, status_pointer(package_id))
        return StatusEvent.model_validate_json(raw) if raw else None

    def transition(
        self,
        package_id: str,
        to: LifecycleStatus,
        *,
        by: str,
        note: str | None = None,
        only_from: frozenset[str] | None = None,
        at: str | None = None,
    ) -> bool:
        """Move to `to` if allowed; True when this call made the change, False when the
        package already is `to` (or, with `only_from`, is in a status not listed there).
        `at`: the event's time, when a journal announced it ahead (`status_change`).
        Raises HandoffStateError for a transition the lifecycle forbids."""
        name = status_pointer(package_id)
        for _ in range(MAX_CAS_ATTEMPTS):
            raw = self.store.get_pointer(self.scope, name)
            current = StatusEvent.model_validate_json(raw).status if raw else None
            if current == to or (only_from is not None and current not in only_from):
                return False
            if to not in ALLOWED.get(current, frozenset()):
                raise HandoffStateError(
                    f"handoff {package_id} is {current or 'unknown'}; it cannot become {to}"
                )
            event = StatusEvent(status=to, by=by, at=at or now_us(), note=note)
            if self._set(name, raw, event.model_dump_json(), (f"{package_id}#{to}",)):
                self._record(package_id, event)
                return True
        raise HandoffStateError(f"handoff {package_id}: too many concurrent status changes")

    def release_claim(self, package_id: str, *, by: str, note: str) -> bool:
        """Give back `by`'s own claim when what it claimed for never started (`passdown
        run`'s fallback agent could not be launched): the package is published again,
        so the next session can claim it. Only while that claim is still the current
        status (a compare-and-swap); its `#claimed` record goes, the history then says
        published, with `note`. True when this call released it."""
        name = status_pointer(package_id)
        raw = self.store.get_pointer(self.scope, name)
        if raw is None:
            return False
        current = StatusEvent.model_validate_json(raw)
        if current.status != "claimed" or current.by != by:
            return False
        event = StatusEvent(status="published", by=by, at=now_us(), note=note)
        if not self.store.set_pointer(self.scope, name, raw, event.model_dump_json()):
            return False
        with contextlib.suppress(RecordNotFound):  # a claim whose record was never written
            self.store.delete(self.scope, f"{package_id}#claimed")
        return True

    def _record(self, package_id: str, event: StatusEvent) -> None:
        """The transition's history record (in a journal, announced with its pointer)."""
        self.store.store(
            {
                "id": f"{package_id}#{event.status}",
                "type": "status",
                "title": f"{package_id} {event.status}",
                "scope": self.scope.model_dump(exclude_none=True),
                "content": event.note or "",
                "annotations": [
                    {"kind": "status", "value": event.status},
                    {"kind": "handoff", "value": package_id},
                ],
                "created_at": event.at,
                "provenance": {"agent": event.by, "session": package_id, "tool": "passdown"},
            }
        )

    def events(self, package_id: str) -> list[StatusEvent]:
        """Every recorded transition of the package, oldest first."""
        found = []
        for status in STATUSES:
            try:
                rec = self.store.retrieve(self.scope, f"{package_id}#{status}")
            except RecordNotFound:
                continue
            found.append(
                StatusEvent(
                    status=status,
                    by=rec.provenance.agent,
                    at=rec.created_at,
                    note=rec.content or None,
                )
            )
        return sorted(found, key=lambda e: e.at)

    # -- the active handoff ----------------------------------------------------------------
    def active(self) -> str | None:
        return self.store.get_pointer(self.scope, ACTIVE_POINTER)

    def swap_active(self, expected: str | None, new: str) -> bool:
        return self._set(ACTIVE_POINTER, expected, new)

    # -- launches --------------------------------------------------------------------------
    def claim_launch(self, package_id: str, by: str) -> bool:
        value = json.dumps({"by": by, "at": now_us()})
        return self.store.set_pointer(self.scope, launch_pointer(package_id), None, value)

    def release_launch(self, package_id: str) -> None:
        """Undo a launch claim when the agent could not even start, so a retry may."""
        name = launch_pointer(package_id)
        raw = self.store.get_pointer(self.scope, name)
        if raw is not None:
            self.store.set_pointer(self.scope, name, raw, None)

    def launched(self, package_id: str) -> bool:
        return self.store.get_pointer(self.scope, launch_pointer(package_id)) is not None
