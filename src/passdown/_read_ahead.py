"""The session's new bytes read once, on a thread: each chunk is folded into the file's
chain digest (`passdown._digest`) and handed to the parse, which reads it from memory.

The thread's file reads and its SHA-256 let the GIL go, so they run beside the parse
on a second core; the parse does not read the file itself, and the digest does not read
it a second time. At most `DEPTH` chunks wait between the two (memory stays flat
whatever the file's size). Chunks are the digest's blocks: the thread takes the GIL
back a few times per chunk, each time perhaps after the interpreter's switch interval,
and chunks this large let it keep pace with the parse. The digest covers every byte of
the window, whether the parse reads all of it or stops early: `close` lets the thread
finish without handing on what nobody will read.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType

from passdown._digest import BLOCK, ChainDigest

DEPTH = 1  # chunks waiting for the parse, beside the one the thread reads
CHUNK = BLOCK  # a chain continued from a state starts on a block: each read is one block
_END = b""  # the thread's last word, when it read the window without error


class ReadAhead:
    """Bytes [start, end) of a file as a forward-only stream (`read`), read and hashed
    on a thread; with `hash_from` before `start`, the bytes from there on are hashed too
    (a chain continued from a saved state is given the file from its `folded` on). A
    read error of the thread is raised by `read` when the parse gets there, and kept in
    `failed` for the caller either way."""

    chunk_size = CHUNK  # what a line reader asks for at a time (`passdown._jsonl`)

    def __init__(
        self,
        read_at: Callable[[int, int], bytes],
        start: int,
        end: int,
        chain: ChainDigest,
        *,
        hash_from: int | None = None,
    ) -> None:
        self.failed: list[OSError] = []
        self._read_at = read_at
        self._hash_from = start if hash_from is None else min(hash_from, start)
        self._start, self._end = start, end
        self._chain = chain
        self._chunks: queue.Queue[bytes | OSError] = queue.Queue(maxsize=DEPTH)
        self._listening = True  # False once the parse stops reading: only hash on
        self._buffer = memoryview(b"")
        self._done = False
        self._thread = threading.Thread(target=self._run, name="passdown-read", daemon=True)
        self._thread.start()

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # the parse's side ---------------------------------------------------------------
    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (a whole chunk for -1) from where the last read stopped;
        empty at the end of the window."""
        if not self._buffer:
            if self._done:
                return b""
            chunk = self._chunks.get()
            if isinstance(chunk, OSError):
                self._done = True
                raise chunk
            if not chunk:  # the end of the window
                self._done = True
                return b""
            if size < 0 or size >= len(chunk):
                return chunk  # the common case: the chunk as it came, no copy
            self._buffer = memoryview(chunk)
        if size < 0 or size >= len(self._buffer):
            data, self._buffer = bytes(self._buffer), memoryview(b"")
            return data
        data, self._buffer = bytes(self._buffer[:size]), self._buffer[size:]
        return data

    def close(self) -> None:
        """Wait for the thread to hash the rest of the window, taking whatever it still
        hands on (nobody reads it now)."""
        self._listening = False
        while not self._done:
            item = self._chunks.get()
            self._done = isinstance(item, OSError) or not item
        self._thread.join()

    # the thread's side --------------------------------------------------------------
    def _run(self) -> None:
        last: bytes | OSError = _END
        pos, start, end = self._hash_from, self._start, self._end
        try:
            while pos < end:
                data = self._read_at(min(CHUNK, end - pos), pos)
                if not data:
                    break
                self._chain.update(data)
                pos += len(data)
                if pos > start and self._listening:
                    if pos - len(data) < start:  # only hashed up to `start`
                        data = data[start - pos :]
                    self._chunks.put(data)  # waits while DEPTH chunks are unread
        except OSError as exc:
            self.failed.append(exc)
            last = exc
        finally:
            self._chunks.put(last)  # always: `read` and `close` wait for it
