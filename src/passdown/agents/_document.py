"""Finding a fact in a session that is one JSON document (Auggie, Continue CLI) without
reading it whole; the whole document is read by `_jsonl.read_side_file`, bounded and
sized by the file."""

from __future__ import annotations

import re
from pathlib import Path

from passdown._jsonl import open_regular

_CHUNK = 1024 * 1024


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
