"""The extraction of a two-core read's second half (`passdown._two_core`), and its merge.

Extraction is order-dependent, so the worker cannot just extract its half. It runs a
real extractor over its half from an empty state (`_HalfExtractor`) and sends back that
state plus the few facts the empty start hides (`Partial`): which plan operations come
after the half's last full replacement, and which passing runs and appended failures
could act on failures still open before the cut. `merge` applies a `Partial` on top of
the first half's extractor; the result is the extractor a single pass would have
(`tests/test_two_core.py` checks it state for state). What a merge cannot make exact
(`over_what_extraction_keeps`, `plan_unmergeable`, `conflicting_ids`) the main process
refuses, and reads that half itself.
"""

from __future__ import annotations

import functools
import struct
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import cast

import msgspec

from passdown._extract import OPEN_FAILURES, PENDING_KEEP, _Extractor, _OpenFailure
from passdown._extract_state import ExtractorState, extractor_state, restore_extractor
from passdown._plan_steps import PlanStep, PlanSteps, over_what_a_replay_keeps, steps_of
from passdown._portable_transcript import Budget
from passdown._test_runs import Run
from passdown.handoff import FILES_KEEP
from passdown.transcript import Event, Message, PlanOp, SessionEnding, ToolCall, ToolResult

_PASS_TEXTS = 4096  # distinct passing commands remembered to drop repeats (bounded)
_HASH = struct.Struct("=q")  # a call id's hash as `_IdFilter` packs it
_UNTOUCHED = SessionEnding(reason="normal", message="(untouched)")


class Partial(msgspec.Struct, omit_defaults=True):
    """A second half's extraction, mergeable onto any first half (`merge`)."""

    state: ExtractorState  # the half's extractor, started empty
    kept_messages: list[Message] = []  # what a prefix needs fed: first/latest + the ring
    plan_creates_before: int = 0  # plan items created before the first kept plan step
    # the plan changes (`Packed`), reduced (`passdown._plan_steps`), but those before a
    # full replacement that created no item: a tree reader replays the same changes onto
    # its own plan (`Splitter`), and for it a created id the plan before the cut holds
    # renames the older item
    plan_steps: bytes = b""
    plan_keys: int = 0  # how many items the steps can add to a plan
    plan_overflow: bool = False  # too many steps kept: not mergeable
    # ints: a failure was appended while the half had that many open; strings: a passing
    # run (first of its text) that may close failures still open from before the cut
    failure_ops: list[int | str] = []
    ending_touched: bool = False  # the half answered, called a tool or hit an error

    def steps(self) -> Iterator[PlanStep]:
        return steps_of(self.plan_steps)


@dataclass
class _HalfExtractor(_Extractor):
    """An extractor over a second half, started empty, that also records what a
    prefix it cannot see would need (see `Partial`)."""

    plan_steps: PlanSteps = field(default_factory=PlanSteps)
    plan_creates_before: int = 0
    failure_ops: list[int | str] = field(default_factory=list)
    passes_seen: dict[str, None] = field(default_factory=dict)
    prefix_failures_gone: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.ending = _UNTOUCHED

    def _plan(self, op: PlanOp, *, source: str, created_id: str | None = None) -> None:
        if op.op == "replace" and not self.plan_steps.created:
            # everything before it is overwritten; only the count stays
            self.plan_steps.clear()
            self.plan_creates_before = self.plan_counter
        self.plan_steps.add(op, source, created_id)
        super()._plan(op, source=source, created_id=created_id)

    def _command(self, call: ToolCall, result: ToolResult | None) -> None:
        latest, open_before = self.latest_failure, len(self.open_failures)
        super()._command(call, result)
        if self.prefix_failures_gone or result is None:
            return
        if self.latest_failure is not latest:  # a failure was appended
            self.failure_ops.append(open_before)
            # the deque holds 16: once 16 of this half's failures are open, none from
            # before the cut can be left, and nothing here can act on them any more
            self.prefix_failures_gone = len(self.open_failures) >= OPEN_FAILURES
            return
        exit_code = result.exit_code
        if result.is_error or exit_code not in (None, 0):
            return  # a probe's "no": neither a failure nor a pass
        text = (call.command or "").strip()
        if text in self.passes_seen:
            return  # what it closes before the cut, its first run closed already
        if len(self.passes_seen) < _PASS_TEXTS:
            self.passes_seen[text] = None
        self.failure_ops.append(text)

    def partial(self) -> Partial:
        ending_touched = self.ending is not _UNTOUCHED
        if not ending_touched:
            self.ending = None
        recent = list(self.recent)
        kept: list[Message] = []
        if self.first_request is not None and not _holds(recent, self.first_request):
            kept.append(self.first_request)
        for latest, role in ((self.latest_user, "user"), (self.latest_assistant, "assistant")):
            # the ring holds the latest of a role whenever it holds any of that role
            if (
                latest is not None
                and not any(m.role == role for m in recent)
                and not _holds(kept, latest)
            ):
                kept.append(latest)
        kept.extend(recent)
        return Partial(
            state=extractor_state(self),
            kept_messages=kept,
            plan_creates_before=self.plan_creates_before,
            plan_steps=self.plan_steps.packed(),
            plan_keys=self.plan_steps.keys,
            plan_overflow=self.plan_steps.overflow,
            failure_ops=self.failure_ops,
            ending_touched=ending_touched,
        )


def _holds(messages: list[Message], wanted: Message) -> bool:
    return any(m is wanted for m in messages)


def half_extractor(*, workspace: str | None, max_messages: int, max_chars: int) -> _HalfExtractor:
    return _HalfExtractor(workspace=workspace, budget=Budget(max_messages, max_chars))


def reduce_events(
    events: list[Event], *, workspace: str | None, max_messages: int, max_chars: int
) -> Partial:
    """A second half's events as a `Partial` (the worker's extraction, for tests)."""
    half = half_extractor(workspace=workspace, max_messages=max_messages, max_chars=max_chars)
    for event in events:
        half.feed(event)
    return half.partial()


def call_ids(events: list[Event]) -> set[str]:
    return {e.call_id for e in events if isinstance(e, ToolCall | ToolResult)}


def merge(extractor: _Extractor, partial: Partial) -> None:
    """Apply a second half onto the extractor that read the first half, as if it had
    read on. The caller has made sure no tool call id of the half is pending before the
    cut (`conflicting_ids`, `Splitter.conflict`): the two halves' calls and results
    never meet."""
    half = restore_extractor(partial.state)
    # messages: the kept ones through the usual path (the ring, first request, latest),
    # then the count of those the ring had dropped
    for message in partial.kept_messages:
        extractor._message(message)
    extractor.messages_total += half.messages_total - len(partial.kept_messages)
    if partial.ending_touched:
        extractor.ending = half.ending
    extractor.compactions += half.compactions
    if half.compaction_summary:
        extractor.compaction_summary = half.compaction_summary
    extractor.pending.update(half.pending)
    extractor.plan_counter += partial.plan_creates_before
    for step in partial.steps():
        step.onto(extractor.replay, functools.partial(extractor._plan, source=step.source))
    if half.plan_source is not None:  # the last change's, which a reduced step may hide
        extractor.plan_source = half.plan_source
    _merge_files(extractor, half)
    extractor.failed_edits.extend(half.failed_edits)
    extractor.failed_edits_total += half.failed_edits_total
    extractor.commands.extend(half.commands)
    extractor.commands_total += half.commands_total
    extractor.commands_failed += half.commands_failed
    _merge_failures(extractor, half, partial.failure_ops)
    extractor.subagents.extend(half.subagents)
    extractor.subagents_total += half.subagents_total
    extractor.subagent_calls += half.subagent_calls


def _merge_files(extractor: _Extractor, half: _Extractor) -> None:
    """Each path the half touched, in the order it last touched them: a path seen before
    moves to the end, stays confirmed once confirmed, and gains the half's new actions."""
    files = extractor.files
    for rel, touched in half.files.items():
        entry = files.get(rel)
        if entry is None:
            files[rel] = touched
            continue
        files.move_to_end(rel)
        entry.confirmed = entry.confirmed or touched.confirmed
        entry.actions.extend(a for a in touched.actions if a not in entry.actions)
    extractor.files_evicted += half.files_evicted  # 0: see `over_what_extraction_keeps`


def _merge_failures(extractor: _Extractor, half: _Extractor, ops: list[int | str]) -> None:
    """The open failures: those from before the cut, acted on by the half's passing runs
    and pushed out by its appends (the oldest go first), then the half's own, whose fate
    does not depend on what came before (older entries are always evicted first)."""
    before: deque[_OpenFailure] = deque(extractor.open_failures)
    for op in ops:
        if not before:
            break
        if isinstance(op, int):
            if len(before) + op >= OPEN_FAILURES:
                before.popleft()
            continue
        run = Run.of(op)
        closed = [o for o in before if run.covers(o.run)]
        for item in closed:
            item.failure.resolved_later = True
        before = deque(o for o in before if not o.failure.resolved_later)
    extractor.open_failures = deque([*before, *half.open_failures], maxlen=OPEN_FAILURES)
    if half.latest_failure is not None:
        extractor.latest_failure = half.latest_failure


def over_what_extraction_keeps(extractor: _Extractor, half: ExtractorState) -> bool:
    """Whether one pass could have evicted files or waiting calls during the second
    half (`FILES_KEEP`, `PENDING_KEEP`): which ones and their entries depend on the
    order of the two halves' touches, which a merge does not know. Below the caps no
    pass evicts anything and the merge is exact."""
    files = extractor.files
    new_paths = sum(1 for entry in half.files if entry["path"] not in files)
    return (
        half.files_evicted > 0
        or len(files) + new_paths > FILES_KEEP
        or len(extractor.pending) + len(half.pending) >= PENDING_KEEP
    )


def plan_unmergeable(
    extractor: _Extractor, partial: Partial, splitter: object, reader: object
) -> bool:
    """Whether the half's reduced plan changes might not replay as the whole ones would
    (`passdown._plan_steps`): too many kept, or a plan they could push past its cut-back
    size, the extractor's or a tree reader's own (`plan_size`, where a splitter has it)."""
    if partial.plan_overflow:
        return True
    sizes = [len(extractor.plan)]
    plan_size = getattr(splitter, "plan_size", None)
    if plan_size is not None:
        sizes.append(plan_size(reader))
    return any(over_what_a_replay_keeps(size, partial.plan_keys) for size in sizes)


def conflicting_ids(pending: dict[str, ToolCall], seen: _IdFilter) -> bool:
    return any(call_id in seen for call_id in pending)


# which call ids a half used --------------------------------------------------------
class _IdFilter:
    """The tool call ids a half used: the main process asks it about its few pending
    ids. Held as their 64-bit hashes (a forked worker shares the parent's hash seed, 8
    bytes an id, a hash may repeat) while those stay under the size of a fixed Bloom
    filter (1 MiB), then as that filter. The report's filter grows with the half's calls
    (every page the worker writes is one more of its own, and the report is copied
    twice more on its way back): a few thousand calls cost KBs, not 1 MiB. Either form
    may say yes to an id it was not given; that only costs the exact fallback."""

    BITS = 1 << 23  # the Bloom filter: 1 MiB
    MAX_HASHES = (BITS >> 6) - 1  # hashes kept as such: their bytes stay under the filter's

    def __init__(self, data: bytes | None = None) -> None:
        """An empty filter, or one as `payload` sent it (a filter's size tells its form)."""
        self.bits: bytearray | bytes | None = None  # bytes: as received, only asked
        self.hashes: array[int] | bytes = array("q")
        if data is not None and len(data) == self.BITS >> 3:
            self.bits = data
        elif data is not None:
            self.hashes = data  # read as it came: asked a few times, never copied

    def payload(self) -> bytes:
        """What the worker sends (without a copy: msgpack takes any buffer)."""
        if self.bits is not None:
            return cast(bytes, self.bits)
        return cast(bytes, memoryview(self.hashes).cast("B"))

    def add(self, key: str) -> None:
        self.update((key,))

    def update(self, keys: Iterable[str]) -> None:
        if self.bits is None:
            hashes = cast("array[int]", self.hashes)
            hashes.extend(map(hash, keys))
            if len(hashes) <= self.MAX_HASHES:
                return
            self.bits = bytearray(self.BITS >> 3)
            self.hashes = array("q")
            self._set(hashes)
        else:
            self._set(map(hash, keys))

    def _set(self, hashes: Iterable[int]) -> None:
        bits, mask = cast(bytearray, self.bits), self.BITS - 1
        for h in hashes:
            a, b = h & mask, (h >> 23) & mask
            bits[a >> 3] |= 1 << (a & 7)
            bits[b >> 3] |= 1 << (b & 7)

    def __contains__(self, key: object) -> bool:
        h = hash(key)
        bits = self.bits
        if bits is not None:
            a, b = h & (self.BITS - 1), (h >> 23) & (self.BITS - 1)
            return bool(bits[a >> 3] & (1 << (a & 7))) and bool(bits[b >> 3] & (1 << (b & 7)))
        if isinstance(self.hashes, array):  # the worker's own (tests)
            return h in self.hashes
        return _holds_hash(self.hashes, h)


def _holds_hash(packed: bytes, h: int) -> bool:
    """Whether the packed 64-bit hashes hold `h` (a byte search, at C speed)."""
    needle = _HASH.pack(h)
    at = packed.find(needle)
    while at >= 0:
        if at % _HASH.size == 0:
            return True
        at = packed.find(needle, at + 1)
    return False
