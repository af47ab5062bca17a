"""One large JSON document read as a stream of the items of one array (ijson, its C parser).

Auggie's and Continue CLI's sessions are one JSON document that the agent rewrites whole
each turn, its history an array inside it. Decoded whole, the document's bytes and its
parse were held at once, so the reader's peak grew with the session (+16 MB at 19 MB of
Auggie history). Here the file is read in pieces and each item of the history array comes
out as its own JSON bytes (for the reader's msgspec types) as soon as the parser has it.
The few small top-level fields a reader needs come with the same pass: once the history
is read, the fields before it are taken from the document's head (parsed up to the
array) and those after it from its tail (found from the last piece the parser read), so
a document is parsed about once whatever it holds. A field asked for before the history
is read takes a pass of its own, which stops at the value. Reading is about twice
msgspec's whole-document decode per byte (ijson's parser builds each item's objects),
the price of a flat peak.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO, NamedTuple, TypeVar

import ijson
import msgspec
from ijson.common import ObjectBuilder

from passdown._jsonl import open_regular
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import DECODE_ERRORS
from passdown.transcript import Diagnostics

T = TypeVar("T")
U = TypeVar("U")
_MIB = 1024 * 1024
NO_LIMIT = 1 << 62  # a document read to its end whatever its size (it streams: memory flat)

_ENCODE = msgspec.json.Encoder().encode


class DocumentStream:
    """One session document read as a stream: `items()` gives the items of the array at
    the ijson prefix `items` (for example `chatHistory.item`, or `item` for a document
    that is the array), each as JSON bytes, in order; `field(name, decoder)` the small
    top-level value `name` (one of `fields`): taken in the same pass once `items()` has
    run to its end, else by a pass of its own that stops where the value is. A document
    cut short, not JSON, unreadable or past `limit` bytes gives the items before that
    point and a warning; one that holds no item and none of `fields` is "not `shape`".
    With `unfinished`, a document that ends inside an item (cut while being written) gives
    that item too, as far as it was written (`cut_item` then says so): found by a second
    pass of ijson's events (a cut document only), it holds the keys and values complete
    before the cut."""

    def __init__(
        self,
        path: Path,
        items: str,
        fields: Sequence[str],
        diag: Diagnostics,
        *,
        limit: int,
        shape: str,
        unfinished: bool = False,
    ) -> None:
        self.path = path
        self.prefix = items
        self.names = fields
        self.diag = diag
        self.limit = limit
        self.shape = shape
        self.unfinished = unfinished
        self.cut_item = False  # the last item given was cut short
        self._values: dict[str, bytes | None] = {}

    def field(self, name: str, decoder: LazyDecoder[T]) -> T | None:
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
        """The items, each as its JSON bytes (for a reader's msgspec types)."""
        return (raw for raw in self._read(_encode) if raw is not None)

    def values(self) -> Iterator[object]:
        """The items as ijson builds them (dicts, lists, str, int, float, bool, None), for
        a reader that walks plain data: no encoding to bytes and decoding again."""
        return self._read(_as_is)

    def _read(self, convert: Callable[[object], U | None]) -> Iterator[U | None]:
        """The items, each through `convert`: None from it (for an item that is not None
        itself) leaves the item out, counted (nested past what can be encoded again)."""
        count = skipped = 0
        problem: str | None = None
        bounded: _Bounded | None = None
        try:
            with open_regular(self.path) as handle:
                bounded = _Bounded(handle, self.limit)
                first = last = -1  # the pieces the first and the last item ended in
                mark = bounded.last_start
                for item in ijson.items(bounded, self.prefix, use_float=True):
                    count += 1
                    last, mark = bounded.pieces, bounded.last_start
                    first = last if first < 0 else first
                    converted = convert(item)
                    if converted is None and item is not None:
                        skipped += 1
                    else:
                        yield converted
                if not bounded.cut and first != last:
                    self._fields_around(handle, mark)
        except ijson.JSONError as error:
            problem = _why(error)
            if self.unfinished:
                item = self._unfinished(count)
                converted = convert(item) if item is not None else None
                if converted is not None:
                    self.cut_item = True
                    yield converted
        except TooDeep:
            problem = f"nests deeper than {MAX_DEPTH} levels: read up to there"
        except OSError as error:
            problem = f"could not be read ({error.strerror or error})"
        if bounded is None:
            pass  # could not be opened: said as it is
        elif bounded.cut:
            problem = f"is larger than {self.limit // _MIB} MB: read up to there"
        elif not count and not self.cut_item and not any(self._value(n) for n in self.names):
            problem = f"is not {self.shape}"
        if problem is not None:
            self.diag.warnings.append(f"{self.path.name} {problem}")
        if skipped:
            self.diag.bad_lines += skipped
            self.diag.warnings.append(
                f"{self.path.name}: {skipped} item(s) nested too deep to read were left out"
            )

    def _unfinished(self, count: int) -> object:
        """The item after the first `count` ones as far as the document holds it, when it
        ends inside that item; None when it does not (or that item is no object or array)."""
        builder: ObjectBuilder | None = None
        seen = 0
        with contextlib.suppress(ijson.JSONError, TooDeep, OSError):
            with open_regular(self.path) as handle:
                for prefix, event, value in ijson.parse(
                    _Bounded(handle, self.limit), use_float=True
                ):
                    if builder is not None:
                        builder.event(event, value)
                        if prefix == self.prefix and event in ("end_map", "end_array"):
                            return None  # complete after all
                    elif prefix == self.prefix and event not in ("end_map", "end_array"):
                        if seen == count and event in ("start_map", "start_array"):
                            builder = ObjectBuilder()
                            builder.event(event, value)
                        seen += 1
            return None  # read to its end: no item was cut
        return builder.value if builder is not None else None

    def _fields_around(self, handle: BinaryIO, last_piece: _Mark) -> None:
        """Every field of `names` from around the array just read: those before it from
        the head (parsed up to the array), those after it from the tail (the array's end
        is found from the start of the piece its last item ended in, whose state the
        reader kept). Nothing is taken when the array is not a top-level field."""
        key, _, rest = self.prefix.partition(".")
        if not self.names or rest != "item" or last_piece.depth < 2:
            return
        end = _array_end(handle, last_piece)
        if end is None:
            return
        handle.seek(end)
        tail = _tail_fields(handle, self.limit - end, self.names)
        if tail is None:
            return
        handle.seek(0)
        head = _head_fields(_Bounded(handle, self.limit), key, self.names)
        self._values.update({name: tail.get(name, head.get(name)) for name in self.names})


class TooDeep(Exception):
    """The document nests containers deeper than MAX_DEPTH."""


class _Mark(NamedTuple):
    """Where a piece starts, and the parser's state there: how deep, whether inside a
    string, whether right after a backslash."""

    offset: int
    depth: int
    in_string: bool
    escaped: bool


class _Bounded:
    """A file read no further than `limit` bytes (what ijson reads through), and never
    past a piece that nests deeper than MAX_DEPTH: ijson spells out each value's prefix
    (`history.item.item...`), so a few hundred KB of `[[[[...` would cost it minutes and
    gigabytes (msgspec, decoding whole, refused such a document at once). The state at
    the start of the last piece read is kept (`last_start`): where the tail is found.

    While one string spans whole pieces, each piece is twice the last (up to
    `_LONGEST_PIECE`): yajl scans a token that spans pieces again from its start on every
    piece, so pieces of one size would make a long string cost its length squared."""

    def __init__(self, handle: BinaryIO | _Joined, limit: int) -> None:
        self.handle = handle
        self.left = limit
        self.cut = False
        self.depth = 0
        self.offset = 0
        self.pieces = 0
        self.carry = b""  # a quote when a string is still open at the piece's end
        self.escape = b""  # a backslash that ended the last piece: escapes the next byte
        self.last_start = _Mark(0, 0, False, False)
        self.grown = 0  # the size of the last piece while one string spans whole pieces
        self.all_string = False  # the last piece was all inside one string

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            self.cut = self.cut or bool(size and self.handle.read(1))
            return b""
        if size > 0 and self.all_string:
            size = self.grown = min(max(size, 2 * self.grown), _LONGEST_PIECE)
        else:
            self.grown = 0
        piece = self.handle.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(piece)
        self.last_start = _Mark(self.offset, self.depth, bool(self.carry), bool(self.escape))
        self.offset += len(piece)
        self.pieces += 1
        self._check_depth(piece)
        return piece

    def _check_depth(self, piece: bytes) -> None:
        """Follow the nesting through the structural bytes alone: escapes (a backslash
        and the byte after it) are cut out first, then what is between quotes (every
        other part between them: the string's contents), and the brackets left are
        summed."""
        raw = _ESCAPE.sub(b"", self.escape + piece)
        self.escape = b"\\" if raw.endswith(b"\\") else b""  # escapes the next piece's first
        marks = self.carry + raw[: len(raw) - len(self.escape)].translate(None, _NOT_STRUCTURAL)
        self.all_string = bool(self.carry) and marks.count(b'"') == 1  # open all through
        parts = marks.split(b'"')
        self.carry = b'"' if len(parts) % 2 == 0 else b""  # an odd count: a string still open
        brackets = b"".join(parts[::2])
        opens = brackets.count(b"[") + brackets.count(b"{")
        if self.depth + opens > MAX_DEPTH and _deepest(self.depth, brackets) > MAX_DEPTH:
            raise TooDeep
        self.depth += 2 * opens - len(brackets)


def _array_end(handle: BinaryIO, start: _Mark) -> int | None:
    """The offset just past the `]` that closes the top-level array the piece at `start`
    is inside of (its depth 2 or more, the array open before it: the caller knows), found
    by following strings and brackets from there; None when it is not within reach."""
    handle.seek(start.offset)
    buffer, base, at = b"", start.offset, 0
    depth, in_string, escaped = start.depth, start.in_string, start.escaped
    while base + at - start.offset <= _TAIL_SCAN_BYTES:
        if escaped or in_string:
            ended = _STRING_END.match(buffer, at + escaped)
            if ended is None or at + escaped > len(buffer):
                more = handle.read(max(_CHUNK, len(buffer) - at))  # doubles: linear
                if not more:
                    return None
                buffer, base, at = buffer[at:] + more, base + at, 0
                continue
            at, in_string, escaped = ended.end(), False, False
            continue
        mark = _MARK.search(buffer, at)
        if mark is None:
            more = handle.read(_CHUNK)
            if not more:
                return None
            buffer, base, at = more, base + len(buffer), 0
            continue
        at = mark.end()
        if mark.group() == b'"':
            in_string = True
        elif mark.group() in (b"[", b"{"):
            depth += 1
        else:
            depth -= 1
            if depth <= 1:
                return base + at
    return None


def _head_fields(reader: _Bounded, key: str, names: Sequence[str]) -> dict[str, bytes | None]:
    """The fields of `names` that come before the top-level field `key`, parsed up to it."""
    found: dict[str, bytes | None] = {}
    builders: dict[str, ObjectBuilder] = {}
    with contextlib.suppress(ijson.JSONError, TooDeep, OSError):
        for prefix, event, value in ijson.parse(reader, use_float=True):
            if prefix == key:
                break
            name = prefix.partition(".")[0]
            if name not in names:
                continue
            builder = builders.setdefault(name, ObjectBuilder())
            builder.event(event, value)
            if prefix == name and event not in ("start_map", "start_array", "map_key"):
                found[name] = _encode(builders.pop(name).value)
    return found


def _tail_fields(
    handle: BinaryIO, limit: int, names: Sequence[str]
) -> dict[str, bytes | None] | None:
    """The fields of `names` after an array's end (`handle` just past its `]`): what
    follows it is `, "key": value ... }`, read as the object `{"key": value ... }`;
    None when what follows is not that."""
    found: dict[str, bytes | None] = {}
    head = handle.read(_CHUNK).lstrip()
    if head.startswith(b"}"):
        return found
    if not head.startswith(b","):
        return None
    with contextlib.suppress(ijson.JSONError, TooDeep, OSError):
        tail = _Bounded(_Joined(b"{" + head[1:], handle), limit)
        for name, value in ijson.kvitems(tail, "", use_float=True):
            if name in names:
                found[name] = _encode(value)
    return found


class _Joined:
    """Bytes already read, then the rest of the file: what ijson reads the tail from."""

    def __init__(self, first: bytes, handle: BinaryIO) -> None:
        self.first = first
        self.handle = handle

    def read(self, size: int = -1) -> bytes:
        if self.first and size:  # ijson reads 0 bytes first, to learn the type
            piece, self.first = self.first, b""
            return piece
        return self.handle.read(size)


MAX_DEPTH = 512
_TAIL_SCAN_BYTES = 16 * _MIB  # how far past the last piece's start the array's end is sought
_CHUNK = 64 * 1024
_LONGEST_PIECE = 16 * _MIB  # the largest piece read while a long string is open
_NOT_STRUCTURAL = bytes(b for b in range(256) if b not in b'"[]{}')
_ESCAPE = lazy_compile(rb"\\.", re.S)
_MARK = lazy_compile(rb'["\[\]{}]')
_STRING_END = lazy_compile(rb'(?:[^"\\]|\\.)*"', re.S)
_STEP = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")
_PAIR = lazy_compile(rb"[\[{][\]}]")


def _deepest(depth: int, brackets: bytes) -> int:
    """How deep `brackets` go from `depth`, or a bound above it within MAX_DEPTH. Adjacent open-close pairs
    are cut out, innermost first, in a few passes of a regular expression: what is left is
    closes then opens, and each pass hid at most one level (counting bracket by bracket
    in Python took as long as parsing the piece)."""
    left = brackets
    for passes in range(1, 33):
        shorter = _PAIR.sub(b"", left)
        if len(shorter) == len(left):
            opens = shorter.count(b"[") + shorter.count(b"{")
            bound = max(depth, depth + 2 * opens - len(shorter)) + passes - 1
            if bound <= MAX_DEPTH:
                return bound
            break
        left = shorter
    return max(accumulate(brackets.translate(_STEP), _step, initial=depth))  # exact


def _step(depth: int, mark: int) -> int:
    return depth + mark - 1


def _encode(value: object) -> bytes | None:
    """JSON bytes for a parsed item; None for one nested past what can be encoded again
    (ijson builds any depth; encoding recurses)."""
    try:
        return _ENCODE(value)
    except (RecursionError, msgspec.EncodeError):
        return None


def _as_is(value: object) -> object:
    return value


def _why(error: Exception) -> str:
    if isinstance(error, ijson.IncompleteJSONError) and "premature EOF" in str(error):
        return "ends early (cut while being written?): read up to there"
    return "is not valid JSON past a point: read up to there"
