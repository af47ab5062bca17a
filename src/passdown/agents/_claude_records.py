"""The shapes of Claude Code's session records as the Claude reader decodes them
(`passdown.agents.claude`), and the readers of their nested fields: a tool call's input,
a tool result's `toolUseResult` (exit code, created task, sub-agent id).

The common line is decoded once, typed to its nested fields (`_TypedRecord`); a line
whose nested fields have another shape is decoded with them kept raw (`_Record`), each
read on its own later, an unexpected shape reading as absent."""

from __future__ import annotations

import re
from typing import Any, cast

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents._claude_blocks import NULL as _NULL
from passdown.agents._claude_blocks import Block as _Block
from passdown.agents._claude_blocks import decode_raw as _decode_raw
from passdown.agents._claude_blocks import is_null as _is_null
from passdown.agents._common import decode_line, parse_exit_code
from passdown.transcript import Diagnostics


class _Envelope(msgspec.Struct):
    type: str = ""
    subtype: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    leafUuid: str | None = None
    isSidechain: bool = False
    summary: str | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    title: str | None = None


class _Message(msgspec.Struct):
    content: str | list[_Block] | None = None
    model: str | None = None
    id: str | None = None


class _LooseMessage(msgspec.Struct):
    """For content of an unexpected shape: kept raw, decoded leniently."""

    content: msgspec.Raw = _NULL
    model: str | None = None
    id: str | None = None


class _Record(_Envelope):
    """A record whole: the envelope's tree place and titles (for the forward pass), and
    what the reader takes from it."""

    timestamp: str | None = None
    cwd: str | None = None
    version: str | None = None
    gitBranch: str | None = None
    message: _Message | None = None
    isMeta: bool = False
    isCompactSummary: bool = False
    toolUseResult: msgspec.Raw = _NULL
    compactMetadata: dict[str, object] | None = None
    # an assistant record the CLI wrote for a failed API call (rate limit, overload...)
    isApiErrorMessage: bool = False
    error: Any = None
    errorDetails: Any = None


class _LooseRecord(_Record):
    message: _LooseMessage | None = None  # type: ignore[assignment]


class _ToolInput(msgspec.Struct):
    """The tool-call arguments passdown reads; file bodies and edit strings are skipped."""

    file_path: str | None = None
    notebook_path: str | None = None
    path: str | None = None
    command: str | None = None
    subject: str | None = None
    description: str | None = None
    activeForm: str | None = None
    taskId: str | int | None = None
    id: str | int | None = None
    status: str | None = None
    todos: list[dict[str, object]] | None = None
    subagent_type: str | None = None


class _TaskRef(msgspec.Struct):
    """A created task as TaskCreate's result names it (its subject and the rest skipped)."""

    id: Any = None


class _ToolOutcome(msgspec.Struct):
    """The parts of `toolUseResult` passdown reads (stdout and file bodies are skipped)."""

    exitCode: int | None = None
    returnCode: int | None = None
    interrupted: bool = False
    task: _TaskRef | None = None
    taskId: str | int | None = None
    agentId: str | None = None  # the Agent tool's result names the sub-agent it ran


class _TypedBlock(msgspec.Struct):
    """A content block with its tool input decoded in the record's own decode."""

    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: _ToolInput | None = None
    tool_use_id: str | None = None
    content: msgspec.Raw = _NULL
    is_error: bool | None = None


class _TypedMessage(_Message):
    content: str | list[_TypedBlock] | None = None  # type: ignore[assignment]


class _TypedRecord(_Record):
    """The same record with its tool inputs and outcome typed: one decode for the common
    line instead of one more per nested field (about half the decoding of a session of
    tool calls). A nested field of another shape fails it, and the line is decoded as a
    `_Record` as before."""

    message: _TypedMessage | None = None
    toolUseResult: str | _ToolOutcome | None = None  # type: ignore[assignment]


AnyBlock = _Block | _TypedBlock


class _Head(msgspec.Struct):
    cwd: str | None = None
    timestamp: str | None = None
    sessionId: str | None = None


_ENVELOPE = LazyDecoder(_Envelope)
_RECORD = LazyDecoder(_Record)
_TYPED_RECORD = LazyDecoder(_TypedRecord)
_LOOSE_RECORD = LazyDecoder(_LooseRecord)
_HEAD = LazyDecoder(_Head)
_INPUT = LazyDecoder(_ToolInput)
_OUTCOME = LazyDecoder(str | _ToolOutcome)


_TASK_NUMBER = re.compile(r"\bTask #(\d+) created")


def _task_number_in(text: str | None) -> str | None:
    match = _TASK_NUMBER.search(text or "")
    return match.group(1) if match else None


def _untyped_record(line: bytes, offset: int, tail: int, diag: Diagnostics) -> object:
    """A line the typed decode refused: its nested fields kept raw (each decoded on its
    own later, an unexpected shape reading as absent), or content of any shape."""
    try:
        return _RECORD.decode(line)
    except msgspec.ValidationError:
        return decode_line(_LOOSE_RECORD, line, offset, tail, diag)


def _tool_args(raw: _ToolInput | msgspec.Raw | None) -> _ToolInput:
    if isinstance(raw, _ToolInput):
        return raw
    return (_decode_raw(_INPUT, raw) if raw is not None else None) or _ToolInput()


def _outcome(raw: str | _ToolOutcome | msgspec.Raw | None) -> str | _ToolOutcome | None:
    """`toolUseResult` decoded (a typed record's already is; None: null or unreadable)."""
    if not isinstance(raw, msgspec.Raw):
        return raw
    return cast(str | _ToolOutcome | None, _decode_raw(_OUTCOME, raw))


def _bash_exit_code(raw: str | _ToolOutcome | msgspec.Raw | None) -> int | None:
    outcome = raw if type(raw) is _ToolOutcome else _outcome(raw)  # typed: the common case
    if outcome is None:
        return 0 if raw is None or _is_null(cast(msgspec.Raw, raw)) else None
    if isinstance(outcome, str):
        return parse_exit_code(outcome)
    for code in (outcome.exitCode, outcome.returnCode):
        if code is not None:
            return code
    return None if outcome.interrupted else 0


def _created_task_id(raw: str | _ToolOutcome | msgspec.Raw | None) -> str | None:
    outcome = raw if type(raw) is _ToolOutcome else _outcome(raw)  # typed: the common case
    if not isinstance(outcome, _ToolOutcome):
        return None
    if outcome.task is not None and outcome.task.id is not None:
        return str(outcome.task.id)
    return str(outcome.taskId) if outcome.taskId is not None else None
