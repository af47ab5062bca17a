"""The live timeline: what one open timeline page needs to hear, polled from the store.

The store has no change notifications (SQLite cannot have them), so each open timeline
polls: every second for handoffs stored since the newest it shows, and every few seconds
for status changes (claimed, completed, superseded) of the rows it shows. Both are
sent as the row's HTML, rendered and escaped on the server; the page inserts a new row
at the top and replaces a known one in place.
"""

from __future__ import annotations

from passdown.records import parse_timestamp
from passdown.web._model import PAGE_SIZE, Filters, HandoffView, Reader, view_of

STATUS_EVERY = 5  # polls between two status checks of the rows shown


def _signature(view: HandoffView) -> tuple[str, str | None]:
    return view.status, view.status_by


class LiveFeed:
    def __init__(self, reader: Reader, filters: Filters, since: str) -> None:
        self.reader = reader
        self.filters = filters
        self.since = since
        self.shown: dict[str, HandoffView] = {}  # the rows the page shows, oldest first
        self.polls = 0

    def start(self) -> None:
        """The rows the page was rendered with, as they are now: those older than `since`
        (the page's newest). Rows from `since` on come as new in the first poll, so one
        stored between the page and this connection is not missed; the page skips repeats."""
        since = parse_timestamp(self.since)
        rows = self.reader.timeline(self.filters).views[:PAGE_SIZE]
        for view in reversed(rows):
            if parse_timestamp(view.created_at) < since:
                self.shown[view.id] = view

    def poll(self) -> list[HandoffView]:
        """Rows to send: new handoffs (oldest first), then rows whose status changed."""
        self.polls += 1
        fresh = self.reader.newer_than(self.filters, self.since, set(self.shown))
        for view in fresh:
            self.shown[view.id] = view
            if parse_timestamp(view.created_at) > parse_timestamp(self.since):
                self.since = view.created_at
        changed = self._status_changes() if self.polls % STATUS_EVERY == 0 else []
        self._forget_old()
        return [*fresh, *changed]

    def _status_changes(self) -> list[HandoffView]:
        changed = []
        for handoff_id, view in list(self.shown.items()):
            now = view_of(view.record, self.reader.lifecycle.current(handoff_id))
            if _signature(now) != _signature(view):
                self.shown[handoff_id] = now
                changed.append(now)
        return changed

    def _forget_old(self) -> None:
        while len(self.shown) > PAGE_SIZE:
            del self.shown[next(iter(self.shown))]
