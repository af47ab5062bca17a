"""A pi session on two cores (`passdown._two_core`), as Claude Code's
(`passdown.agents._claude_split`): once pass 1 has found the active branch, a worker
decodes the branch's lines (and the session headers, read wherever they are) after a
cut.

The pi reader carries only the tool calls waiting for their result from one entry to
the next (nothing is buffered across entries): the halves' calls join in order, and a
result after the cut for a call before it is refused (the worker reports the results
that name none of its calls: the reader drops those). The session's facts join as one
reader leaves them (a header after the cut names the session and its cwd, the last
`session_info` name is the title).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator
from typing import TYPE_CHECKING, Any

from passdown.agents._tree import (
    Branch,
    TreeSplitter,
    branch_lines,
    calls_state,
    restore_calls,
)
from passdown.agents.pi import _BranchReader, _is_header
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

if TYPE_CHECKING:
    from passdown.agents.base import ResumableReader

_CALL = re.compile(rb'"type":"toolCall","id":"([^"\\]{1,200})"')
_RESULT = re.compile(rb'"toolCallId":"([^"\\]{1,200})"')
_ANY_LINE = (b"",)  # nothing is buffered across entries: every line ends a record


class _Calls(dict[str, ToolCall]):
    """The calls waiting for their result, noting the results that name none of them."""

    def __init__(self) -> None:
        super().__init__()
        self.unmatched: list[str] = []

    def pop(self, key: str, default: Any = None) -> Any:
        if key not in self and len(self.unmatched) < 100_000:
            self.unmatched.append(key)
        return super().pop(key, default)


class _PiHalf:
    def __init__(self, branch: Branch, cut: int, info: SessionInfo, diag: Diagnostics) -> None:
        self.branch, self.cut, self.diag, self.path = branch, cut, diag, info.path
        self.reader = _BranchReader(info, diag)
        self.reader.calls = self.calls = _Calls()

    def events(self, stream: Any) -> Iterator[Event]:
        # the headers are read wherever they are: one pass reads every line to the end
        lines = branch_lines(
            self.path, self.diag, self.branch, always=_is_header, stream=stream, base=self.cut
        )
        return self.reader.feed(lines)

    def report(self) -> dict[str, Any]:
        return {"calls": calls_state(self.calls), "unmatched_ids": self.calls.unmatched}


class PiSplitter(TreeSplitter[_BranchReader]):
    """A pi session's split (see the module's docstring)."""

    decoder_type = _BranchReader
    opens, closes, flushing = _CALL, _RESULT, _ANY_LINE

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> _PiHalf:
        return _PiHalf(self.branch, cut, info, diagnostics)

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None:
        if any(call_id in ids for call_id in self.decoder.calls):
            return "a tool call open at the cut is named after it"
        return None

    def merge_reader(
        self,
        reader: ResumableReader,
        info: SessionInfo,
        report: dict[str, Any],
        pending: dict[str, ToolCall],
        partial: object,
    ) -> None:
        self.reader.skip_window()  # the worker read it
        self.decoder.calls.update(restore_calls(report["calls"], pending))
        half = report["info"]
        info.session_id = half["session_id"] or info.session_id
        info.cwd = half["cwd"] or info.cwd
        info.title = half["title"] or info.title
        info.started_at = info.started_at or half["started_at"]
        info.updated_at = half["updated_at"] or info.updated_at
        for model in half["models"]:
            info.add_model(model)
