"""Small helpers shared by agent modules (parsing details stay in each agent's module)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec

from passdown.transcript import Diagnostics

_EXIT_CODE = re.compile(r"(?:exit(?:ed)? (?:with )?code|exit status)[:= ]*(-?\d+)", re.IGNORECASE)
ERROR_LINE_CHARS = 300
_SEPARATOR = re.compile(r"[-=_*~#.+ ]+")
_ERROR_WORDS = (
    "error",
    "fail",
    "exception",
    "fatal",
    "denied",
    "not found",
    "no such",
    "cannot",
    "can't",
    "could not",
    "unable",
    "invalid",
    "refused",
    "traceback",
    "panic",
    "abort",
)


def decode_line(
    decoder: msgspec.json.Decoder, line: bytes, offset: int, tail_offset: int, diag: Diagnostics
) -> object | None:
    """Decode one JSONL line; bad bytes are replaced, a torn last line is noted."""
    try:
        return decoder.decode(line)
    except msgspec.DecodeError:
        pass
    try:  # non-UTF-8 bytes: keep what can be read
        return decoder.decode(line.decode("utf-8", "replace").encode("utf-8"))
    except msgspec.DecodeError:
        if offset == tail_offset:
            diag.torn_last_line = True
        else:
            diag.bad_lines += 1
        return None


def parse_exit_code(text: str | None) -> int | None:
    if not text:
        return None
    match = _EXIT_CODE.search(text[:2000])
    return int(match.group(1)) if match else None


def first_error_line(text: str | None) -> str | None:
    """The first line of a failure's output that says what went wrong (and the final
    verdict line when a test runner prints one), trimmed. Never the whole output."""
    if not text:
        return None
    head = text[:20000]
    first = _errorish_line(head, last=False) or next(
        (line for line in map(_clean, head.splitlines()[:200]) if line), None
    )
    if first is None:
        return None
    last = _errorish_line(text[-3000:], last=True)
    found = first if last in (None, first) else f"{first} … {last}"
    return found if len(found) <= ERROR_LINE_CHARS else found[: ERROR_LINE_CHARS - 1] + "…"


def _errorish_line(text: str, *, last: bool) -> str | None:
    """The first (or last) line naming an error, found with a few substring searches
    over the whole text rather than a scan line by line."""
    low = text.lower()
    if last:
        hits = [low.rfind(word) for word in _ERROR_WORDS]
        pos = max(hits)
    else:
        hits = [i for i in (low.find(word) for word in _ERROR_WORDS) if i >= 0]
        pos = min(hits) if hits else -1
    if pos < 0:
        return None
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return _clean(text[start : end if end >= 0 else len(text)]) or None


def _clean(raw: str) -> str:
    line = raw.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
    if not line or _SEPARATOR.fullmatch(line) or _EXIT_CODE.fullmatch(line):
        return ""
    if line.lower().startswith(
        ("exit code", "process exited", "chunk id:", "wall time:", "output:")
    ):
        return ""
    return line


def env_path(var: str, default: Path) -> Path:
    """An agent's folder: its environment override when set, else the default."""
    configured = os.environ.get(var)
    return Path(configured).expanduser() if configured else default


def file_mtime(path: Path) -> tuple[float, int]:
    try:
        st = os.stat(path)
    except OSError:
        return 0.0, 0
    return st.st_mtime, st.st_size


def read_head(path: Path, limit: int = 256 * 1024) -> bytes:
    """The first bytes of a (possibly compressed) session file, for cheap discovery."""
    from passdown.jsonl import open_binary

    try:
        with open_binary(path) as stream:
            return stream.read(limit)
    except Exception:
        return b""
