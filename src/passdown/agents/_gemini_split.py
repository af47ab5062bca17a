"""A Gemini CLI session on two cores (`passdown._two_core`): once the replay (pass 1,
run by `ResumableReplay.begin`) knows which lines hold the live messages, the emit pass
over them (pass 2) is cut in two and a forked worker decodes the second part.

The emitter carries little from one message to the next: the tool calls waiting for
their result (a call whose record was written before its result, or a history
re-serialised by a `$set` in the API's shape: a `functionCall` part, its
`functionResponse` in the next user message), the messages' first and latest times, and
the models seen. The times and models join exactly (first wins, latest wins, first-seen
order). The waiting calls join in order when the two parts never name the same call: a
call waiting at the cut that the worker's part names again (a result, or the call
written again) is refused, and so is a worker that met more results for calls it never
saw than it can list. The worker reports the results that name none of its calls (the
emitter drops those, without an event) unless it called them itself a moment before
(the usual Gemini record: its calls with their results, then the same results again in
the next user message), whose ids it has sent already.

The cut is a position in the pass-2 order near the middle of the file's bytes, moved on
to the next message the model wrote (`"type":"gemini"`): the calls of the messages
before it have had their results by then.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from typing import Any

from passdown import _platform
from passdown.agents._tree import calls_state, restore_calls
from passdown.agents.base import ResumableReader
from passdown.agents.gemini._emitter import Emitter
from passdown.agents.gemini._live import RECORD
from passdown.agents.gemini._replay import Pass2, emit
from passdown.agents.gemini._resume import ResumableReplay
from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

# The worker's share of the file's bytes for the emit pass: cut at the middle, its CPU
# time was about 30 % above the main process's for its half (the fork's page faults, its
# id filter and report), so the main process takes more (300 MB real-shaped: at 0.43 both
# parts take 0.85-0.89 s of CPU).
_WORKER_SHARE = 0.43
# the worker reads the file in smaller blocks: each page it writes is its own (a copy)
_WORKER_BLOCK = 256 * 1024
_SCAN_POSITIONS = 4096  # how far past the middle a message of the model's is looked for
_HEAD_BYTES = 256  # where a record's `type` is written: right after its id and time
_MODEL_MESSAGE = b'"type":"gemini"'
MAX_UNMATCHED = 100_000  # results naming no call of the worker's, listed for the check
_RECENT_CALLS = 4096  # the worker's latest call ids: their results' repeats are not listed

OVERFLOW = "the worker met too many results for calls it never saw"
NAMED_AFTER = "a tool call open at the cut is named after it"


class _Calls(dict[str, ToolCall]):
    """The worker emitter's calls waiting for their result, noting the results that
    name none of them and were not called by the worker a moment before."""

    def __init__(self) -> None:
        super().__init__()
        self.unmatched: list[str] = []
        self.overflow = False
        self.recent: dict[str, None] = {}

    def __setitem__(self, key: str, value: ToolCall) -> None:
        recent = self.recent
        recent[key] = None
        if len(recent) > _RECENT_CALLS:
            del recent[next(iter(recent))]
        super().__setitem__(key, value)

    def pop(self, key: str, default: Any = None) -> Any:
        if key not in self and key not in self.recent:
            if len(self.unmatched) < MAX_UNMATCHED:
                self.unmatched.append(key)
            else:
                self.overflow = True
        return super().pop(key, default)


class _GeminiHalf:
    """The worker's part: the pass-2 positions [first, last) emitted from an empty
    emitter."""

    def __init__(
        self, window: Pass2, first: int, last: int, info: SessionInfo, diag: Diagnostics
    ) -> None:
        self.window, self.first, self.last = window, first, last
        self.path, self.diag = info.path, diag
        self.emitter = Emitter(info, diag)
        self.emitter.pending = self.calls = _Calls()

    def events(self, stream: Any) -> Iterator[Event]:
        pairs = self.window.pairs(self.first, self.last)
        return emit(self.path, self.diag, self.emitter, pairs, _WORKER_BLOCK)

    def report(self) -> dict[str, Any]:
        emitter = self.emitter
        return {
            "calls": calls_state(self.calls),
            "first_ts": emitter.first_ts,
            "max_ts": emitter.max_ts,
            "overflow": self.calls.overflow,
            "unmatched_ids": self.calls.unmatched,
        }


class GeminiSplitter:
    """A Gemini CLI session's split (see the module's docstring)."""

    def __init__(self, reader: ResumableReplay, window: Pass2) -> None:
        self.reader, self.window = reader, window
        self.first, self.last = reader.planned[0]
        self.position = self.first

    @classmethod
    def for_reader(cls, reader: ResumableReader | None) -> GeminiSplitter | None:
        """Only for a first read replayed by `begin`, its window not shared yet."""
        if not isinstance(reader, ResumableReplay):
            return None
        window = reader.first_window
        if window is None or len(reader.planned) != 1 or len(window) < 2:
            return None
        return cls(reader, window)

    def work_bytes(self, start: int, end: int) -> int:
        return end - start  # the replay read them all; pass 2 decodes most again

    def cut(self, fd: int, start: int, end: int) -> int | None:
        """The offset of the line the worker starts at (its position is kept)."""
        self.position = self.choose(fd, end - int((end - start) * _WORKER_SHARE))
        if not self.first < self.position < self.last:
            return None
        offset, _ = self.window.offset(self.position)
        return min(max(offset, 1), end - 1)  # a label in the stats: within the window

    def choose(self, fd: int, middle: int) -> int:
        """The first position whose line starts at or after `middle` (the middle of
        the list when none does), moved on to the next message of the model's."""
        found = None
        for position, (offset, _) in enumerate(self.window.pairs(self.first, self.last)):
            if offset >= middle:
                found = self.first + position
                break
        if found is None:
            return (self.first + self.last) // 2
        scan = self.window.pairs(found, min(self.last, found + _SCAN_POSITIONS))
        for step, (offset, index) in enumerate(scan):
            if index == RECORD and _MODEL_MESSAGE in _platform.pread(fd, _HEAD_BYTES, offset):
                return found + step
        return found

    def split(self, cut: int) -> None:
        self.reader.plan_split(self.position)

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> _GeminiHalf:
        return _GeminiHalf(self.window, self.position, self.last, info, diagnostics)

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None:
        if report.get("overflow"):
            return OVERFLOW
        if any(call_id in ids for call_id in self.reader.emitter.pending):
            return NAMED_AFTER
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
        emitter = self.reader.emitter
        emitter.pending.update(restore_calls(report["calls"], pending))
        emitter.first_ts = emitter.first_ts or report["first_ts"]
        latest = report["max_ts"]
        if latest is not None and (emitter.max_ts is None or latest > emitter.max_ts):
            emitter.max_ts = latest
        for model in report["info"]["models"]:
            info.add_model(model)
        self.reader.skip_window()  # the worker read it; the window's messages are out
