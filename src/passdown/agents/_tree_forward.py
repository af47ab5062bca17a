"""One forward pass for a tree session without rewinds (Claude Code).

Pass 1 (`passdown.agents._tree`) walks the whole file backwards only to learn which
records are on the active branch. In a session that was never rewound or forked, every
tree record's parent is the tree record just before it and the newest record is the
leaf: the branch is every tree record, in file order. The forward pass decodes each line
once, hands over its events as it goes, and checks that straight line on the way
(`StraightLine`). The first record off it (a rewind, a fork, a parent the file does not
hold, a duplicate id, a leaf hint naming an older record, a tree record it cannot decode
the way pass 2 would) raises `BranchLeft`: events handed over cannot be taken back, so
the caller reads the session again with pass 1 (`passdown._checkpoint`), which gives the
same handoff. A session with a rewind thus pays the forward pass up to the rewind on
top of the two passes; one without pays a single pass.

Only for a first read (a checkpoint's continuation walks just the appended bytes, already
small).
"""

from __future__ import annotations

from passdown.agents.base import CannotResume


class BranchLeft(CannotResume):
    """The forward pass met a record off its straight line: the session needs pass 1.
    (A caller that only knows `CannotResume` reads the file anew: the same handoff.)"""


class StraightLine:
    """The forward pass's check: each tree record's parent is the tree record before it
    (the first one's is none), and a leaf hint after the last tree record names it."""

    __slots__ = ("hint", "last", "last_parent")

    def __init__(self) -> None:
        self.last: str | None = None  # the newest tree record: the leaf so far
        self.last_parent: str | None = None
        self.hint: str | None = None  # the newest leaf hint since that record

    def take(self, record_id: str, parent: str | None) -> None:
        """A tree record: on the line, or `BranchLeft`."""
        if parent != self.last:
            raise BranchLeft(f"record {record_id} does not continue {self.last}")
        self.last_parent, self.last, self.hint = parent, record_id, None

    def note_hint(self, leaf: str | None) -> None:
        """A leaf hint (pass 1 takes the newest one naming a record, if no tree record
        comes after it)."""
        if leaf is not None:
            self.hint = leaf

    def check_leaf(self) -> None:
        """At the end of the lines read so far: the leaf is the newest tree record."""
        if self.hint is not None and self.hint != self.last:
            raise BranchLeft(f"a leaf hint names {self.hint}, not the newest record")
