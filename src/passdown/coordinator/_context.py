"""What every part of the coordinator shares: the project (workspace and scope), who
acts (the identity recorded on lifecycle events) and the store, opened on first use.

`HandoffCoordinator` holds one; `prepare` and `execute` take it explicitly, so they
need nothing from the class that calls them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from passdown._handoff_record import package_from_record
from passdown.coordinator._lifecycle import Lifecycle
from passdown.errors import StoreError

if TYPE_CHECKING:
    from passdown._checkpoint_writes import PendingCheckpoint
    from passdown._handoff_package import HandoffPackage
    from passdown.records import Scope
    from passdown.store import Store


class ProjectContext:
    """`store`: None opens the default store (`$PASSDOWN_STORE`, config, or SQLite in the
    data folder) on first use; a URL opens that store; a `Store` is used as is (and not
    closed here); False works without a store (no lifecycle, no history)."""

    def __init__(
        self,
        workspace: Path,
        scope: Scope,
        identity: str,
        store: Store | str | Literal[False] | None,
    ) -> None:
        self.workspace = workspace
        self.scope = scope
        self.identity = identity
        self._store_arg = store
        self._store: Store | None = (
            None if store is None or isinstance(store, (str, bool)) else store
        )
        self._owns_store = False
        self._recovered = False
        # checkpoints a prepare read, per package: written only once it is exported
        self._checkpoints: dict[str, list[PendingCheckpoint]] = {}

    def hold_checkpoints(self, package_id: str, pending: list[PendingCheckpoint]) -> None:
        if pending:
            self._checkpoints[package_id] = pending

    def apply_checkpoints(self, package_id: str) -> None:
        """The session checkpoints of a package whose export succeeded, written now."""
        for change in self._checkpoints.pop(package_id, []):
            change.apply()

    @property
    def has_store(self) -> bool:
        return self._store_arg is not False

    def store(self) -> Store:
        """The store, opened on first use; StoreError when there is none (store=False)."""
        if self._store is None:
            if self._store_arg is False:
                raise StoreError("this coordinator was created without a store (store=False)")
            from passdown.store import open_store

            self._store = open_store(self._store_arg if isinstance(self._store_arg, str) else None)
            self._owns_store = True
        if not self._recovered:
            self._recovered = True
            if not self._owns_store:  # a Store passed in: open_store took nothing back
                from passdown._wal import recover_and_say

                recover_and_say(self._store)
        return self._store

    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self.store(), self.scope)

    def close(self) -> None:
        """Close the store if this context opened it."""
        if self._owns_store and self._store is not None:
            self._store.close()
            self._store = None
            self._owns_store = False

    def with_status(self, pkg: HandoffPackage, lc: Lifecycle) -> HandoffPackage:
        """The package with its current lifecycle status."""
        event = lc.current(pkg.id)
        return pkg.model_copy(update={"status": event.status}) if event else pkg

    def packages(self, limit: int | None, text: str | None = None) -> Iterator[HandoffPackage]:
        """The project's stored packages, newest first (status as stored); `text`
        searches titles, summaries and HANDOFF.md. Records that hold no package are skipped."""
        store, cursor, seen = self.store(), None, 0
        while limit is None or seen < limit:
            page = store.query(
                self.scope, type="handoff", text=text, limit=min(limit or 1000, 1000), cursor=cursor
            )
            for record in page.records:
                try:
                    pkg = package_from_record(record)
                except StoreError:
                    continue  # a foreign record that is no package
                seen += 1
                yield pkg
                if limit is not None and seen >= limit:
                    return
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def previous(self, pkg: HandoffPackage | None) -> HandoffPackage | None:
        """The stored package this one was prepared on top of, if it can be read."""
        if pkg is None or not pkg.previous_id or not self.has_store:
            return None
        try:
            return package_from_record(self.store().retrieve(self.scope, pkg.previous_id))
        except StoreError:
            return None
