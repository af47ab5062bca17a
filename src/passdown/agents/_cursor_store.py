"""Cursor's editor databases, read defensively (the format is reverse-engineered by third
parties and changes often; see `cursor_ide` for the sources).

Two SQLite files, both `state.vscdb` with key/value tables of `(key TEXT, value BLOB)`:
- each workspace's `workspaceStorage/<id>/state.vscdb`, `ItemTable`, key
  `composer.composerData`: `{allComposers: [{composerId, name, createdAt,
  lastUpdatedAt, ...}]}`, the chats of that window;
- the User folder's `globalStorage/state.vscdb`, `cursorDiskKV`: `composerData:<id>`
  (one chat) and `bubbleId:<composerId>:<bubbleId>` (one message each).

A value may be stored as TEXT or as a BLOB (the same JSON either way); anything else
(NULL, a number) is no value. Every statement here is short, a point read or a batch of
`BATCH` keys, so no lock of ours makes the editor wait longer than one statement
(`_sqlite_readonly`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS, decode_or_none
from passdown.agents._sqlite_readonly import ReadOnlyDatabase, open_readonly

BATCH = 64  # keys per statement when reading a chat's messages
# Every read runs to its end (fetchall): a statement left open would keep its SHARED
# lock, and a rollback-journal owner could not commit until it is reset.
MAX_VALUE_BYTES = 256 * 1024 * 1024  # a larger value is left unread, with a warning
COMPOSER_INDEX_KEY = "composer.composerData"


class ComposerHead(msgspec.Struct):
    """One chat as a window lists it; every field may be missing or of another type."""

    composerId: object = None
    name: object = None
    createdAt: object = None
    lastUpdatedAt: object = None


class _ComposerIndex(msgspec.Struct):
    allComposers: list[msgspec.Raw] = []


_INDEX = LazyDecoder(_ComposerIndex)
_HEAD = LazyDecoder(ComposerHead)


class Chat(msgspec.Struct):
    """A chat found in a workspace's list, before its content is read."""

    composer_id: str
    name: str | None
    created_ms: float | None
    updated_ms: float | None


def as_bytes(value: object) -> bytes | None:
    """A column's JSON whichever way it was stored (TEXT or BLOB)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    return None


def _millis(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 < value < 1e14 else None


def workspace_chats(db: Path) -> tuple[list[Chat], str | None]:
    """The chats one workspace database lists, and a warning when it could not be read
    (a list that is missing is no warning: a window where no chat was opened)."""
    try:
        opened = open_readonly(db)
    except sqlite3.Error as exc:
        return [], f"its list of chats cannot be read ({exc})"
    try:
        rows = opened.conn.execute(
            "SELECT value FROM ItemTable WHERE key = ?", (COMPOSER_INDEX_KEY,)
        ).fetchall()
    except sqlite3.Error as exc:
        return [], f"its list of chats cannot be read ({exc})"
    finally:
        opened.close()
    data = as_bytes(rows[0][0]) if rows else None
    if data is None:
        return [], None
    index = decode_or_none(_INDEX, data)
    if not isinstance(index, _ComposerIndex):
        return [], "its list of chats (composer.composerData) is not readable JSON"
    chats: list[Chat] = []
    for raw in index.allComposers:
        head = decode_or_none(_HEAD, raw)
        if not isinstance(head, ComposerHead) or not isinstance(head.composerId, str):
            continue
        if not head.composerId or len(head.composerId) > 200:
            continue
        name = head.name if isinstance(head.name, str) and head.name.strip() else None
        chats.append(
            Chat(head.composerId, name, _millis(head.createdAt), _millis(head.lastUpdatedAt))
        )
    return chats, opened.warning


class GlobalStore:
    """The global database, open for one listing or one chat's read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db: ReadOnlyDatabase = open_readonly(path)
        self.warning = self.db.warning
        self.missing_table = not self._has_table("cursorDiskKV")
        # Cursor's table has a UNIQUE key (an index): without one, a probe per chat
        # would scan the whole table each time, so chats are listed unprobed
        self.indexed = not self.missing_table and self._key_indexed()

    def close(self) -> None:
        self.db.close()

    def _has_table(self, name: str) -> bool:
        rows = self.db.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchall()
        return bool(rows)

    def _key_indexed(self) -> bool:
        for row in self.db.conn.execute("PRAGMA index_list(cursorDiskKV)").fetchall():
            name = row[1] if len(row) > 1 else None
            if not isinstance(name, str):
                continue
            columns = self.db.conn.execute(
                "SELECT name FROM pragma_index_info(?)", (name,)
            ).fetchall()
            if columns and columns[0][0] == "key":
                return True
        return False

    def value(self, key: str) -> bytes | None:
        """One value, or None when it is missing, of no JSON type, or too large."""
        if self.missing_table:
            return None
        rows = self.db.conn.execute(
            "SELECT value FROM cursorDiskKV WHERE key = ? AND length(value) <= ?",
            (key, MAX_VALUE_BYTES),
        ).fetchall()
        return as_bytes(rows[0][0]) if rows else None

    def has_messages(self, composer_id: str) -> bool:
        """Whether a chat holds any message: one index probe for its first bubble key
        (split storage), else its composerData naming an inline conversation (older
        builds). An empty chat (opened, never sent) is not a session."""
        if self.missing_table:
            return False
        if not self.indexed:
            return True  # cannot tell cheaply: listed, the read says what it holds
        prefix = f"bubbleId:{composer_id}:"
        found = self.db.conn.execute(
            "SELECT 1 FROM cursorDiskKV WHERE key > ? AND key < ? LIMIT 1",
            (prefix, prefix[:-1] + ";"),
        ).fetchall()
        if found:
            return True
        # JSON.stringify writes no spaces; a space after the colon is accepted too
        rows = self.db.conn.execute(
            "SELECT instr(value, '\"fullConversationHeadersOnly\":[{')"
            " + instr(value, '\"conversation\":[{') + instr(value, '\"conversation\": [{')"
            " FROM cursorDiskKV WHERE key = ?",
            (f"composerData:{composer_id}",),
        ).fetchall()
        return bool(rows and isinstance(rows[0][0], int) and rows[0][0] > 0)

    def bubbles(
        self, composer_id: str, bubble_ids: list[str]
    ) -> Iterator[tuple[str, bytes | None]]:
        """Each bubble's value in the order given (None for a missing one), read
        `BATCH` keys per statement."""
        for start in range(0, len(bubble_ids), BATCH):
            chunk = bubble_ids[start : start + BATCH]
            keys = [f"bubbleId:{composer_id}:{bid}" for bid in chunk]
            marks = ",".join("?" * len(keys))
            found: dict[str, bytes | None] = {}
            if not self.missing_table:
                rows = self.db.conn.execute(
                    f"SELECT key, value FROM cursorDiskKV WHERE key IN ({marks})"
                    " AND length(value) <= ?",
                    (*keys, MAX_VALUE_BYTES),
                ).fetchall()
                found = {key: as_bytes(value) for key, value in rows if isinstance(key, str)}
            for bid, key in zip(chunk, keys, strict=True):
                yield bid, found.get(key)


def decode_json(data: bytes | str | None) -> object:
    """Any JSON value, or None when unreadable."""
    if data is None:
        return None
    try:
        return msgspec.json.decode(data)
    except DECODE_ERRORS:
        return None


__all__ = ["BATCH", "Chat", "GlobalStore", "as_bytes", "decode_json", "workspace_chats"]
