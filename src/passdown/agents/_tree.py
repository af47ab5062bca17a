"""The active branch of a session stored as a tree of parent-linked records (Claude Code,
Qwen Code, pi).

Rewinds and forks leave dead branches in the file, so file order is not conversation
order. Parents are always written before their children, which makes two streaming
passes enough, in memory that does not grow with the file: pass 1 walks the file
backwards from the newest leaf following parent links and keeps only the byte offsets of
the branch; pass 2 reads forwards and hands over just those lines.
"""

from __future__ import annotations

from array import array
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
    offsets: array = field(default_factory=lambda: array("q"))  # descending
    broken: bool = False  # a parent is missing: read every tree record in file order


def find_active_branch(
    path: Path, diag: Diagnostics, read_node: NodeReader, *, fragments: bool = False
) -> Branch:
    """Pass 1. With `fragments`, a record written in several pieces under one id (Qwen)
    keeps every piece, not just the last."""
    reader = LineReader(path, diag)
    branch = Branch()
    taken: set[str] = set()
    wanted: str | None = None
    hint: str | None = None
    started = False
    for offset, line in reader.backward():
        node = read_node(offset, line, reader.tail_offset)
        if isinstance(node, LeafHint):
            if not started and hint is None:
                hint = node.id
            continue
        if node is None:
            continue
        if not started:
            started, wanted = True, hint or node.id
        if node.id == wanted:
            branch.offsets.append(offset)
            wanted = node.parent
            if fragments:
                taken.add(node.id)
        elif fragments and node.id in taken:
            branch.offsets.append(offset)
        else:
            diag.off_branch_records += 1
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
    offsets = branch.offsets
    index = len(offsets) - 1
    for offset, line in reader.forward():
        if always is not None and always(offset, line):
            yield offset, line, reader.tail_offset
            continue
        if not branch.broken:
            if index < 0:
                break
            if offset != offsets[index]:
                continue
            index -= 1
        yield offset, line, reader.tail_offset
