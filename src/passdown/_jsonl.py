"""Streaming access to JSON Lines session files, forwards and backwards.

Session files reach several GB, so nothing here holds more than one chunk plus the
current line in memory. `.zst` files are decompressed as a stream (forwards) or spilled
to a private temporary file when a reader needs to seek (backwards).

Every session and side file an agent module reads is opened here (`open_regular`,
`read_side_file`): only regular files are read, so a FIFO, a device (`/dev/zero`) or a
socket planted as a session file never blocks or spins, and side files are size-bounded.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import islice
from pathlib import Path
from typing import BinaryIO, cast

from passdown import _platform
from passdown.errors import SessionReadError
from passdown.transcript import Diagnostics

# 1 MiB: a read holds a chunk, its lines and the next chunk at once, so a bigger chunk
# only adds to the peak memory of every file past it (4 MiB: +20 MB), not speed
CHUNK = 1024 * 1024
# A line longer than this is skipped (and counted), not parsed: it bounds memory.
MAX_LINE_BYTES = 256 * 1024 * 1024
# The bound inside a compressed file: a few KB of .zst can inflate to one line of
# hundreds of MB, so the size on disk no longer limits what a line costs. Real lines
# (a pasted image, a large tool output) stay far below this.
MAX_ZSTD_LINE_BYTES = 32 * 1024 * 1024
# A compressed file that inflates past this many times its size (and past
# MAX_LINE_BYTES) is read no further: JSON text compresses about 5-20x.
MAX_ZSTD_RATIO = 1000
# Side files (a plan list, a project registry, a workspace.yaml) are small; one larger
# than this is not read.
MAX_SIDE_FILE_BYTES = 16 * 1024 * 1024


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket or folder, not a file passdown will read."""


def open_regular(path: Path) -> BinaryIO:
    """Open `path` for reading only if it is a regular file (symlinks followed).

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer;
    the type is then checked on the open descriptor (no race with a swapped path) and
    the flag cleared again for ordinary blocking reads."""
    fd = _platform.open_nonblocking(path, os.O_RDONLY | _platform.O_NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, "not a regular file", str(path))
        _platform.set_blocking(fd)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_side_file(path: Path, limit: int = MAX_SIDE_FILE_BYTES) -> bytes | None:
    """A side file's (or a one-document session's) bytes, or None when it is missing,
    unreadable, not a regular file or larger than `limit` (never more than `limit` + 1
    bytes are read). The read is sized by the file, not the bound: a buffered read of n
    bytes allocates n up front, and bounds run to 256 MiB. A file that grows while it is
    read (its agent writing it) is read on up to the bound."""
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                return None
            parts = [handle.read(size)]
            total = len(parts[0])
            while total <= limit:
                more = handle.read(min(_GROWTH_CHUNK, limit + 1 - total))
                if not more:
                    break
                parts.append(more)
                total += len(more)
    except OSError:
        return None
    if total > limit:
        return None
    return parts[0] if len(parts) == 1 else b"".join(parts)


_GROWTH_CHUNK = 1024 * 1024


def _open_session(path: Path) -> BinaryIO:
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise SessionReadError(f"session file not found: {path}") from None
    except NotRegularFile:
        raise SessionReadError(f"not a regular file: {path}") from None
    except OSError as exc:
        raise SessionReadError(f"cannot read {path}: {exc.strerror or exc}") from None


def line_limit(path: Path) -> int:
    return min(MAX_LINE_BYTES, MAX_ZSTD_LINE_BYTES) if is_zstd(path) else MAX_LINE_BYTES


class DecompressionLimit(ValueError):
    """A compressed session inflates far past what its size allows (a bomb)."""


class _BoundedStream:
    """A decompressing stream that raises once it has produced more than `limit` bytes,
    so a decompression bomb costs bounded time as well as memory (the line reader turns
    the error into a warning and keeps what it read)."""

    def __init__(self, stream: BinaryIO, limit: int, path: Path) -> None:
        self._stream = stream
        self._left = limit
        self._path = path

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:  # everything allowed was read: is there more?
            if self._stream.read(1):
                raise DecompressionLimit(
                    f"{self._path.name} inflates to more than {MAX_ZSTD_RATIO} times its size"
                )
            return b""
        data = self._stream.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(data)
        return data


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
    """The file's decompressed bytes as a forward-only stream (a regular file only; a
    compressed one is cut off past MAX_ZSTD_RATIO times its size)."""
    raw = _open_session(path)
    try:
        if is_zstd(path):
            import zstandard

            size = os.fstat(raw.fileno()).st_size
            limit = max(MAX_LINE_BYTES, size * MAX_ZSTD_RATIO)
            with zstandard.ZstdDecompressor().stream_reader(raw, closefd=False) as stream:
                yield _BoundedStream(stream, limit, path)  # type: ignore[misc]
        else:
            yield raw
    finally:
        raw.close()


class FdWindow:
    """Bytes [start, end) of a file descriptor as a forward-only stream. Positional reads
    leave the descriptor's own offset alone, so a thread hashing the same descriptor never
    moves it under the reader."""

    def __init__(self, fd: int, start: int, end: int) -> None:
        self.fd, self.pos, self.end = fd, start, end

    def read(self, size: int = -1) -> bytes:
        left = self.end - self.pos
        size = left if size < 0 or size > left else size
        if size <= 0:
            return b""
        data = _platform.pread(self.fd, size, self.pos)
        self.pos += len(data)
        return data


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
        self.max_line = line_limit(path)

    def forward(self, stream: BinaryIO | None = None) -> Iterator[tuple[int, bytes]]:
        """(offset, line) pairs in file order; offsets count decompressed bytes."""
        if stream is not None:
            return self._forward(stream)  # no generator around it: one step less per line
        return self._forward_file()

    def _forward_file(self) -> Iterator[tuple[int, bytes]]:
        with open_binary(self.path) as opened:
            yield from self._forward(opened)

    def _forward(self, stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
        diag = self.diagnostics
        limit = self.max_line
        pending: list[bytes] = []  # pieces of a line that spans chunks
        pending_size = 0
        skipping = False  # inside an oversized line: drop bytes until its newline
        line_start = 0
        pos = 0  # offset of the next byte to place
        chunk_size = getattr(stream, "chunk_size", CHUNK)  # a read-ahead's chunks come whole
        try:
            while chunk := stream.read(chunk_size):
                parts = chunk.split(b"\n")
                chunk = b""  # the lines are copies: the chunk goes before they are read
                last = parts.pop()
                if parts:  # the first of these ends the line the chunks before began
                    first = parts[0]
                    if skipping:
                        skipping = False
                    elif pending:
                        pending.append(first)
                        line = b"".join(pending)
                        pending.clear()
                        pending_size = 0
                        if len(line) > limit:
                            diag.oversized_lines += 1
                        else:
                            diag.lines += 1
                            yield line_start, line
                    elif len(first) > limit:
                        diag.oversized_lines += 1
                    elif first:
                        diag.lines += 1
                        yield pos, first
                    pos += len(first) + 1
                    counted = 0  # added to diag.lines once per chunk, however it stops
                    try:
                        for part in islice(parts, 1, None):  # whole lines, each ending at a newline
                            size = len(part)
                            if size > limit:
                                diag.oversized_lines += 1
                            elif size:
                                counted += 1
                                yield pos, part
                            pos += size + 1
                    finally:
                        diag.lines += counted
                    line_start = pos
                if last and not skipping:
                    pending.append(last)
                    pending_size += len(last)
                    if pending_size > limit:
                        diag.oversized_lines += 1
                        skipping = True
                        pending.clear()
                        pending_size = 0
                pos += len(last)
                parts = []  # this chunk's lines go before the next chunk comes
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

    def backward(self, handle: BinaryIO | None = None) -> Iterator[tuple[int, bytes]]:
        """(offset, line) pairs from the end of the file to the start (of `handle`, a
        seekable view of part of it, when given: offsets are then the view's)."""
        if handle is not None:
            yield from self._backward(handle)
            return
        with seekable(self.path, self.diagnostics) as handle:
            yield from self._backward(handle)

    def _backward(self, handle: BinaryIO) -> Iterator[tuple[int, bytes]]:
        diag = self.diagnostics
        limit = self.max_line
        pos = end = handle.seek(0, os.SEEK_END)
        # The part of a line that began before the current chunk, as pieces in reverse
        # file order: a line spanning many chunks is joined once, never copied per chunk.
        carry: list[bytes] = []
        carry_size = 0
        skipping = False  # inside an oversized line: drop bytes until its start
        at_end = True
        while pos > 0:
            size = min(CHUNK, pos)
            pos -= size
            handle.seek(pos)
            chunk = handle.read(size)
            _report(self.path, end - pos)
            lines = chunk.split(b"\n")
            if len(lines) == 1:  # the whole chunk lies inside one line
                if not skipping:
                    carry.append(chunk)
                    carry_size += len(chunk)
                    if carry_size > limit:
                        diag.oversized_lines += 1
                        skipping, carry, carry_size = True, [], 0
                continue
            cursor = pos + len(chunk) + carry_size
            if carry:  # join only the one line that spans the boundary, not the chunk
                lines[-1] += b"".join(reversed(carry))
            for k in range(len(lines) - 1, 0, -1):
                line = lines[k]
                start = cursor - len(line)
                cursor = start - 1
                if skipping:
                    skipping = False  # this newline ends the oversized line's start
                    at_end = False
                    continue
                if len(line) > limit:
                    diag.oversized_lines += 1
                elif line:
                    if at_end and k == len(lines) - 1:
                        self.tail_offset = start
                    diag.lines += 1
                    yield start, line
                at_end = False
            carry, carry_size = [lines[0]], len(lines[0])
            if carry_size > limit:
                diag.oversized_lines += 1
                skipping, carry, carry_size = True, [], 0
        if carry_size and not skipping:
            if at_end:
                self.tail_offset = 0
            diag.lines += 1
            yield 0, b"".join(reversed(carry))


@contextmanager
def seekable(path: Path, diagnostics: Diagnostics | None = None) -> Iterator[BinaryIO]:
    """A seekable handle on the decompressed file (spilled to a 0600 temp file for .zst;
    a corrupt or bomb-like stream is spilled up to where it stops, with a warning)."""
    if not is_zstd(path):
        with _open_session(path) as handle:
            yield handle
        return
    with tempfile.TemporaryFile(prefix="passdown-") as spill, open_binary(path) as stream:
        try:
            while chunk := stream.read(CHUNK):
                spill.write(chunk)
        except OSError as exc:
            raise SessionReadError(f"cannot read {path}: {exc}") from None
        except Exception as exc:  # zstd stream errors, DecompressionLimit
            if diagnostics is not None:
                diagnostics.warnings.append(f"stopped reading {path.name} early: {exc}")
        spill.flush()
        yield cast(BinaryIO, spill)  # a wrapper of the file object on Windows


def start_fingerprint(path: Path) -> Future[str]:
    """The file's chain digest as stored (`passdown._digest`), computed on a thread while
    the parser runs (hashlib and file reads release the GIL, so it runs beside it)."""
    from passdown._digest import file_digest

    future: Future[str] = Future()

    def work() -> None:
        try:
            with open_regular(path) as handle:
                future.set_result(file_digest(handle.read))
        except OSError as exc:
            future.set_exception(exc)

    threading.Thread(target=work, name="passdown-sha256", daemon=True).start()
    return future
