"""The store contract (test_store_contract.py, every test of it) run against the team
server as a store: an `HTTPStore` talking to `passdown serve`'s store API on loopback,
over the SQLite backend. A token is bound to one project, so the store under test routes
each call to a client holding a token of the call's project (the contract's tests mix
projects): every call still crosses HTTP, with that project's token."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from test_store_contract import *  # noqa: F403 -- the contract's tests, collected here too

from passdown.records import Record, Scope
from passdown.store import Page, RecordMeta, ScopeLike, Store, open_store
from passdown.store._base import PointerKey, Prepared, Query, coerce_scope
from passdown.store._http import HTTPStore, ServerConfig
from passdown.store._tokens import create_token
from remote_store_helpers import Served

pytestmark = pytest.mark.timeout(120)


class Routed(Store):
    """One HTTPStore per project (each with its own token), chosen by the call's scope."""

    def __init__(self, backing: Store, url: str) -> None:
        self.backing, self.url = backing, url
        self.clients: dict[str, HTTPStore] = {}

    def client(self, project: str) -> HTTPStore:
        if project not in self.clients:
            token = create_token(self.backing, project)
            self.clients[project] = HTTPStore(ServerConfig(self.url, token, None))
        return self.clients[project]

    def _for(self, scope: ScopeLike) -> HTTPStore:
        return self.client(coerce_scope(scope).project)

    def store_many(
        self, records: Iterable[Record | Mapping[str, object]], *, new_version: bool = False
    ) -> list[str]:
        records = list(records)
        projects = {_project(r) for r in records}
        if len(projects) != 1:
            return super().store_many(records, new_version=new_version)
        return self.client(projects.pop()).store_many(records, new_version=new_version)

    def _write(self, prepared: list[Prepared], new_version: bool) -> None:
        for p in prepared:  # several projects in one call: one request each
            self.client(p.project)._write([p], new_version)

    def query(self, scope: ScopeLike, **kwargs: Any) -> Page:
        return self._for(scope).query(scope, **kwargs)

    def count(self, scope: ScopeLike, **kwargs: Any) -> int:
        return self._for(scope).count(scope, **kwargs)

    def retrieve(self, scope: ScopeLike, id: str, *, version: int | None = None) -> Record:
        return self._for(scope).retrieve(scope, id, version=version)

    def history(self, scope: ScopeLike, id: str) -> list[RecordMeta]:
        return self._for(scope).history(scope, id)

    def delete(self, scope: ScopeLike, id: str) -> None:
        self._for(scope).delete(scope, id)

    def get_pointer(self, scope: ScopeLike, name: str) -> str | None:
        return self._for(scope).get_pointer(scope, name)

    def pointer_stamp(self, scope: ScopeLike, name: str) -> str | None:
        return self._for(scope).pointer_stamp(scope, name)

    def restore_pointer(
        self, scope: ScopeLike, name: str, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        return self._for(scope).restore_pointer(scope, name, expected, new, stamp)

    def projects(self) -> list[str]:
        return [p for c in self.clients.values() for p in c.projects()]

    def check(self) -> list[str]:
        return self.client("webapp").check()

    def close(self) -> None:
        for c in self.clients.values():
            c.close()

    # reached only through the routed methods above
    def _current(self, sc: Scope, id: str) -> tuple[int, str, str, str]:
        raise NotImplementedError

    def _older_body(self, sc: Scope, id: str, version: int) -> str | None:
        raise NotImplementedError

    def _older_meta(self, sc: Scope, id: str) -> list[tuple[int, str, str]]:
        raise NotImplementedError

    def _pointer_row(self, key: PointerKey) -> tuple[str, str] | None:
        raise NotImplementedError

    def _swap_pointer(
        self, key: PointerKey, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        raise NotImplementedError

    def _select(self, q: Query) -> list[tuple[int, int, str]]:
        raise NotImplementedError


def _project(record: Record | Mapping[str, object]) -> str:
    if isinstance(record, Record):
        return record.scope.project
    scope = record.get("scope")
    return str(scope.get("project", "")) if isinstance(scope, Mapping) else ""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite://{tmp_path / 'served.db'}") as backing:
        served = Served(backing)
        routed = Routed(backing, served.url)
        try:
            yield routed
        finally:
            routed.close()
            served.stop()
