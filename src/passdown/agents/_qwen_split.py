"""A Qwen Code session on two cores (`passdown._two_core`), as Claude Code's
(`passdown.agents._claude_split`): once pass 1 has found the active branch, a worker
decodes the branch's lines after a cut.

The Qwen reader carries less from line to line: tool calls waiting for their result
(joined in order; a result after the cut for a call before it is refused), and the
assistant text being joined across the fragments of one record (a flush of what is
buffered at the cut is replayed before the worker's events; a fragment of the same
record after the cut is refused). The session's facts join as one reader leaves them
(the last session id a record names wins).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Container, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from passdown.agents._qwen_records import _decode
from passdown.agents._tree import (
    Branch,
    TreeSplitter,
    calls_state,
    half_lines,
    restore_calls,
)
from passdown.agents.qwen import _BranchReader
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

if TYPE_CHECKING:
    from passdown.agents.base import ResumableReader

_CALL = re.compile(rb'"functionCall":\{"id":"([^"\\]{1,200})"')
_RESPONSE = re.compile(rb'"functionResponse":\{"id":"([^"\\]{1,200})"')
_FLUSHING = (b'"type":"user"', b'"type":"tool_result"')

Touch = list[str | None]  # ["flush", None] or ["chunk", record uuid]


class _Pending(dict[str, ToolCall]):
    """The calls waiting for their result, noting the results that name none of them:
    the reader drops those (no event), so the worker reports their ids (the main
    process may hold the call)."""

    def __init__(self) -> None:
        super().__init__()
        self.unmatched: list[str] = []

    def pop(self, key: str, default: Any = None) -> Any:
        if key not in self and len(self.unmatched) < 100_000:
            self.unmatched.append(key)
        return super().pop(key, default)


class _HalfReader(_BranchReader):
    """The worker's pass 2: started at the cut with no text buffered, it notes the
    first record that touches the text buffered before the cut."""

    first_touch: Touch | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending = self.waiting = _Pending()

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        rest = iter(lines)
        for line in rest:
            if self.first_touch is not None:  # from here on the plain reader's loop
                yield from super().feed(itertools.chain((line,), rest))
                return
            # a look at the line only (the loop counts it if it is unreadable)
            rec = _decode(line[1], line[0], line[2], Diagnostics())
            if rec is not None:
                self.first_touch = (
                    ["chunk", rec.uuid] if rec.type == "assistant" else ["flush", None]
                )
            yield from super().feed((line,))


class _QwenHalf:
    def __init__(
        self, branch: Branch, cut: int, info: SessionInfo, diag: Diagnostics, reader: _BranchReader
    ) -> None:
        self.branch, self.cut, self.diag, self.path = branch, cut, diag, info.path
        self.reader = _HalfReader(info, diag, None, {}, todos=reader.todos)

    def events(self, stream: Any) -> Iterator[Event]:
        return self.reader.feed(half_lines(self.path, self.diag, self.branch, stream, self.cut))

    def report(self) -> dict[str, Any]:
        reader = self.reader
        return {
            "calls": calls_state(reader.pending),
            "text": [reader.text_uuid, list(reader.text), reader.text_ts],
            "first_touch": reader.first_touch,
            "unmatched_ids": reader.waiting.unmatched,
        }


class QwenSplitter(TreeSplitter[_BranchReader]):
    """A Qwen Code session's split (see the module's docstring)."""

    decoder_type = _BranchReader
    opens, closes, flushing = _CALL, _RESPONSE, _FLUSHING

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> _QwenHalf:
        return _QwenHalf(self.branch, cut, info, diagnostics, self.decoder)

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None:
        decoder = self.decoder
        if any(call_id in ids for call_id in decoder.pending):
            return "a tool call open at the cut is named after it"
        if decoder.text and report.get("first_touch") == ["chunk", decoder.text_uuid]:
            return "an assistant message runs across the cut"
        return None

    def before_merge(self, reader: ResumableReader, report: dict[str, Any]) -> Iterator[Event]:
        if report.get("first_touch") is not None:
            return self.decoder._flush()
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
        decoder = self.decoder
        decoder.pending.update(restore_calls(report["calls"], pending))
        if report["first_touch"] is not None:  # else nothing after the cut touched it
            decoder.text_uuid, text, decoder.text_ts = report["text"]
            decoder.text = list(text)
        half = report["info"]
        info.session_id = half["session_id"] or info.session_id
        info.started_at = info.started_at or half["started_at"]
        info.updated_at = half["updated_at"] or info.updated_at
        info.cwd = info.cwd or half["cwd"]
        info.agent_version = half["agent_version"] or info.agent_version
        info.git_branch = half["git_branch"] or info.git_branch
        for model in half["models"]:
            info.add_model(model)
