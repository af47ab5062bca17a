"""The Anthropic-style content blocks Claude Code writes in its session records, and that
Claude-shaped logs (Factory Droid's) write alike: `text`, `tool_use {id, name, input}`,
`tool_result {tool_use_id, content, is_error}`. Decoding them leniently is shared here;
what a record around them means stays with each agent."""

from __future__ import annotations

from typing import Any, cast

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS

NULL = msgspec.Raw(b"null")


class Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: msgspec.Raw = NULL
    tool_use_id: str | None = None
    content: msgspec.Raw = NULL
    is_error: bool | None = None


_BLOCKS = LazyDecoder(str | list[Block])


def decode_raw(decoder: LazyDecoder[Any], raw: msgspec.Raw) -> Any:
    """Decode a nested field; invalid UTF-8 inside it is replaced, not fatal."""
    if is_null(raw):
        return None
    try:
        return decoder.decode(raw)
    except DECODE_ERRORS:
        pass
    try:
        return decoder.decode(bytes(raw).decode("utf-8", "replace").encode("utf-8"))
    except DECODE_ERRORS:
        return None


def blocks(content: str | list[Block] | msgspec.Raw | None) -> list[Block]:
    if content is None:
        return []
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [Block(type="text", text=content)]
    value = decode_raw(_BLOCKS, content)
    if value is None:
        return []
    if isinstance(value, str):
        return [Block(type="text", text=value)]
    return cast(list[Block], value)


def joined_text(raw: str | list[Block] | msgspec.Raw | None) -> str | None:
    """Text of a content field: a string, or text blocks (tool results nest them)."""
    parts = [b.text for b in blocks(raw) if b.type == "text" and b.text]
    return "\n".join(parts) if parts else None


def is_null(raw: msgspec.Raw) -> bool:
    # compared as Raw: bytes(raw) copied every field (a command's whole output) to compare
    return len(raw) == 0 or raw == NULL
