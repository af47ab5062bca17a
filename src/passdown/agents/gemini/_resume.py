"""Incremental export of Gemini CLI sessions (`passdown._checkpoint`).

The log is replayed window by window (each a run of whole lines appended since the last
export) into the same `LiveList` a full read builds. At the end of a window, every live
message but the last few is handed on (emitted, and frozen in the list); the last ones
stay back, since the CLI rewrites the message it is writing (tool results arrive as an
update of it) and a rewind usually goes back a turn or two. `close` hands on the rest.

A later line that would change a message already handed on (a rewind to it, an update
of it, a history `$set` or header that rewrites it) cannot be followed: the replay
raises `CannotResume` and the export reads the file in full, which gives the handoff a
full read gives by definition. The state saved is the part of the live list kept in
memory (an 8-byte key a message, and the line offsets of the messages not handed on
yet), the filter of the spilled ids (`_live.Spill`, compressed; a hit on it is a maybe:
a full read), the emitter's calls still waiting for their results and the messages'
first and latest times. Keys are a stable hash of the ids (Python's own `hash` changes
from one process to the next). A first read that meets a line changing a spilled
message reads its window again keeping every message (the checkpoint then holds them
all, as before spilling existed).
"""

from __future__ import annotations

import copy
import hashlib
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

import msgspec

from passdown._jsonl import FdWindow
from passdown.agents.base import CannotResume
from passdown.agents.gemini._emitter import Emitter
from passdown.agents.gemini._live import LiveList, Spill, Untrackable
from passdown.agents.gemini._replay import Pass2, Replay, emit
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

# Messages kept back at the end of a window: the CLI still rewrites the one it writes.
TAIL = 16
_BLOCK = 1 << 20


def stable_key(message_id: str) -> int:
    digest = hashlib.blake2b(message_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little", signed=True)


class _Counted:
    """A stream that counts the bytes read from it (a window's length)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.bytes = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.bytes += len(data)
        return data


class _Prefix:
    """The first `limit` bytes of a file (the window read again)."""

    def __init__(self, handle: BinaryIO, limit: int) -> None:
        self.handle = handle
        self.left = limit

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.handle.read(size)
        self.left -= len(data)
        return data


class ResumableReplay:
    def __init__(
        self,
        info: SessionInfo,
        diag: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
        subagent_notes: Callable[[str, Path], Iterator[Event]],
    ) -> None:
        self.info = info
        self.replay = Replay(info.path, info, diag, key=stable_key)
        self.emitter = Emitter(info, diag)
        self.consumed = 0  # the offset the next window starts at
        self.session_id = info.session_id  # the one sub-agent folders are named after
        self.subagent_notes = subagent_notes
        self.replay.live.frozen_digest = self.replay.live.digest(0)
        # a first read's complete lines, replayed by `begin`: their pass 2 (`Pass2`),
        # and the windows of it the next `events` calls emit (positions in it)
        self.first_window: Pass2 | None = None
        self.planned: list[tuple[int, int]] = []
        self.resumed = isinstance(state, dict)
        if isinstance(state, dict):
            self._restore(state, pending)
        else:
            self.replay.spill()

    def begin(self, fd: int, start: int, end: int, size: int) -> bool:
        """A first read replays its complete lines [start, end) here (pass 1), before
        any window is read: the window's `events` then only decode its live messages
        (pass 2). A reader continuing a checkpoint replays each window as it reads it."""
        if self.resumed or start != 0 or end <= start:
            return True
        self._replay_window(cast(BinaryIO, FdWindow(fd, start, end)))
        live = self.replay.live
        spill = live.spill
        if spill is not None and spill.count:
            # the spilled ids' filter (up to 16 MiB) is packed now, not when the
            # checkpoint is saved: the emit pass never needs it
            spill.packed()
        self.first_window = self.replay.pass2(live.frozen, self._stop())
        self.planned = [(0, len(self.first_window))]
        return True

    def events(self, stream: BinaryIO) -> Iterator[Event]:
        if self.planned:  # replayed by `begin`: its live messages only
            assert self.first_window is not None
            first, last = self.planned.pop(0)
            pairs = self.first_window.pairs(first, last)
            yield from emit(self.info.path, self.replay.diag, self.emitter, pairs)
            if not self.planned:
                self._hand_on(self._stop())
            return
        self._replay_window(stream)
        yield from self.replay.messages(self.emitter, self.replay.live.frozen, self._stop())
        self._hand_on(self._stop())

    def _replay_window(self, stream: BinaryIO) -> None:
        counted = _Counted(stream)
        first_read = self.consumed == 0 and self.replay.live.spill is not None
        diag_before = copy.deepcopy(self.replay.diag) if first_read else None
        try:
            self.replay.run(counted, self.consumed)  # type: ignore[arg-type]
        except Untrackable:
            if diag_before is None:
                raise
            self._read_again_keeping_everything(counted, diag_before)
        self.consumed += counted.bytes
        live = self.replay.live
        # A resume empties the history and writes it again (two `$set`s): what counts
        # is that the messages handed on are still there, from the same lines.
        if len(live) < live.frozen or live.digest(live.frozen) != live.frozen_digest:
            raise CannotResume("the appended lines rewrite messages already handed on")

    def _stop(self) -> int:
        """Where the messages handed on at the end of this window stop (the last few
        stay back)."""
        live = self.replay.live
        return max(live.frozen, len(live) - TAIL)

    def _hand_on(self, stop: int) -> None:
        """The window's messages up to `stop` are out: frozen in the list."""
        if self.first_window is not None:
            self.first_window.done()
            self.first_window = None
        live = self.replay.live
        live.frozen = stop
        live.frozen_digest, live.frozen_check = live.digest(stop), False
        self.emitter.apply_times(self.replay.header_started)

    def _read_again_keeping_everything(self, counted: _Counted, diag: Diagnostics) -> None:
        """The first window met a line that changes a spilled message (a resume or a
        deep rewind in a long session): nothing was handed on yet, so it is replayed
        again keeping every message, as before spilling existed (its checkpoint then
        holds every id, and the next exports go on from it instead of failing on the
        same line each time)."""
        while counted.read(_BLOCK):  # the rest of the window: its length
            pass
        replay = self.replay
        replay.close()
        for name in Diagnostics.__struct_fields__:
            setattr(replay.diag, name, getattr(diag, name))
        self.replay = Replay(self.info.path, self.info, replay.diag, key=stable_key)
        self.replay.live.frozen_digest = self.replay.live.digest(0)
        with open(self.info.path, "rb") as handle:
            self.replay.run(_Prefix(handle, counted.bytes), 0)  # type: ignore[arg-type]

    def close(self) -> Iterator[Event]:
        live = self.replay.live
        yield from self.replay.messages(self.emitter, live.frozen)
        live.frozen = len(live)
        self.emitter.apply_times(self.replay.header_started)
        self.replay.close()
        yield from self.subagent_notes(self.session_id, self.info.path)

    def state(self) -> dict[str, object]:
        """The arrays go in as views, not copies (the state is encoded at once, and its
        views released before the list grows again)."""
        live, replay, emitter = self.replay.live, self.replay, self.emitter
        spill = live.spill
        return {
            "consumed": self.consumed,
            "session_id": self.session_id,
            "offset_code": live.offsets.typecode,
            "keys": memoryview(live.keys).cast("B"),
            # the lines of messages handed on are never read again: only the others'
            "offsets": memoryview(live.offsets)[live.frozen :].cast("B"),
            "indexes": [[slot, index] for slot, index in live.indexes.items()],
            "frozen": live.frozen,
            "spilled": live.spilled,
            # ids spilled: the live ones, and those a history `$set` left out before them
            "spill_ids": spill.count if spill is not None else 0,
            "filter_bits": spill.bits if spill is not None else 0,
            "filter": spill.packed() if spill is not None and spill.count else None,
            "best_extra": [[key, offset] for key, offset in replay.best_extra.items()],
            "header_started": replay.header_started,
            "first_ts": emitter.first_ts,
            "max_ts": emitter.max_ts,
            "pending": [msgspec.to_builtins(call) for call in emitter.pending.values()],
        }

    def _restore(self, state: dict[str, object], pending: dict[str, ToolCall]) -> None:
        """Continue from `state`; a malformed one raises (the checkpoint is not used)."""
        saved = msgspec.convert(state, _State)
        if saved.offset_code not in ("I", "q"):
            raise ValueError(f"a Gemini checkpoint with offsets of type {saved.offset_code!r}")
        live = LiveList(saved.offset_code)
        live.keys = array("q", saved.keys)
        # Messages handed on keep offset 0: an unchanged one still resolves to it (its
        # latest record), a changed one to a real line, which the digest tells apart.
        live.offsets = array(saved.offset_code, bytes(live.offsets.itemsize * saved.frozen))
        live.offsets.frombytes(saved.offsets)
        if len(live.offsets) != len(live.keys) or not 0 <= saved.frozen <= len(live.keys):
            raise ValueError("a Gemini checkpoint whose live list does not add up")
        live.indexes = {slot: index for slot, index in saved.indexes}
        live.rebuild()  # the id table, from the keys
        live.frozen = saved.frozen
        live.frozen_digest = live.digest(saved.frozen)
        if not 0 <= saved.spilled <= saved.spill_ids or (saved.spill_ids > 0) != (
            saved.filter is not None
        ):
            raise ValueError("a Gemini checkpoint whose spilled messages do not add up")
        if saved.filter_bits:
            spill = (
                Spill.unpacked(saved.filter_bits, saved.filter)
                if saved.filter is not None
                else Spill(saved.filter_bits)
            )
            # their ids are not at hand: what would need them reads the file in full
            spill.count = spill.handed_on = saved.spill_ids
            spill.alive_from = saved.spill_ids - saved.spilled
            live.spill_into(spill)
            live.spilled = saved.spilled
        live.checked = len(live.keys)  # checked before they were saved
        self.replay.live = live
        self.replay.best_extra = {key: offset for key, offset in saved.best_extra}
        self.replay.header_started = saved.header_started
        self.consumed = saved.consumed
        self.session_id = saved.session_id
        self.emitter.first_ts, self.emitter.max_ts = saved.first_ts, saved.max_ts
        for call in saved.pending:  # the very objects extraction still waits on
            self.emitter.pending[call.call_id] = pending.get(call.call_id, call)


class _State(msgspec.Struct):
    consumed: int
    session_id: str
    offset_code: str
    keys: bytes
    offsets: bytes
    indexes: list[tuple[int, int]]
    frozen: int
    spilled: int
    spill_ids: int
    filter_bits: int
    filter: bytes | None
    best_extra: list[tuple[int, int]]
    header_started: str | None
    first_ts: str | None
    max_ts: str | None
    pending: list[ToolCall]
