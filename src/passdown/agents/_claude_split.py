"""A Claude Code session on two cores (`passdown._two_core`): once pass 1 has found the
active branch (`passdown.agents._tree.TreeResumable.begin`), a forked worker decodes the
branch's lines after a cut while this process decodes those before it. A first read that
takes the forward pass (no pass 1, `passdown.agents._tree_forward`) is split the same
way, the worker reading every line after the cut on a straight line of its own, merged
only when that line continues this process's at the cut.

What the session reader carries from one line to the next, and how it crosses the cut:
- tool calls waiting for their result (and the Agent calls' task and type): the halves'
  own calls join in order; a result after the cut for a call before it is refused (the
  worker reports every call id it met, `passdown._half_extract._IdFilter`);
- an assistant message streamed in parts under one message id: the worker reports the
  first record that would have touched the text buffered at the cut; a flush of it is
  replayed before the worker's events, a part of the same message is refused;
- the plan replay (`PlanReplay`): the plan changes the worker's extraction kept
  (`passdown._half_extract.Partial.steps`, the same changes in the same order) are replayed
  onto this process's own;
- a compaction's trigger noted at the cut (between the boundary and its summary):
  refused;
- sub-agents read once each: one the worker read and this process had read already is
  refused;
- the session's facts (times, cwd, version, branch, models): joined as one reader would
  have left them.
A refusal only means this process reads the second part itself (exact either way).
The cut is chosen where none of these is in the way: at the start of a branch line
right after a user record (which flushed the assistant's text), with no call open in
the 8 MB scanned (`passdown.agents._tree.clean_branch_cut`).
"""

from __future__ import annotations

import re
import types
from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from passdown._jsonl import LineReader
from passdown.agents._claude_plan import PlanReplay
from passdown.agents._claude_reader import _ActiveReader, _SessionDecoder
from passdown.agents._claude_records import _Record
from passdown.agents._tree import (
    Branch,
    TreeSplitter,
    calls_state,
    half_lines,
    restore_calls,
)
from passdown.agents._tree_forward import HalfLine
from passdown.transcript import Diagnostics, Event, PlanOp, SessionInfo, ToolCall

if TYPE_CHECKING:
    from passdown.agents.base import ResumableReader

_TOOL_USE = re.compile(rb'"type":"tool_use","id":"([^"\\]{1,200})"')
_TOOL_RESULT = re.compile(rb'"tool_use_id":"([^"\\]{1,200})"')
_USER_RECORDS = (b'"type":"user"',)

Touch = list[str | None]  # ["flush", None] or ["chunk", message id]


@runtime_checkable
class _HasSteps(Protocol):
    """The worker's extraction (`passdown._half_extract.Partial`): its plan changes."""

    def steps(self) -> Iterator[Any]: ...


def _touch(rec: _Record) -> Touch | None:
    """What a record does to the assistant text buffered before it (see
    `_ActiveReader._record`): flush it, continue it (a part of message id), or nothing."""
    if rec.type != "assistant":
        return ["flush", None]
    msg = rec.message
    if msg is None:
        return None
    if rec.isApiErrorMessage:
        return ["flush", None]
    if msg.model == "<synthetic>":
        return None
    return ["chunk", msg.id]


class _HalfPlan(PlanReplay):
    """The worker's plan replay: it only notes that the plan changed. The changes are
    the ones extraction applies (a plan call's successful result), which the worker's
    extraction keeps (`passdown._half_extract.Partial.steps`); the main process replays
    them onto its own plan (this half's items would be built on an empty plan)."""

    def apply(self, op: PlanOp, created_id: str | None) -> None:
        self.seen = True


class _HalfActive(_ActiveReader):
    """The session reader of the worker: started at the cut with nothing buffered, it
    notes the first record that touches the assistant text (`_touch`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plan = _HalfPlan()
        self.first_touch: Touch | None = None

    def _record(self, rec: _Record) -> Sequence[Event]:
        touch = _touch(rec)
        # (the forward pass holds on to this method: only the first touch counts)
        if touch is not None and self.first_touch is None:
            self.first_touch = touch
            # from here on the plain reader's own method: no extra call per record
            self._record = types.MethodType(_ActiveReader._record, self)  # type: ignore[method-assign]
        return _ActiveReader._record(self, rec)


class _ClaudeHalf:
    """The worker's reader: the branch's lines from the cut on, and what it ends with."""

    def __init__(
        self,
        branch: Branch,
        cut: int,
        info: SessionInfo,
        diag: Diagnostics,
        *,
        session_id: str,
        config_dir: Path,
    ) -> None:
        self.branch, self.cut, self.diag, self.path = branch, cut, diag, info.path
        self.decoder = _SessionDecoder(
            info, diag, None, {}, config_dir=config_dir, session_id=session_id, active=_HalfActive
        )

    def events(self, stream: Any) -> Iterator[Event]:
        return self.decoder.feed(half_lines(self.path, self.diag, self.branch, stream, self.cut))

    def report(self) -> dict[str, Any]:
        active = self.decoder.reader
        assert isinstance(active, _HalfActive) and isinstance(active.plan, _HalfPlan)
        return {
            "calls": calls_state(active.calls),
            "agent_tasks": {k: list(v) for k, v in active.agent_tasks.items()},
            "plan_seen": active.plan.seen,
            "pending_trigger": active.pending_trigger,
            "assistant": [active.assistant_id, list(active.assistant_text), active.assistant_ts],
            "first_touch": active.first_touch,
            "subagents": sorted(active.subagents.read),
        }


class _ClaudeStraightHalf(_ClaudeHalf):
    """The worker's reader when the main process takes the forward pass: every line from
    the cut on, each tree record checked to continue the line its first record starts
    (`HalfLine`; off it, the worker fails and this process reads on itself)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = HalfLine()

    def events(self, stream: Any) -> Iterator[Event]:
        reader, cut = LineReader(self.path, self.diag), self.cut
        pairs = ((offset + cut, line) for offset, line in reader.forward(stream))

        def tail() -> int:
            return reader.tail_offset + cut if reader.tail_offset >= 0 else -1

        return self.decoder.feed_straight(pairs, self.line, tail)

    def report(self) -> dict[str, Any]:
        return {**super().report(), "line": self.line.report()}


class ClaudeSplitter(TreeSplitter[_SessionDecoder]):
    """A Claude Code session's split (see the module's docstring)."""

    decoder_type = _SessionDecoder
    opens, closes, flushing = _TOOL_USE, _TOOL_RESULT, _USER_RECORDS

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> _ClaudeHalf:
        half = _ClaudeStraightHalf if self.reader.straight is not None else _ClaudeHalf
        return half(
            self.branch,
            cut,
            info,
            diagnostics,
            session_id=self.reader.info.session_id,
            config_dir=self.decoder.config_dir,
        )

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None:
        active = self.decoder.reader
        if any(call_id in ids for call_id in active.calls):
            return "a tool call open at the cut is named after it"
        if active.pending_trigger is not None:
            return "a compaction runs across the cut"
        first = report.get("first_touch")
        if active.assistant_text and first == ["chunk", active.assistant_id]:
            return "an assistant message runs across the cut"
        if not active.subagents.read.isdisjoint(report.get("subagents") or ()):
            return "a sub-agent read before the cut is named after it"
        straight = self.reader.straight
        if straight is not None:  # the forward pass: the two lines must be one
            return HalfLine.joins(straight, report.get("line") or {})
        return None

    def plan_size(self, reader: ResumableReader) -> int:
        """The reader's own plan at the cut (`passdown._half_extract.plan_unmergeable`)."""
        return len(self.decoder.reader.plan.items)

    def before_merge(self, reader: ResumableReader, report: dict[str, Any]) -> Iterator[Event]:
        """The assistant text buffered at the cut, when the worker's first record
        flushed it (a later part of the same message was refused)."""
        if report.get("first_touch") is not None:
            return self.decoder.reader._flush_assistant()
        return iter(())

    def merge_reader(
        self,
        reader: ResumableReader,
        info: SessionInfo,
        report: dict[str, Any],
        pending: dict[str, ToolCall],
        partial: object,
    ) -> None:
        self.reader.skip_window()  # the worker read it
        active = self.decoder.reader
        # no call of this half was answered after the cut (`conflict`): both sets wait
        active.calls.update(restore_calls(report["calls"], pending))
        for call_id, (task, kind) in report["agent_tasks"].items():
            active.agent_tasks[call_id] = (task, kind)
        plan = active.plan
        assert isinstance(partial, _HasSteps)
        for step in partial.steps():
            plan.rekeyed = step.onto(plan.plan, plan.apply) or plan.rekeyed
        plan.seen = plan.seen or bool(report["plan_seen"])
        active.pending_trigger = report["pending_trigger"]  # it was None at the cut
        if report["first_touch"] is not None:  # else nothing after the cut touched it
            active.assistant_id, text, active.assistant_ts = report["assistant"]
            active.assistant_text = list(text)
        active.subagents.read.update(report["subagents"])
        _merge_info(info, report["info"])
        straight = self.reader.straight
        if straight is not None:  # the forward pass read on through the worker's half
            info.title = report["info"]["title"] or info.title  # forwards: the newest
            HalfLine.continue_from(straight, report["line"])
            self.reader.end_straight()


def _merge_info(info: SessionInfo, half: dict[str, Any]) -> None:
    """The session's facts as `_ActiveReader._record` leaves them: the first start time,
    cwd and models in first-seen order, the last activity, version and git branch."""
    info.started_at = info.started_at or half["started_at"]
    info.updated_at = half["updated_at"] or info.updated_at
    info.cwd = info.cwd or half["cwd"]
    info.agent_version = half["agent_version"] or info.agent_version
    info.git_branch = half["git_branch"] or info.git_branch
    for model in half["models"]:
        info.add_model(model)
