"""The stdio transport of `passdown mcp`: one JSON-RPC message per line, every request
answered, in the order it was read, before the server exits.

The SDK's own stdio transport ends the session at end of input and cancels whatever
is still running, so `printf '<initialize>\\n<initialized>\\n<tools/call>\\n' | passdown
mcp` lost the tool's answer; lines that are not JSON-RPC were dropped without a word.
Here:

- At end of input the session goes on until every request read has been answered and
  written (flushed); then the process exits 0.
- Answers are written in the order their requests were read, whatever order the
  handlers finish in (a request the client cancels is skipped, as the protocol says).
  A `subscriptions/listen` request stays open until the client ends it: it takes no
  place in that order, and end of input does not wait for it.
  Requests still run concurrently, as JSON-RPC allows: a client that needs one
  request's effect (a stored handoff) before the next waits for its answer.
- A line that is not JSON gets a parse error (-32700, id null); JSON that is not a
  JSON-RPC message gets an invalid-request error (-32600, with its id when it has a
  usable one). Blank lines are skipped (they carry no message). A last line without a
  newline is read like any other.
- While serving, descriptor 0 reads the null device and descriptor 1 writes to stderr
  (as the SDK's transport does), so a child process or a stray print cannot read the
  client's input or corrupt the wire.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types
from mcp.shared.message import SessionMessage

from passdown.mcp._handshake import EarlyLines

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# Larger than any record the store takes (8 MiB) once JSON-escaped; a longer line is
# read to its end and refused, never held whole.
MAX_LINE = 32 * 1024 * 1024
_CANCELLED = "notifications/cancelled"
_LISTEN = "subscriptions/listen"  # open until the client ends it (MCP 2026-07-28)


@dataclass(slots=True)
class _Slot:
    """One answer owed, in the order the requests were read."""

    request_id: object  # a JSON-RPC id; None for our own error answers
    line: bytes | None = None  # the answer, once known
    drop: bool = False  # answered early (passdown.mcp._handshake): the SDK's copy is dropped
    skip: bool = False  # cancelled by the client: no answer is owed


@dataclass(slots=True)
class _Answers:
    """The answers owed, written strictly in request order."""

    out: IO[bytes]
    slots: deque[_Slot] = field(default_factory=deque)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    settled: anyio.Event = field(default_factory=anyio.Event)
    late_drops: list[object] = field(default_factory=list)  # cancelled, answered early
    lost: int = 0  # answers the client did not take (it closed its end of stdout)

    def owe(self, slot: _Slot) -> None:
        self.slots.append(slot)
        self.settled = anyio.Event()

    async def cancel(self, request_id: object) -> None:
        slot = self._open_slot(request_id)
        if slot is not None:
            slot.skip = True
            if slot.drop:  # the SDK may still answer it: that copy is dropped too
                self.late_drops.append(request_id)
            await self.flush()

    async def answer(self, request_id: object, line: bytes) -> None:
        slot = self._open_slot(request_id)
        late = next((i for i, d in enumerate(self.late_drops) if _same_id(d, request_id)), None)
        if slot is None and late is not None:
            del self.late_drops[late]
            return
        if slot is None:  # not a request we read (or answered already): write it now
            await self.write([line])
            return
        if slot.drop:
            slot.skip = True
        else:
            slot.line = line
        await self.flush()

    async def flush(self) -> None:
        # popped and written under one lock: once no slot is left, every answer is out
        async with self.lock:
            ready: list[bytes] = []
            while self.slots and (self.slots[0].line is not None or self.slots[0].skip):
                slot = self.slots.popleft()
                if slot.line is not None and not slot.skip:
                    ready.append(slot.line)
            if ready:
                await self._send(ready)
            if not self.slots:
                self.settled.set()

    async def write(self, lines: list[bytes]) -> None:
        async with self.lock:  # one writer at a time: lines never interleave
            await self._send(lines)

    async def _send(self, lines: list[bytes]) -> None:
        if self.lost:
            self.lost += len(lines)
            return
        try:
            await anyio.to_thread.run_sync(_write_all, self.out, b"".join(lines))
        except (OSError, ValueError):  # a closed pipe: the client is gone
            self.lost += len(lines)

    def _open_slot(self, request_id: object) -> _Slot | None:
        return next(
            (
                s
                for s in self.slots
                if s.line is None and not s.skip and _same_id(s.request_id, request_id)
            ),
            None,
        )


def _same_id(a: object, b: object) -> bool:
    # 1 and True, or 1 and 1.0, are different JSON-RPC ids
    return type(a) is type(b) and a == b


def _write_all(out: IO[bytes], data: bytes) -> None:
    out.write(data)
    out.flush()


def error_line(request_id: object, code: int, message: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(error, separators=(",", ":")).encode() + b"\n"


def _plain_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(line: bytes) -> SessionMessage | bytes:
    """The message on a line, or the error line that answers it."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        try:
            data = json.loads(line)
        except ValueError:
            return error_line(None, PARSE_ERROR, "Parse error: the line is not JSON")
        request_id = data.get("id") if isinstance(data, dict) else None
        return error_line(
            request_id if _plain_id(request_id) else None,
            INVALID_REQUEST,
            "Invalid request: not a JSON-RPC 2.0 request, notification or response",
        )
    return SessionMessage(message)


class _Reader:
    """The server's read stream: the lines read early, then stdin; at end of input it
    waits for every answer owed before it reports the end."""

    def __init__(self, source: IO[bytes], answers: _Answers, early: EarlyLines | None) -> None:
        self._source = source
        self._answers = answers
        self._early = deque(early.lines if early else [])
        self._answered_early = list(early.answered if early else [])
        self._ended = False

    async def receive(self) -> SessionMessage:
        while True:
            if self._answers.lost:
                raise anyio.EndOfStream  # nobody reads the answers: stop reading requests
            line = await self._next_line()
            if line is None:
                await self._answers.settled.wait()
                raise anyio.EndOfStream
            if not line.strip():
                continue
            item = _too_long(line) or classify(line)
            if isinstance(item, bytes):
                self._answers.owe(_Slot(None, line=item))
                await self._answers.flush()
                continue
            await self._note(item.message)
            return item

    async def _note(self, message: object) -> None:
        """Owe an answer to a request; a cancellation frees the request's slot. A
        subscription is answered only when it ends: it owes no place in the order, or every
        later answer would wait behind it (its answer is written whenever it comes)."""
        if isinstance(message, mcp_types.JSONRPCRequest) and message.method != _LISTEN:
            self._answers.owe(_Slot(message.id, drop=self._was_answered_early(message.id)))
        elif isinstance(message, mcp_types.JSONRPCNotification) and message.method == _CANCELLED:
            params = message.params or {}
            await self._answers.cancel(params.get("requestId"))

    def _was_answered_early(self, request_id: object) -> bool:
        for index, answered in enumerate(self._answered_early):
            if _same_id(answered, request_id):
                del self._answered_early[index]
                return True
        return False

    async def _next_line(self) -> bytes | None:
        if self._early:
            return self._early.popleft()
        if self._ended:
            return None
        line = await anyio.to_thread.run_sync(_read_line, self._source, abandon_on_cancel=True)
        if line is None:
            self._ended = True
        return line

    async def aclose(self) -> None:
        self._ended = True

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _read_line(source: IO[bytes]) -> bytes | None:
    """The next line (a last one without newline included); None at end of input. Of a
    line longer than MAX_LINE only the first MAX_LINE bytes are kept (see _too_long)."""
    line = source.readline(MAX_LINE)
    if not line:
        return None
    if _cut(line):
        while (rest := source.readline(MAX_LINE)) and _cut(rest):
            pass  # the rest of the too-long line, read and dropped
    return line


def _cut(line: bytes) -> bool:
    return len(line) >= MAX_LINE and not line.endswith(b"\n")


def _too_long(line: bytes) -> bytes | None:
    if not _cut(line):
        return None
    return error_line(None, INVALID_REQUEST, f"Invalid request: longer than {MAX_LINE} bytes")


class _Writer:
    """The server's write stream: answers go through `_Answers` (in request order),
    anything else (notifications, server requests) is written at once."""

    def __init__(self, answers: _Answers) -> None:
        self._answers = answers

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        line = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            await self._answers.answer(message.id, line)
        else:
            await self._answers.write([line])

    async def aclose(self) -> None:
        await self._answers.flush()

    async def __aenter__(self) -> _Writer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """stdin and stdout as private files; fd 0 reads /dev/null and fd 1 writes to stderr
    meanwhile (restored afterwards). The private descriptors stay open: a reading thread
    abandoned at shutdown may still block on one, which must not be reused under it."""
    import sys

    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    from passdown import _platform

    for fd in (wire_in, wire_out):
        _platform.binary_mode(fd)  # the wire is bytes: no CRLF translation on Windows
    source = os.fdopen(wire_in, "rb", closefd=False)
    out = os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield source, out
    finally:
        with contextlib.suppress(OSError, ValueError):
            out.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)


async def serve(lowlevel: Any, early: EarlyLines | None) -> None:
    """Run the SDK's server over stdin/stdout until the client's input ends and every
    request it sent is answered."""
    with claimed_stdio() as (source, out):
        answers = _Answers(out)
        answers.settled.set()
        reader = _Reader(source, answers, early)
        await lowlevel.run(reader, _Writer(answers), lowlevel.create_initialization_options())
        await answers.flush()
    if answers.lost:
        from passdown.errors import OutputError

        raise OutputError(
            f"the client closed its end of stdout: {answers.lost} answer(s) not delivered"
        )
