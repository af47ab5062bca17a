"""Store fixtures: every backend, each test on a fresh, private store.

PostgreSQL tests use `$PASSDOWN_TEST_PG_URL` (default: the role and database that
`.ci/start-postgres.sh` creates) and a schema of their own, dropped afterwards. An
unreachable server makes them fail, never skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from passdown.store import Store, open_store

PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query), ("schema", schema)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def postgresql_url() -> Iterator[str]:
    schema = f"test_{uuid.uuid4().hex[:16]}"
    yield with_schema(PG_URL, schema)
    _drop_schema(schema)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'store.db'}"


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as opened:
        yield opened


def record_data(id: str = "rec-1", project: str = "webapp", **fields: Any) -> dict[str, Any]:
    """A valid SGM record as plain JSON data; keyword arguments replace fields."""
    data: dict[str, Any] = {
        "id": id,
        "type": "handoff",
        "title": f"Title of {id}",
        "scope": {"project": project},
        "content": "Everything below is verified.",
        "annotations": [
            {"kind": "what_i_did", "value": "Shipped the auth flow."},
            {"kind": "next", "value": "Configure the mail provider."},
        ],
        "created_at": "2026-10-10T19:00:00Z",
        "provenance": {"agent": "build-agent", "session": "20261010-104120"},
    }
    data.update(fields)
    return data


@pytest.fixture
def make() -> Callable[..., dict[str, Any]]:
    return record_data


@pytest.fixture(name="record_data")
def record_data_fixture() -> Callable[..., dict[str, Any]]:
    return record_data
