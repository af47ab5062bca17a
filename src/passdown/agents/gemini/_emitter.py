"""Gemini CLI messages as events: the message records the CLI writes, decoded in one
typed pass (a leniently decoded fallback for unexpected shapes), and the emitter that
turns each live message, in order, into transcript events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS
from passdown.agents._endings import api_error_ending
from passdown.agents._gemini_family import (
    ACK,
    NULL,
    Part,
    lenient,
    make_tool_call,
    make_tool_result,
    parts_of,
    response_texts,
    visible_text,
)
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    SessionEnding,
    SessionInfo,
    ToolCall,
)

SESSION_CONTEXT = "<session_context>"
SNAPSHOT = "<state_snapshot>"
_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})


class ToolRecord(msgspec.Struct):
    id: str | None = None
    name: str = ""
    args: msgspec.Raw = NULL
    result: msgspec.Raw = NULL
    status: str | None = None
    timestamp: str | None = None


class MessageRecord(msgspec.Struct):
    """A message in the shapes the CLI writes (typed: one decode in the common case)."""

    id: str | None = None
    timestamp: str | None = None
    type: str | None = None
    content: str | list[Part] | None = None
    toolCalls: list[ToolRecord] | None = None
    model: str | None = None


class _LooseMessage(msgspec.Struct):
    """The fallback for a message of an unexpected shape: nested fields decoded leniently."""

    id: Any = None
    timestamp: str | None = None
    type: Any = None
    content: msgspec.Raw = NULL
    toolCalls: msgspec.Raw = NULL
    model: Any = None


_MESSAGE = LazyDecoder(MessageRecord)
_LOOSE_MESSAGE = LazyDecoder(_LooseMessage)
_TOOL_RECORDS = LazyDecoder(list[ToolRecord])


def decode_message(blob: bytes) -> MessageRecord | None:
    try:
        return _MESSAGE.decode(blob)
    except DECODE_ERRORS:
        pass
    loose = lenient(_LOOSE_MESSAGE, blob)
    if not isinstance(loose, _LooseMessage) or not isinstance(loose.type, str):
        return None  # not a message, or one whose type is of the wrong kind: unreadable
    return MessageRecord(
        id=loose.id if isinstance(loose.id, str) else None,
        timestamp=loose.timestamp if isinstance(loose.timestamp, str) else None,
        type=loose.type,
        content=parts_of(loose.content),
        toolCalls=lenient(_TOOL_RECORDS, loose.toolCalls),
        model=loose.model if isinstance(loose.model, str) else None,
    )


def _content_parts(content: str | list[Part] | None) -> list[Part]:
    if isinstance(content, str):
        return [Part(text=content)]
    return content or []


class Emitter:
    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.pending: dict[str, ToolCall] = {}  # calls whose result is still to come
        # the messages' first and latest times, applied to the session by `apply_times`
        self.first_ts: str | None = None
        self.max_ts: str | None = None

    def apply_times(self, started: str | None) -> None:
        """The session's start (`started`, the header's, else the first message's) and
        last activity (the log's `lastUpdated` or the latest message, whichever is later)."""
        start = started or self.first_ts
        if start:
            self.info.started_at = start
        if self.max_ts:
            self.info.updated_at = max(self.info.updated_at or "", self.max_ts)

    def message(self, msg: MessageRecord) -> Iterator[Event]:
        if msg.timestamp:
            self.first_ts = self.first_ts or msg.timestamp
            if self.max_ts is None or msg.timestamp > self.max_ts:
                self.max_ts = msg.timestamp
        kind = msg.type
        if kind == "user":
            yield from self._user(msg)
        elif kind == "gemini":
            yield from self._gemini(msg)
        elif kind == "error" or kind == "info":
            yield from notice_ending(msg)
        elif kind not in _MESSAGE_TYPES:
            self.diag.unknown(f"message type {kind!r}")
        # info / error / warning are the CLI's notices, not the conversation; an API
        # error or a cancelled request nothing follows is how the session ended

    def _user(self, msg: MessageRecord) -> Iterator[Event]:
        parts = _content_parts(msg.content)
        for part in parts:
            resp = part.functionResponse
            call = self.pending.pop(resp.id or "", None) if resp else None
            if resp is not None and call is not None:
                output, error = response_texts(resp)
                yield make_tool_result(
                    call, failed=False, output=output, error=error, timestamp=msg.timestamp
                )
        text = visible_text(parts)
        if not text or text.startswith(SESSION_CONTEXT):
            return
        if SNAPSHOT in text[:400]:
            yield Compaction(summary=text, trigger="auto", timestamp=msg.timestamp)
            return
        yield Message(role="user", text=text, timestamp=msg.timestamp)

    def _gemini(self, msg: MessageRecord) -> Iterator[Event]:
        self.info.add_model(msg.model)
        parts = _content_parts(msg.content)
        text = visible_text(parts)
        if text and text != ACK:
            yield Message(role="assistant", text=text, timestamp=msg.timestamp)
        emitted: set[str] = set()
        for part in parts:  # the API shape (a history re-serialised by $set)
            fc = part.functionCall
            if fc is not None and fc.id:
                call = make_tool_call(fc.id, fc.name, fc.args, msg.timestamp)
                emitted.add(fc.id)
                self.pending[fc.id] = call
                yield call
        for record in msg.toolCalls or ():
            yield from self._tool_record(record, emitted, msg.timestamp)

    def _tool_record(
        self, record: ToolRecord, emitted: set[str], timestamp: str | None
    ) -> Iterator[Event]:
        if not record.id:
            return
        if record.id not in emitted:
            call = make_tool_call(
                record.id, record.name, record.args, record.timestamp or timestamp
            )
            self.pending[record.id] = call
            yield call
        if record.status not in ("success", "error", "cancelled"):
            return  # still running when the session was written: the result may follow
        finished = self.pending.pop(record.id) if record.id in self.pending else None
        if finished is None:
            return
        output = error = None
        for part in parts_of(record.result):
            if part.functionResponse is not None:
                output, error = response_texts(part.functionResponse)
                break
        if record.status == "cancelled" and error is None:
            error = "cancelled by the user"
        yield make_tool_result(
            finished,
            failed=record.status != "success",
            output=output,
            error=error,
            timestamp=record.timestamp or timestamp,
        )


def notice_ending(msg: MessageRecord) -> Iterator[Event]:
    """The interactive CLI records its error notices ("[API Error: ...]", with a rate
    limit hint on a 429) and "Request cancelled." (info); `gemini -p` records neither."""
    text = visible_text(_content_parts(msg.content)).strip()
    if msg.type == "error" and text:
        yield api_error_ending(text, timestamp=msg.timestamp)
    elif msg.type == "info" and text == "Request cancelled.":
        yield SessionEnding(reason="interrupted", message=text, timestamp=msg.timestamp)
