"""What a two-core read (`passdown._two_core`) needs from an agent's reader: where to
cut the file, a reader that starts at the cut, the assumptions its empty start made,
and how its end state joins the first half's reader.

Only linear logs qualify: Codex CLI. (Tree-shaped logs know their branch only at the
leaf; Copilot and pi are left for when Codex has shown the gain.)
"""

from __future__ import annotations

import os
import re
import types
from typing import TYPE_CHECKING, Any

from passdown.agents.codex import _Payload, _RolloutReader
from passdown.transcript import Diagnostics, Event, SessionInfo

if TYPE_CHECKING:
    from passdown._two_core import _IdFilter
    from passdown.agents.base import ResumableReader

_SCAN_BYTES = 8 * 1024 * 1024  # how far past the middle a clean cut is looked for
_CALL_ID = re.compile(rb'"call_id":"([^"\\]{1,200})"')
_OUTPUT = re.compile(rb'"type":"(?:function|custom_tool)_call_output"')
_CALL = re.compile(rb'"type":"(?:function_call|custom_tool_call|local_shell_call)"')


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
        }


class CodexSplitter:
    def cut(self, fd: int, middle: int, end: int) -> int | None:
        """A line start at or after `middle` where no tool call read since the scan began
        waits for its output (between turns, or between one call's output and the next
        call); else the first line start after `middle`."""
        scan_from = max(0, middle - _SCAN_BYTES // 4)
        data = os.pread(fd, min(end, middle + _SCAN_BYTES) - scan_from, scan_from)
        first_line = data.find(b"\n") + 1
        if first_line <= 0:
            return None
        open_calls: set[bytes] = set()
        fallback: int | None = None
        pos = first_line
        while (newline := data.find(b"\n", pos)) >= 0:
            line = data[pos:newline]
            found = _CALL_ID.search(line)
            if found is not None:
                if _OUTPUT.search(line):
                    open_calls.discard(found.group(1))
                elif _CALL.search(line):
                    open_calls.add(found.group(1))
            pos = newline + 1
            offset = scan_from + pos
            if offset >= middle and offset < end:
                if fallback is None:
                    fallback = offset
                if not open_calls:
                    return offset
        return fallback

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics) -> _CodexHalf:
        return _CodexHalf(info, diagnostics)

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: _IdFilter
    ) -> str | None:
        main = reader if isinstance(reader, _RolloutReader) else None
        if main is None:
            return "not a Codex reader"
        if any(call_id in ids for call_id in main.calls):
            return "a tool call open at the cut is named after it"
        assumed = report.get("assumed_new_prompt")
        if assumed is not None and assumed == main.last_user_text:
            return "the first prompt after the cut repeats the last one before it"
        return None

    def merge_reader(
        self, reader: ResumableReader, info: SessionInfo, report: dict[str, Any]
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
            }
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


SPLITTERS = {"codex": CodexSplitter}
