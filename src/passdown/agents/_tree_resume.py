"""A tree session's incremental export (`passdown._checkpoint`): `TreeResumable`.

A checkpoint of a tree session keeps the active leaf (and its parent) next to the
reader's own state. Appended records are fed to the restored reader only when the
new active branch is the old one plus records of the appended part: walking the
appended part backwards from its leaf must arrive at the old leaf. Anything else (a
rewind to an older node, a parent the window does not hold, a leaf hint naming
another record) falls back to a full read, which gives the same handoff.

A first read of an agent whose decoder can (Claude Code) skips pass 1: it reads the file
in one forward pass (`passdown.agents._tree_forward`), and its caller reads it again
with pass 1 if the session turns out not to be a straight line.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from itertools import chain
from typing import BinaryIO, cast

from passdown import _platform
from passdown._jsonl import LineReader
from passdown.agents import _tree_forward
from passdown.agents._tree import (
    Branch,
    StraightDecoder,
    TreeFormat,
    Walk,
    branch_lines,
    mark_broken,
    read_tree,
    walk_branch,
)
from passdown.agents.base import Agent
from passdown.transcript import (
    Diagnostics,
    Event,
    Plan,
    SessionInfo,
    SessionRef,
    ToolCall,
    Transcript,
)


class TreeSessionAgent(Agent):
    """An agent whose session is one append-only file of parent-linked records, read in
    full (`passdown.agents._tree.read_tree`) or, through a checkpoint, from where the
    last export stopped (`TreeResumable`)."""

    supports_checkpoint = True

    def tree_format(self) -> TreeFormat:
        """How this agent's records are read in each pass."""
        raise NotImplementedError

    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(
            ref, lambda info, diag: read_tree(self.tree_format(), ref.path, info, diag)
        )

    def resumable_reader(
        self,
        info: SessionInfo,
        diagnostics: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
    ) -> TreeResumable:
        return TreeResumable(self.tree_format(), info, diagnostics, state, pending)


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
        # a first read may take the forward pass (the caller sets False to read again)
        self.forward = True
        self.straight: _tree_forward.StraightLine | None = None  # ... when it does

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
        if self._straight_ahead():
            self.straight = _tree_forward.StraightLine()
            every_line = Branch(broken=True)
            self.windows = [(0, every_line), (end, every_line)]
            return True
        walk = self._walk(fd, 0, end)
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

    def walks_first(self) -> bool:
        """Whether `begin` walks the bytes before they are read (pass 1), not reading
        them in the forward pass (`passdown._checkpoint` hashes them meanwhile)."""
        return self.resuming or not self._straight_ahead()

    def _straight_ahead(self) -> bool:
        """Whether this first read takes the forward pass: its decoder can."""
        return (
            self.forward
            and isinstance(self.decoder, StraightDecoder)
            and self.fmt.always is None
            and not self.fmt.fragments
        )

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
        """The next window's events (its lines from `stream`); the window is taken when
        this is called, its lines read as the events are."""
        base, branch = self.windows.pop(0)
        if not self.windows and self.later is not None:  # the checkpoint is saved by now
            diag, title = self.later
            self.diag.add(diag)
            self.info.title = title or self.info.title
            self.later = None
        straight = self.straight
        if straight is None:
            lines = branch_lines(
                self.path, self.diag, branch, always=self.fmt.always, stream=stream, base=base
            )
            return self.decoder.feed(lines)
        # every line, straight from the line reader to the decoder: no generator of this
        # reader's own in between (one step less per event)
        reader = LineReader(self.path, self.diag)
        pairs = reader.forward(stream)

        def tail() -> int:
            return reader.tail_offset + base if reader.tail_offset >= 0 else -1

        if base:
            pairs = ((offset + base, line) for offset, line in pairs)
        events = cast(StraightDecoder, self.decoder).feed_straight(pairs, straight, tail)
        return chain(events, self._ended_straight())

    def _ended_straight(self) -> Iterator[Event]:
        self.end_straight()
        yield from ()

    def end_straight(self) -> None:
        """The complete lines read on the straight line: its leaf checked (before the
        checkpoint is saved) and kept."""
        straight = self.straight
        assert straight is not None
        straight.check_leaf()
        self.leaf, self.leaf_parent = straight.last, straight.last_parent

    def close(self) -> Iterator[Event]:
        return self.decoder.finish()

    def share_plan(self, plan: Plan) -> None:
        """A one-core read: the decoder may read extraction's plan replay instead of
        replaying the plan calls again (Claude: `PlanReplay.share`)."""
        share = getattr(self.decoder, "share_plan", None)
        if share is not None:
            share(plan)

    def state(self) -> object:
        if not self.checkpointable:
            return None
        return {"leaf": self.leaf, "leaf_parent": self.leaf_parent, "decoder": self.decoder.state()}


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
    for name in Diagnostics.__struct_fields__:
        setattr(diag, name, getattr(fresh, name))
