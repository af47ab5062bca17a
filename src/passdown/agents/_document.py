"""Reading a session that is one JSON document (Auggie, Continue CLI): its bytes once,
bounded, and only as many as the file holds.

`_jsonl.read_side_file(path, limit)` asks for `limit + 1` bytes in one read, and a
buffered read of n bytes allocates n up front: with a 256 MiB bound every session would
cost 256 MiB of address space. Here the read is sized by the file (a file that grows
while it is read is read up to the bound, never past it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from passdown._jsonl import open_regular

_CHUNK = 1024 * 1024


def read_document(path: Path, limit: int) -> bytes | None:
    """The file's bytes; None when it is missing, unreadable, not a regular file or
    larger than `limit`."""
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                return None
            parts = [handle.read(size)]
            total = len(parts[0])
            while total <= limit:  # it grew since the stat (the agent is writing it)
                more = handle.read(min(_CHUNK, limit + 1 - total))
                if not more:
                    break
                parts.append(more)
                total += len(more)
    except OSError:
        return None
    return None if total > limit else b"".join(parts) if len(parts) > 1 else parts[0]


def find_first(
    path: Path, pattern: re.Pattern[bytes], limit: int, overlap: int = 64 * 1024
) -> bytes | None:
    """The first match's group 1 in the file's first `limit` bytes, read a chunk at a time
    (a match may straddle two chunks: `overlap` bytes are searched again); None when
    there is none or the file cannot be read. For a fact a long first prompt pushed past
    the head discovery reads (Auggie's cwd comes after the prompt, twice)."""
    tail = b""
    read = 0
    try:
        with open_regular(path) as handle:
            while read < limit:
                chunk = handle.read(min(_CHUNK, limit - read))
                if not chunk:
                    return None
                read += len(chunk)
                window = tail + chunk
                match = pattern.search(window)
                if match is not None:
                    return match.group(1)
                tail = window[-overlap:]
    except OSError:
        return None
    return None
