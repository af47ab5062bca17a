"""`Store.count` of a backend that does not count in its own database: the default
pages through the backend's rows (`Store._count`); the contract's count tests run on the
backends' own SQL counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from passdown.store import Store, _base, open_store


@pytest.mark.parametrize("wanted", [9, 10])  # pages of 3: the last one short, or empty
def test_the_default_count_pages_through_the_rows(
    sqlite_url: str, make: Callable[..., dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
    wanted: int,
) -> None:  # fmt: skip
    with open_store(sqlite_url) as store:
        store.store_many(
            [make(id=f"r{i:02}", created_at=f"2026-01-{i + 1:02}T00:00:00Z") for i in range(10)]
        )
        store.store(make(id="elsewhere", project="other"))
        monkeypatch.setattr(_base, "MAX_LIMIT", 3)
        until = f"2026-01-{wanted:02}T12:00:00Z"
        q = _base.build_query(
            "webapp", type=None, kind=None, since=None, until=until, text=None, limit=1,
            cursor=None,
        )  # fmt: skip
        assert Store._count(store, q) == wanted == store.count("webapp", until=until)
