"""The active branch of a session stored as a tree of parent-linked records (Claude Code,
Qwen Code, pi).

Rewinds and forks leave dead branches in the file, so file order is not conversation
order. Parents are always written before their children, which makes two streaming
passes enough, in memory that does not grow with the file: pass 1 walks the file
backwards from the newest leaf following parent links and keeps only the runs of
consecutive lines that make up the branch (a few per rewind or sub-agent, not one per
record); pass 2 reads forwards and hands over just those lines.

One forward pass cannot do this in general in flat memory: whether a record is on the
active branch is known only once the leaf is, at the end of the file, and events handed
to extraction cannot be taken back. A session that was never rewound is the exception:
its branch is every record, which `passdown.agents._tree_forward` checks as it reads.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable

import msgspec

from passdown._jsonl import LineReader
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

if TYPE_CHECKING:
    from passdown.agents._tree_forward import StraightLine


class Node(msgspec.Struct):
    """One record's place in the tree, as an agent module reads it in pass 1."""

    id: str
    parent: str | None


class LeafHint(msgspec.Struct):
    """A record naming the newest leaf (Claude's `last-prompt.leafUuid`); it counts only
    when it comes after every tree record in the file."""

    id: str | None


# (offset, line, tail_offset) -> a Node, a LeafHint, or None for a line outside the tree
NodeReader = Callable[[int, bytes, int], "Node | LeafHint | None"]


class Branch(msgspec.Struct):
    """The active branch as runs of consecutive lines: flat pairs (offset of a run's first
    line, offset of its last line), newest run first. A session without rewinds is a few
    runs split only by the lines outside the tree, so this stays small however long the
    session is (one offset per record grew by 10 MB per GB)."""

    runs: array[int] = msgspec.field(default_factory=lambda: array("q"))
    broken: bool = False  # a parent is missing: read every tree record in file order

    def record_count(self) -> int:
        return len(self.runs) // 2


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


class Walk(msgspec.Struct):
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


# -- how an agent reads its tree (its decoder resumes for `_tree_resume`) ---------------


class BranchDecoder(Protocol):
    """Pass 2 of one agent: its records' events, resumable between two lines."""

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        """The events of these branch lines (no flush at their end)."""

    def finish(self) -> Iterator[Event]:
        """The events due at the end of the file (buffered text, side files)."""

    def state(self) -> object:
        """What the decoder remembers between lines, as plain data."""


@runtime_checkable
class StraightDecoder(BranchDecoder, Protocol):
    """A decoder that can also read every line of a session in one forward pass
    (`passdown.agents._tree_forward`): the lines outside the tree as pass 1 reads them,
    each tree record checked against `straight` (`BranchLeft` when it is off the line)
    and decoded."""

    def feed_straight(
        self, lines: Iterable[tuple[int, bytes]], straight: StraightLine, tail: Callable[[], int]
    ) -> Iterator[Event]:
        """(offset, line) pairs of the file in order; `tail()`: the offset of a last line
        without its newline (-1: none so far)."""


class TreeFormat(msgspec.Struct, frozen=True):
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


def calls_state(calls: dict[str, ToolCall]) -> list[object]:
    """Tool calls still waiting for their result, as plain data."""
    return [msgspec.to_builtins(call) for call in calls.values()]


def restore_calls(saved: object, pending: dict[str, ToolCall]) -> dict[str, ToolCall]:
    """The saved waiting calls; the extractor's own objects where it holds them (a
    result that completes a call completes the one extraction waits on)."""
    calls = msgspec.convert(saved or [], list[ToolCall])
    return {call.call_id: pending.get(call.call_id, call) for call in calls}
