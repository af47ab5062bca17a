"""Small helpers shared by agent modules (parsing details stay in each agent's module)."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from pathlib import Path
from typing import Any

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._memo import for_short_strings
from passdown.agents._sqlite_readonly import open_readonly
from passdown.transcript import Diagnostics, PlanItem

_EXIT_CODE = re.compile(r"(?:exit(?:ed)? (?:with )?code|exit status)[:= ]*(-?\d+)", re.IGNORECASE)
ERROR_LINE_CHARS = 300
_ERROR_SCAN_HEAD = 30_000  # characters of a failure's output searched from the start...
_ERROR_SCAN_TAIL = 12_000  # ...and from the end: verdicts and tracebacks come last
_SEPARATOR = re.compile(r"[-=_*~#.+ ]+")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*(?:\x07|\x1b\\)")
# Lines that carry no error: fences, successes, exec headers (rules are checked apart).
_DECORATION = re.compile(
    r"```\w*|"
    r"(?:\d+ (?:passed|skipped|deselected|xfailed|xpassed|warnings?)\b[, ]*)+(?:in [\d.]+s)?|"
    r"all checks passed!?|ok|success:.*|ran \d+ tests? in .*|collected \d+ items?.*|"
    r"(?:chunk id|wall time|original token count|output):.*|(?:process exited|exit code)\b.*",
    re.IGNORECASE,
)
# The line that states the error, best first. Rank 4: a located diagnostic (compilers,
# linters, type checkers), a failed test id, npm's message; 3: an exception line (a
# traceback's last line); 2: "error:"-style lines, pytest's "E   " lines, unittest's
# "FAIL: test (...)" headers.
_DIAGNOSTIC = re.compile(
    r"\S+?:\d+(?::\d+)?:?\s+(?:(?:fatal )?error|[A-Z]{1,4}\d{2,5})\b"  # gcc, mypy, ruff
    r"|\S+\(\d+,\d+\): error\b"  # tsc
    r"|\s*\d+:\d+\s+error\s"  # eslint
    r"|\S+\.go:\d+:\d+: |\S+_test\.go:\d+: "  # go build, go test
    r"|[A-Z]{1,4}\d{3,4} (?:\[\*\] )?\S.*"  # ruff's full format: "F401 [*] `os` imported..."
    r"|error(?:\[E\d+\])?: "  # rustc, git, many CLIs
    r"|FAILED \S+::\S+|ERROR \S+::"  # pytest's summary: the test id and its error
    r"|npm (?:ERR!|error) (?!code |errno |syscall |path |A complete log|\s*$)\S",
)
_NPM_NOISE = re.compile(r"npm (?:ERR!|error) ")
_EXCEPTION = re.compile(
    r"(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)\b(?::.*)?"
)
_ERRORISH = re.compile(
    r"E {2,}\S|(?:fatal|error|panic)(?:\[\w+\])?:|(?:FAIL|ERROR): \w+ \(", re.IGNORECASE
)
# A test runner's or linter's closing verdict, shown after the error line.
_VERDICT = re.compile(
    r"FAILED \(.*\)|=* ?\d+ (?:failed|errors?)\b.*|Found \d+ errors?\b.*|"
    r"\d+ errors? generated\.|Tests?:? +\d+ failed.*|test result: FAILED.*",
)
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
# one C-level search instead of a Python loop over the words (same answer as `any(w in low)`)
_ERROR_WORD = re.compile("|".join(re.escape(word) for word in _ERROR_WORDS))


# What decoding untrusted JSON can raise: a syntax or shape error (DecodeError, and
# ValidationError below it), or RecursionError for nesting deeper than msgspec allows.
DECODE_ERRORS = (msgspec.DecodeError, RecursionError)


def decode_line(
    decoder: LazyDecoder[Any],
    line: bytes,
    offset: int,
    tail_offset: int,
    diag: Diagnostics,
) -> object | None:
    """Decode one JSONL line into the decoder's typed shape; bad bytes are replaced, a
    torn last line is noted, and a line that cannot be read (bad JSON, a field of the
    wrong type, nesting too deep) is skipped and counted."""
    try:
        decoded: object = decoder.decode(line)
        return decoded
    except DECODE_ERRORS:
        pass
    try:  # non-UTF-8 bytes: keep what can be read
        decoded = decoder.decode(line.decode("utf-8", "replace").encode("utf-8"))
        return decoded
    except DECODE_ERRORS:
        if offset == tail_offset:
            diag.torn_last_line = True
        else:
            diag.bad_lines += 1
        return None


def decode_or_none(decoder: LazyDecoder[Any], data: bytes | msgspec.Raw | str) -> object | None:
    """Decode one nested field or side file; anything unreadable gives None."""
    try:
        decoded: object = decoder.decode(data)
        return decoded
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


# an agent that reruns a failing command gets the same output back each time
@for_short_strings(maxsize=256, longest=8192)
def first_error_line(text: str | None) -> str | None:
    """The line of a failure's output that states the error, plus the runner's closing
    verdict when it prints one ("… FAILED (failures=1)"), trimmed; never the whole output.

    Decoration (code fences, section rules, ANSI colours, "7 passed" summaries, the exec
    header Codex adds) is skipped; the most specific line wins: a located diagnostic
    (ruff `F401`, mypy/gcc `error:`, a failed test id), then a traceback's last line,
    then any line naming an error, then the first line with content. Text written as a
    document (a Markdown heading, a fenced block holding one: a forged handoff section
    a test printed) states no error: it is chosen only when nothing else is there."""
    if not text:
        return None
    lines = _scan_lines(text)
    best, best_key = None, (False, -1)
    for line, quoted in lines:
        if _MAY_RANK_ABOVE_1.match(line):
            rank = _line_rank(line)
        elif best_key >= (not quoted, 1):
            continue  # a line that ranks 1 at most cannot outrank the best one
        else:
            rank = 1 if _ERROR_WORD.search(line.lower()) else 0
        key = (not quoted, rank)
        # ties: the first diagnostic, but the last exception (a traceback ends with it)
        if key > best_key or (key == best_key and rank == 3):
            best, best_key = line, key
            if key == (True, 4):
                break  # nothing outranks the first located diagnostic
    if best is None:
        return None
    verdict = next(
        (line for line, quoted in reversed(lines) if not quoted and _VERDICT.fullmatch(line)),
        None,
    )
    found = best if verdict in (None, best) or best_key[1] < 1 else f"{best} … {verdict}"
    return found if len(found) <= ERROR_LINE_CHARS else found[: ERROR_LINE_CHARS - 1] + "…"


_FENCE = re.compile(r"\s*(?:```|~~~)")
_HEADING = re.compile(r"#{1,6}\s+\S")  # at the start of the raw line: Markdown's heading


def _scan_lines(text: str) -> list[tuple[str, bool]]:
    """The cleaned, non-decoration lines of the head and the tail of the output, each
    with whether it is quoted document text: a heading, or any line of a fenced block
    that holds a heading."""
    if len(text) > _ERROR_SCAN_HEAD + _ERROR_SCAN_TAIL:
        text = text[:_ERROR_SCAN_HEAD] + "\n" + text[-_ERROR_SCAN_TAIL:]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "tool_use_error>" in text:  # the tags never span lines: strip them once, not per line
        text = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "")
    if "#" not in text:  # no heading anywhere: the common case, line by line only
        return [(line, False) for line in map(_clean, text.splitlines()) if line]
    out: list[tuple[str, bool]] = []
    block: list[str] | None = None  # the lines of the open fenced block
    headed = False  # the open block holds a heading
    for raw in text.splitlines():
        if _FENCE.match(raw):
            if block is not None:  # closing: a block with a heading is quoted whole
                out.extend((line, headed) for line in block)
                block, headed = None, False
            else:
                block = []
            continue
        line = _clean(raw)
        if block is not None:
            headed = headed or _HEADING.match(raw.lstrip()) is not None
            if line:
                block.append(line)
        elif line:
            out.append((line, _HEADING.match(raw) is not None))
    if block is not None:  # a fence never closed: its lines are read as they are
        out.extend((line, _HEADING.match(line) is not None) for line in block)
    return out


# Every line any of the rank 2-4 patterns accepts starts as one of them does (a cheap
# first check: most lines of an output rank 0 or 1)
_MAY_RANK_ABOVE_1 = re.compile(
    rf"(?:{_DIAGNOSTIC.pattern})|(?:{_EXCEPTION.pattern})"
    rf"|(?i:{_ERRORISH.pattern})|(?:{_NPM_NOISE.pattern})"
)


def _line_rank(line: str) -> int:
    if _DIAGNOSTIC.match(line):
        return 4
    if _EXCEPTION.fullmatch(line) and not _VERDICT.fullmatch(line):
        return 3
    if _ERRORISH.match(line) or _NPM_NOISE.match(line):
        return 2
    return 1 if _ERROR_WORD.search(line.lower()) else 0


# Everything `_clean` drops, as one pattern: one C call per line instead of four checks
# in Python (failure outputs are scanned line by line, so this is on the hot path).
_NOISE = re.compile(
    rf"(?:{_SEPARATOR.pattern})"
    rf"|(?:{_EXIT_CODE.pattern})"
    # a test runner's section header: "===== FAILURES =====", "___ test_x ___"
    r"|[-=_*~#+ ]{3}.*[-=_*~#+ ]{3}"
    rf"|(?=.{{0,200}}\Z)(?:{_DECORATION.pattern})",  # decoration, on short lines only
    re.IGNORECASE | re.DOTALL,
)


def _clean(raw: str) -> str:
    line = raw.strip()
    if not line or _NOISE.fullmatch(line):
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
    from passdown._jsonl import open_binary

    try:
        with open_binary(path) as stream:
            return stream.read(limit)
    except Exception:
        return b""


def open_sqlite_readonly(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """A read-only connection to another program's SQLite database that never creates a
    file next to it and never locks its owner out, and a warning when the read may miss
    or half-show the latest change: `_sqlite_readonly.open_readonly`, which says how."""
    opened = open_readonly(path)
    return opened.conn, opened.warning


# -- plan tools -----------------------------------------------------------------------
# The statuses the agents' todo tools write, as the plan's statuses.
TODO_STATUS = {
    "pending": "pending",
    "in_progress": "in_progress",
    "in-progress": "in_progress",
    "completed": "completed",
    "complete": "completed",
    "done": "completed",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "blocked": "blocked",
}


class Todo(msgspec.Struct):
    """One item of a todo tool's list (Gemini CLI, Qwen Code, Cursor): typed, so a list
    of the wrong shape skips the call's plan rather than guessing."""

    id: str | int | None = None
    description: str | None = None
    content: str | None = None
    status: str | None = None


def todo_items(todos: list[Todo]) -> tuple[PlanItem, ...]:
    """A todo tool's whole list as plan items; an item without an id is numbered."""
    items = []
    for n, todo in enumerate(todos, start=1):
        status = TODO_STATUS.get((todo.status or "").lower(), "pending")
        items.append(
            PlanItem(
                id=str(todo.id if todo.id not in (None, "") else n),
                subject=todo.description or todo.content or "",
                status=status,  # type: ignore[arg-type]
            )
        )
    return tuple(items)
