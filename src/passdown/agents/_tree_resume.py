"""A tree session's incremental export (`passdown._checkpoint`): `TreeResumable`.

A checkpoint of a tree session keeps the active leaf (and its parent) next to the
reader's own state. Appended records are fed to the restored reader only when the
new active branch is the old one plus records of the appended part: walking the
appended part backwards from its leaf must arrive at the old leaf. Anything else (a
rewind to an older node, a parent the window does not hold, a leaf hint naming
another record) falls back to a full read, which gives the same handoff.

A first read of an agent whose decoder can (Claude Code) skips pass 1: it reads the file
in one forward pass (`passdown.agents._tree_forward`; on two cores, its second part on a
forked worker), and its caller reads it again with pass 1 if the session turns out not
to be a straight line.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

import msgspec

from passdown import _platform
from passdown._jsonl import LineReader
from passdown.agents import _tree_forward
from passdown.agents._tree import (
    FRAGMENT_MEMORY,
    Branch,
    StraightDecoder,
    TreeFormat,
    Walk,
    branch_lines,
    mark_broken,
    walk_branch,
)
from passdown.agents._tree_halves import (
    _HALF_WALK_DECODER,
    _HALF_WALK_ENCODER,
    _Forked,
    _HalfWalk,
    _join_walks,
    _line_end,
    _WatchedIds,
)
from passdown.transcript import Diagnostics, Event, Plan, SessionInfo, ToolCall


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
        # a first read may take the forward pass (the caller sets False to read again)
        self.forward = True
        self.straight: _tree_forward.StraightLine | None = None  # ... when it does
        self.cut: int | None = None  # where a two-core read's worker starts

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

    def walks_first(self) -> bool:
        """Whether `begin` walks the bytes before they are read (pass 1), not reading
        them in the forward pass (`passdown._checkpoint` hashes them meanwhile)."""
        return self.resuming or not self._straight_ahead()

    def _straight_ahead(self) -> bool:
        """Whether this first read takes the forward pass: its decoder can, and pass 1
        is not walked on two cores (then pass 2 is split along its branch)."""
        return (
            self.forward
            and self.later_half is None
            and isinstance(self.decoder, StraightDecoder)
            and self.fmt.always is None
            and not self.fmt.fragments
            and _tree_forward.enabled()
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

    # -- pass 1 on two cores (passdown._two_core.split_first_walk) ----------------------
    def walk_in_two(
        self, fd: int, end: int, fork: Callable[[Callable[[], bytes]], _Forked | None]
    ) -> None:
        """Have a forked worker walk the second half of [0, end) now; `begin` walks the
        first half and joins the two (not for a reader that continues a checkpoint)."""
        if self.resuming or self._straight_ahead():
            return  # the forward pass is split instead (`passdown._two_core.start`)
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
        self.diag.add(later.diagnostics)
        self.diag.add(first.diagnostics)
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
            self.diag.add(diag)
            self.info.title = title or self.info.title
            self.later = None
        straight = self.straight
        if straight is None:
            lines = branch_lines(
                self.path, self.diag, branch, always=self.fmt.always, stream=stream, base=base
            )
            yield from self.decoder.feed(lines)
            return
        # every line, straight from the line reader (one generator less per line)
        reader = LineReader(self.path, self.diag)
        pairs = reader.forward(stream)

        def tail() -> int:
            return reader.tail_offset + base if reader.tail_offset >= 0 else -1

        if base:
            pairs = ((offset + base, line) for offset, line in pairs)
        yield from cast(StraightDecoder, self.decoder).feed_straight(pairs, straight, tail)
        if base == 0 and self.windows and self.windows[0][0] == self.cut:
            return  # the lines after the cut go on the line (the worker's, or read here)
        self.end_straight()

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

    # -- a two-core read (passdown._two_core) -------------------------------------------
    def first_branch(self) -> Branch | None:
        """The branch of the complete lines read from the file's start (None when this
        reader continues a checkpoint or has not planned its windows)."""
        if self.resuming or not self.windows or self.windows[0][0] != 0:
            return None
        return self.windows[0][1]  # the forward pass's: every line

    def split_first_window(self, cut: int) -> None:
        """The complete lines are read as two windows, [0, cut) and [cut, end): the
        second by a worker (then `skip_window` drops it) or, if its result is refused,
        by this reader after the first."""
        self.windows.insert(1, (cut, self.windows[0][1]))
        self.cut = cut

    def skip_window(self) -> None:
        self.windows.pop(0)

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
    for item in dataclasses.fields(Diagnostics):
        setattr(diag, item.name, getattr(fresh, item.name))
