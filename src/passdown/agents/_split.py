"""What a two-core read (`passdown._two_core`) needs from an agent's reader: where to
cut the file, a reader that starts at the cut, the assumptions its empty start made,
and how its end state joins the first half's reader.

Linear logs (Codex CLI, GitHub Copilot CLI) are cut in the middle of the file. A tree
log (Claude Code's) knows its active branch only once pass 1 has walked back from the
leaf: its splitter (`passdown.agents._claude_split`, `_qwen_split`, `_pi_split`) is
made for the reader that did, and cuts in the middle of the branch's bytes.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Container, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from passdown import _platform
from passdown.agents.codex import _Payload, _RolloutReader
from passdown.agents.copilot import _Data, _EventReader
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

if TYPE_CHECKING:
    from passdown.agents.base import ResumableReader

_SCAN_BYTES = 8 * 1024 * 1024  # how far past the middle a clean cut is looked for
SCAN_BLOCK = 256 * 1024  # how much of it is read at a time
_CALL_ID = re.compile(rb'"call_id":"([^"\\]{1,200})"')
_OUTPUT = re.compile(rb'"type":"(?:function|custom_tool)_call_output"')
_CALL = re.compile(rb'"type":"(?:function_call|custom_tool_call|local_shell_call)"')
_TOOL_CALL_ID = re.compile(rb'"toolCallId":"([^"\\]{1,200})"')


def _codex_calls(line: bytes) -> tuple[list[bytes], list[bytes]]:
    """(ids the line opens, ids it closes)."""
    found = _CALL_ID.search(line)
    if found is None:
        return [], []
    if _OUTPUT.search(line):
        return [], [found.group(1)]
    return ([found.group(1)], []) if _CALL.search(line) else ([], [])


def _copilot_calls(line: bytes) -> tuple[list[bytes], list[bytes]]:
    if b'"toolCallId"' not in line:
        return [], []
    ids = _TOOL_CALL_ID.findall(line)
    if line.startswith(b'{"type":"tool.execution_complete"'):
        return [], ids
    if line.startswith((b'{"type":"assistant.message"', b'{"type":"tool.execution_start"')):
        return ids, []
    return [], []


# The part of the file the process reads itself: while the worker reads the rest, the
# process also shares its core with the thread hashing the file (0.16 s at 300 MB), so
# an even cut left the worker done first (Codex at 300 MB: 0.83 s against 0.73 s; at
# this share both take 0.75-0.79 s).
MAIN_SHARE = 0.45


def main_share(start: int, end: int) -> int:
    """The offset by which the process has read `MAIN_SHARE` of the window [start, end)."""
    return start + int((end - start) * MAIN_SHARE)


def clean_cut(
    fd: int, middle: int, end: int, calls: Callable[[bytes], tuple[list[bytes], list[bytes]]]
) -> int | None:
    """A line start at or after `middle` where no tool call read since the scan began
    waits for its result (between turns, or between one call's result and the next
    call); else the first line start after `middle`. A call opened before the scan and
    answered after the cut only costs the exact fallback (the ids are checked)."""
    scan_from = max(0, middle - _SCAN_BYTES // 4)
    open_calls: set[bytes] = set()
    fallback: int | None = None
    for line, offset in scan_lines(fd, scan_from, min(end, middle + _SCAN_BYTES)):
        opened, closed = calls(line)
        open_calls.update(opened)
        open_calls.difference_update(closed)
        if middle <= offset < end:
            if fallback is None:
                fallback = offset
            if not open_calls:
                return offset
    return fallback


def scan_lines(fd: int, start: int, limit: int) -> Iterator[tuple[bytes, int]]:
    """The lines of [start, limit) that end in it, after the first newline (`start` may
    be inside a line), each with the offset just past it. Read `SCAN_BLOCK` bytes at a
    time: the cut is looked for just before the fork, and every page this process
    holds then is one the worker may copy (a 10 MB read raised the export's peak RSS by
    as much)."""
    pieces: list[bytes] = []  # the line read so far, when it spans blocks
    started = False
    pos = start
    while pos < limit and (block := _platform.pread(fd, min(SCAN_BLOCK, limit - pos), pos)):
        base, pos = pos, pos + len(block)
        at = 0
        if not started:
            newline = block.find(b"\n")
            if newline < 0:
                continue
            at, started = newline + 1, True
        while (newline := block.find(b"\n", at)) >= 0:
            line = block[at:newline]
            if pieces:
                pieces.append(line)
                line = b"".join(pieces)
                pieces.clear()
            at = newline + 1
            yield line, base + at
        if at < len(block):
            pieces.append(block[at:])


class _CodexHalf(_RolloutReader):
    """A rollout reader that starts at a line in the middle of the file. It knows no
    call from before the cut (an output for one is dropped, its id reported) and not
    the last user prompt before it: "" stands for "unknown" (a prompt is never empty),
    and the first prompt read while it stands is reported, since the reader before the
    cut would have dropped it as a repeat if it was the same text."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(info.path, info, diag)
        self.last_user_text = ""
        self.settled = False
        self.assumed_new_prompt: str | None = None
        self.meta_cwd: str | None = None
        self.unmatched_ids: list[str] = []

    def _response_item(self, item: _Payload, timestamp: str | None) -> tuple[Event, ...]:
        out = super()._response_item(item, timestamp)
        if self.last_user_text != "":
            self.settled = True
            if self.last_user_text is not None:  # a prompt set it: it was assumed new
                self.assumed_new_prompt = self.last_user_text
            # from here on the plain reader's own method: no extra call per item
            self._response_item = types.MethodType(_RolloutReader._response_item, self)  # type: ignore[method-assign]
        return out

    def _meta(self, meta: _Payload) -> None:
        if meta.cwd:
            self.meta_cwd = meta.cwd
        super()._meta(meta)

    def _tool_result(self, item: _Payload, timestamp: str | None) -> Any:
        call_id = item.call_id or ""
        if call_id not in self.calls and len(self.unmatched_ids) < 100_000:
            self.unmatched_ids.append(call_id)
        return super()._tool_result(item, timestamp)

    def report(self) -> dict[str, Any]:
        return {
            "calls": {call_id: call.action for call_id, call in self.calls.items()},
            "settled": self.settled,
            "last_user_text": self.last_user_text if self.settled else None,
            "assumed_new_prompt": self.assumed_new_prompt,
            "meta_cwd": self.meta_cwd,
            "unmatched_ids": self.unmatched_ids,
            "compacted_pending": self.compacted_pending,
        }


class _LinearSplitter:
    """A log read line by line from its start: every byte of the window is read."""

    def work_bytes(self, start: int, end: int) -> int:
        return end - start

    def split(self, cut: int) -> None:
        pass


class CodexSplitter(_LinearSplitter):
    def cut(self, fd: int, start: int, end: int) -> int | None:
        return clean_cut(fd, main_share(start, end), end, _codex_calls)

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> _CodexHalf:
        return _CodexHalf(info, diagnostics)

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None:
        main = reader if isinstance(reader, _RolloutReader) else None
        if main is None:
            return "not a Codex reader"
        if any(call_id in ids for call_id in main.calls):
            return "a tool call open at the cut is named after it"
        assumed = report.get("assumed_new_prompt")
        if assumed is not None and assumed == main.last_user_text:
            return "the first prompt after the cut repeats the last one before it"
        if main.compacted_pending:
            return "a compaction's item and its event lie either side of the cut"
        return None

    def before_merge(self, reader: ResumableReader, report: dict[str, Any]) -> Iterator[Event]:
        return iter(())

    def merge_reader(
        self,
        reader: ResumableReader,
        info: SessionInfo,
        report: dict[str, Any],
        pending: dict[str, ToolCall],
        partial: object,
    ) -> None:
        assert isinstance(reader, _RolloutReader)
        half_calls = report.get("calls") or {}
        # only an action is ever asked of a call still waiting (as in a checkpoint)
        reader.restore(
            {
                "calls": {
                    **{call_id: call.action for call_id, call in reader.calls.items()},
                    **half_calls,
                },
                "last_user_text": report["last_user_text"]
                if report.get("settled")
                else reader.last_user_text,
                "compacted_pending": report.get("compacted_pending") is True,
            },
            pending,
        )
        _merge_info(info, report["info"], report.get("meta_cwd"))


def _merge_info(info: SessionInfo, half: dict[str, Any], meta_cwd: str | None) -> None:
    """The session facts as one reader would have left them: a header (`session_meta`)
    after the cut overrides, a turn's cwd only fills an empty one, the first start time
    and the last activity win, models keep their first-seen order."""
    info.session_id = half["session_id"] or info.session_id
    info.agent_version = half["agent_version"] or info.agent_version
    info.started_at = info.started_at or half["started_at"]
    info.updated_at = half["updated_at"] or info.updated_at
    info.cwd = (meta_cwd or info.cwd) if info.cwd else half["cwd"]
    for model in half["models"]:
        info.add_model(model)


class _CopilotHalf(_EventReader):
    """An events.jsonl reader that starts at a line in the middle of the file. It knows
    no call from before the cut (a completion of one is dropped, its id reported) and
    no reply being assembled: it reports the first event that would have touched such
    a reply (a flush, or a chunk of which reply), so the main process can flush its own
    first or refuse when a reply runs across the cut."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(info.path, info, diag)
        self.first_touch: list[str | None] | None = None  # ["flush", None] | ["chunk", id]
        self.unmatched_ids: list[str] = []

    def _assistant(self, data: _Data, ts: str | None) -> Iterator[Event]:
        self._touched(["chunk", data.messageId])
        return super()._assistant(data, ts)

    def _flush(self) -> Iterator[Event]:
        self._touched(["flush", None])
        return super()._flush()

    def _touched(self, what: list[str | None]) -> None:
        if self.first_touch is None:
            self.first_touch = what
            # from here on the plain reader's own methods: no extra call per event
            self._assistant = types.MethodType(_EventReader._assistant, self)  # type: ignore[method-assign]
            self._flush = types.MethodType(_EventReader._flush, self)  # type: ignore[method-assign]

    def _complete(self, data: _Data, ts: str | None) -> Any:
        call_id = data.toolCallId or ""
        if call_id not in self.calls and len(self.unmatched_ids) < 100_000:
            self.unmatched_ids.append(call_id)
        return super()._complete(data, ts)

    def report(self) -> dict[str, Any]:
        state = self.state()
        state["first_touch"] = self.first_touch
        state["unmatched_ids"] = self.unmatched_ids
        return state


class CopilotSplitter(_LinearSplitter):
    def cut(self, fd: int, start: int, end: int) -> int | None:
        return clean_cut(fd, main_share(start, end), end, _copilot_calls)

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> _CopilotHalf:
        return _CopilotHalf(info, diagnostics)

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None:
        if not isinstance(reader, _EventReader):
            return "not a Copilot reader"
        if any(call_id in ids for call_id in reader.calls):
            return "a tool call open at the cut is named after it"
        first = report.get("first_touch")
        if reader.text and first is not None and first == ["chunk", reader.text_id]:
            return "a reply runs across the cut"
        return None

    def before_merge(self, reader: ResumableReader, report: dict[str, Any]) -> Iterator[Event]:
        """The reply buffered at the cut, when the half's first event flushes it."""
        assert isinstance(reader, _EventReader)
        if reader.text and report.get("first_touch") is not None:
            return reader._flush()
        return iter(())

    def merge_reader(
        self,
        reader: ResumableReader,
        info: SessionInfo,
        report: dict[str, Any],
        pending: dict[str, ToolCall],
        partial: object,
    ) -> None:
        assert isinstance(reader, _EventReader)
        for value in report.get("calls") or ():
            call = msgspec.convert(value, ToolCall)
            # the very object extraction waits on: a later result may add its paths
            reader.calls[call.call_id] = pending.get(call.call_id, call)
        if report.get("first_touch") is not None:  # else the buffer before the cut stays
            reader.text = list(report.get("text") or [])
            reader.text_id = report.get("text_id")
            reader.text_ts = report.get("text_ts")
        half = report["info"]
        info.session_id = half["session_id"] or info.session_id
        info.agent_version = half["agent_version"] or info.agent_version
        info.started_at = info.started_at or half["started_at"]
        info.updated_at = half["updated_at"] or info.updated_at
        info.cwd = info.cwd or half["cwd"]
        info.git_branch = half["git_branch"] or info.git_branch
        info.title = half["title"] or info.title
        for model in half["models"]:
            info.add_model(model)


def _claude(reader: ResumableReader | None) -> object:
    from passdown.agents._claude_split import ClaudeSplitter

    return ClaudeSplitter.for_reader(reader)


def _qwen(reader: ResumableReader | None) -> object:
    from passdown.agents._qwen_split import QwenSplitter

    return QwenSplitter.for_reader(reader)


def _pi(reader: ResumableReader | None) -> object:
    from passdown.agents._pi_split import PiSplitter

    return PiSplitter.for_reader(reader)


def _gemini(reader: ResumableReader | None) -> object:
    from passdown.agents._gemini_split import GeminiSplitter

    return GeminiSplitter.for_reader(reader)


# agent -> the splitter for the reader of the first part (None: this one cannot split)
SPLITTERS: dict[str, Callable[[ResumableReader | None], object]] = {
    "codex": lambda reader: CodexSplitter(),
    "copilot": lambda reader: CopilotSplitter(),
    "claude": _claude,
    "qwen": _qwen,
    "pi": _pi,
    "gemini": _gemini,
}
