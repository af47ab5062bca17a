"""The live message list of a Gemini CLI session replay (`_replay`), kept in arrays:
no Python object per message, so a long session costs about 20 bytes a message."""

from __future__ import annotations

import hashlib
from array import array
from pathlib import Path

from passdown._jsonl import is_zstd
from passdown.agents._common import file_mtime
from passdown.agents.base import CannotResume

RECORD = -1  # the index of a slot whose message is its own record line
_EMPTY = -1  # a bucket of the id table that holds no slot
_MIN_TABLE = 1024
_NARROW_LIMIT = 2**32  # offsets below it fit 4 bytes


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
        keys.append(key)
        self.offsets.append(offset)
        table[i] = size
        self._used += 1
        if self._used * 2 > len(table):
            self.rebuild()

    def append(self, key: int, offset: int, index: int = RECORD) -> None:
        slot = len(self.keys)
        self.keys.append(key)
        self.offsets.append(offset)
        if index != RECORD:
            self.indexes[slot] = index
        if (self._used + 1) * 2 > len(self._table):
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
