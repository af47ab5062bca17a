"""A tree session's first read on two cores (`passdown._two_core`): pass 1 walked in two
halves by the process and a forked worker and joined (or walked again on one core when
the halves do not join exactly), and pass 2 cut in the middle of the branch's bytes
after a record that leaves nothing buffered, the worker decoding the lines after the
cut. The single walk and the branch's lines are `passdown.agents._tree`'s.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, Generic, Protocol, TypeVar, cast

import msgspec

from passdown import _platform
from passdown.agents._tree import (
    FRAGMENT_MEMORY,
    Branch,
    Walk,
    _RecentIds,
    branch_lines,
)
from passdown.transcript import Diagnostics, Event

if TYPE_CHECKING:
    from passdown.agents._tree_resume import TreeResumable
    from passdown.agents.base import ResumableReader


# The part of a split pass 2 the process reads itself: a worker decodes a byte about a
# quarter slower (it extracts from an empty state and keeps what a merge needs), so an
# even cut left the process waiting for it (0.15 s of 1.6 s on a 300 MB Claude session).
MAIN_SHARE = 0.55


# a first half's walk records at most this many ids for the join check (then no join)
_WATCH_LIMIT = 65536


class _WatchedIds(_RecentIds):
    """The recent ids of the first half's walk in a split pass 1 of fragments: until it
    has taken `size` ids of its own, a single walk would still hold some of the later
    half's, so the ids it takes and those it asks about are kept to check that none of
    them is one of the later half's (`_join_walks`)."""

    __slots__ = ("asked", "overflow", "takes")

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.asked: set[str] = set()
        self.takes = 0
        self.overflow = False

    def add(self, record_id: str) -> None:
        if self.takes < self.size and record_id not in self.ids:
            self.takes += 1
            self._note(record_id)
        super().add(record_id)

    def holds(self, record_id: str) -> bool:
        if self.takes < self.size:
            self._note(record_id)
        return record_id in self.ids

    def _note(self, record_id: str) -> None:
        if len(self.asked) < _WATCH_LIMIT:
            self.asked.add(record_id)
        else:
            self.overflow = True


class _Forked(Protocol):
    def result(self) -> bytearray: ...

    def cancel(self) -> None: ...


class _HalfWalk(msgspec.Struct):
    """A `Walk` over part of the file, and what it noted, as the worker sends it."""

    runs: bytes
    leaf: str | None
    leaf_parent: str | None
    wanted: str | None
    started: bool
    hint: str | None
    met_leaf: bool
    diagnostics: Diagnostics
    title: str | None
    taken: list[str]  # fragments: the recent ids taken, oldest first
    asked: list[str]  # fragments, the first half: the ids it took or asked about early
    overflow: bool  # ... more than it could keep


_HALF_WALK_ENCODER = msgspec.msgpack.Encoder()
_HALF_WALK_DECODER = msgspec.msgpack.Decoder(_HalfWalk)


def _join_walks(later: _HalfWalk, first: _HalfWalk, fd: int, middle: int) -> Walk | None:
    """The walk of [0, end) from the walks of [middle, end) and [0, middle), or None
    when the first half's walk did not start where a single walk would have gone on:
    at the record the later half's branch comes from (it started from the newest record
    before the middle, or a leaf hint after it)."""
    if not later.started or later.wanted is None or first.leaf != later.wanted:
        return None
    # fragments: a single walk would still have held the later half's ids; the first
    # half's walk must not have taken or asked about any of them meanwhile
    if first.overflow or not set(later.taken).isdisjoint(first.asked):
        return None
    runs = array("q")
    runs.frombytes(later.runs)
    before = array("q")
    before.frombytes(first.runs)
    # a run across the middle is one run on one core: its first half ends on the
    # middle's line before and its second begins on the middle
    if runs and before and runs[-2] == middle and before[1] == _line_start_before(fd, middle):
        runs[-2] = before[0]
        del before[:2]
    runs.extend(before)
    # the leaf a hint named may lie before the middle: then the first half met it
    met, parent = (
        (True, later.leaf_parent) if later.met_leaf else (first.met_leaf, first.leaf_parent)
    )
    taken = None
    if later.taken or first.taken:
        taken = _RecentIds(FRAGMENT_MEMORY)
        for record_id in chain(later.taken, first.taken):
            taken.add(record_id)
    return Walk(
        Branch(runs),
        leaf=later.leaf,
        leaf_parent=parent,
        wanted=first.wanted,
        started=True,
        hint=later.hint,
        met_leaf=met,
        taken=taken,
    )


def _line_start_before(fd: int, pos: int) -> int:
    """The offset of the line that ends at `pos` (just after its newline)."""
    end = pos - 1  # the newline itself
    while end > 0:
        lo = max(0, end - (1 << 16))
        newline = _platform.pread(fd, end - lo, lo).rfind(b"\n")
        if newline >= 0:
            return lo + newline + 1
        end = lo
    return 0


def branch_bytes(branch: Branch, start: int, end: int) -> int:
    """About how many bytes of [start, end) pass 2 decodes: the runs' spans (each
    without its last line), or the whole window when the tree is broken."""
    if branch.broken:
        return end - start
    runs = branch.runs
    return sum(runs[k + 1] - runs[k] for k in range(0, len(runs), 2))


def branch_middle(branch: Branch, start: int, end: int, share: float = 0.5) -> int:
    """The file offset by which pass 2 has decoded `share` of the branch's bytes."""
    if branch.broken or not branch.runs:
        return start + int((end - start) * share)
    runs = branch.runs
    left = int(branch_bytes(branch, start, end) * share)
    for k in range(len(runs) - 2, -1, -2):  # newest first: oldest run last
        span = runs[k + 1] - runs[k]
        if left <= span:
            return runs[k] + left
        left -= span
    return runs[0]


def on_branch(branch: Branch) -> Callable[[int], bool]:
    """Whether the line starting at an offset is one pass 2 decodes (offsets asked in
    increasing order)."""
    if branch.broken:
        return lambda offset: True
    runs = branch.runs
    index = len(runs) - 2

    def inside(offset: int) -> bool:
        nonlocal index
        while index >= 0 and offset > runs[index + 1]:
            index -= 2
        return index >= 0 and runs[index] <= offset

    return inside


_SCAN_BYTES = 8 * 1024 * 1024  # how far past the middle a clean cut is looked for
_SCAN_BEFORE = 1024 * 1024  # calls opened this far before the middle are followed
_SCAN_BLOCK = 1024 * 1024  # read in blocks: no large buffer just before a fork


def clean_branch_cut(
    fd: int,
    branch: Branch,
    middle: int,
    end: int,
    opens: re.Pattern[bytes],
    closes: re.Pattern[bytes],
    flushing: tuple[bytes, ...],
) -> int | None:
    """Where a two-core read (`passdown._two_core`) best cuts a tree session: the start
    of a branch line at or after `middle` right after a branch record holding one of
    `flushing` (a record that ends the assistant's text) with no tool call (`opens`
    ids) read since the scan began still waiting for its result (`closes` ids); else
    the first branch line at or after `middle`; None if the scan finds none."""
    scan_from = max(0, middle - _SCAN_BEFORE)
    limit = min(end, middle + _SCAN_BYTES)
    inside = on_branch(branch)
    open_calls: set[bytes] = set()
    flushed = False
    fallback: int | None = None
    skip_first = scan_from > 0  # the scan starts inside a line
    carry, pos = b"", scan_from
    while pos < limit and (block := _platform.pread(fd, min(_SCAN_BLOCK, limit - pos), pos)):
        data, base = carry + block, pos - len(carry)
        pos += len(block)
        at = 0
        if skip_first:
            newline = data.find(b"\n")
            if newline < 0:
                carry = data
                continue
            at, skip_first = newline + 1, False
        while (newline := data.find(b"\n", at)) >= 0:
            offset = base + at
            if inside(offset):
                if offset >= middle:
                    if fallback is None:
                        fallback = offset
                    if flushed and not open_calls:
                        return offset
                line = data[at:newline]
                open_calls.update(opens.findall(line))
                open_calls.difference_update(closes.findall(line))
                flushed = any(marker in line for marker in flushing)
            at = newline + 1
        carry = data[at:]
    return fallback


def half_lines(
    path: Path, diag: Diagnostics, branch: Branch, stream: BinaryIO, cut: int
) -> Iterator[tuple[int, bytes, int]]:
    """Pass 2 of a two-core read's worker: the branch's lines from `cut` on (`stream`:
    the file from there), counting the lines one pass would count there."""
    runs = branch.runs
    if not branch.broken and runs and cut > runs[1]:
        # no branch line after the cut. One pass stops after the first line past the
        # branch (counting it): the first part's reader counted it, unless the cut is
        # right at its start
        fd = cast(_FdStream, stream).fd
        if cut != _line_end(fd, runs[1]):
            return iter(())
    return branch_lines(path, diag, branch, stream=stream, base=cut)


class _FdStream(Protocol):
    fd: int


def _line_end(fd: int, start: int) -> int:
    """The offset after the newline of the line starting at `start` (-1: none)."""
    pos = start
    while chunk := _platform.pread(fd, 1 << 16, pos):
        newline = chunk.find(b"\n")
        if newline >= 0:
            return pos + newline + 1
        pos += len(chunk)
    return -1


DecoderT = TypeVar("DecoderT")
SplitterT = TypeVar("SplitterT", bound="TreeSplitter[Any]")


class TreeSplitter(Generic[DecoderT]):
    """What the tree agents' splitters (`_claude_split`, `_qwen_split`, `_pi_split`)
    share: made only for a first read whose windows are planned (a checkpoint's
    continuation reads just the appended part, on one core), and cut in the middle of the
    branch's bytes after a record that leaves nothing buffered. An agent's subclass names
    its branch decoder and the byte markers of its calls, results and flushing records,
    and says how the halves conflict and join."""

    decoder_type: ClassVar[type]
    opens: ClassVar[re.Pattern[bytes]]
    closes: ClassVar[re.Pattern[bytes]]
    flushing: ClassVar[tuple[bytes, ...]]

    def __init__(self, reader: TreeResumable, decoder: DecoderT, branch: Branch) -> None:
        self.reader, self.decoder, self.branch = reader, decoder, branch

    @classmethod
    def for_reader(cls: type[SplitterT], reader: ResumableReader | None) -> SplitterT | None:
        from passdown.agents._tree_resume import TreeResumable  # it imports this module

        if not isinstance(reader, TreeResumable):
            return None
        decoder = reader.decoder
        branch = reader.first_branch()
        if not isinstance(decoder, cls.decoder_type) or branch is None:
            return None
        return cls(reader, decoder, branch)

    def work_bytes(self, start: int, end: int) -> int:
        return branch_bytes(self.branch, start, end)

    def cut(self, fd: int, start: int, end: int) -> int | None:
        middle = branch_middle(self.branch, start, end, MAIN_SHARE)
        return clean_branch_cut(
            fd, self.branch, middle, end, self.opens, self.closes, self.flushing
        )

    def split(self, cut: int) -> None:
        self.reader.split_first_window(cut)

    def before_merge(self, reader: ResumableReader, report: dict[str, Any]) -> Iterator[Event]:
        return iter(())
