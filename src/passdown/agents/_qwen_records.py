"""Qwen Code's records as passdown decodes them (`passdown.agents.qwen` reads the
session with them): the envelope pass 1 reads for the tree, the record pass 2 decodes
each line into at once (its nested fields typed), and the lenient path a line that
typed decode refuses takes, each nested field decoded on its own so that an unexpected
shape reads as absent rather than losing the line."""

from __future__ import annotations

from typing import Any

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS
from passdown.agents._gemini_family import (
    RESPONSE_BODY,
    Part,
    ResponseBody,
    ToolArgs,
    decode_record,
    lenient,
)
from passdown.transcript import Diagnostics

_NULL = msgspec.Raw(b"null")


# Fields are typed: a record whose fields have the wrong kind (a list for `type`) fails
# to decode and is skipped as an unreadable line, counted in the diagnostics.
class _Envelope(msgspec.Struct):
    uuid: str | None = None
    parentUuid: str | None = None
    type: str | None = None
    subtype: str | None = None


class _QMessage(msgspec.Struct):
    role: str | None = None
    parts: list[Part] | None = None


class _CallResult(msgspec.Struct):
    callId: str | None = None
    status: str | None = None
    resultDisplay: msgspec.Raw = _NULL


class _Record(msgspec.Struct):
    uuid: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    type: str | None = None
    subtype: str | None = None
    provenance: str | None = None
    cwd: str | None = None
    version: str | None = None
    gitBranch: str | None = None
    model: str | None = None
    message: msgspec.Raw = _NULL
    toolCallResult: msgspec.Raw = _NULL
    systemPayload: msgspec.Raw = _NULL


# Pass 2 decodes each line once, straight into these: the nested fields typed as the
# lenient path below decodes them one by one (every field the same type, so a line one
# of them refuses takes that path and reads exactly as it always did).
class _FastCall(msgspec.Struct):
    id: str | None = None
    name: str = ""
    args: ToolArgs | None = None


class _FastResponse(msgspec.Struct):
    id: str | None = None
    name: str = ""
    # left raw: a success's output is decoded only when a command's exit code needs it
    response: ResponseBody | None = None


class _FastPart(msgspec.Struct):
    text: str | None = None
    thought: Any = None
    functionCall: _FastCall | None = None
    functionResponse: _FastResponse | None = None


class _FastMessage(msgspec.Struct):
    role: str | None = None
    parts: list[_FastPart] | None = None


class _UiEvent(msgspec.Struct):
    name: Any = msgspec.field(default=None, name="event.name")
    error_message: Any = None
    error_type: Any = None
    status_code: Any = None


class _Telemetry(msgspec.Struct):
    uiEvent: _UiEvent | None = None


class _FastRecord(_Record):
    """The same record, its nested fields typed."""

    message: _FastMessage | None = None  # type: ignore[assignment]
    toolCallResult: _CallResult | None = None  # type: ignore[assignment]
    # what telemetry records say; a compression's payload is read from the line again
    systemPayload: _Telemetry | None = None  # type: ignore[assignment]


class _Head(msgspec.Struct):
    cwd: str | None = None
    timestamp: str | None = None
    sessionId: str | None = None


class _ShellDisplay(msgspec.Struct):
    type: str | None = None
    exitCode: int | None = None


class _Content(msgspec.Struct):
    role: str | None = None
    parts: list[Part] | None = None


class _CompressionInfo(msgspec.Struct):
    trigger: str | None = None


class _Compression(msgspec.Struct):
    info: _CompressionInfo | None = None
    compressedHistory: list[_Content] | None = None


_ENVELOPE = LazyDecoder(_Envelope)
_RECORD = LazyDecoder(_Record)
_FAST_RECORD = LazyDecoder(_FastRecord)
_TELEMETRY = LazyDecoder(_Telemetry)
_QMESSAGE = LazyDecoder(_QMessage)
_CALL_RESULT = LazyDecoder(_CallResult)
_HEAD = LazyDecoder(_Head)
_DISPLAY = LazyDecoder(str | _ShellDisplay)
_COMPRESSION = LazyDecoder(_Compression)
_TODOS = LazyDecoder(ToolArgs)
_ARGS = _TODOS  # a tool call's arguments


def _decode(line: bytes, offset: int, tail: int, diag: Diagnostics) -> _FastRecord | None:
    """A record, however its nested fields are shaped (None: an unreadable line, counted)."""
    try:
        return _FAST_RECORD.decode(line)
    except DECODE_ERRORS:
        return _lenient_record(line, offset, tail, diag)


def _lenient_record(line: bytes, offset: int, tail: int, diag: Diagnostics) -> _FastRecord | None:
    """A line the typed decode refused: its own fields decoded as before (an unreadable
    line is counted), each nested field on its own, an unexpected shape reading as absent."""
    rec = decode_record(_RECORD, line, offset, tail, diag)
    if not isinstance(rec, _Record):
        return None
    message = lenient(_QMESSAGE, rec.message)
    fast_message = None
    if isinstance(message, _QMessage):
        parts = message.parts
        fast_message = _FastMessage(
            message.role, [_fast_part(p) for p in parts] if parts is not None else None
        )
    outcome = lenient(_CALL_RESULT, rec.toolCallResult)
    payload = lenient(_TELEMETRY, rec.systemPayload)
    return _FastRecord(
        uuid=rec.uuid,
        sessionId=rec.sessionId,
        timestamp=rec.timestamp,
        type=rec.type,
        subtype=rec.subtype,
        provenance=rec.provenance,
        cwd=rec.cwd,
        version=rec.version,
        gitBranch=rec.gitBranch,
        model=rec.model,
        message=fast_message,
        toolCallResult=outcome if isinstance(outcome, _CallResult) else None,
        systemPayload=payload if isinstance(payload, _Telemetry) else None,
    )


def _fast_part(part: Part) -> _FastPart:
    """A part as the typed decode gives it, its nested fields decoded leniently."""
    fc, fr = part.functionCall, part.functionResponse
    call = None
    if fc is not None:
        args = lenient(_ARGS, fc.args)
        call = _FastCall(fc.id, fc.name, args if isinstance(args, ToolArgs) else None)
    response = None
    if fr is not None:
        body = lenient(RESPONSE_BODY, fr.response)
        if not isinstance(body, ResponseBody) and bytes(fr.response) != b"null":
            body = ResponseBody(output=fr.response)  # no object: shown whole, as the output
        response = _FastResponse(fr.id, fr.name, body)
    return _FastPart(part.text, part.thought, call, response)
