"""One large JSON document read as a stream of the items of one array (ijson, its C parser).

Auggie's and Continue CLI's sessions are one JSON document that the agent rewrites whole
each turn, its history an array inside it. Decoded whole, the document's bytes and its
parse were held at once, so the reader's peak grew with the session (+16 MB at 19 MB of
Auggie history). Here the file is read in pieces and each item of the history array comes
out as its own JSON bytes (for the reader's msgspec types) as soon as the parser has it.
The few small top-level fields a reader needs take one more pass each, which stops at the
value (free for a field before the array). Reading is about twice msgspec's whole-document
decode per byte (ijson's parser builds each item's objects), the price of a flat peak.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO, TypeVar

import ijson
import msgspec

from passdown._jsonl import open_regular
from passdown.agents._common import DECODE_ERRORS
from passdown.transcript import Diagnostics

T = TypeVar("T")
_MIB = 1024 * 1024

_ENCODE = msgspec.json.Encoder().encode


class DocumentStream:
    """One session document read as a stream: `items()` gives the items of the array at
    the ijson prefix `items` (for example `chatHistory.item`), each as JSON bytes, in
    order; `field(name, decoder)` the small value at a prefix (one more pass, which
    stops where the value is: a field before the array costs nothing). A document cut
    short, not JSON, unreadable or past `limit` bytes gives the items before that point
    and a warning; one that holds no item and none of `fields` is "not `shape`"."""

    def __init__(
        self,
        path: Path,
        items: str,
        fields: Sequence[str],
        diag: Diagnostics,
        *,
        limit: int,
        shape: str,
    ) -> None:
        self.path = path
        self.prefix = items
        self.names = fields
        self.diag = diag
        self.limit = limit
        self.shape = shape
        self._values: dict[str, bytes | None] = {}

    def field(self, name: str, decoder: msgspec.json.Decoder[T]) -> T | None:
        raw = self._value(name)
        if raw is None:
            return None
        try:
            return decoder.decode(raw)
        except DECODE_ERRORS:
            return None

    def _value(self, name: str) -> bytes | None:
        if name not in self._values:
            self._values[name] = None
            try:
                with open_regular(self.path) as handle:
                    found = ijson.items(_Bounded(handle, self.limit), name, use_float=True)
                    self._values[name] = _encode(next(found))
            except (StopIteration, ijson.JSONError, TooDeep, OSError):
                pass
        return self._values[name]

    def items(self) -> Iterator[bytes]:
        count = skipped = 0
        problem: str | None = None
        bounded: _Bounded | None = None
        try:
            with open_regular(self.path) as handle:
                bounded = _Bounded(handle, self.limit)
                for item in ijson.items(bounded, self.prefix, use_float=True):
                    count += 1
                    encoded = _encode(item)
                    if encoded is None:
                        skipped += 1
                    else:
                        yield encoded
        except ijson.JSONError as error:
            problem = _why(error)
        except TooDeep:
            problem = f"nests deeper than {MAX_DEPTH} levels: read up to there"
        except OSError as error:
            problem = f"could not be read ({error.strerror or error})"
        if bounded is None:
            pass  # could not be opened: said as it is
        elif bounded.cut:
            problem = f"is larger than {self.limit // _MIB} MB: read up to there"
        elif not count and not any(self._value(name) for name in self.names):
            problem = f"is not {self.shape}"
        if problem is not None:
            self.diag.warnings.append(f"{self.path.name} {problem}")
        if skipped:
            self.diag.bad_lines += skipped
            self.diag.warnings.append(
                f"{self.path.name}: {skipped} item(s) nested too deep to read were left out"
            )


class TooDeep(Exception):
    """The document nests containers deeper than MAX_DEPTH."""


class _Bounded:
    """A file read no further than `limit` bytes (what ijson reads through), and never
    past a piece that nests deeper than MAX_DEPTH: ijson spells out each value's prefix
    (`history.item.item...`), so a few hundred KB of `[[[[...` would cost it minutes and
    gigabytes (msgspec, decoding whole, refused such a document at once)."""

    def __init__(self, handle: BinaryIO, limit: int) -> None:
        self.handle = handle
        self.left = limit
        self.cut = False
        self.depth = 0
        self.carry = b""  # an open string (from its quote) or a lone backslash, to go on

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            self.cut = self.cut or bool(size and self.handle.read(1))
            return b""
        piece = self.handle.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(piece)
        self._check_depth(piece)
        return piece

    def _check_depth(self, piece: bytes) -> None:
        """Follow the nesting through the structural bytes alone: escapes and whole
        strings are cut out by regular expressions, the brackets left are summed."""
        marks = _ESCAPE.sub(b"", self.carry + piece.translate(None, _NOT_STRUCTURAL))
        tail = b"\\" if marks.endswith(b"\\") else b""
        marks = _STRING.sub(b"", marks[: len(marks) - len(tail)])
        quote = marks.find(b'"')
        self.carry = (marks[quote:] if quote >= 0 else b"") + tail
        brackets = marks[:quote] if quote >= 0 else marks
        opens = brackets.count(b"[") + brackets.count(b"{")
        if self.depth + opens > MAX_DEPTH:
            deepest = max(accumulate(brackets.translate(_STEP), _step, initial=self.depth))
            if deepest > MAX_DEPTH:
                raise TooDeep
        self.depth += 2 * opens - len(brackets)


MAX_DEPTH = 512
_NOT_STRUCTURAL = bytes(b for b in range(256) if b not in b'"\\[]{}')
_ESCAPE = re.compile(rb"\\.", re.S)
_STRING = re.compile(rb'"[^"]*"')
_STEP = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")


def _step(depth: int, mark: int) -> int:
    return depth + mark - 1


def _encode(value: object) -> bytes | None:
    """JSON bytes for a parsed item; None for one nested past what can be encoded again
    (ijson builds any depth; encoding recurses)."""
    try:
        return _ENCODE(value)
    except (RecursionError, msgspec.EncodeError):
        return None


def _why(error: Exception) -> str:
    if isinstance(error, ijson.IncompleteJSONError) and "premature EOF" in str(error):
        return "ends early (cut while being written?): read up to there"
    return "is not valid JSON past a point: read up to there"
