"""Gemini CLI sessions from builds before 0.2x: one pretty-printed JSON object per
session (`session-*.json`), streamed message by message."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from passdown._jsonl import LineReader
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._gemini_family import decode_record
from passdown.agents.gemini._emitter import Emitter, MessageRecord, decode_message
from passdown.transcript import Event, SessionInfo

HEAD_FIELD = lazy_compile(rb'"(sessionId|startTime)"\s*:\s*"([^"\\]{1,200})"')


class _Legacy(msgspec.Struct):
    sessionId: Any = None
    startTime: Any = None
    lastUpdated: Any = None
    summary: Any = None
    messages: list[MessageRecord] | None = None


_LEGACY = LazyDecoder(_Legacy)


def read_legacy(path: Path, emitter: Emitter) -> Iterator[Event]:
    """Stream `{..., "messages": [ {...}, ... ]}` written with 2-space indentation: each
    message spans the lines from `    {` to `    }`; a compact one-line file is one line."""
    reader = LineReader(path, emitter.diag)
    chunk: list[bytes] = []
    in_messages = False
    first = True
    for _, line in reader.forward():
        if first and line.strip() != b"{":
            yield from _legacy_compact(line, reader, emitter)
            return
        first = False
        if not in_messages:
            in_messages = line.startswith(b'  "messages": [')
            _legacy_meta(line, emitter.info)
            continue
        if line.startswith(b"    {"):
            chunk = [line]
        elif line.startswith(b"    }") and chunk:
            chunk.append(b"}")
            yield from _legacy_message(b"\n".join(chunk), emitter)
            chunk = []
        elif chunk:
            chunk.append(line)
        elif line.startswith(b"  ]"):
            in_messages = False
    if chunk:
        emitter.diag.torn_last_line = True  # the file ended inside a message
    emitter.apply_times(emitter.info.started_at)


def _legacy_meta(line: bytes, info: SessionInfo) -> None:
    match = HEAD_FIELD.search(line)
    if match and match.group(1) == b"sessionId":
        info.session_id = match.group(2).decode("utf-8", "replace")
    elif match:
        info.started_at = info.started_at or match.group(2).decode("utf-8", "replace")


def _legacy_message(blob: bytes, emitter: Emitter) -> Iterator[Event]:
    msg = decode_message(blob)
    if isinstance(msg, MessageRecord):
        yield from emitter.message(msg)
    else:
        emitter.diag.bad_lines += 1


def _legacy_compact(line: bytes, reader: LineReader, emitter: Emitter) -> Iterator[Event]:
    legacy = decode_record(_LEGACY, line, 0, reader.tail_offset, emitter.diag)
    if not isinstance(legacy, _Legacy):
        return
    if isinstance(legacy.sessionId, str):
        emitter.info.session_id = legacy.sessionId
    if isinstance(legacy.startTime, str):
        emitter.info.started_at = legacy.startTime
    for msg in legacy.messages or ():
        yield from emitter.message(msg)
    emitter.apply_times(emitter.info.started_at)
