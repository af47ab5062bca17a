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
from typing import BinaryIO, cast

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
_READ_KEYS = 1 << 16  # spilled ids (or stashed pairs) read back at a time


class Untrackable(CannotResume):
    """A line changes a spilled message: the replay cannot follow it with what it kept
    (the full read replays the file again keeping everything; an incremental export
    reads the file in full)."""


class Spill:
    """The slots a `LiveList` spilled: their ids in a Bloom filter (3 probes), and the
    (offset, index) of the spilled slots not handed on yet in a temporary file, read
    back in order once (`drain`).

    Every id that enters the list is checked against the filter in batches (`check`),
    before it can be spilled, dropped or handed on, and added to it at once; a hit is
    looked up among the ids spilled so far, kept in a second temporary file (a filter
    restored from a checkpoint has no such file: a hit is then a maybe)."""

    def __init__(self, bits: int, filter_bytes: bytes | None = None) -> None:
        self.keys: BinaryIO | None = None  # the ids spilled by this process
        self.pending: BinaryIO | None = None  # (offset, index) pairs not handed on
        if bits & (bits - 1) or not _MIN_FILTER_BITS <= bits <= MAX_FILTER_BITS:
            raise ValueError(f"a filter of {bits} bits")
        if filter_bytes is not None and len(filter_bytes) != bits // 8:
            raise ValueError("a filter of the wrong size")
        self.bits = bits
        # allocated at the first spill: a session that never spills never pays for it
        self.filter = bytearray(filter_bytes) if filter_bytes is not None else bytearray()
        self._packed: bytes | None = None  # the filter while it is let go (`packed`)
        # every id spilled is in `keys` (False for a filter restored from a checkpoint)
        self.complete = filter_bytes is None
        self.pending_count = 0
        self.count = 0  # ids spilled, in list order in `keys`
        # The spilled ids from this one on are the first slots of the live list. Those
        # before it were left out by a history `$set` (their records stay the best
        # versions of their ids); `dead` is the run of them the last such `$set` left
        # out, which a later `$set` listing them again in order brings back (a resume:
        # the history emptied, then written again).
        self.alive_from = 0
        self.dead: tuple[int, int] | None = None
        self.stash_from = 0  # the id number of the first slot in `pending`
        self.handed_on = 0  # spilled slots handed on already (their lines are not kept)
        self.non_records = 0  # spilled slots that are `$set` elements, not records

    @classmethod
    def for_file(cls, size: int) -> Spill:
        """About a bit per byte of session (some 800 bits a message) up to the cap: the
        largest power of two not past the size (rounding up doubled the peak memory)."""
        bits = _MIN_FILTER_BITS
        while bits * 2 <= size and bits < MAX_FILTER_BITS:
            bits *= 2
        return cls(bits)

    @property
    def active(self) -> bool:
        return bool(self.filter) or self._packed is not None

    def _bloom(self) -> bytearray:
        if not self.filter:
            if self._packed is not None:
                raw = zstandard.ZstdDecompressor().decompress(self._packed)
                self.filter, self._packed = bytearray(raw), None
            else:
                self.filter = bytearray(self.bits // 8)
        return self.filter

    def check(self, keys: array[int]) -> bool:
        """Add `keys` to the filter; True when one of them may be a spilled id."""
        # three probes from the key's 64 bits (a byte and a bit in it each; the third
        # shares bits with the second: the key has 64 bits, the probes need 81)
        bloom, mask = self._bloom(), (self.bits >> 3) - 1
        hits = []
        for key in keys:
            first, second, third = (key >> 3) & mask, (key >> 30) & mask, (key >> 40) & mask
            bit1, bit2, bit3 = 1 << (key & 7), 1 << ((key >> 27) & 7), 1 << ((key >> 54) & 7)
            old1, old2, old3 = bloom[first], bloom[second], bloom[third]
            if old1 & bit1 and old2 & bit2 and old3 & bit3:
                hits.append(key)
            else:
                bloom[first] = old1 | bit1
                bloom[second] |= bit2  # may be the byte just written
                bloom[third] |= bit3
        return bool(hits) and self._confirm(hits)

    def holds(self, key: int) -> bool:
        """Whether `key` is a spilled id (a restored filter's hit: maybe, True)."""
        if not self.active:
            return False
        bloom, mask = self._bloom(), (self.bits >> 3) - 1
        if not (
            bloom[(key >> 3) & mask] & (1 << (key & 7))
            and bloom[(key >> 30) & mask] & (1 << ((key >> 27) & 7))
            and bloom[(key >> 40) & mask] & (1 << ((key >> 54) & 7))
        ):
            return False
        return self._confirm([key])

    def spilled_keys(self, start: int = 0) -> Iterator[int]:
        """The spilled ids in list order from the `start`th on (this process's)."""
        if self.keys is None:
            return
        at = start * 8
        while True:
            self.keys.seek(at)
            block = self.keys.read(_READ_KEYS * 8)
            if not block:
                break
            at += len(block)
            self.keys.seek(0, 2)  # appends go on at the end meanwhile
            yield from array("q", block)

    def _confirm(self, hits: list[int]) -> bool:
        """Whether one of the filter's hits is an id spilled."""
        if self.keys is None:
            return not self.complete
        if not self.complete:
            return True
        self.keys.seek(0)
        try:
            if len(hits) > 8:  # many (ids of the list checked again): one set for all
                wanted = set(hits)
                while block := self.keys.read(_READ_KEYS * 8):
                    if not wanted.isdisjoint(array("q", block)):
                        return True
                return False
            patterns = [array("q", [key]).tobytes() for key in hits]
            while block := self.keys.read(_READ_KEYS * 8):
                for pattern in patterns:
                    at = block.find(pattern)
                    while at >= 0:
                        if at % 8 == 0:
                            return True
                        at = block.find(pattern, at + 1)
            return False
        finally:
            self.keys.seek(0, 2)

    def spilled(self, keys: array[int]) -> None:
        if self.keys is None:
            # lives as long as the Spill (`close`); a wrapper of the file object on Windows
            self.keys = cast(BinaryIO, tempfile.TemporaryFile())  # noqa: SIM115
        keys.tofile(self.keys)
        self.count += len(keys)

    def stash(self, offsets: array[int], indexes: array[int]) -> None:
        """Spilled slots not handed on yet, in list order."""
        if self.pending is None:
            # closed by `drain`, `close`; a wrapper of the file object on Windows
            self.pending = cast(BinaryIO, tempfile.TemporaryFile())  # noqa: SIM115
            self.stash_from = max(0, self.count - len(offsets))
        pairs = array("q", bytes(16 * len(offsets)))
        pairs[0::2] = array("q", offsets)
        pairs[1::2] = indexes
        pairs.tofile(self.pending)
        self.pending_count += len(offsets)
        self.non_records += len(indexes) - indexes.count(RECORD)

    def drain(self) -> Iterator[tuple[int, int]]:
        """The stashed (offset, index) pairs of the live spilled slots in order, then
        forgotten."""
        handle = self.let_go_of_stash()
        if handle is None:
            return
        with handle:
            handle.seek(16 * max(0, self.alive_from - self.stash_from))
            while block := handle.read(_READ_KEYS * 16):
                pairs = array("q", block)
                yield from zip(pairs[0::2], pairs[1::2], strict=True)

    def let_go_of_stash(self) -> BinaryIO | None:
        """The stash, no longer kept here (the caller reads and closes it). The lines of
        every spilled slot go with it, those of a run a history `$set` left out too: a
        later `$set` listing spilled slots again cannot be followed (`handed_on`)."""
        handle, self.pending, self.pending_count = self.pending, None, 0
        if handle is not None:
            self.handed_on = self.count
        return handle

    def packed(self) -> bytes:
        """The filter compressed (mostly zero bits: a fraction of its size). The filter
        itself is let go until it is needed again: the checkpoint that is saved next
        copies the packed bytes a few times, and those copies should not come on top."""
        if self._packed is None:
            self._packed = zstandard.ZstdCompressor(level=1).compress(self._bloom())
            self.filter = bytearray()
        return self._packed

    @classmethod
    def unpacked(cls, bits: int, packed: bytes) -> Spill:
        """A filter saved by `packed`; a damaged one raises ValueError."""
        try:
            raw = zstandard.ZstdDecompressor().decompress(packed, max_output_size=bits // 8)
        except zstandard.ZstdError as exc:
            raise ValueError(f"a Gemini spill filter that does not decompress: {exc}") from exc
        return cls(bits, raw)

    def close(self) -> None:
        for handle in (self.keys, self.pending):
            if handle is not None:
                handle.close()
        self.keys = self.pending = None

    def __del__(self) -> None:
        self.close()  # a read given up midway (`CannotResume`, an error) leaves no file open


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
        self.checked = 0  # slots below this were checked against the spilled ids

    @classmethod
    def for_file(cls, path: Path) -> LiveList:
        return cls("q" if is_zstd(path) or file_mtime(path)[1] >= _NARROW_LIMIT else "I")

    def widen(self) -> None:
        """8-byte offsets from now on (a file that grew past 4 GiB while being read)."""
        self.offsets = array("q", self.offsets)

    @property
    def max_offset(self) -> int:
        return _NARROW_LIMIT - 1 if self.offsets.typecode == "I" else 2**63 - 1

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

    def verify(self, first_spill: bool = False) -> None:
        """Check the ids that entered the list since the last check against the
        spilled ones (`Untrackable` if one is): an id written again after its message
        was spilled is an update of it, appended here as a new message. Nothing to do
        before the first spill."""
        spill = self.spill
        if spill is None or not (spill.active or first_spill) or self.checked >= len(self.keys):
            self.checked = len(self.keys)
            return
        if spill.check(self.keys[self.checked :]):
            raise Untrackable("an update of a spilled message")
        self.checked = len(self.keys)

    def _spill(self) -> None:
        """The oldest `SPILL_CHUNK` slots out of memory: their ids into the filter,
        the lines of those not handed on yet into the stash (read back in order)."""
        spill, count = self.spill, SPILL_CHUNK
        assert spill is not None
        if self.frozen_check and self.frozen:  # a `$set` since the last window: check first
            if self.digest(self.frozen) != self.frozen_digest:
                raise CannotResume("a `$set` rewrote messages already handed on")
            self.frozen_check = False
        if not spill.active:
            self.checked = 0  # the first spill: every id goes into the filter
        self.verify(first_spill=True)
        spill.spilled(self.keys[:count])
        first_pending = min(self.frozen, count)
        spill.handed_on += first_pending
        if first_pending < count:
            if self.indexes:
                indexes = array("q", [self.index(s) for s in range(first_pending, count)])
            else:
                indexes = array("q", [RECORD]) * (count - first_pending)
            spill.stash(self.offsets[first_pending:count], indexes)
        del self.keys[:count]
        del self.offsets[:count]
        if self.indexes:
            self.indexes = {s - count: i for s, i in self.indexes.items() if s >= count}
        self.frozen = max(0, self.frozen - count)
        self.frozen_digest = self.digest(self.frozen)
        self.checked -= count
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
            self.offsets[size - 1] = offset  # `set`, inline: half the lines come here
            if self.indexes:
                self.indexes.pop(size - 1, None)
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
        self.verify()  # an id dropped unchecked might have been a spilled message's
        del self.keys[slot:]
        del self.offsets[slot:]
        self.checked = min(self.checked, slot)
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
        table = self._table = array("i", [_EMPTY]) * size
        mask = self._mask = size - 1
        self._used = len(self.keys)
        for slot, key in enumerate(self.keys):  # `_place`, inline: once per message
            i = key & mask
            while table[i] != _EMPTY:
                i = (i + 1) & mask
            table[i] = slot
