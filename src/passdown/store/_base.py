"""The Store interface and what every backend shares.

Semantics (the contract test suite in tests/store checks each backend against it):

- A record is keyed by (scope.project, id). Storing the same key with the same
  canonical content is a no-op; with different content it is a RecordConflict unless
  `new_version=True`, which keeps the previous version in the history and makes the
  new one current. `retrieve` returns the current version unless asked for another.
- Every operation takes a scope and filters by it before anything else: `project`
  must match, and each of `user`, `team`, `agent` given in the scope must match too
  (left out = any). A record outside the scope is indistinguishable from a missing one.
- Queries return newest first by the record's own `created_at` (ties: most recently
  inserted first), `limit` at a time, with an opaque cursor for the next page.
- The store's own metadata (version, stored_at, content hash) lives beside the
  record, never inside it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Union

from passdown.errors import (
    RecordConflict,
    RecordInvalid,
    RecordNotFound,
    RecordTooLarge,
    UsageError,
)
from passdown.store import _text

if TYPE_CHECKING:
    from passdown.records import Record, Scope

ScopeLike = Union["Scope", Mapping[str, str], str]
TimeLike = str | datetime

MAX_LIMIT = 1000
# The largest record (its canonical JSON) a store takes: a default handoff record is
# tens of KB; this bound keeps one client from filling the database with one call.
DEFAULT_MAX_RECORD_BYTES = 8 * 1024 * 1024
MAX_RECORD_BYTES_ENV = "PASSDOWN_MAX_RECORD_BYTES"
_INT64 = 2**63 - 1  # both databases keep times and sequence numbers as 64-bit integers
NARROWING = ("user", "team", "agent")  # scope fields that narrow a project


@dataclass(frozen=True, slots=True)
class RecordMeta:
    """What the store knows about one version of a record, kept apart from the record."""

    id: str
    version: int
    stored_at: str  # ISO 8601 UTC, the store's clock
    content_hash: str  # sha256 of the canonical JSON


@dataclass(frozen=True, slots=True)
class Page:
    records: list[Record]
    next_cursor: str | None  # pass back as `cursor=` for the next page; None at the end


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated record plus the columns every backend indexes."""

    record: Record
    id: str
    project: str
    narrow: tuple[str, str, str]  # user, team, agent; "" when absent
    type: str
    created_us: int
    body: str  # canonical JSON
    content_hash: str
    kinds: list[str]  # distinct annotation kinds, first-seen order
    text: str  # the full-text document (see _text)


@dataclass(frozen=True, slots=True)
class Query:
    """A normalised query, handed to a backend's `_select`."""

    project: str
    narrow: tuple[tuple[str, str], ...]  # (field, value) pairs the scope fixes
    type: str | None
    kind: str | None
    since_us: int | None  # inclusive
    until_us: int | None  # exclusive
    terms: list[_text.Term] | None
    limit: int
    after: tuple[int, int] | None  # (created_us, seq) of the previous page's last record


def coerce_scope(scope: ScopeLike) -> Scope:
    """A Scope from a Scope, a mapping, or a bare project name."""
    from passdown.records import Scope

    if isinstance(scope, Scope):
        return scope
    if isinstance(scope, str):
        scope = {"project": scope}
    from pydantic import ValidationError

    from passdown.records import invalid_from

    try:
        return Scope.model_validate(dict(scope))
    except ValidationError as exc:
        raise invalid_from(exc, "scope") from exc


def narrowing(scope: Scope) -> tuple[tuple[str, str], ...]:
    return tuple((f, getattr(scope, f)) for f in NARROWING if getattr(scope, f) is not None)


def prepare(record: Record | Mapping[str, object]) -> Prepared:
    from passdown.records import canonical_json, timestamp_us, validate_record

    rec = _redacted(validate_record(record))
    body = canonical_json(rec)
    limit = max_record_bytes()
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise RecordTooLarge(
            f"invalid record: record {rec.id!r} is {size:,} bytes; the store takes at most "
            f"{limit:,} (set {MAX_RECORD_BYTES_ENV} to change it)",
        )

    texts = [rec.title, rec.content, *(a.value for a in rec.annotations)]
    return Prepared(
        record=rec,
        id=rec.id,
        project=rec.scope.project,
        narrow=(rec.scope.user or "", rec.scope.team or "", rec.scope.agent or ""),
        type=rec.type,
        created_us=timestamp_us(rec.created_at),
        body=body,
        content_hash=hashlib.sha256(body.encode()).hexdigest(),
        kinds=list(dict.fromkeys(a.kind for a in rec.annotations)),
        text=_text.document(rec.scope.project, texts),
    )


def _redacted(rec: Record) -> Record:
    """The record with every secret in its free text replaced, whichever door stored it
    (CLI, MCP, HTTP, API): what the store holds is printed by `find`, `retrieve` and the
    pages. Ids, the scope, provenance and timestamps are kept: queries match them as
    given. A record passdown wrote is already clean: redacting it again changes nothing."""
    from passdown._redact import Redactor

    redactor = Redactor()
    title, content = redactor.redact(rec.title), redactor.redact(rec.content)
    values = [redactor.redact(a.value) for a in rec.annotations]
    try:
        extra = {k: redactor.redact_data(v) for k, v in (rec.model_extra or {}).items()}
    except RecursionError:
        raise RecordInvalid("invalid record: its extra fields nest too deeply") from None
    if not redactor.findings:
        return rec
    clean = rec.model_copy(deep=False)
    clean.title, clean.content = title, content
    clean.annotations = [
        a if a.value == v else a.model_copy(update={"value": v})
        for a, v in zip(rec.annotations, values, strict=True)
    ]
    if clean.__pydantic_extra__ is not None:
        clean.__pydantic_extra__ = extra
    return clean


def max_record_bytes() -> int:
    """`$PASSDOWN_MAX_RECORD_BYTES`, else `DEFAULT_MAX_RECORD_BYTES`."""
    raw = os.environ.get(MAX_RECORD_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_RECORD_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{MAX_RECORD_BYTES_ENV} must be a number of bytes, got {raw!r}") from None
    if value < 1024:
        raise UsageError(f"{MAX_RECORD_BYTES_ENV} must be at least 1024, got {value}")
    return value


def no_nul(value: str | None, name: str) -> None:
    if value is not None and "\0" in value:
        raise UsageError(f"{name} cannot contain a NUL character")


def conflict(p: Prepared) -> RecordConflict:
    return RecordConflict(
        f"record {p.id!r} already exists in project {p.project!r} with different content",
        hint="store it with new_version=True (CLI: --new-version) to keep both versions",
    )


# -- cursors: opaque to callers, "v1:<created_us>:<seq>" underneath ------------------


def encode_cursor(created_us: int, seq: int) -> str:
    raw = f"v1:{created_us}:{seq}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        tag, created_us, seq = raw.split(":")
        if tag != "v1" or max(len(created_us), len(seq)) > 20:
            raise ValueError(tag)
        after = int(created_us), int(seq)
        if not all(-_INT64 <= n <= _INT64 for n in after):  # the databases take 64 bits
            raise ValueError(raw)
        return after
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise UsageError(f"invalid cursor: {cursor!r}") from None


def build_query(
    scope: ScopeLike,
    *,
    type: str | None,
    kind: str | None,
    since: TimeLike | None,
    until: TimeLike | None,
    text: str | None,
    limit: int,
    cursor: str | None,
) -> Query:
    from passdown.records import RECORD_TYPES

    sc = coerce_scope(scope)
    no_nul(text, "text")
    no_nul(kind, "kind")
    if type is not None and type not in RECORD_TYPES:
        raise UsageError(f"unknown record type {type!r}: expected one of {', '.join(RECORD_TYPES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    return Query(
        project=sc.project,
        narrow=narrowing(sc),
        type=type,
        kind=kind,
        since_us=_time(since, "since"),
        until_us=_time(until, "until"),
        terms=_text.query_terms(sc.project, text) if text is not None else None,
        limit=limit,
        after=decode_cursor(cursor) if cursor else None,
    )


def _time(value: TimeLike | None, name: str) -> int | None:
    from passdown.records import timestamp_us

    if value is None:
        return None
    try:
        return timestamp_us(value)
    except (ValueError, OverflowError) as exc:
        raise UsageError(f"{name}: {exc}") from None


def page_from_rows(rows: Sequence[tuple[int, int, str]], limit: int) -> Page:
    """Rows are (created_us, seq, body), newest first, at most limit + 1 of them."""
    from passdown.records import Record

    shown = rows[:limit]
    records = [Record.model_validate_json(body) for _, _, body in shown]
    more = len(rows) > limit
    return Page(records, encode_cursor(shown[-1][0], shown[-1][1]) if more else None)


class Store(ABC):
    """A handoff record store. Use as a context manager, or call `close()`."""

    url: str

    def store(self, record: Record | Mapping[str, object], *, new_version: bool = False) -> str:
        """Store one record; returns its id. See the module docstring for conflicts."""
        return self.store_many([record], new_version=new_version)[0]

    def store_many(
        self, records: Iterable[Record | Mapping[str, object]], *, new_version: bool = False
    ) -> list[str]:
        """Store several records in one transaction: all of them, or (on any error) none."""
        prepared = [prepare(r) for r in records]  # validate everything before writing
        if prepared:
            self._write(prepared, new_version)
        return [p.id for p in prepared]

    def query(
        self,
        scope: ScopeLike,
        *,
        type: str | None = None,
        kind: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        text: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        """Records in scope, newest first. `since` is inclusive, `until` exclusive;
        `text` matches records containing every word (a trailing `*` matches a prefix)
        in title, content or annotation values; `kind` keeps records with an
        annotation of that kind."""
        q = build_query(
            scope,
            type=type,
            kind=kind,
            since=since,
            until=until,
            text=text,
            limit=limit,
            cursor=cursor,
        )
        return page_from_rows(self._select(q), q.limit)

    def count(
        self,
        scope: ScopeLike,
        *,
        type: str | None = None,
        kind: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        text: str | None = None,
    ) -> int:
        """How many records `query` with the same filters would page through, counted
        by the database: no record is read (a hook numbers its session this way)."""
        q = build_query(
            scope, type=type, kind=kind, since=since, until=until, text=text, limit=1, cursor=None
        )
        return self._count(q)

    def _count(self, q: Query) -> int:
        """Rows matching q whatever its limit and cursor. The databases count in SQL;
        this fallback pages through `_select`."""
        total, after = 0, None
        while True:
            rows = self._select(replace(q, limit=MAX_LIMIT, after=after))
            total += min(len(rows), MAX_LIMIT)
            if len(rows) <= MAX_LIMIT:
                return total
            after = (rows[MAX_LIMIT - 1][0], rows[MAX_LIMIT - 1][1])

    def retrieve(self, scope: ScopeLike, id: str, *, version: int | None = None) -> Record:
        """The record's current version (or `version`); RecordNotFound outside scope."""
        from passdown.records import Record

        sc = coerce_scope(scope)
        if "\0" in id:
            raise not_found(id, sc)  # no record can have it: storing one is refused
        current, _, _, body = self._current(sc, id)  # the scope check, for every version
        if version is not None and version != current:
            older = self._older_body(sc, id, version)
            if older is None:
                raise not_found(id, sc, version)
            body = older
        return Record.model_validate_json(body)

    def history(self, scope: ScopeLike, id: str) -> list[RecordMeta]:
        """Metadata of every stored version, oldest first; the last one is current."""
        sc = coerce_scope(scope)
        if "\0" in id:
            raise not_found(id, sc)
        version, stored_at, hash_, _ = self._current(sc, id)
        older = [RecordMeta(id, v, s, h) for v, s, h in self._older_meta(sc, id)]
        return [*older, RecordMeta(id, version, stored_at, hash_)]

    @abstractmethod
    def _current(self, sc: Scope, id: str) -> tuple[int, str, str, str]:
        """(version, stored_at ISO, hash, body) of the current version; RecordNotFound
        outside scope."""

    @abstractmethod
    def _older_body(self, sc: Scope, id: str, version: int) -> str | None:
        """The body of an earlier version, if it was kept."""

    @abstractmethod
    def _older_meta(self, sc: Scope, id: str) -> list[tuple[int, str, str]]:
        """(version, stored_at ISO, hash) of the earlier versions, oldest first."""

    @abstractmethod
    def delete(self, scope: ScopeLike, id: str) -> None:
        """Delete the record and all its versions; RecordNotFound outside scope."""

    def get_pointer(self, scope: ScopeLike, name: str) -> str | None:
        """A named value kept per exact scope (e.g. the active handoff's id)."""
        row = self._pointer_row(pointer_row_key(scope, name))
        return row[0] if row else None

    def set_pointer(
        self, scope: ScopeLike, name: str, expected: str | None, new: str | None
    ) -> bool:
        """Compare-and-swap: set `name` to `new` only if it currently is `expected`
        (None = unset). `new=None` removes it. Returns whether the swap happened."""
        return self.restore_pointer(scope, name, expected, new, None)

    def pointer_stamp(self, scope: ScopeLike, name: str) -> str | None:
        """When `name` was last set, as the store keeps it (None: unset);
        `restore_pointer` puts it back."""
        row = self._pointer_row(pointer_row_key(scope, name))
        return row[1] if row else None

    def restore_pointer(
        self, scope: ScopeLike, name: str, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        """`set_pointer` that undoes a change: `name` gets back `new` with the `stamp`
        it had (`pointer_stamp`; None: now), so the store's row is as it was before the
        change."""
        key = pointer_row_key(scope, name)
        if expected is None and new is None:
            return self._pointer_row(key) is None
        return self._swap_pointer(key, expected, new, stamp)

    @abstractmethod
    def _pointer_row(self, key: PointerKey) -> tuple[str, str] | None:
        """(value, when it was set) of the pointer; None when it is unset."""

    @abstractmethod
    def _swap_pointer(
        self, key: PointerKey, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        """In one transaction: when the pointer's value is `expected` (None: unset), set
        it to `new` (None: remove it) with the time `stamp` (None: now); whether it did.
        `expected` and `new` are never both None."""

    @abstractmethod
    def check(self) -> list[str]:
        """Consistency problems found in the store (empty when healthy)."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _write(self, prepared: list[Prepared], new_version: bool) -> None: ...

    @abstractmethod
    def _select(self, q: Query) -> list[tuple[int, int, str]]:
        """(created_us, seq, body) rows matching q, newest first, at most q.limit + 1."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def projects(self) -> list[str]:
        """Every project that holds at least one record, most recently active first.
        Not scoped: only for a caller that may see the whole store (`passdown ui`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot list projects")


def not_found(id: str, scope: Scope, version: int | None = None) -> RecordNotFound:
    which = f"record {id!r}" if version is None else f"version {version} of record {id!r}"
    return RecordNotFound(f"no {which} in project {scope.project!r}")


def pointer_key(scope: Scope) -> tuple[str, str, str, str]:
    """Pointers are kept per exact scope: absent narrowing fields are ""."""
    return (scope.project, scope.user or "", scope.team or "", scope.agent or "")


# (project, user, team, agent, name): one pointer's row in either database
PointerKey = tuple[str, str, str, str, str]
POINTER_COLUMNS = ("project", "scope_user", "scope_team", "scope_agent", "name")


def pointer_row_key(scope: ScopeLike, name: str) -> PointerKey:
    return (*pointer_key(coerce_scope(scope)), name)


def pointer_where(mark: str) -> str:
    """The WHERE clause that finds one pointer's row, with the database's placeholder."""
    return " AND ".join(f"{column} = {mark}" for column in POINTER_COLUMNS)
