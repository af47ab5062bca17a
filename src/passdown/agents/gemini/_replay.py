"""Gemini CLI's JSON Lines log replayed into the live message list.

Pass 1 streams the file decoding only ids and control records and replays the log into
the ordered list of live messages, each pointing at the offset of its latest line.
Pass 2 seeks to those lines and decodes them in that order. `$set.messages` is applied
as a replay, not literally: a message it keeps that was written as a record keeps that
record (which has the tool statuses and results the API-shaped copy lacks), and its
`<id>_response` copies of tool results are dropped; a compression (a new
`<state_snapshot>` summary) keeps the earlier messages and adds the summary as a
Compaction.

Memory: pass 1 keeps no Python object per message, about 20 bytes in arrays for each
of the last 8,192-16,384 live messages (an 8-byte id hash, a 4-byte line offset and its
share of the id table: `LiveList`); older messages are spilled (`_live.Spill`: their ids
into a filter of at most 16 MiB, their offsets into a temporary file), so the peak is
the same for a 100 MB and a 1 GB session. A history `$set` that lists the spilled
messages again in their order (a resume, an aborted turn) or leaves them all out (a
compression, the first half of a resume) is followed: the spilled run stays live, or is
left out (and comes back when listed again). A line that changes a spilled message
otherwise (a rewind past the messages kept, an old id written again, a `$set` listing
part of them) makes the full read replay the file once more keeping every message.
Pass 2 reads the lines again in blocks.
"""

from __future__ import annotations

import copy
import os
from array import array
from collections.abc import Callable, Iterator
from itertools import repeat
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from passdown import _platform
from passdown._jsonl import LineReader, line_limit, seekable
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import DECODE_ERRORS, file_mtime
from passdown.agents._gemini_family import NULL, decode_record, lenient
from passdown.agents.base import CannotResume
from passdown.agents.gemini._emitter import (
    SESSION_CONTEXT,
    SNAPSHOT,
    Emitter,
    MessageRecord,
    decode_message,
)
from passdown.agents.gemini._live import RECORD, LiveList, Spill, Untrackable
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


_CONTROL = LazyDecoder(_Control)
_BLOCK = 1024 * 1024  # pass 2 reads the file in blocks of this size
_READ_PAIRS = 1 << 12  # stashed (offset, index) pairs read back at a time (64 KiB)
_TOUCH_PREFIX = b'{"$set":{"lastUpdated":"'
_TOUCH = lazy_compile(rb'\{"\$set":\{"lastUpdated":"([^"\\\x00-\x1f]*)"\}\}')
_FULL_LINE = LazyDecoder(_FullLine)


# -- pass 1: replay the log into the live message list ----------------------------------
class Replay:
    """Pass 1 replays the log's ids and control records (never the messages' bodies)
    into a `LiveList`; pass 2 (`messages`) decodes the live messages' lines in order.

    The latest record line of each id (forgotten when a rewind drops the id) is a live
    slot whose index is `RECORD` (its offset is that line), or else an entry of
    `best_extra`: ids a `$set` left out, or whose slot a header or `$set` element took
    over, while their record is still the richest version."""

    def __init__(
        self,
        path: Path,
        info: SessionInfo,
        diag: Diagnostics,
        key: Callable[[str], int] = hash,
    ) -> None:
        self.path = path
        self.info = info
        self.diag = diag
        self.key = key  # id -> 64-bit key (a stable one where the list is saved)
        self.live = LiveList.for_file(path)
        self.best_extra: dict[int, int] = {}  # id hash -> offset of its latest record
        self.header_started: str | None = None  # the first header's startTime

    def spill(self, spill: Spill | None = None) -> None:
        """Keep only the last few thousand live messages in memory (`_live.Spill`)."""
        self.live.spill_into(spill or Spill.for_file(file_mtime(self.path)[1]))

    def run(self, stream: BinaryIO | None = None, base: int = 0) -> None:
        """Replay the file, or the lines of `stream`, a window of it starting at offset
        `base` at a line start. A full read that meets a line changing a spilled message
        (never in the logs the CLI writes but for a deep rewind or a history `$set` in a
        long session) replays the file again keeping every message in memory; a window
        raises (`Untrackable` is a `CannotResume`)."""
        if stream is not None or self.live.spill is None:
            self._run(stream, base)
            return
        diag_before = copy.deepcopy(self.diag)
        try:
            self._run(None, 0)
        except Untrackable:
            self.live.spill.close()
            for name in Diagnostics.__struct_fields__:
                setattr(self.diag, name, getattr(diag_before, name))
            self.live = LiveList.for_file(self.path)
            self.best_extra = {}
            self.header_started = None
            self._run(None, 0)

    def close(self) -> None:
        """Let go of the spill's temporary files."""
        if self.live.spill is not None:
            self.live.spill.close()

    def _run(self, stream: BinaryIO | None, base: int) -> None:
        reader = LineReader(self.path, self.diag)
        live, info, diag, key_of = self.live, self.info, self.diag, self.key
        decode = _CONTROL.decode
        best_extra = self.best_extra  # never replaced while the file is read
        # the id of the last record and its key: the CLI writes a message, then again
        # with its tool calls' results, and a key (a blake2b where it is saved) is dear
        last_id, last_key = None, 0
        max_offset = live.max_offset
        for relative, line in reader.forward(stream):
            offset = base + relative
            if offset > max_offset:
                live.widen()
                max_offset = live.max_offset
            # Half the lines only move `lastUpdated`: read without a decode (a value with
            # escapes, control characters or bad UTF-8 takes the decoder's path).
            if line.startswith(_TOUCH_PREFIX) and (touch := _TOUCH.fullmatch(line)):
                try:
                    info.updated_at = touch.group(1).decode()
                    continue
                except UnicodeDecodeError:
                    pass
            try:  # `decode_record`'s first step, inline: a call a line is dear here
                rec = decode(line)
            except DECODE_ERRORS:
                repaired = decode_record(_CONTROL, line, relative, reader.tail_offset, diag)
                if not isinstance(repaired, _Control):
                    continue
                rec = repaired
            if not isinstance(rec.id, str) or isinstance(rec.rewind, str):
                self._record(rec, offset)
                live = self.live  # a `$set` may have replaced the list
                max_offset = live.max_offset
                continue
            if rec.id != last_id:
                last_id, last_key = rec.id, key_of(rec.id)
            key = last_key
            live.upsert(key, offset)  # most lines: a message record
            if best_extra:
                best_extra.pop(key, None)
        self.live.verify()

    def _record(self, rec: _Control, offset: int) -> None:
        if isinstance(rec.rewind, str):
            self._rewind(rec.rewind)
        elif rec.set is not None:
            self._patch(rec.set, offset)
        elif isinstance(rec.sessionId, str) and isinstance(rec.projectHash, str):
            self._header(rec, offset)
        else:
            self.diag.unknown("(unrecognised record)")

    def _best(self, key: int, slot: int | None = None) -> int | None:
        """The offset of the id's latest record, if it has one that was not rewound."""
        live = self.live
        slot = live.find(key) if slot is None else slot
        if slot >= 0 and live.index(slot) == RECORD:
            return live.offsets[slot]
        return self.best_extra.get(key)

    def _header(self, rec: _Control, offset: int) -> None:
        if rec.messages:
            if self.live.spill is not None and self.live.spill.count:
                raise Untrackable("a header with messages after messages were spilled")
            self._may_rewrite()
        info = self.info
        info.session_id = rec.sessionId or info.session_id
        if isinstance(rec.startTime, str):
            info.started_at = info.started_at or rec.startTime
            self.header_started = self.header_started or rec.startTime
        self._note_meta(rec.lastUpdated, rec.summary)
        for index, brief in enumerate(rec.messages or ()):  # a converted legacy file
            if isinstance(brief.id, str) and not _injected(brief):
                key = self.key(brief.id)
                slot = self.live.find(key)
                if slot < 0:
                    self.live.append(key, offset, index)
                    continue
                if self.live.index(slot) == RECORD:  # its record stays the best
                    self.best_extra[key] = self.live.offsets[slot]
                self.live.set(slot, offset, index)

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
        """`$set.messages`: a compression (a summary the log has not seen) appends the
        new messages to the live list; anything else replaces the list."""
        self._may_rewrite()
        if any(_is_snapshot(m) and self._unknown(m.id) for m in messages):
            self._append_compaction(messages, offset)
        else:
            self._rebuild_from(messages, offset)

    def _may_rewrite(self) -> None:
        """Before a line that may rewrite any message: what was handed on is checked
        again before it is forgotten. Spilled messages can be followed only when this
        process spilled them all (their ids are at hand to look up) as records, none
        handed on yet."""
        live = self.live
        spill = live.spill
        if spill is not None and spill.count:
            if spill.handed_on or spill.non_records or not spill.complete:
                raise Untrackable("a history `$set` after messages were spilled")
            live.verify()  # an id spilled and written again: the lookups below miss it
        live.frozen_check = True

    def _spilled(self, key: int) -> bool:
        spill = self.live.spill
        return spill is not None and spill.count > 0 and spill.holds(key)

    def _unknown(self, mid: object) -> bool:
        if not isinstance(mid, str):
            return True
        key = self.key(mid)
        return self.live.find(key) < 0 and key not in self.best_extra and not self._spilled(key)

    def _append_compaction(self, messages: list[_Brief], offset: int) -> None:
        live = self.live
        for index, brief in enumerate(messages):
            mid = brief.id
            if not isinstance(mid, str) or _injected(brief):
                continue
            key = self.key(mid)
            if live.find(key) >= 0:
                continue
            if self._spilled(key):
                assert live.spill is not None
                if live.spill.alive_from:  # live, or left out: which one is not known
                    raise Untrackable("a compression that lists a spilled message")
                continue  # live
            best = self.best_extra.pop(key, None)
            if best is not None:
                live.append(key, best)
            elif not self._response_copy(mid):
                live.append(key, offset, index)

    def _rebuild_from(self, messages: list[_Brief], offset: int) -> None:
        old = self.live
        new = old.successor()
        new.spill_at = 2**62  # no spill while the list is being built (ids listed twice)
        spill = old.spill if old.spill is not None and old.spill.count else None
        first = self._spilled_listed(messages) if spill is not None else None
        for index in range(first[1] if first is not None else 0, len(messages)):
            brief = messages[index]
            mid = brief.id
            if not isinstance(mid, str) or _injected(brief):
                continue
            key = self.key(mid)
            old_slot = old.find(key)
            best = self._best(key, old_slot)
            if best is not None:
                entry = (best, RECORD)
            elif old_slot >= 0:
                entry = (old.offsets[old_slot], old.index(old_slot))
            elif self._response_copy(mid):
                continue
            elif self._spilled(key):  # out of the spilled run's order: its line is not at hand
                raise Untrackable("a history `$set` that lists a spilled message again")
            else:
                entry = (offset, index)
            slot = new.find(key)
            if slot < 0:
                new.append(key, *entry)
            else:  # listed twice: the first position, the last value
                new.set(slot, *entry)
        # the old list's records stay the best versions of their ids...
        for slot, key in enumerate(old.keys):
            if old.index(slot) == RECORD:
                self.best_extra[key] = old.offsets[slot]
        # ...and are part of the new list's slots again where it holds them as records
        new.spill_at = old.spill_at  # `frozen` is checked at the end of the window
        for slot, key in enumerate(new.keys):
            if new.index(slot) == RECORD:
                self.best_extra.pop(key, None)
        if spill is not None:
            new.spilled = self._spilled_after(spill, old.spilled, first)
        self.live = new

    def _spilled_listed(self, messages: list[_Brief]) -> tuple[tuple[int, int], int] | None:
        """Whether the history starts with the spilled run that is live (or was left
        out last, and nothing spilled since) in its order: that run and the index of
        the first element after it, or None when it does not start with it (the run is
        left out). Copies of a spilled message's tool results (`<id>_response`) are
        skipped as the replay skips them; a history that lists part of the run only
        cannot be followed."""
        spill = self.live.spill
        assert spill is not None
        if self.live.spilled:
            run = (spill.alive_from, spill.count)
        elif spill.dead is not None and spill.dead[1] == spill.count:
            run = spill.dead
        else:
            return None
        expected = spill.spilled_keys(run[0])
        wanted, matched, last = next(expected, None), 0, None
        for index, brief in enumerate(messages):
            mid = brief.id
            if not isinstance(mid, str) or _injected(brief):
                continue
            key = self.key(mid)
            if key == wanted:
                matched, last = matched + 1, key
                if matched == run[1] - run[0]:
                    return run, index + 1
                wanted = next(expected, None)
            elif last is not None and mid.endswith("_response") and self.key(mid[:-9]) == last:
                continue
            elif matched:
                raise Untrackable("a history `$set` that lists part of the spilled messages")
            else:
                return None
        if matched:
            raise Untrackable("a history `$set` that lists part of the spilled messages")
        return None

    @staticmethod
    def _spilled_after(
        spill: Spill, spilled: int, first: tuple[tuple[int, int], int] | None
    ) -> int:
        """The spilled slots live after a history `$set` (see `_spilled_listed`)."""
        if first is not None:  # listed again: live (again)
            (start, end), _ = first
            spill.alive_from, spill.dead = start, None
            return end - start
        if spilled:  # left out
            spill.dead = (spill.alive_from, spill.count)
            spill.alive_from = spill.count
        return 0

    def _response_copy(self, mid: str) -> bool:
        """`<id>_response`: a copy of tool results the record of <id> already holds. A
        spilled message is a record (`_may_rewrite`) unless the compaction being
        appended spilled some of its own elements: then which <id> was cannot be told."""
        if not mid.endswith("_response"):
            return False
        base = self.key(mid[: -len("_response")])
        if self._best(base) is not None:
            return True
        if not self._spilled(base):
            return False
        assert self.live.spill is not None
        if self.live.spill.non_records:
            raise Untrackable("a tool-result copy of a message a compaction spilled")
        return True

    def _rewind(self, target: str) -> None:
        live = self.live
        slot = live.find(self.key(target))
        if slot < 0 and live.spilled:
            raise Untrackable("a rewind past the messages kept in memory")
        start = slot if slot >= 0 else 0  # the CLI drops everything for an unknown target
        if start < live.frozen:
            raise CannotResume("a rewind to a message already handed on")
        if self.best_extra:
            for key in live.keys[start:]:
                self.best_extra.pop(key, None)
        self.diag.off_branch_records += len(live) - start
        live.truncate(start)

    # -- pass 2 ---------------------------------------------------------------------
    def messages(
        self, emitter: Emitter, start: int = 0, stop: int | None = None
    ) -> Iterator[Event]:
        """The events of the live messages in slots [start, stop), in order."""
        plan = self.pass2(start, stop)
        try:
            yield from emit(self.path, self.diag, emitter, plan.pairs(0, len(plan)))
        finally:
            plan.done()

    def pass2(self, start: int = 0, stop: int | None = None) -> Pass2:
        """What pass 2 decodes for slots [start, stop): the spilled slots not handed
        on yet first, then those slots (`Pass2`, read by position)."""
        live = self.live
        return Pass2(live, live.spill, start, len(live) if stop is None else stop)


class Pass2:
    """The (offset, index) of the lines pass 2 decodes, by position: the spill's stash
    (`_live.Spill.drain`'s pairs, read by position: reading them never moves the
    temporary file's position), then the live list's slots [start, stop). `done`
    forgets the stash, as `drain` does."""

    def __init__(self, live: LiveList, spill: Spill | None, start: int, stop: int) -> None:
        self.live, self.spill, self.start, self.stop = live, spill, start, max(start, stop)
        self.stash = spill.pending if spill is not None else None
        self.skip = max(0, spill.alive_from - spill.stash_from) if spill is not None else 0
        stashed = self._stashed_pairs()
        self.stashed = max(0, stashed - self.skip)

    def _stashed_pairs(self) -> int:
        if self.stash is None:
            return 0
        self.stash.flush()  # read by descriptor from here on (here and in a worker)
        return os.fstat(self.stash.fileno()).st_size // 16

    def __len__(self) -> int:
        return self.stashed + self.stop - self.start

    def pairs(self, first: int, last: int) -> Iterator[tuple[int, int]]:
        """The pairs at positions [first, last)."""
        if first < self.stashed and self.stash is not None:
            fd = self.stash.fileno()
            at, upto = first + self.skip, min(last, self.stashed) + self.skip
            while at < upto:
                block = _platform.pread(fd, min(_READ_PAIRS, upto - at) * 16, at * 16)
                if not block:
                    break
                at += len(block) // 16
                pairs = array("q", block)
                yield from zip(pairs[0::2], pairs[1::2], strict=True)
        live = self.live
        lo = self.start + max(0, first - self.stashed)
        hi = self.start + max(0, last - self.stashed)
        if lo >= hi:
            return
        if live.indexes:
            indexes = live.indexes
            yield from ((live.offsets[s], indexes.get(s, RECORD)) for s in range(lo, hi))
        else:
            yield from zip(live.offsets[lo:hi], repeat(RECORD))

    def offset(self, position: int) -> tuple[int, int]:
        """The pair at `position`."""
        return next(self.pairs(position, position + 1))

    def done(self) -> None:
        """The stash is handed on: forgotten (`Spill.let_go_of_stash`, as `drain` does)."""
        spill = self.spill
        if spill is not None and spill.pending is not None and spill.pending is self.stash:
            spill.let_go_of_stash()
            self.stash.close()
        self.stash = None


def emit(
    path: Path,
    diag: Diagnostics,
    emitter: Emitter,
    pairs: Iterator[tuple[int, int]],
    block: int | None = None,
) -> Iterator[Event]:
    """Pass 2: the events of the messages at `pairs` ((offset, index) of the line
    holding each: its own record, or an element of a `$set` or header line), read in
    blocks of `block` bytes (`_BLOCK` by default)."""
    cached: tuple[int, list[MessageRecord]] = (-1, [])
    with seekable(path, diag) as handle:
        lines = _LinesAt(handle, line_limit(path), block)
        for offset, index in pairs:
            line = lines.at(offset)
            if index == RECORD:
                msg = decode_message(line)
            else:
                if cached[0] != offset:  # decode a large $set line once
                    cached = (offset, _set_messages(line))
                msg = cached[1][index] if index < len(cached[1]) else None
            if isinstance(msg, MessageRecord):
                yield from emitter.message(msg)
            else:
                diag.bad_lines += 1


class _LinesAt:
    """Lines by offset from a block read ahead: the live messages' lines come mostly in
    file order, so one read serves thousands of them (a seek and a read per line cost
    more than decoding it)."""

    def __init__(self, handle: BinaryIO, limit: int, block: int | None = None) -> None:
        self.handle = handle
        self.limit = limit
        self.size = block or _BLOCK
        self.start = 0
        self.block = b""

    def at(self, offset: int) -> bytes:
        pos = offset - self.start
        if 0 <= pos < len(self.block):
            end = self.block.find(b"\n", pos)
            if end >= 0:
                return self.block[pos:end].rstrip(b"\r")
        self.handle.seek(offset)
        block = self.handle.read(self.size)
        end = block.find(b"\n")
        if end < 0 and len(block) == self.size:  # a line longer than a block
            self.handle.seek(offset)
            return self.handle.readline(self.limit + 1).rstrip(b"\r\n")
        self.start, self.block = offset, block
        return block[: end if end >= 0 else len(block)].rstrip(b"\r")


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
