"""The PostgreSQL backend, for teams sharing one store across machines.

psycopg 3 with a small connection pool. Tables live in their own schema (`passdown`
by default; `?schema=NAME` in the URL picks another), so one database can hold
several independent stores. Full text uses a `tsvector` column with a GIN index over
project-prefixed words (see `_text`).

Concurrent writers of the same id meet at `INSERT ... ON CONFLICT DO NOTHING`
followed by `SELECT ... FOR UPDATE`: exactly one inserts, the others then compare
content under the row lock. A client killed mid-transaction is rolled back by the
server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from passdown.errors import StoreError, UsageError
from passdown.records import Scope
from passdown.store._base import (
    PointerKey,
    Prepared,
    Query,
    ScopeLike,
    Store,
    coerce_scope,
    conflict,
    narrowing,
    not_found,
    pointer_where,
)
from passdown.store._text import tsquery

if TYPE_CHECKING:
    import psycopg

DEFAULT_SCHEMA = "passdown"
CONNECT_TIMEOUT_S = 10
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# Append-only: (name, statements). Never edit an applied migration; add a new one.
MIGRATIONS: list[tuple[str, tuple[str, ...]]] = [
    (
        "0001_records",
        (
            """CREATE TABLE records (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                project text NOT NULL,
                id text NOT NULL,
                scope_user text NOT NULL DEFAULT '',
                scope_team text NOT NULL DEFAULT '',
                scope_agent text NOT NULL DEFAULT '',
                type text NOT NULL,
                created_us bigint NOT NULL,
                version integer NOT NULL,
                stored_at timestamptz NOT NULL,
                hash text NOT NULL,
                kinds text[] NOT NULL,
                body text NOT NULL,  -- canonical JSON, as text: jsonb would reorder keys
                tsv tsvector NOT NULL,
                UNIQUE (project, id)
            )""",
            "CREATE INDEX records_by_time ON records (project, created_us DESC, seq DESC)",
            "CREATE INDEX records_by_type ON records (project, type, created_us DESC, seq DESC)",
            # no pending list: every query would scan recent inserts linearly otherwise
            "CREATE INDEX records_text ON records USING gin (tsv) WITH (fastupdate = off)",
            """CREATE TABLE record_history (
                project text NOT NULL,
                id text NOT NULL,
                version integer NOT NULL,
                stored_at timestamptz NOT NULL,
                hash text NOT NULL,
                body text NOT NULL,
                PRIMARY KEY (project, id, version)
            )""",
        ),
    ),
    (
        "0002_pointers",
        (
            """CREATE TABLE pointers (
                project text NOT NULL,
                scope_user text NOT NULL,
                scope_team text NOT NULL,
                scope_agent text NOT NULL,
                name text NOT NULL,
                value text NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (project, scope_user, scope_team, scope_agent, name)
            )""",
        ),
    ),
]

_INSERT = (
    "INSERT INTO records (project, id, scope_user, scope_team, scope_agent, type, created_us, "
    "version, stored_at, hash, kinds, body, tsv) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, 1, now(), %s, %s, %s, to_tsvector('simple', %s)) "
    "ON CONFLICT (project, id) DO NOTHING RETURNING seq"
)
_NEW_VERSION = (
    "UPDATE records SET scope_user = %s, scope_team = %s, scope_agent = %s, type = %s, "
    "created_us = %s, version = version + 1, stored_at = now(), hash = %s, kinds = %s, "
    "body = %s, tsv = to_tsvector('simple', %s) WHERE seq = %s"
)
_POINTER_KEY = pointer_where("%s")


def split_url(url: str) -> tuple[str, str]:
    """(libpq conninfo URL, schema): our `schema` query parameter is not libpq's."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in params if k == "schema"), DEFAULT_SCHEMA)
    if not _IDENTIFIER.fullmatch(schema):
        raise UsageError(f"invalid schema name {schema!r}: use letters, digits and _")
    rest = urlencode([(k, v) for k, v in params if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class PostgresStore(Store):
    def __init__(self, url: str, *, max_connections: int = 4) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = redact(url)
        conninfo, self.schema = split_url(url)
        with self._errors():
            # one direct connection first: a clear error now instead of a pool timeout later
            with psycopg.connect(
                conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            ) as conn:
                self._migrate(conn)
            self._pool = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=max_connections,
                kwargs={"autocommit": True},
                configure=self._configure,
                timeout=CONNECT_TIMEOUT_S,
                name="passdown",
                open=True,
            )

    # -- plumbing ----------------------------------------------------------------------

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL store {self.url}: {exc}".rstrip()) from exc

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        from psycopg import sql

        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self._errors(), self._pool.connection() as conn, conn.transaction():
            yield conn

    def _read(self, sql: str, args: tuple[object, ...] | list[object]) -> list[tuple[Any, ...]]:
        with self._errors(), self._pool.connection() as conn:
            return conn.execute(sql, args).fetchall()

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        from psycopg import sql

        with conn.transaction():
            # concurrent first opens queue here instead of racing to create tables
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"passdown:{self.schema}",))
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema))
            )
            self._configure(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                "name text NOT NULL UNIQUE, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
            unknown = applied - {name for name, _ in MIGRATIONS}
            if unknown:
                raise StoreError(
                    f"PostgreSQL store {self.url} has migrations this passdown does not know: "
                    f"{', '.join(sorted(unknown))}",
                    hint="upgrade passdown",
                )
            for version, (name, statements) in enumerate(MIGRATIONS, start=1):
                if name not in applied:
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (version, name),
                    )

    def schema_version(self) -> int:
        return int(self._read("SELECT coalesce(max(version), 0) FROM schema_migrations", ())[0][0])

    def close(self) -> None:
        self._pool.close()

    # -- writes -------------------------------------------------------------------------

    def _write(self, prepared: list[Prepared], new_version: bool) -> None:
        # a fixed lock order, so two batches touching the same ids cannot deadlock
        ordered = sorted(prepared, key=lambda p: (p.project, p.id))
        with self._transaction() as conn:
            for p in ordered:
                self._put(conn, p, new_version)

    def _put(self, conn: psycopg.Connection[Any], p: Prepared, new_version: bool) -> None:
        while True:
            inserted = conn.execute(
                _INSERT,
                (
                    p.project,
                    p.id,
                    *p.narrow,
                    p.type,
                    p.created_us,
                    p.content_hash,
                    p.kinds,
                    p.body,
                    p.text,
                ),
            ).fetchone()
            if inserted:
                return
            row = conn.execute(
                "SELECT seq, hash FROM records WHERE project = %s AND id = %s FOR UPDATE",
                (p.project, p.id),
            ).fetchone()
            if row is not None:
                break  # else it was deleted since our insert attempt: try again
        seq, old_hash = row
        if old_hash == p.content_hash:
            return
        if not new_version:
            raise conflict(p)
        conn.execute(
            "INSERT INTO record_history SELECT project, id, version, stored_at, hash, body "
            "FROM records WHERE seq = %s",
            (seq,),
        )
        conn.execute(
            _NEW_VERSION,
            (*p.narrow, p.type, p.created_us, p.content_hash, p.kinds, p.body, p.text, seq),
        )

    def delete(self, scope: ScopeLike, id: str) -> None:
        sc = coerce_scope(scope)
        if "\0" in id:
            raise not_found(id, sc)
        where, args = _scope_where(sc)
        with self._transaction() as conn:
            row = conn.execute(
                f"DELETE FROM records WHERE {where} AND id = %s RETURNING seq", (*args, id)
            ).fetchone()
            if row is None:
                raise not_found(id, sc)
            conn.execute(
                "DELETE FROM record_history WHERE project = %s AND id = %s", (sc.project, id)
            )

    # -- reads --------------------------------------------------------------------------

    def _current(self, sc: Scope, id: str) -> tuple[int, str, str, str]:
        where, args = _scope_where(sc)
        rows = self._read(
            f"SELECT version, stored_at, hash, body FROM records WHERE {where} AND id = %s",
            (*args, id),
        )
        if not rows:
            raise not_found(id, sc)
        version, stored_at, hash_, body = rows[0]
        return version, _iso(stored_at), hash_, body

    def _older_body(self, sc: Scope, id: str, version: int) -> str | None:
        rows = self._read(
            "SELECT body FROM record_history WHERE project = %s AND id = %s AND version = %s",
            (sc.project, id, version),
        )
        return rows[0][0] if rows else None

    def _older_meta(self, sc: Scope, id: str) -> list[tuple[int, str, str]]:
        rows = self._read(
            "SELECT version, stored_at, hash FROM record_history WHERE project = %s AND id = %s "
            "ORDER BY version",
            (sc.project, id),
        )
        return [(v, _iso(s), h) for v, s, h in rows]

    def _select(self, q: Query) -> list[tuple[int, int, str]]:
        where, args = _matching(q)
        if q.after is not None:
            where += " AND (created_us, seq) < (%s, %s)"
            args.extend(q.after)
        sql = (
            f"SELECT created_us, seq, body FROM records WHERE {where} "
            "ORDER BY created_us DESC, seq DESC LIMIT %s"
        )
        return self._read(sql, [*args, q.limit + 1])

    def _count(self, q: Query) -> int:
        where, args = _matching(q)
        return int(self._read(f"SELECT count(*) FROM records WHERE {where}", args)[0][0])

    # -- pointers -----------------------------------------------------------------------

    def _pointer_row(self, key: PointerKey) -> tuple[str, str] | None:
        rows = self._read(f"SELECT value, updated_at::text FROM pointers WHERE {_POINTER_KEY}", key)
        return (rows[0][0], str(rows[0][1])) if rows else None

    def _swap_pointer(
        self, key: PointerKey, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        when = "coalesce(%s::timestamptz, now())"  # `stamp`: an undo puts the old time back
        if expected is None:
            sql = (
                "INSERT INTO pointers "
                "(project, scope_user, scope_team, scope_agent, name, value, updated_at) "
            )
            sql += f"VALUES (%s, %s, %s, %s, %s, %s, {when}) ON CONFLICT DO NOTHING RETURNING 1"
            args: tuple[object, ...] = (*key, new, stamp)
        elif new is None:
            sql = f"DELETE FROM pointers WHERE {_POINTER_KEY} AND value = %s RETURNING 1"
            args = (*key, expected)
        else:
            sql = (
                f"UPDATE pointers SET value = %s, updated_at = {when} "
                f"WHERE {_POINTER_KEY} AND value = %s RETURNING 1"
            )
            args = (new, stamp, *key, expected)
        with self._transaction() as conn:
            return conn.execute(sql, args).fetchone() is not None

    # -- health -------------------------------------------------------------------------

    def check(self) -> list[str]:
        ((gaps, orphans),) = self._read(
            "SELECT (SELECT count(*) FROM records r WHERE r.version - 1 != "
            "  (SELECT count(*) FROM record_history h WHERE h.project = r.project AND h.id = r.id)), "
            "(SELECT count(*) FROM record_history h WHERE NOT EXISTS "
            "  (SELECT 1 FROM records r WHERE r.project = h.project AND r.id = h.id))",
            (),
        )
        problems = []
        if gaps:
            problems.append(f"{gaps} records have missing history versions")
        if orphans:
            problems.append(f"{orphans} history rows belong to no record")
        return problems

    def projects(self) -> list[str]:
        rows = self._read(
            "SELECT project FROM records GROUP BY project ORDER BY max(created_us) DESC, project",
            (),
        )
        return [row[0] for row in rows]


def _scope_where(sc: Scope) -> tuple[str, list[object]]:
    return _where(sc.project, narrowing(sc))


def _where(project: str, narrow: tuple[tuple[str, str], ...]) -> tuple[str, list[object]]:
    where = ["project = %s"]
    args: list[object] = [project]
    for field, value in narrow:
        where.append(f"scope_{field} = %s")
        args.append(value)
    return " AND ".join(where), args


def _matching(q: Query) -> tuple[str, list[object]]:
    """(the WHERE condition, its arguments) of the records q matches, whatever its limit
    and cursor."""
    scope, args = _where(q.project, q.narrow)
    where = [scope]
    for clause, value in (
        ("type = %s", q.type),
        ("created_us >= %s", q.since_us),
        ("created_us < %s", q.until_us),
        ("%s = ANY(kinds)", q.kind),
        ("tsv @@ to_tsquery('simple', %s)", tsquery(q.terms) if q.terms else None),
    ):
        if value is not None:
            where.append(clause)
            args.append(value)
    return " AND ".join(where), args
