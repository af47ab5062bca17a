"""Reading a session that is one JSON document (Auggie, Continue CLI): its bytes once,
bounded, and only as many as the file holds.

`_jsonl.read_side_file(path, limit)` asks for `limit + 1` bytes in one read, and a
buffered read of n bytes allocates n up front: with a 256 MiB bound every session would
cost 256 MiB of address space. Here the read is sized by the file (a file that grows
while it is read is read up to the bound, never past it).
"""

from __future__ import annotations

import os
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
