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

from array import array
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from passdown.jsonl import LineReader
from passdown.transcript import Diagnostics


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


def find_active_branch(
    path: Path, diag: Diagnostics, read_node: NodeReader, *, fragments: bool = False
) -> Branch:
    """Pass 1. With `fragments`, a record written in several pieces under one id (Qwen)
    keeps every piece, not just the last."""
    reader = LineReader(path, diag)
    branch = Branch()
    runs = branch.runs
    taken = _RecentIds(FRAGMENT_MEMORY) if fragments else None
    wanted: str | None = None
    hint: str | None = None
    started = False
    run_start = -1  # first line (in file order) of the run being built, or -1
    run_end = -1
    for offset, line in reader.backward():
        node = read_node(offset, line, reader.tail_offset)
        if type(node) is Node:
            if not started:
                started, wanted = True, hint or node.id
            if node.id == wanted:
                wanted = node.parent
                if taken is not None:
                    taken.add(node.id)
            elif taken is None or node.id not in taken.ids:
                diag.off_branch_records += 1
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
            runs.append(run_start)
            runs.append(run_end)
            run_start = -1
    if run_start >= 0:
        runs.append(run_start)
        runs.append(run_end)
    if wanted is not None:
        branch.broken = True
        diag.warnings.append(
            "the conversation tree is broken (a parent record is missing); read in file order"
        )
    return branch


def branch_lines(
    path: Path,
    diag: Diagnostics,
    branch: Branch,
    *,
    always: Callable[[int, bytes], bool] | None = None,
) -> Iterator[tuple[int, bytes, int]]:
    """Pass 2: (offset, line, tail_offset) of the branch's records in file order (every
    line when the tree was broken; the reader of each line skips what is not a record).
    `always` picks lines outside the tree that are wanted too (pi's session header)."""
    reader = LineReader(path, diag)
    if branch.broken:
        for offset, line in reader.forward():
            yield offset, line, reader.tail_offset
        return
    runs = branch.runs
    index = len(runs) - 2  # runs are newest first: walk them from the end
    start, end = (runs[index], runs[index + 1]) if index >= 0 else (-1, -1)
    for offset, line in reader.forward():
        if offset > end:  # past this run: the next one (or only `always` lines remain)
            index -= 2
            if index < 0:
                if always is None:
                    break
                start = end = 1 << 62
            else:
                start, end = runs[index], runs[index + 1]
        if offset >= start or (always is not None and always(offset, line)):
            yield offset, line, reader.tail_offset
