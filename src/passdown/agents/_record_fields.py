"""A few top-level string fields of a JSON Lines session's records, found without holding
a record: for discovery of a session whose first records run past the head it reads.

Discovery places a session (tells which workspace it ran in) from the first record that
names its cwd. That record usually sits in the file's first few KB, but a long first
prompt (a 300 KB paste, pasted images) makes the first records larger than any head a
listing should read whole. `RecordScan` reads on from the start in bounded pieces and
walks each record's JSON just deeply enough to see its top-level keys: memory stays
flat however long a record is (a string is skipped, never held, unless it is the value
of a wanted key), and the read stops at the first record that answers, or after
`MAX_SCAN_BYTES`. A scan that stopped there (or on a read error) is `cut`: the session
could not be placed, which discovery reports rather than hides.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterator
from pathlib import Path

import msgspec

# How far discovery reads for a record naming the cwd: well past any first prompt
# (the largest pastes and inlined images are a few MB), and a bound on the time a
# listing spends on a session that names none.
MAX_SCAN_BYTES = 64 * 1024 * 1024
_MIB = 1024 * 1024
_CHUNK = _MIB
_KEY_CAP = 64  # longer top-level strings are no wanted key (those are short names)
_VALUE_CAP = 64 * 1024  # a wanted value (a path, a time) longer than this is left out

_QUOTE, _BACKSLASH, _NEWLINE = 0x22, 0x5C, 0x0A
_OPENERS, _CLOSERS = b"{[", b"}]"
# A string's body up to its closing quote (escapes included), stopping at a newline (a
# record's end: JSON escapes every newline inside a string) or at a backslash that ends
# the data (its escaped byte is in the next piece).
_STRING_BODY = re.compile(rb'[^"\\\n]*+(?:\\[^\n][^"\\\n]*+)*+')
# At depth 1: the bytes between the structural ones (whitespace, ':', ',', literals).
_BETWEEN = re.compile(rb'[^"{}\[\]\n]*+')


@functools.cache
def _nested(levels: int = 6) -> re.Pattern[bytes]:
    """Below depth 1: whole strings, bytes outside them but brackets and newlines, and
    whole containers nested up to `levels` deep, all in one match (the walk's Python
    loop only sees deeper brackets and the ones that close the walk's own levels).
    Compiled on first use (a few tens of ms): most listings never need it."""
    flat = rb'[^"{}\[\]\n]++|"[^"\\\n]*+(?:\\[^\n][^"\\\n]*+)*+"'
    inner = flat
    for _ in range(levels):
        inner = flat + rb"|\{(?:" + inner + rb")*+\}|\[(?:" + inner + rb")*+\]"
    return re.compile(rb"(?:" + inner + rb")*+")


class RecordScan:
    """The wanted top-level string fields (`names`) of each record of the file at
    `path` (a compressed one is read through its decompressor), read from its start in
    pieces. After `records()` stops, `cut` says whether it stopped before the file's
    end: at `limit` bytes (default `MAX_SCAN_BYTES`), or on a read error."""

    def __init__(self, path: Path, names: Collection[str], limit: int | None = None) -> None:
        self.path = path
        self.names = frozenset(name.encode() for name in names)
        self.limit = MAX_SCAN_BYTES if limit is None else limit
        self.cut = False
        self.failed = False  # the read failed part way (a read error, a broken frame)

    def records(self) -> Iterator[dict[str, str]]:
        """Per record (line) that has any of the wanted fields as strings, those fields,
        in file order; a caller stops reading by not asking for more."""
        from passdown._jsonl import open_binary

        walker = _Walker(self.names)
        read = 0
        try:
            stream_cm = open_binary(self.path)
        except Exception:  # unopenable: said by the unreadable-session check, not here
            return
        try:
            with stream_cm as stream:
                while True:
                    if read >= self.limit:
                        if stream.read(1):  # more than discovery reads
                            self.cut = True
                            return
                        break
                    chunk = stream.read(min(_CHUNK, self.limit - read))
                    if not chunk:
                        break
                    read += len(chunk)
                    yield from walker.feed(chunk)
        except Exception:  # a read error or a broken compressed frame part way
            self.cut = self.failed = True
            return
        last = walker.end_record()
        if last:
            yield last

    def unplaced(self) -> str:
        """Why a cut scan placed no session: for `SessionRef.unplaced`."""
        if self.failed:
            return "reading it failed before a record named its working directory"
        return not_within(self.limit)


def not_within(limit: int) -> str:
    """Why a session whose first `limit` bytes name no working directory is unplaced."""
    size = f"{limit // _MIB} MB" if limit >= _MIB else f"{limit // 1024} KB"
    return f"nothing in its first {size} names its working directory"


class _Walker:
    """The state of the walk between two pieces of the file."""

    def __init__(self, names: frozenset[bytes]) -> None:
        self.names = names
        self.carry = b""  # a backslash that ended the last piece inside a string
        self._reset()

    def _reset(self) -> None:
        self.depth = 0
        self.in_string = False
        self.capture: bytearray | None = None  # the depth-1 string being read
        self.capture_cap = 0
        self.value_of: bytes | None = None  # the wanted key the captured string is the value of
        self.key: bytes | None = None  # the depth-1 string just read: a key if ':' follows
        self.want: bytes | None = None  # a wanted key whose ':' was read: its value is next
        self.found: dict[str, str] = {}

    def end_record(self) -> dict[str, str]:
        found = self.found
        self._reset()
        return found

    def feed(self, data: bytes) -> Iterator[dict[str, str]]:
        if self.carry:
            data, self.carry = self.carry + data, b""
        i, n = 0, len(data)
        while i < n:
            if self.in_string:
                end = _STRING_BODY.match(data, i).end()  # type: ignore[union-attr]
                self._take(data, i, end)
                i = end
                if i >= n:
                    break
                byte = data[i]
                if byte == _QUOTE:
                    self.in_string = False
                    self._close_string()
                    i += 1
                elif byte == _BACKSLASH and i + 1 >= n:
                    self.carry = data[i:]
                    break
                elif byte == _BACKSLASH:  # a backslash before a newline: not JSON
                    i += 1
                else:  # a newline inside a string: the record was cut; the next begins
                    i += 1
                    found = self.end_record()
                    if found:
                        yield found
                continue
            if self.depth >= 2:
                i = _nested().match(data, i).end()  # type: ignore[union-attr]
            else:
                end = _BETWEEN.match(data, i).end()  # type: ignore[union-attr]
                if self.depth == 1 and end > i:
                    self._between(data[i:end])
                i = end
            if i >= n:
                break
            byte = data[i]
            i += 1
            if byte == _NEWLINE:
                found = self.end_record()
                if found:
                    yield found
            elif byte == _QUOTE:
                self.in_string = True
                self._open_string()
            elif byte in _OPENERS:
                self.key = self.want = None
                self.depth += 1
            elif byte in _CLOSERS:
                self.key = self.want = None
                self.depth = max(self.depth - 1, 0)

    def _open_string(self) -> None:
        self.key = None
        if self.depth != 1:
            self.capture = None
            return
        self.capture = bytearray()
        self.value_of, self.want = self.want, None
        self.capture_cap = _VALUE_CAP if self.value_of is not None else _KEY_CAP

    def _take(self, data: bytes, start: int, end: int) -> None:
        if self.capture is None or end == start:
            return
        if len(self.capture) + end - start > self.capture_cap:
            self.capture = None  # too long to be what is wanted
            return
        self.capture += data[start:end]

    def _close_string(self) -> None:
        captured, self.capture = self.capture, None
        value_of, self.value_of = self.value_of, None
        if captured is None:
            return
        if value_of is None:
            self.key = bytes(captured)
            return
        name = value_of.decode()
        try:
            value = msgspec.json.decode(b'"' + captured + b'"')
        except msgspec.DecodeError:
            return
        if isinstance(value, str) and name not in self.found:
            self.found[name] = value

    def _between(self, text: bytes) -> None:
        rest = text.strip()
        if not rest:
            return  # whitespace changes nothing, also where a piece ends in it
        if self.key is not None and rest[:1] == b":":
            if self.key in self.names:
                self.want = self.key
            self.key = None
            if not rest[1:].strip():
                return
        self.key = self.want = None  # ',' or a literal: no wanted string value follows
