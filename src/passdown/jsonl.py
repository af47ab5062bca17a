"""Streaming access to JSON Lines session files, forwards and backwards.

Session files reach several GB, so nothing here holds more than one chunk plus the
current line in memory. `.zst` files are decompressed as a stream (forwards) or spilled
to a private temporary file when a reader needs to seek (backwards).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

from passdown.errors import SessionReadError
from passdown.transcript import Diagnostics

CHUNK = 4 * 1024 * 1024
# A line longer than this is skipped (and counted), not parsed: it bounds memory.
MAX_LINE_BYTES = 256 * 1024 * 1024

# Set by a front end that shows progress (the CLI on a terminal): called once per chunk
# with the file and the bytes read so far in the current pass. A context variable, so
# no other thread or caller sees the hook.
read_progress: ContextVar[Callable[[Path, int], None] | None] = ContextVar(
    "read_progress", default=None
)


def _report(path: Path, done: int) -> None:
    hook = read_progress.get()
    if hook is not None:
        hook(path, done)


def is_zstd(path: Path) -> bool:
    return path.name.endswith(".zst")


@contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """The file's decompressed bytes as a forward-only stream."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise SessionReadError(f"session file not found: {path}") from None
    except OSError as exc:
        raise SessionReadError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if is_zstd(path):
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(raw, closefd=False) as stream:
                yield stream  # type: ignore[misc]
        else:
            yield raw
    finally:
        raw.close()


class LineReader:
    """Iterates the lines of one file, recording what it had to skip.

    `tail_offset` is the offset of a last line that had no newline (possibly torn
    by a writer that was killed), or -1: the caller decides, after trying to parse
    it, whether it was torn.
    """

    def __init__(self, path: Path, diagnostics: Diagnostics) -> None:
        self.path = path
        self.diagnostics = diagnostics
        self.tail_offset = -1

    def forward(self, stream: BinaryIO | None = None) -> Iterator[tuple[int, bytes]]:
        """(offset, line) pairs in file order; offsets count decompressed bytes."""
        if stream is not None:
            yield from self._forward(stream)
            return
        with open_binary(self.path) as opened:
            yield from self._forward(opened)

    def _forward(self, stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
        diag = self.diagnostics
        pending: list[bytes] = []  # pieces of a line that spans chunks
        pending_size = 0
        skipping = False  # inside an oversized line: drop bytes until its newline
        line_start = 0
        pos = 0  # offset of the next byte to place
        try:
            while chunk := stream.read(CHUNK):
                parts = chunk.split(b"\n")
                last = parts.pop()
                for part in parts:  # each of these ends at a newline
                    if skipping:
                        skipping = False
                    elif pending:
                        pending.append(part)
                        line = b"".join(pending)
                        pending.clear()
                        pending_size = 0
                        if len(line) > MAX_LINE_BYTES:
                            diag.oversized_lines += 1
                        else:
                            diag.lines += 1
                            yield line_start, line
                    elif len(part) > MAX_LINE_BYTES:
                        diag.oversized_lines += 1
                    elif part:
                        diag.lines += 1
                        yield pos, part
                    pos += len(part) + 1
                    line_start = pos
                if last and not skipping:
                    pending.append(last)
                    pending_size += len(last)
                    if pending_size > MAX_LINE_BYTES:
                        diag.oversized_lines += 1
                        skipping = True
                        pending.clear()
                        pending_size = 0
                pos += len(last)
                _report(self.path, pos)
        except OSError as exc:
            raise SessionReadError(f"cannot read {self.path}: {exc}") from None
        except Exception as exc:  # zstd stream errors come as their own class
            diag.warnings.append(f"stopped reading {self.path.name} early: {exc}")
            return
        if pending and not skipping:
            self.tail_offset = line_start
            diag.lines += 1
            yield line_start, b"".join(pending)

    def backward(self) -> Iterator[tuple[int, bytes]]:
        """(offset, line) pairs from the end of the file to the start."""
        with seekable(self.path) as handle:
            yield from self._backward(handle)

    def _backward(self, handle: BinaryIO) -> Iterator[tuple[int, bytes]]:
        diag = self.diagnostics
        pos = end = handle.seek(0, os.SEEK_END)
        carry = b""  # start of a line that began before the current chunk
        skipping = False  # inside an oversized line: drop bytes until its start
        at_end = True
        while pos > 0:
            size = min(CHUNK, pos)
            pos -= size
            handle.seek(pos)
            chunk = handle.read(size)
            _report(self.path, end - pos)
            lines = chunk.split(b"\n")
            if carry:  # join only the one line that spans the boundary, not the chunk
                lines[-1] += carry
            cursor = pos + len(chunk) + len(carry)
            for k in range(len(lines) - 1, 0, -1):
                line = lines[k]
                start = cursor - len(line)
                cursor = start - 1
                if skipping:
                    skipping = False  # this newline ends the oversized line's start
                    at_end = False
                    continue
                if len(line) > MAX_LINE_BYTES:
                    diag.oversized_lines += 1
                elif line:
                    if at_end and k == len(lines) - 1:
                        self.tail_offset = start
                    diag.lines += 1
                    yield start, line
                at_end = False
            carry = lines[0]
            if len(carry) > MAX_LINE_BYTES:
                if not skipping:
                    diag.oversized_lines += 1
                skipping = True
                carry = b""
        if carry and not skipping:
            if at_end:
                self.tail_offset = 0
            diag.lines += 1
            yield 0, carry


@contextmanager
def seekable(path: Path) -> Iterator[BinaryIO]:
    """A seekable handle on the decompressed file (spilled to a 0600 temp file for .zst)."""
    if not is_zstd(path):
        try:
            with open(path, "rb") as handle:
                yield handle
        except FileNotFoundError:
            raise SessionReadError(f"session file not found: {path}") from None
        except OSError as exc:
            raise SessionReadError(f"cannot read {path}: {exc.strerror or exc}") from None
        return
    with tempfile.TemporaryFile(prefix="passdown-") as spill, open_binary(path) as stream:
        while chunk := stream.read(CHUNK):
            spill.write(chunk)
        spill.flush()
        yield spill


def start_fingerprint(path: Path) -> Future[str]:
    """sha256 of the file as stored, computed on a thread while the parser runs
    (hashlib and file reads release the GIL, so this uses the second core)."""
    future: Future[str] = Future()

    def work() -> None:
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(CHUNK):
                    digest.update(chunk)
            future.set_result(digest.hexdigest())
        except OSError as exc:
            future.set_exception(exc)

    threading.Thread(target=work, name="passdown-sha256", daemon=True).start()
    return future
