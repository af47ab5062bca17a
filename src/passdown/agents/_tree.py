"""The active branch of a session stored as a tree of parent-linked records (Claude Code,
Qwen Code, pi).

Rewinds and forks leave dead branches in the file, so file order is not conversation
order. Parents are always written before their children, which makes two streaming
passes enough, in memory that does not grow with the file: pass 1 walks the file
backwards from the newest leaf following parent links and keeps only the runs of
consecutive lines that make up the branch (a few per rewind or sub-agent, not one per
record); pass 2 reads forwards and hands over just those lines.

One forward pass cannot do this exactly in flat memory: whether a record is on the
active branch is known only once the leaf is, at the end of the file, and events handed
to extraction cannot be taken back, so a forward pass would have to hold every record
(or its events) until the end. Measured on a real-shaped 100 MB Claude session, even a
free branch decision would save at most 30% of the reading time (pass 1's share).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, Generic, Protocol, TypeVar, cast

import msgspec

from passdown import _platform
from passdown._jsonl import LineReader
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

if TYPE_CHECKING:
    from passdown.agents.base import ResumableReader


@dataclass(slots=True)
class Node:
    """One record's place in the tree, as an agent module reads it in pass 1."""

    id: str
    parent: str | None


@dataclass(slots=True)
class LeafHint:
    """A record naming the newest leaf (Claude's `last-prompt.leafUuid`); it counts only
    when it comes after every tree record in the file."""

    id: str | None


# (offset, line, tail_offset) -> a Node, a LeafHint, or None for a line outside the tree
NodeReader = Callable[[int, bytes, int], "Node | LeafHint | None"]


@dataclass(slots=True)
class Branch:
    """The active branch as runs of consecutive lines: flat pairs (offset of a run's first
    line, offset of its last line), newest run first. A session without rewinds is a few
    runs split only by the lines outside the tree, so this stays small however long the
    session is (one offset per record grew by 10 MB per GB)."""

    runs: array[int] = field(default_factory=lambda: array("q"))
    broken: bool = False  # a parent is missing: read every tree record in file order

    def record_count(self) -> int:
        return len(self.runs) // 2


# The part of a split pass 2 the process reads itself: a worker decodes a byte about a
# quarter slower (it extracts from an empty state and keeps what a merge needs), so an
# even cut left the process waiting for it (0.15 s of 1.6 s on a 300 MB Claude session).
MAIN_SHARE = 0.55

# Qwen writes the fragments of one record next to each other (with siblings between at
# most); remembering the ids of this many recent branch records finds them all while
# keeping the memory fixed (a set of every id on the branch grew by ~140 MB per GB).
FRAGMENT_MEMORY = 4096


class _RecentIds:
    """The last `size` ids taken onto the branch, for fragment lookup."""

    __slots__ = ("ids", "order", "size")

    def __init__(self, size: int) -> None:
        self.order: deque[str] = deque()
        self.ids: set[str] = set()
        self.size = size

    def add(self, record_id: str) -> None:
        if record_id in self.ids:
            return
        self.order.append(record_id)
        self.ids.add(record_id)
        if len(self.order) > self.size:
            self.ids.discard(self.order.popleft())

    def holds(self, record_id: str) -> bool:
        return record_id in self.ids


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


@dataclass(slots=True)
class Walk:
    """Pass 1 over the file, or over one window of it: the branch's runs in the window,
    the leaf the walk started from and where it would go on before the window."""

    branch: Branch
    leaf: str | None = None  # the newest leaf (None: no tree record in the window)
    leaf_parent: str | None = None  # the leaf's parent, once the leaf was met
    wanted: str | None = None  # the next id up the branch (None: a root was reached)
    started: bool = False  # the window holds a tree record
    hint: str | None = None  # a leaf hint after every tree record of the window
    met_leaf: bool = False
    taken: _RecentIds | None = None


def find_active_branch(
    path: Path, diag: Diagnostics, read_node: NodeReader, *, fragments: bool = False
) -> Branch:
    """Pass 1. With `fragments`, a record written in several pieces under one id (Qwen)
    keeps every piece, not just the last."""
    walk = walk_branch(LineReader(path, diag), read_node, fragments=fragments)
    if walk.wanted is not None:
        mark_broken(walk.branch, diag)
    return walk.branch


def mark_broken(branch: Branch, diag: Diagnostics) -> None:
    branch.broken = True
    diag.warnings.append(
        "the conversation tree is broken (a parent record is missing); read in file order"
    )


def walk_branch(
    reader: LineReader,
    read_node: NodeReader,
    *,
    fragments: bool = False,
    handle: BinaryIO | None = None,
    base: int = 0,
    taken: _RecentIds | None = None,
) -> Walk:
    """Walk the lines backwards from the leaf (of the file, or of `handle`, a view of
    the file from offset `base` on; the runs then hold file offsets). `taken`: the
    recent ids of a walk of fragments, when not a fresh `_RecentIds`."""
    branch = Branch()
    runs = branch.runs
    if fragments and taken is None:
        taken = _RecentIds(FRAGMENT_MEMORY)
    walk = Walk(branch, taken=taken if fragments else None)
    taken = walk.taken
    wanted: str | None = None
    hint: str | None = None
    started = False
    run_start = -1  # first line (in file order) of the run being built, or -1
    run_end = -1
    met_leaf = False
    for offset, line in reader.backward(handle):
        node = read_node(offset, line, reader.tail_offset)
        if type(node) is Node:
            if not started:
                started, wanted = True, hint or node.id
                walk.leaf = wanted
            if node.id == wanted:
                if not met_leaf:
                    met_leaf, walk.leaf_parent = True, node.parent
                wanted = node.parent
                if taken is not None:
                    taken.add(node.id)
            elif taken is None or not taken.holds(node.id):
                reader.diagnostics.off_branch_records += 1
                node = None
        elif isinstance(node, LeafHint):
            if not started and hint is None:
                hint = node.id
            node = None
        # lines walk backwards: a branch line right before the run extends it
        if node is not None:
            if run_start < 0:
                run_end = offset
            run_start = offset
        elif run_start >= 0:
            runs.append(run_start + base)
            runs.append(run_end + base)
            run_start = -1
    if run_start >= 0:
        runs.append(run_start + base)
        runs.append(run_end + base)
    walk.wanted, walk.started, walk.hint, walk.met_leaf = wanted, started, hint, met_leaf
    return walk


def branch_lines(
    path: Path,
    diag: Diagnostics,
    branch: Branch,
    *,
    always: Callable[[int, bytes], bool] | None = None,
    stream: BinaryIO | None = None,
    base: int = 0,
) -> Iterator[tuple[int, bytes, int]]:
    """Pass 2: (offset, line, tail_offset) of the branch's records in file order (every
    line when the tree was broken; the reader of each line skips what is not a record).
    `always` picks lines outside the tree that are wanted too (pi's session header).
    With `stream` (the file from offset `base` on), the lines of that window only."""
    reader = LineReader(path, diag)
    if branch.broken:
        for offset, line in reader.forward(stream):
            tail = reader.tail_offset
            yield offset + base, line, (tail + base if tail >= 0 else -1)
        return
    runs = branch.runs
    index = len(runs) - 2  # runs are newest first: walk them from the end
    start, end = (runs[index], runs[index + 1]) if index >= 0 else (-1, -1)
    if index < 0 and always is None:
        return
    for offset, line in reader.forward(stream):
        if base:
            offset += base
        while offset > end:  # past this run: the next one (or only `always` lines remain)
            index -= 2
            if index < 0:
                if always is None:
                    return
                start = end = 1 << 62
            else:
                start, end = runs[index], runs[index + 1]
        if offset >= start or (always is not None and always(offset, line)):
            tail = reader.tail_offset  # -1 but on a last line without its newline
            yield offset, line, (tail + base if base and tail >= 0 else tail)


# -- incremental export (passdown._checkpoint) ------------------------------------------
# A checkpoint of a tree session keeps the active leaf (and its parent) next to the
# reader's own state. Appended records are fed to the restored reader only when the
# new active branch is the old one plus records of the appended part: walking the
# appended part backwards from its leaf must arrive at the old leaf. Anything else (a
# rewind to an older node, a parent the window does not hold, a leaf hint naming
# another record) falls back to a full read, which gives the same handoff.


class BranchDecoder(Protocol):
    """Pass 2 of one agent: its records' events, resumable between two lines."""

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        """The events of these branch lines (no flush at their end)."""

    def finish(self) -> Iterator[Event]:
        """The events due at the end of the file (buffered text, side files)."""

    def state(self) -> object:
        """What the decoder remembers between lines, as plain data."""


@dataclass(frozen=True, slots=True)
class TreeFormat:
    """How one agent's tree session is read: pass 1's view of a line, pass 2's decoder
    (continuing from a saved state, or None), and the pass options."""

    node_view: Callable[[SessionInfo, Diagnostics], NodeReader]
    decoder: Callable[[SessionInfo, Diagnostics, object | None, dict[str, ToolCall]], BranchDecoder]
    fragments: bool = False
    always: Callable[[int, bytes], bool] | None = None


def read_tree(fmt: TreeFormat, path: Path, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
    """A full read: pass 1 finds the active branch, pass 2 decodes its lines."""
    branch = find_active_branch(path, diag, fmt.node_view(info, diag), fragments=fmt.fragments)
    diag.lines = 0  # pass 2 counts again; report lines once
    decoder = fmt.decoder(info, diag, None, {})
    yield from decoder.feed(branch_lines(path, diag, branch, always=fmt.always))
    yield from decoder.finish()


class TreeResumable:
    """The `ResumableReader` of a tree session. `begin` (called once, before the
    windows) walks the new bytes and says whether the saved state can go on; the two
    windows (complete lines, then a last line without its newline) are then decoded
    along the branch found."""

    def __init__(
        self,
        fmt: TreeFormat,
        info: SessionInfo,
        diag: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
    ) -> None:
        if state is not None and not isinstance(state, dict):
            raise ValueError("not a tree reader state")
        self.fmt = fmt
        self.info = info
        self.diag = diag
        self.path = info.path
        self.resuming = state is not None
        self.leaf: str | None = None
        self.leaf_parent: str | None = None
        if state is not None:
            leaf, parent = state.get("leaf"), state.get("leaf_parent")
            if not isinstance(leaf, str | None) or not isinstance(parent, str | None):
                raise ValueError("bad leaf in a tree reader state")
            self.leaf, self.leaf_parent = leaf, parent
        self.decoder = fmt.decoder(info, diag, state.get("decoder") if state else None, pending)
        self.windows: list[tuple[int, Branch]] = []
        self.later: tuple[Diagnostics, str | None] | None = None
        self.checkpointable = True
        self.later_half: tuple[int, _Forked] | None = None  # pass 1's second half, forked
        self.walk_report: dict[str, Any] = {}  # what the two-core walk did (stats, tests)

    def begin(self, fd: int, start: int, end: int, size: int) -> bool:
        """Plan the windows [start, end) and [end, size). False: the saved state cannot
        follow the appended records (read the file afresh)."""
        if self.resuming:
            first = self._follow(fd, start, end, self.leaf, self.leaf_parent)
            if first is None:
                return False
            second = self._follow(fd, end, size, first[1], first[2], later=True)
            if second is None:
                return False
            self.windows = [(start, first[0]), (end, second[0])]
            self.leaf, self.leaf_parent = first[1], first[2]
            return True
        walk = self._first_walk(fd, end)
        if walk.wanted is None:  # a whole branch: a checkpoint can hold its leaf
            second = self._follow(fd, end, size, walk.leaf, walk.leaf_parent, later=True)
            if second is not None:
                self.windows = [(0, walk.branch), (end, second[0])]
                self.leaf, self.leaf_parent = walk.leaf, walk.leaf_parent
                return True
        # the last line changes the branch, or the tree is broken: one walk over the
        # whole file, as a full read does, and no checkpoint
        self.checkpointable = False
        self.later = None
        _reset(self.diag)
        self.info.title = None
        whole = self._walk(fd, 0, size)
        if whole.wanted is not None:
            mark_broken(whole.branch, self.diag)
        self.windows = [(0, whole.branch), (end, whole.branch)]
        return True

    def _walk(self, fd: int, lo: int, hi: int, *, later: bool = False) -> Walk:
        """Pass 1 over [lo, hi). With `later` (the last line, read after the checkpoint
        is saved), what it notes goes into the session's facts only then."""
        info, diag = self.info, self.diag
        if later:
            info, diag = copy.copy(info), Diagnostics()
        # pass 1 keeps the first title it meets walking back, the newest: one from this
        # window wins over the one saved
        saved_title, info.title = info.title, None
        walk = walk_branch(
            LineReader(self.path, diag),
            self.fmt.node_view(info, diag),
            fragments=self.fmt.fragments,
            handle=cast(BinaryIO, _FdView(fd, lo, hi)),
            base=lo,
        )
        if later:
            self.later = (diag, info.title)
        elif info.title is None:
            info.title = saved_title
        return walk

    # -- pass 1 on two cores (passdown._two_core.split_first_walk) ----------------------
    def walk_in_two(
        self, fd: int, end: int, fork: Callable[[Callable[[], bytes]], _Forked | None]
    ) -> None:
        """Have a forked worker walk the second half of [0, end) now; `begin` walks the
        first half and joins the two (not for a reader that continues a checkpoint)."""
        if self.resuming:
            return
        middle = self.walk_middle(fd, end)
        if not 0 < middle < end:
            return
        forked = fork(lambda: _HALF_WALK_ENCODER.encode(self._walk_alone(fd, middle, end)))
        if forked is not None:
            self.later_half = (middle, forked)

    def walk_middle(self, fd: int, end: int) -> int:
        """Where the worker's half begins: the first line start after the middle."""
        return _line_end(fd, end // 2)

    def _walk_alone(self, fd: int, lo: int, hi: int) -> _HalfWalk:
        """Pass 1 over [lo, hi) as if nothing came after it, with what it noted (and, for
        fragments, the ids it took or, as the first half, the ids it asked about)."""
        info, diag = copy.copy(self.info), Diagnostics()
        info.title = None
        fragments = self.fmt.fragments
        watched = _WatchedIds(FRAGMENT_MEMORY) if fragments and lo == 0 else None
        walk = walk_branch(
            LineReader(self.path, diag),
            self.fmt.node_view(info, diag),
            fragments=fragments,
            handle=cast(BinaryIO, _FdView(fd, lo, hi)),
            base=lo,
            taken=watched,
        )
        taken = list(walk.taken.order) if walk.taken is not None else []
        return _HalfWalk(
            taken=taken,
            asked=list(watched.asked) if watched is not None else [],
            overflow=watched is not None and watched.overflow,
            runs=walk.branch.runs.tobytes(),
            leaf=walk.leaf,
            leaf_parent=walk.leaf_parent,
            wanted=walk.wanted,
            started=walk.started,
            hint=walk.hint,
            met_leaf=walk.met_leaf,
            diagnostics=diag,
            title=info.title,
        )

    def _first_walk(self, fd: int, end: int) -> Walk:
        """Pass 1 over [0, end): on two cores when a worker walks the second half."""
        if self.later_half is None:
            return self._walk(fd, 0, end)
        middle, forked = self.later_half
        self.later_half = None
        try:
            first = self._walk_alone(fd, 0, middle)
            received = forked.result()
        finally:
            forked.cancel()
        try:
            later = _HALF_WALK_DECODER.decode(received)
        except (msgspec.DecodeError, msgspec.ValidationError):
            later = None  # the worker failed: walk it all here
        joined = _join_walks(later, first, fd, middle) if later is not None else None
        self.walk_report = {"walk_middle": middle, "walk_joined": joined is not None}
        if joined is None:  # the halves do not join exactly: one walk, as on one core
            return self._walk(fd, 0, end)
        assert later is not None
        # what a single walk notes, in its order: the later half first
        _merge(self.diag, later.diagnostics)
        _merge(self.diag, first.diagnostics)
        title = later.title or first.title
        if title is not None:
            self.info.title = title  # walking back, the first title met is the newest
        return joined

    def _follow(
        self,
        fd: int,
        lo: int,
        hi: int,
        leaf: str | None,
        leaf_parent: str | None,
        *,
        later: bool = False,
    ) -> tuple[Branch, str | None, str | None] | None:
        """The branch runs of [lo, hi) and the new leaf, when that window's branch goes
        on from `leaf`; None when it does not."""
        if hi <= lo:
            return Branch(), leaf, leaf_parent
        walk = self._walk(fd, lo, hi, later=later)
        if not walk.started:  # no tree record: a leaf hint may only name the leaf
            return None if walk.hint not in (None, leaf) else (walk.branch, leaf, leaf_parent)
        # a record written again under the leaf's id (Qwen's fragments) continues it
        fragment = (
            walk.taken is not None
            and leaf is not None
            and walk.wanted == leaf_parent
            and leaf in walk.taken.ids
        )
        if walk.wanted != leaf and not fragment:
            return None
        if not walk.met_leaf:  # the hint named the old leaf: the window's records are dead
            return walk.branch, leaf, leaf_parent
        return walk.branch, walk.leaf, walk.leaf_parent

    def events(self, stream: BinaryIO) -> Iterator[Event]:
        base, branch = self.windows.pop(0)
        if not self.windows and self.later is not None:  # the checkpoint is saved by now
            diag, title = self.later
            _merge(self.diag, diag)
            self.info.title = title or self.info.title
            self.later = None
        lines = branch_lines(
            self.path, self.diag, branch, always=self.fmt.always, stream=stream, base=base
        )
        yield from self.decoder.feed(lines)

    def close(self) -> Iterator[Event]:
        return self.decoder.finish()

    # -- a two-core read (passdown._two_core) -------------------------------------------
    def first_branch(self) -> Branch | None:
        """The branch of the complete lines read from the file's start (None when this
        reader continues a checkpoint or has not planned its windows)."""
        if self.resuming or not self.windows or self.windows[0][0] != 0:
            return None
        return self.windows[0][1]

    def split_first_window(self, cut: int) -> None:
        """The complete lines are read as two windows, [0, cut) and [cut, end): the
        second by a worker (then `skip_window` drops it) or, if its result is refused,
        by this reader after the first."""
        self.windows.insert(1, (cut, self.windows[0][1]))

    def skip_window(self) -> None:
        self.windows.pop(0)

    def state(self) -> object:
        if not self.checkpointable:
            return None
        return {"leaf": self.leaf, "leaf_parent": self.leaf_parent, "decoder": self.decoder.state()}


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


class _FdView:
    """Bytes [lo, hi) of a file descriptor as a seekable stream (positional reads)."""

    def __init__(self, fd: int, lo: int, hi: int) -> None:
        self.fd = fd
        self.lo = lo
        self.size = hi - lo
        self.pos = 0

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.pos = self.size + offset if whence == os.SEEK_END else offset
        return self.pos

    def read(self, size: int = -1) -> bytes:
        left = self.size - self.pos
        if 0 <= size < left:
            left = size
        if left <= 0:
            return b""
        data = _platform.pread(self.fd, left, self.lo + self.pos)
        self.pos += len(data)
        return data


def _reset(diag: Diagnostics) -> None:
    fresh = Diagnostics()
    for item in dataclasses.fields(Diagnostics):
        setattr(diag, item.name, getattr(fresh, item.name))


def _merge(diag: Diagnostics, later: Diagnostics) -> None:
    """Add what a later walk noted to the session's diagnostics."""
    diag.lines += later.lines
    diag.bad_lines += later.bad_lines
    diag.torn_last_line = diag.torn_last_line or later.torn_last_line
    diag.oversized_lines += later.oversized_lines
    for kind, count in later.unknown_types.items():
        diag.unknown_types[kind] = diag.unknown_types.get(kind, 0) + count
    diag.off_branch_records += later.off_branch_records
    diag.sidechain_records += later.sidechain_records
    diag.warnings.extend(later.warnings)


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


def calls_state(calls: dict[str, ToolCall]) -> list[object]:
    """Tool calls still waiting for their result, as plain data."""
    return [msgspec.to_builtins(call) for call in calls.values()]


def restore_calls(saved: object, pending: dict[str, ToolCall]) -> dict[str, ToolCall]:
    """The saved waiting calls; the extractor's own objects where it holds them (a
    result that completes a call completes the one extraction waits on)."""
    calls = msgspec.convert(saved or [], list[ToolCall])
    return {call.call_id: pending.get(call.call_id, call) for call in calls}


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
