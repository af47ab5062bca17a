"""What the checkpointed line readers (Codex, Copilot, Droid, gptme, Kimi) share: the
reader that stops between two lines, keeps the tool calls still waiting for their result,
and continues from its state (`passdown._checkpoint` stores it; `Agent.resumable_reader`
restores it), and `LineSessionAgent`, the agent whose sessions such a reader reads.

Each reader states its own fields in `state` and reads them back in `restore`; the
state went through msgspec and a file on disk, so every value is checked for its type
and a value of the wrong type counts as absent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, TypeVar

from passdown.agents.base import Agent
from passdown.transcript import Diagnostics, Event, SessionInfo, SessionRef, ToolCall, Transcript

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

    def events(self, stream: BinaryIO | None = None) -> Iterator[Event]:
        """The events of the lines of `stream` (None: the whole file at `path`)."""
        raise NotImplementedError

    def close(self) -> Iterator[Event]:
        """The events due at the end of the file; none unless a reader buffers."""
        return iter(())

    def state(self) -> dict[str, object]:
        raise NotImplementedError

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        """Continue from `state`; `pending` holds the restored calls extraction still
        waits for (a reader that completes a call must complete those objects)."""
        raise NotImplementedError


class LineSessionAgent(Agent):
    """An agent whose session is one append-only JSON Lines file, read by its
    `line_reader` in full or, through a checkpoint, from where the last export stopped."""

    supports_checkpoint = True

    def line_reader(self) -> type[LineStateReader]:
        """The class of this agent's reader."""
        raise NotImplementedError

    def read(self, ref: SessionRef) -> Transcript:
        def produce(info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
            self.before_reading(ref, info)
            reader = self.line_reader()(ref.path, info, diag)
            yield from reader.events()
            yield from reader.close()

        return self.stream(ref, produce)

    def before_reading(self, ref: SessionRef, info: SessionInfo) -> None:
        """What the listing knew that the file does not say (a title), noted first."""

    def resumable_reader(
        self,
        info: SessionInfo,
        diagnostics: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
    ) -> LineStateReader:
        return self.line_reader().resumed(info, diagnostics, state, pending)


def state_str(state: Mapping[str, object], key: str) -> str | None:
    value = state.get(key)
    return value if isinstance(value, str) else None


def state_strs(state: Mapping[str, object], key: str) -> list[str]:
    value = state.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
