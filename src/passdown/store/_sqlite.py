"""The SQLite backend: the default, a single file in the user data folder.

WAL mode lets readers run while one writer writes; every write is one
`BEGIN IMMEDIATE` transaction, so concurrent processes queue on the lock (busy
timeout) instead of failing, and a process killed mid-write leaves only a rolled-back
transaction behind.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from passdown.errors import StoreError
from passdown.store import _sqlite_files as files
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
from passdown.store._text import fts5_query

if TYPE_CHECKING:
    from passdown.records import Scope

BUSY_TIMEOUT_S = 60.0

# Append-only: (name, statements). Never edit an applied migration; add a new one.
MIGRATIONS: list[tuple[str, tuple[str, ...]]] = [
    (
        "0001_records",
        (
            """CREATE TABLE records (
                seq INTEGER PRIMARY KEY,
                project TEXT NOT NULL,
                id TEXT NOT NULL,
                scope_user TEXT NOT NULL DEFAULT '',
                scope_team TEXT NOT NULL DEFAULT '',
                scope_agent TEXT NOT NULL DEFAULT '',
                type TEXT NOT NULL,
                created_us INTEGER NOT NULL,
                version INTEGER NOT NULL,
                stored_at TEXT NOT NULL,
                hash TEXT NOT NULL,
                kinds TEXT NOT NULL,
                body TEXT NOT NULL,
                UNIQUE (project, id)
            )""",
            "CREATE INDEX records_by_time ON records (project, created_us DESC, seq DESC)",
            "CREATE INDEX records_by_type ON records (project, type, created_us DESC, seq DESC)",
            """CREATE TABLE record_history (
                project TEXT NOT NULL,
                id TEXT NOT NULL,
                version INTEGER NOT NULL,
                stored_at TEXT NOT NULL,
                hash TEXT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (project, id, version)
            ) WITHOUT ROWID""",
            # rowid = records.seq; the text is the project-prefixed document (see _text)
            "CREATE VIRTUAL TABLE records_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2')",
        ),
    ),
    (
        "0002_pointers",
        (
            """CREATE TABLE pointers (
                project TEXT NOT NULL,
                scope_user TEXT NOT NULL,
                scope_team TEXT NOT NULL,
                scope_agent TEXT NOT NULL,
                name TEXT NOT NULL,
                value TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (project, scope_user, scope_team, scope_agent, name)
            ) WITHOUT ROWID""",
        ),
    ),
]

_COLUMNS = "project, id, scope_user, scope_team, scope_agent, type, created_us, version, stored_at, hash, kinds, body"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _kinds_json(kinds: list[str]) -> str:
    import json

    return json.dumps(kinds, ensure_ascii=False)


class SQLiteStore(Store):
    def __init__(self, path: str | Path, *, url: str | None = None) -> None:
        """`url`: the store URL as the user gave it; messages show it where the path
        it names reads otherwise (`sqlite:////abs/store.db` names `/abs/store.db`)."""
        self.path = str(path)
        self.url = url or f"sqlite://{self.path}"
        self.shown = self.path if self.url == f"sqlite://{self.path}" else self.url
        self.warnings: list[str] = []
        self._held: Callable[[], object] | None = None
        if self.path != ":memory:":
            # before the database file is created: a log whose database is gone is kept
            self._held = files.hold(
                self.path,
                self,
                lambda: files.prepare_files(Path(self.path), self.shown, self.warnings),
            )
        self._lock = threading.RLock()  # one connection, shared by this process's threads
        try:
            with self._errors():
                self._conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                self._conn.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL: durable across process crashes (not across power loss)
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
        except BaseException:
            self._let_go()
            raise

    # -- plumbing ----------------------------------------------------------------------

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self.shown}: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            self._conn.execute("BEGIN IMMEDIATE")  # take the write lock now, not on first write
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, args: tuple[object, ...] | list[object]) -> list[tuple[Any, ...]]:
        with self._lock, self._errors():
            return self._conn.execute(sql, args).fetchall()

    def _migrate(self) -> None:
        with self._transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, applied_at TEXT NOT NULL)"
            )
            applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
            known = {name for name, _ in MIGRATIONS}
            if applied - known:
                raise StoreError(
                    f"SQLite store {self.shown} has migrations this passdown does not know: "
                    f"{', '.join(sorted(applied - known))}",
                    hint="upgrade passdown",
                )
            for version, (name, statements) in enumerate(MIGRATIONS, start=1):
                if name in applied:
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, _now())
                )

    def schema_version(self) -> int:
        return int(self._read("SELECT coalesce(max(version), 0) FROM schema_migrations", ())[0][0])

    def close(self) -> None:
        with self._lock:
            self._let_go()

    def _let_go(self) -> None:
        """Close the connection (if it was made); it no longer counts as open here."""
        if getattr(self, "_conn", None) is not None:
            self._conn.close()
        if self._held is not None:
            self._held()

    # -- writes -------------------------------------------------------------------------

    def _write(self, prepared: list[Prepared], new_version: bool) -> None:
        now = _now()
        with self._transaction() as conn:
            for p in prepared:
                self._put(conn, p, new_version, now)

    def _put(self, conn: sqlite3.Connection, p: Prepared, new_version: bool, now: str) -> None:
        row = conn.execute(
            "SELECT seq, version, hash FROM records WHERE project = ? AND id = ?", (p.project, p.id)
        ).fetchone()
        if row is None:
            cur = conn.execute(
                f"INSERT INTO records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
                (p.project, p.id, *p.narrow, p.type, p.created_us, now, p.content_hash,
                 _kinds_json(p.kinds), p.body),
            )  # fmt: skip
            conn.execute(
                "INSERT INTO records_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, p.text)
            )
            return
        seq, version, old_hash = row
        if old_hash == p.content_hash:
            return  # same content: storing again is a no-op
        if not new_version:
            raise conflict(p)
        conn.execute(
            "INSERT INTO record_history SELECT project, id, version, stored_at, hash, body "
            "FROM records WHERE seq = ?",
            (seq,),
        )
        conn.execute(
            "UPDATE records SET scope_user = ?, scope_team = ?, scope_agent = ?, type = ?, "
            "created_us = ?, version = ?, stored_at = ?, hash = ?, kinds = ?, body = ? WHERE seq = ?",
            (*p.narrow, p.type, p.created_us, version + 1, now, p.content_hash,
             _kinds_json(p.kinds), p.body, seq),
        )  # fmt: skip
        conn.execute("UPDATE records_fts SET text = ? WHERE rowid = ?", (p.text, seq))

    def delete(self, scope: ScopeLike, id: str) -> None:
        sc = coerce_scope(scope)
        if "\0" in id:
            raise not_found(id, sc)
        where, args = _scope_where(sc)
        with self._transaction() as conn:
            row = conn.execute(
                f"SELECT seq FROM records r WHERE {where} AND r.id = ?", (*args, id)
            ).fetchone()
            if row is None:
                raise not_found(id, sc)
            conn.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM records WHERE seq = ?", (row[0],))
            conn.execute(
                "DELETE FROM record_history WHERE project = ? AND id = ?", (sc.project, id)
            )

    # -- reads --------------------------------------------------------------------------

    def _current(self, sc: Scope, id: str) -> tuple[int, str, str, str]:
        """(version, stored_at, hash, body) of the current version, if in scope."""
        with self._lock, self._errors():
            row = _current_row(self._conn, sc.project, narrowing(sc), id)
        if row is None:
            raise not_found(id, sc)
        return row

    def _older_body(self, sc: Scope, id: str, version: int) -> str | None:
        rows = self._read(
            "SELECT body FROM record_history WHERE project = ? AND id = ? AND version = ?",
            (sc.project, id, version),
        )
        return rows[0][0] if rows else None

    def _older_meta(self, sc: Scope, id: str) -> list[tuple[int, str, str]]:
        rows = self._read(
            "SELECT version, stored_at, hash FROM record_history WHERE project = ? AND id = ? "
            "ORDER BY version",
            (sc.project, id),
        )
        return [(v, s, h) for v, s, h in rows]

    def _select(self, q: Query) -> list[tuple[int, int, str]]:
        source, where, args = _matching(q)
        if q.after is not None:
            where += " AND (r.created_us, r.seq) < (?, ?)"
            args.extend(q.after)
        sql = (
            f"SELECT r.created_us, r.seq, r.body FROM {source} WHERE {where} "
            "ORDER BY r.created_us DESC, r.seq DESC LIMIT ?"
        )
        return self._read(sql, [*args, q.limit + 1])

    def _count(self, q: Query) -> int:
        source, where, args = _matching(q)
        return int(self._read(f"SELECT count(*) FROM {source} WHERE {where}", args)[0][0])

    # -- pointers -----------------------------------------------------------------------

    def _pointer_row(self, key: PointerKey) -> tuple[str, str] | None:
        rows = self._read(f"SELECT value, updated_at FROM pointers WHERE {_POINTER_MATCH}", key)
        return (rows[0][0], str(rows[0][1])) if rows else None

    def _swap_pointer(
        self, key: PointerKey, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        match = _POINTER_MATCH
        with self._transaction() as conn:
            row = conn.execute(f"SELECT value FROM pointers WHERE {match}", key).fetchone()
            if (row[0] if row else None) != expected:
                return False
            if new is None:
                conn.execute(f"DELETE FROM pointers WHERE {match}", key)
            else:
                conn.execute(
                    "INSERT INTO pointers VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE "
                    "SET value = excluded.value, updated_at = excluded.updated_at",
                    (*key, new, stamp or _now()),
                )
            return True

    # -- health -------------------------------------------------------------------------

    def check(self) -> list[str]:
        problems = [row[0] for row in self._read("PRAGMA integrity_check", ()) if row[0] != "ok"]
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')"
                )
        except sqlite3.Error as exc:
            problems.append(f"full-text index: {exc}")
        ((records, fts, unindexed, gaps, orphans),) = self._read(
            "SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM records_fts), "
            "(SELECT count(*) FROM records r WHERE NOT EXISTS "
            " (SELECT 1 FROM records_fts f WHERE f.rowid = r.seq)), "
            "(SELECT count(*) FROM records r WHERE r.version - 1 != "
            " (SELECT count(*) FROM record_history h WHERE h.project = r.project AND h.id = r.id)), "
            "(SELECT count(*) FROM record_history h WHERE NOT EXISTS "
            " (SELECT 1 FROM records r WHERE r.project = h.project AND r.id = h.id))",
            (),
        )  # fmt: skip
        if records != fts or unindexed:
            problems.append(
                f"full-text index has {fts} rows for {records} records ({unindexed} missing)"
            )
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


def _matching(q: Query) -> tuple[str, str, list[object]]:
    """(the FROM source, the WHERE condition, its arguments) of the records q matches,
    whatever its limit and cursor."""
    scope, args = _where(q.project, q.narrow)
    where = [scope]
    if q.type is not None:
        where.append("r.type = ?")
        args.append(q.type)
    if q.since_us is not None:
        where.append("r.created_us >= ?")
        args.append(q.since_us)
    if q.until_us is not None:
        where.append("r.created_us < ?")
        args.append(q.until_us)
    if q.kind is not None:
        where.append("EXISTS (SELECT 1 FROM json_each(r.kinds) WHERE json_each.value = ?)")
        args.append(q.kind)
    source = "records r"
    if q.terms is not None:
        # CROSS JOIN keeps the text index as the outer loop: otherwise SQLite walks
        # the whole project by time and runs the text match once per record
        source = "records_fts f CROSS JOIN records r ON r.seq = f.rowid"
        where.insert(0, "records_fts MATCH ?")
        args.insert(0, fts5_query(q.terms))
    return source, " AND ".join(where), args


def _scope_where(sc: Scope) -> tuple[str, list[object]]:
    return _where(sc.project, narrowing(sc))


def _where(project: str, narrow: tuple[tuple[str, str], ...]) -> tuple[str, list[object]]:
    where = ["r.project = ?"]
    args: list[object] = [project]
    for field, value in narrow:
        where.append(f"r.scope_{field} = ?")
        args.append(value)
    return " AND ".join(where), args


# -- the queries the store and `StorePeek` share ------------------------------------------

_POINTER_MATCH = pointer_where("?")


def _pointer_value(conn: sqlite3.Connection, key: tuple[str, ...], name: str) -> str | None:
    row = conn.execute(
        f"SELECT value FROM pointers WHERE {_POINTER_MATCH}", (*key, name)
    ).fetchone()
    return row[0] if row else None


def _current_row(
    conn: sqlite3.Connection, project: str, narrow: tuple[tuple[str, str], ...], id: str
) -> tuple[int, str, str, str] | None:
    where, args = _where(project, narrow)
    row = conn.execute(
        f"SELECT version, stored_at, hash, body FROM records r WHERE {where} AND r.id = ?",
        (*args, id),
    ).fetchone()
    return None if row is None else (row[0], row[1], row[2], row[3])


class StorePeek:
    """Reads an existing SQLite store without opening it as a `SQLiteStore`: no
    migration, no write lock, no records models (pydantic) imported; the pointers and
    record bodies come back as the JSON text the store keeps. For the session-start hook,
    which a new session waits for. Raises sqlite3.Error (a store of an older schema, a
    locked or damaged file): the caller then opens the store itself."""

    def __init__(self, path: Path) -> None:
        self._held = files.hold(str(path), self, lambda: _replayable(path))
        try:  # mode=rw: never creates the file (a missing store is no store, see `open`)
            self._conn = sqlite3.connect(
                f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S
            )
        except BaseException:
            self.close()
            raise

    @classmethod
    def open(cls, path: Path) -> StorePeek | None:
        """None when there is no store file at `path`."""
        return cls(path) if path.is_file() else None

    def pointer(self, project: str, name: str) -> str | None:
        """A pointer of the project-wide scope (`pointer_key` of a scope naming only the
        project)."""
        return _pointer_value(self._conn, (project, "", "", ""), name)

    def record_body(self, project: str, id: str) -> str | None:
        row = _current_row(self._conn, project, (), id)
        return row[3] if row else None

    def close(self) -> None:
        if getattr(self, "_conn", None) is not None:
            self._conn.close()
        self._held()


def _replayable(path: Path) -> None:
    if files.unreplayable_wal(path):  # the store itself keeps that log aside first
        raise sqlite3.OperationalError(f"{path}-wal cannot be replayed")
