"""Gemini CLI's JSON Lines log replayed into the live message list.

Pass 1 streams the file decoding only ids and control records and replays the log into
the ordered list of live messages, each pointing at the offset of its latest line.
Pass 2 seeks to those lines and decodes them in that order. `$set.messages` is applied
as a replay, not literally: a message it keeps that was written as a record keeps that
record (which has the tool statuses and results the API-shaped copy lacks), and its
`<id>_response` copies of tool results are dropped; a compression (a new
`<state_snapshot>` summary) keeps the earlier messages and adds the summary as a
Compaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from passdown.agents._gemini_family import NULL, decode_record, lenient
from passdown.agents.gemini._emitter import (
    SESSION_CONTEXT,
    SNAPSHOT,
    Emitter,
    MessageRecord,
    decode_message,
)
from passdown.jsonl import LineReader, line_limit, seekable
from passdown.transcript import Diagnostics, Event, SessionInfo


class _Brief(msgspec.Struct):
    """A message inside `$set.messages`: only what pass 1 needs (typed: a `$set` whose
    messages have ids or types of the wrong kind is skipped as unreadable)."""

    id: str | None = None
    type: str | None = None
    content: msgspec.Raw = NULL


class _Patch(msgspec.Struct):
    messages: list[_Brief] | None = None
    summary: Any = None
    lastUpdated: Any = None


class _Control(msgspec.Struct):
    """Pass 1's view of a line: message ids, control records and header fields."""

    id: Any = None
    sessionId: Any = None
    projectHash: Any = None
    startTime: Any = None
    lastUpdated: Any = None
    summary: Any = None
    messages: list[_Brief] | None = None
    set: _Patch | None = msgspec.field(default=None, name="$set")
    rewind: Any = msgspec.field(default=None, name="$rewindTo")



class _FullPatch(msgspec.Struct):
    messages: list[MessageRecord] | None = None


class _FullLine(msgspec.Struct):
    messages: list[MessageRecord] | None = None
    set: _FullPatch | None = msgspec.field(default=None, name="$set")



_CONTROL = msgspec.json.Decoder(_Control)
_FULL_LINE = msgspec.json.Decoder(_FullLine)


class Replay:
    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        self.path = path
        self.info = info
        self.diag = diag
        # id -> (offset, index): index -1 is the record line itself, otherwise the
        # position inside that line's `$set.messages` (or header `messages`).
        self.live: dict[str, tuple[int, int]] = {}
        # id -> offset of the latest record line for that id (the richest version).
        self.best: dict[str, int] = {}

    def run(self) -> None:
        reader = LineReader(self.path, self.diag)
        for offset, line in reader.forward():
            rec = decode_record(_CONTROL, line, offset, reader.tail_offset, self.diag)
            if isinstance(rec, _Control):
                self._record(rec, offset)

    def _record(self, rec: _Control, offset: int) -> None:
        if isinstance(rec.rewind, str):
            self._rewind(rec.rewind)
        elif isinstance(rec.id, str):
            self.best[rec.id] = offset
            self.live[rec.id] = (offset, -1)  # an existing key keeps its position
        elif rec.set is not None:
            self._patch(rec.set, offset)
        elif isinstance(rec.sessionId, str) and isinstance(rec.projectHash, str):
            self._header(rec, offset)
        else:
            self.diag.unknown("(unrecognised record)")

    def _header(self, rec: _Control, offset: int) -> None:
        info = self.info
        info.session_id = rec.sessionId or info.session_id
        if isinstance(rec.startTime, str):
            info.started_at = info.started_at or rec.startTime
        self._note_meta(rec.lastUpdated, rec.summary)
        for index, brief in enumerate(rec.messages or ()):  # a converted legacy file
            if isinstance(brief.id, str) and not _injected(brief):
                self.live[brief.id] = (offset, index)

    def _patch(self, patch: _Patch, offset: int) -> None:
        self._note_meta(patch.lastUpdated, patch.summary)
        if patch.messages is not None:
            self._replace(patch.messages, offset)

    def _note_meta(self, updated: Any, summary: Any) -> None:
        if isinstance(updated, str):
            self.info.updated_at = updated
        if isinstance(summary, str) and summary.strip():
            self.info.title = summary.strip()

    def _replace(self, messages: list[_Brief], offset: int) -> None:
        old, best = self.live, self.best
        compaction = any(_is_snapshot(m) and m.id not in old and m.id not in best for m in messages)
        new: dict[str, tuple[int, int]] = dict(old) if compaction else {}
        for index, brief in enumerate(messages):
            mid = brief.id
            if not isinstance(mid, str) or _injected(brief) or (compaction and mid in new):
                continue
            if mid in best:
                new[mid] = (best[mid], -1)
            elif mid in old:
                new[mid] = old[mid]
            elif mid.endswith("_response") and mid[: -len("_response")] in best:
                continue  # a copy of tool results the record already holds
            else:
                new[mid] = (offset, index)
        self.live = new

    def _rewind(self, target: str) -> None:
        keys = list(self.live)
        dropped = keys[keys.index(target) :] if target in self.live else keys
        for key in dropped:  # the CLI drops everything when the target is unknown
            del self.live[key]
            self.best.pop(key, None)
        self.diag.off_branch_records += len(dropped)

    # -- pass 2 ---------------------------------------------------------------------
    def messages(self, emitter: Emitter) -> Iterator[Event]:
        if not self.live:
            return
        cached: tuple[int, list[MessageRecord]] = (-1, [])
        limit = line_limit(self.path)
        with seekable(self.path, self.diag) as handle:
            for offset, index in list(self.live.values()):
                line = _line_at(handle, offset, limit)
                if index < 0:
                    msg = decode_message(line)
                else:
                    if cached[0] != offset:  # decode a large $set line once
                        cached = (offset, _set_messages(line))
                    msg = cached[1][index] if index < len(cached[1]) else None
                if isinstance(msg, MessageRecord):
                    yield from emitter.message(msg)
                else:
                    self.diag.bad_lines += 1


def _line_at(handle: Any, offset: int, limit: int) -> bytes:
    handle.seek(offset)
    line: bytes = handle.readline(limit + 1)
    return line.rstrip(b"\r\n")


def _set_messages(line: bytes) -> list[MessageRecord]:
    full = lenient(_FULL_LINE, msgspec.Raw(line))
    if not isinstance(full, _FullLine):
        return []
    if full.set is not None and full.set.messages is not None:
        return full.set.messages
    return full.messages or []


def _injected(brief: _Brief) -> bool:
    """The CLI's own context message (date, OS, folder listing): never exported."""
    return brief.type == "user" and SESSION_CONTEXT.encode() in bytes(brief.content)[:200]


def _is_snapshot(brief: _Brief) -> bool:
    return brief.type == "user" and SNAPSHOT.encode() in bytes(brief.content)[:400]

