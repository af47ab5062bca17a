"""What the checkpointed line readers (Codex, Copilot) share: the reader that stops
between two lines, keeps the tool calls still waiting for their result, and continues
from its state (`passdown._checkpoint` stores it; `Agent.resumable_reader` restores it).

Each reader states its own fields in `state` and reads them back in `restore`; the
state went through msgspec and a file on disk, so every value is checked for its type
and a value of the wrong type counts as absent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from passdown.transcript import Diagnostics, Event, SessionInfo, ToolCall

Reader = TypeVar("Reader", bound="LineStateReader")


class LineStateReader:
    """A forward-only JSON Lines reader whose memory between lines is plain data."""

    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        self.path = path
        self.info = info
        self.diag = diag
        self.calls: dict[str, ToolCall] = {}  # emitted, their result not read yet

    @classmethod
    def resumed(
        cls: type[Reader],
        info: SessionInfo,
        diagnostics: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
    ) -> Reader:
        """`Agent.resumable_reader`: a reader of `info.path` from `state` (None or
        anything but a dict: from the start of the file)."""
        reader = cls(info.path, info, diagnostics)
        if isinstance(state, dict):
            reader.restore(state, pending)
        return reader

    def close(self) -> Iterator[Event]:
        """The events due at the end of the file; none unless a reader buffers."""
        return iter(())

    def state(self) -> dict[str, object]:
        raise NotImplementedError

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        """Continue from `state`; `pending` holds the restored calls extraction still
        waits for (a reader that completes a call must complete those objects)."""
        raise NotImplementedError


def state_str(state: Mapping[str, object], key: str) -> str | None:
    value = state.get(key)
    return value if isinstance(value, str) else None


def state_strs(state: Mapping[str, object], key: str) -> list[str]:
    value = state.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
