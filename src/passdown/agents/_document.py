"""Sessions (and parts of sessions) that are one JSON document: read whole, bounded and
sized by the file (`_jsonl.read_side_file`), then decoded, with a warning for each way
that can fail (`decode_document`), or quietly for a side file whose absence only means
less to say (`decode_side_file`); and finding one fact in such a document without
reading it whole (`find_first`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

from passdown._jsonl import MAX_SIDE_FILE_BYTES, open_regular, read_side_file
from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS
from passdown.transcript import Diagnostics

T = TypeVar("T")

_CHUNK = 1024 * 1024
_MIB = 1024 * 1024


def read_document(path: Path, limit: int, diag: Diagnostics, what: str = "") -> bytes | None:
    """A one-document session's bytes (or one part's), or None with a warning when it is
    missing, unreadable, not a regular file or larger than `limit`. `what` names the
    kind of part in the warning ("context chunk ")."""
    data = read_side_file(path, limit)
    if data is None:
        diag.warnings.append(
            f"could not read {what}{path.name} (missing, unreadable or larger than "
            f"{limit // _MIB} MB)"
        )
    return data


def decode_document(
    path: Path,
    decoder: LazyDecoder[T],
    limit: int,
    diag: Diagnostics,
    *,
    shape: str,
    what: str = "",
) -> T | None:
    """`read_document`, decoded: None with a warning when it could not be read or is not
    `shape` ("an Auggie session document": not JSON, or JSON of another shape). The
    bytes are dropped on return: the decoded raw slices keep what is needed."""
    data = read_document(path, limit, diag, what)
    if data is None:
        return None
    try:
        return decoder.decode(data)
    except DECODE_ERRORS:
        diag.warnings.append(f"{what}{path.name} is not {shape}")
        return None


def decode_side_file(
    path: Path, decoder: LazyDecoder[T], limit: int = MAX_SIDE_FILE_BYTES
) -> T | None:
    """A side file decoded whole; None, quietly, when it is missing, unreadable, larger
    than `limit` or of another shape (what it would add is left out)."""
    data = read_side_file(path, limit)
    if data is None:
        return None
    try:
        return decoder.decode(data)
    except DECODE_ERRORS:
        return None


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
