"""Small helpers shared by agent modules (parsing details stay in each agent's module)."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

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


# What decoding untrusted JSON can raise: a syntax or shape error (DecodeError, and
# ValidationError below it), or RecursionError for nesting deeper than msgspec allows.
DECODE_ERRORS = (msgspec.DecodeError, RecursionError)


def decode_line(
    decoder: msgspec.json.Decoder, line: bytes, offset: int, tail_offset: int, diag: Diagnostics
) -> object | None:
    """Decode one JSONL line into the decoder's typed shape; bad bytes are replaced, a
    torn last line is noted, and a line that cannot be read (bad JSON, a field of the
    wrong type, nesting too deep) is skipped and counted."""
    try:
        return decoder.decode(line)
    except DECODE_ERRORS:
        pass
    try:  # non-UTF-8 bytes: keep what can be read
        return decoder.decode(line.decode("utf-8", "replace").encode("utf-8"))
    except DECODE_ERRORS:
        if offset == tail_offset:
            diag.torn_last_line = True
        else:
            diag.bad_lines += 1
        return None


def decode_or_none(decoder: msgspec.json.Decoder, data: bytes | msgspec.Raw | str) -> object | None:
    """Decode one nested field or side file; anything unreadable gives None."""
    try:
        return decoder.decode(data)
    except DECODE_ERRORS:
        return None


def list_folder(folder: Path) -> list[Path]:
    """The entries of a folder of an agent's store; a missing folder (or a file where a
    folder was expected) has none. A folder that exists but cannot be listed raises
    OSError: the agent base class reports it as an unreadable store (exit 5)."""
    try:
        return list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def is_file(path: Path) -> bool:
    """Path.is_file, but never raising (a file in an unreadable folder is not one)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


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


SQLITE_BUSY_TIMEOUT = 2.0  # seconds: the agents' own writes hold the lock for milliseconds


def open_sqlite_readonly(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """A read-only connection to another program's SQLite database that never creates a
    file next to it, and a warning when the read may miss recent changes.

    SQLite creates `-shm` (and `-wal`) beside a WAL-mode database even for a `mode=ro`
    reader, and they stay behind when it closes. So a WAL database is read normally only
    while its owner has those files open anyway; otherwise it is read with `immutable=1`
    (no locks, no side files), which sees exactly the main file: everything, when no
    `-wal` is left to replay. A rollback-journal database is read with `mode=ro`, which
    creates nothing. A lock held past the busy timeout also falls back to immutable."""
    if not is_file(path):
        raise sqlite3.OperationalError(f"no such database: {path}")
    uri = "file:" + quote(str(path)) + "?mode=ro"
    wal = _is_wal(path)
    side = {name: os.path.lexists(f"{path}-{name}") for name in ("wal", "shm")}
    warning: str | None = None
    if not wal or side["shm"]:
        try:
            return _checked(sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT, isolation_level=None)), None
        except sqlite3.OperationalError as exc:
            warning = f"{path.name} could not be opened normally ({exc}); read it without locking"
    elif side["wal"]:
        warning = f"{path.name} has a write-ahead log but no shared-memory file; read without it"
    conn = _checked(sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None))
    if warning:
        warning += ", so changes not yet checkpointed may be missing"
    return conn, warning


def _checked(conn: sqlite3.Connection) -> sqlite3.Connection:
    """The connection once it has really opened the file (locks are met on the first
    read), closed again when it cannot."""
    try:
        conn.execute("PRAGMA query_only = 1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _is_wal(path: Path) -> bool:
    """Bytes 18-19 of the database header are 2 for a WAL-mode database."""
    head = _read_prefix(path, 20)
    return len(head) == 20 and head[18] == 2 and head[19] == 2


def _read_prefix(path: Path, size: int) -> bytes:
    from passdown.jsonl import open_regular

    try:
        with open_regular(path) as handle:
            return handle.read(size)
    except OSError:
        return b""
