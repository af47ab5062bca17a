"""The live message list of a Gemini CLI session replay (`_replay`), kept in arrays:
no Python object per message. Only its last few thousand messages stay in memory; the
older ones are spilled (`Spill`): their lines' offsets go to a temporary file read back
once when they are handed on, and their ids to a fixed-size filter, so memory stays flat
however long the session. A line that would change a spilled message (an update of it,
a rewind into it, a history `$set`) raises `Untrackable`."""

from __future__ import annotations

import hashlib
import tempfile
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import zstandard

from passdown._jsonl import is_zstd
from passdown.agents._common import file_mtime
from passdown.agents.base import CannotResume

RECORD = -1  # the index of a slot whose message is its own record line
_EMPTY = -1  # a bucket of the id table that holds no slot
_MIN_TABLE = 1024
_NARROW_LIMIT = 2**32  # offsets below it fit 4 bytes
# Slots kept in memory before the oldest `SPILL_CHUNK` are spilled: a rewind or an
# update reaches back a turn or two, far less than this.
KEEP = 8192
SPILL_CHUNK = 8192
_MIN_FILTER_BITS = 2**16
MAX_FILTER_BITS = 2**27  # 16 MiB: under 1e-5 false alarms a message up to ~1.5M messages
_PROBES = 3
_READ_KEYS = 1 << 20  # keys read back at a time when a filter hit is checked


class Untrackable(CannotResume):
    """A line changes a spilled message: the replay cannot follow it with what it kept
    (the full read replays the file again keeping everything; an incremental export
    reads the file in full)."""


class Spill:
    """The slots a `LiveList` spilled: the ids in a Bloom filter (3 probes; a hit is
    checked against the spilled ids themselves, kept in a temporary file, when the file
    is there), and the (offset, index) of the spilled slots not handed on yet, in a
    second temporary file, read back in order once (`drain`)."""

    def __init__(self, bits: int, filter_bytes: bytes | None = None) -> None:
        if bits & (bits - 1) or not _MIN_FILTER_BITS <= bits <= MAX_FILTER_BITS:
            raise ValueError(f"a filter of {bits} bits")
        self.bits = bits
        if filter_bytes is not None and len(filter_bytes) != bits // 8:
            raise ValueError("a filter of the wrong size")
        # allocated at the first spill: a session that never spills never pays for it
        self.filter = bytearray(filter_bytes) if filter_bytes is not None else bytearray()
        # every id the filter holds is in `keys` (False for a filter restored from a
        # checkpoint: a hit is then a maybe)
        self.complete = filter_bytes is None
        self.keys: BinaryIO | None = None  # the spilled ids, when this process spilled them
        self.pending: BinaryIO | None = None  # (offset, index) pairs not handed on
        self.pending_count = 0

    @classmethod
    def for_file(cls, size: int) -> Spill:
        """About a bit per byte of session: ~800 bits a message (no false alarm in
        practice) up to the cap."""
        bits = _MIN_FILTER_BITS
        while bits < size and bits < MAX_FILTER_BITS:
            bits *= 2
        return cls(bits)

    def add(self, keys: array[int]) -> None:
        if not self.filter:
            self.filter = bytearray(self.bits // 8)
        bloom, mask = self.filter, self.bits - 1
        for key in keys:
            first = key & mask
            step = (key >> 32) | 1
            bloom[first >> 3] |= 1 << (first & 7)
            second = (first + step) & mask
            bloom[second >> 3] |= 1 << (second & 7)
            third = (second + step) & mask
            bloom[third >> 3] |= 1 << (third & 7)
        if self.keys is None:
            self.keys = tempfile.TemporaryFile()
        keys.tofile(self.keys)  # type: ignore[arg-type]

    def holds(self, key: int) -> bool:
        """Whether `key` may be a spilled id (False: certainly not)."""
        bloom, mask = self.filter, self.bits - 1
        if not bloom:
            return False
        first = key & mask
        if not bloom[first >> 3] & (1 << (first & 7)):
            return False
        step = (key >> 32) | 1
        second = (first + step) & mask
        if not bloom[second >> 3] & (1 << (second & 7)):
            return False
        third = (second + step) & mask
        if not bloom[third >> 3] & (1 << (third & 7)):
            return False
        return self._confirm(key)

    def _confirm(self, key: int) -> bool:
        """A filter hit: look the key up among the spilled ids (when this process has
        them; a restored filter has no ids to check against, and says maybe)."""
        if self.keys is None or not self.complete:
            return True
        wanted = array("q", [key]).tobytes()
        self.keys.seek(0)
        while block := self.keys.read(_READ_KEYS * 8):
            at = block.find(wanted)
            while at >= 0:
                if at % 8 == 0:
                    self.keys.seek(0, 2)
                    return True
                at = block.find(wanted, at + 1)
        self.keys.seek(0, 2)
        return False

    def stash(self, offsets: array[int], indexes: array[int]) -> None:
        """Spilled slots not handed on yet, in list order."""
        if self.pending is None:
            self.pending = tempfile.TemporaryFile()
        pairs = array("q", bytes(16 * len(offsets)))
        pairs[0::2] = array("q", offsets)
        pairs[1::2] = array("q", indexes)
        pairs.tofile(self.pending)  # type: ignore[arg-type]
        self.pending_count += len(offsets)

    def drain(self) -> Iterator[tuple[int, int]]:
        """The stashed (offset, index) pairs in order, then forgotten."""
        if self.pending is None:
            return
        handle, self.pending, self.pending_count = self.pending, None, 0
        with handle:
            handle.seek(0)
            while block := handle.read(_READ_KEYS * 16):
                pairs = array("q", block)
                yield from zip(pairs[0::2], pairs[1::2], strict=True)

    def packed(self) -> bytes:
        return zstandard.ZstdCompressor(level=1).compress(bytes(self.filter or bytes(self.bits // 8)))

    @classmethod
    def unpacked(cls, bits: int, packed: bytes) -> Spill:
        raw = zstandard.ZstdDecompressor().decompress(packed, max_output_size=bits // 8)
        return cls(bits, raw)

    def close(self) -> None:
        for handle in (self.keys, self.pending):
            if handle is not None:
                handle.close()
        self.keys = self.pending = None


class LiveList:
    """The ordered live messages with no Python object per message, so memory stays a
    few bytes a message however long the session: per slot (a position in the list) the
    offset of the line that holds the message (4 bytes in a file under 4 GiB) and the
    64-bit hash of its id; the rare message that is an element of a `$set.messages` (or
    header) line also has its index there. Ids are found through an open-addressing
    table of slots, at most half full (a bucket whose slot lies past the end of the list
    is stale: rewinds truncate; rebuilds drop them).

    Ids are compared by their 64-bit hash: two ids of one session colliding is a chance
    of about n^2 / 2^65 (1e-7 for a million messages)."""

    def __init__(self, offset_code: str = "q") -> None:
        self.offsets = array(offset_code)
        self.keys = array("q")
        self.indexes: dict[int, int] = {}  # slot -> index inside its `$set` line
        self._table = array("i", [_EMPTY]) * _MIN_TABLE
        self._mask = _MIN_TABLE - 1
        self._used = 0  # buckets holding a slot, stale ones included
        # Slots below this were handed on already (incremental export): a line that
        # would change one cannot be followed (`CannotResume`, then a full read).
        self.frozen = 0
        # Slots spilled from the front (`spill`): slot numbers count from the first kept.
        self.spilled = 0
        self.spill: Spill | None = None  # None: nothing is ever spilled
        self.spill_at = 2**62
        # the fingerprint of the handed-on slots as the last window left them (`digest`),
        # and whether a `$set` since may have changed them (checked before they spill)
        self.frozen_digest = b""
        self.frozen_check = False

    @classmethod
    def for_file(cls, path: Path) -> LiveList:
        return cls("q" if is_zstd(path) or file_mtime(path)[1] >= _NARROW_LIMIT else "I")

    def widen(self) -> None:
        """8-byte offsets from now on (a file that grew past 4 GiB while being read)."""
        self.offsets = array("q", self.offsets)

    @property
    def max_offset(self) -> int:
        return _NARROW_LIMIT - 1 if self.offsets.typecode == "I" else 2**63 - 1

    def empty_like(self) -> LiveList:
        return LiveList(self.offsets.typecode)

    def successor(self) -> LiveList:
        """An empty list to rebuild this one into (a history `$set`): it spills into the
        same place and carries what was handed on, to be checked (`frozen_check`)."""
        new = LiveList(self.offsets.typecode)
        new.frozen, new.frozen_digest, new.frozen_check = self.frozen, self.frozen_digest, True
        new.spill, new.spill_at = self.spill, self.spill_at
        return new

    def spill_into(self, spill: Spill) -> None:
        """From now on, spill the oldest slots past `KEEP + SPILL_CHUNK`."""
        self.spill = spill
        self.spill_at = KEEP + SPILL_CHUNK

    def spilled_may_hold(self, key: int) -> bool:
        return self.spill is not None and self.spilled > 0 and self.spill.holds(key)

    def _spill(self) -> None:
        """The oldest `SPILL_CHUNK` slots out of memory: their ids into the filter,
        the lines of those not handed on yet into the stash (read back in order)."""
        spill, count = self.spill, SPILL_CHUNK
        assert spill is not None
        if self.frozen_check:  # a `$set` since the last window: check before forgetting
            if self.digest(self.frozen) != self.frozen_digest:
                raise CannotResume("a `$set` rewrote messages already handed on")
            self.frozen_check = False
        spill.add(self.keys[:count])
        first_pending = min(self.frozen, count)
        if first_pending < count:
            indexes = array("q", [self.index(s) for s in range(first_pending, count)])
            spill.stash(self.offsets[first_pending:count], indexes)
        del self.keys[:count]
        del self.offsets[:count]
        if self.indexes:
            self.indexes = {s - count: i for s, i in self.indexes.items() if s >= count}
        self.frozen = max(0, self.frozen - count)
        self.frozen_digest = self.digest(self.frozen)
        self.spilled += count
        self.rebuild()

    def digest(self, slots: int) -> bytes:
        """A fingerprint of the first `slots` messages and the lines they come from."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(memoryview(self.keys)[:slots])
        digest.update(self.offsets.typecode.encode())
        digest.update(memoryview(self.offsets)[:slots])
        digest.update(repr(sorted(i for i in self.indexes.items() if i[0] < slots)).encode())
        return digest.digest()

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, key: int) -> int:
        """The slot of the message whose id hashes to `key`, or -1."""
        table, keys, mask = self._table, self.keys, self._mask
        size = len(keys)
        i = key & mask
        while True:
            slot = table[i]
            if slot == _EMPTY:
                return -1
            if slot < size and keys[slot] == key:
                return slot
            i = (i + 1) & mask

    def upsert(self, key: int, offset: int) -> None:
        """A record line: the message's latest version, at its old position if it has
        one, else at the end (one probe sequence for both)."""
        keys = self.keys
        size = len(keys)
        if size and keys[size - 1] == key:  # the message being written: the usual update
            if size <= self.frozen:
                raise CannotResume("an update of a message already handed on")
            self.set(size - 1, offset)
            return
        table, mask = self._table, self._mask
        i = key & mask
        while (slot := table[i]) != _EMPTY:
            if slot < size and keys[slot] == key:
                if slot < self.frozen:
                    raise CannotResume("an update of a message already handed on")
                self.set(slot, offset)
                return
            i = (i + 1) & mask
        if self.spilled and self.spilled_may_hold(key):
            raise Untrackable("an update of a spilled message")
        keys.append(key)
        self.offsets.append(offset)
        table[i] = size
        self._used += 1
        if size + 1 >= self.spill_at:
            self._spill()
        elif self._used * 2 > len(table):
            self.rebuild()

    def append(self, key: int, offset: int, index: int = RECORD) -> None:
        slot = len(self.keys)
        self.keys.append(key)
        self.offsets.append(offset)
        if index != RECORD:
            self.indexes[slot] = index
        if slot + 1 >= self.spill_at:
            self._spill()  # rebuilds the table, this slot included
        elif (self._used + 1) * 2 > len(self._table):
            self.rebuild()  # indexes every slot, this one included
        else:
            self._place(key, slot)

    def set(self, slot: int, offset: int, index: int = RECORD) -> None:
        self.offsets[slot] = offset
        if index != RECORD:
            self.indexes[slot] = index
        elif self.indexes:
            self.indexes.pop(slot, None)

    def index(self, slot: int) -> int:
        return self.indexes.get(slot, RECORD) if self.indexes else RECORD

    def truncate(self, slot: int) -> None:
        """Drop `slot` and every later one (their buckets go stale)."""
        del self.keys[slot:]
        del self.offsets[slot:]
        for dropped in [s for s in self.indexes if s >= slot]:
            del self.indexes[dropped]

    def _place(self, key: int, slot: int) -> None:
        table, mask = self._table, self._mask
        i = key & mask
        while table[i] != _EMPTY:
            i = (i + 1) & mask
        table[i] = slot
        self._used += 1

    def rebuild(self) -> None:
        """The id table anew, under half full (stale buckets dropped)."""
        size = _MIN_TABLE
        while size <= len(self.keys) * 2:  # under half full after the rebuild
            size *= 2
        self._table = array("i", [_EMPTY]) * size
        self._mask = size - 1
        self._used = 0
        for slot, key in enumerate(self.keys):
            self._place(key, slot)
