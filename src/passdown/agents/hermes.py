"""Hermes Agent (PyPI `hermes-agent`, Nous Research; verified against 0.19.0): every
session in one SQLite database, `state.db` in the Hermes home:

- Linux and macOS: `~/.hermes/state.db`;
- Windows: `%LOCALAPPDATA%\\hermes\\state.db`;
- `HERMES_HOME` replaces the folder on every platform.

The database is in WAL mode and Hermes writes it while it runs: it is opened read-only
through `open_sqlite_readonly`, which never creates a `-wal` or `-shm` beside it, and
read in one snapshot (`BEGIN`), so a write in between is either all seen or not at all.

`sessions` rows: `id` ("20261201_181616_a61998"), `source` ("cli"), `model`, `cwd`,
`git_branch`, `title`, `started_at`/`ended_at` (epoch seconds), `end_reason`
("cli_close", "compression", "new_session", ...), `parent_session_id`. When Hermes
compresses a long conversation it ends the session with `end_reason = 'compression'`
and continues in a child session: such a chain is one session to passdown, listed under
its newest part and read from its first (a compaction between the parts). Other children
(delegated sub-agents) are noted as sub-agents.

`messages` rows (`active = 1`; a rewind marks the rest inactive), in `id` order: `role`
user|assistant|tool, `content`, `tool_calls` (a JSON list of OpenAI-style calls),
`tool_call_id`, `tool_name`, `timestamp`, `finish_reason`. Tool results are JSON:
`terminal` -> `{output, exit_code, error}`, `write_file` -> `{bytes_written,
files_modified}` or `{error}`, `todo` -> `{todos[{id, content, status}], summary}`: the
plan tool's whole list after the call (with `merge: true` the call sends only changes).

Hermes writes no message for a failed model request: a 429 it retried and got past
leaves nothing ("normal"); `end_reason` only says how the session was closed
(cli_close, new_session, session_switch, ...), never a failure. A request it gave up on
(3 attempts) leaves the user's message and, in `sessions/` of the Hermes home, `request_dump_<session id>_<time>.json`
`{timestamp (local, no zone), reason: "max_retries_exhausted", error{type, message,
status_code}}`: when the newest such dump is later than the session's last message, the
session ended on that error (a 429: rate limit).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    TODO_STATUS,
    decode_or_none,
    first_error_line,
    open_sqlite_readonly,
)
from passdown.agents._endings import api_error_ending
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
from passdown.errors import SessionNotFound
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    PlanStatus,
    SessionEnding,
    SessionInfo,
    SessionRef,
    SubagentNote,
    ToolAction,
    ToolCall,
    ToolResult,
    Transcript,
)

_DB = "state.db"
_FILE_TOOLS: dict[str, ToolAction] = {"write_file": "write", "patch": "edit"}
_READ_TOOLS = frozenset(
    {"read_file", "search_files", "session_search", "web_search", "web_extract", "vision_analyze"}
)
_PATCH_FILE = lazy_compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_CALLS_KEEP = 256  # calls still waiting for their result row
_CHAIN_MAX = 64  # compression parts followed back: a longer chain is read from there
_CONTINUED = "compression"


class _Function(msgspec.Struct):
    name: str = ""
    arguments: str | None = None


class _Call(msgspec.Struct):
    id: str | None = None
    call_id: str | None = None
    function: _Function | None = None


class _Todo(msgspec.Struct):
    id: str | int | None = None
    content: str | None = None
    status: str | None = None


class _Output(msgspec.Struct):
    """What a tool result says about how the call went (other fields are not read)."""

    output: object = None
    exit_code: int | None = None
    error: object = None
    success: bool | None = None
    todos: list[_Todo] | None = None


_CALLS = LazyDecoder(list[_Call])
_ARGS = LazyDecoder(dict[str, object])
_OUTPUT = LazyDecoder(_Output)
_TODOS = LazyDecoder(list[_Todo])


def hermes_home() -> Path:
    """The Hermes home folder (the module docstring names each platform)."""
    configured = os.environ.get("HERMES_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    from passdown import _platform

    if _platform.is_windows():
        local = os.environ.get("LOCALAPPDATA", "").strip()
        return (Path(local) if local else Path.home() / "AppData" / "Local") / "hermes"
    return Path.home() / ".hermes"


class HermesAgent(Agent):
    name = "hermes"
    display_name = "Hermes Agent"
    program = "hermes"
    store_env = ("HERMES_HOME",)

    def store_roots(self) -> list[Path]:
        return [hermes_home()]

    def database(self) -> Path:
        return hermes_home() / _DB

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for ref in _session_refs(self.database(), self.name):
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        db = path / _DB if path.is_dir() else path
        newest = max(_session_refs(db, self.name), key=lambda r: r.updated_at, default=None)
        if newest is None:
            raise SessionNotFound(f"no {self.display_name} session in {db}")
        return newest

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        info = SessionInfo(
            agent=self.name, session_id=ref.session_id, path=ref.path, cwd=ref.cwd, title=ref.title
        )
        transcript = Transcript(info=info, diagnostics=Diagnostics(), _events=iter(()))
        transcript._events = _events(ref, transcript)
        return transcript

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--query=..." keeps a prompt that starts with "-" attached to its option. Hermes
        # cannot open its TUI on a prompt: a query is always one turn, shown in the
        # terminal (interactive; `hermes chat --continue` goes on in the TUI) or quiet
        # (-Q: unattended, as `passdown run --non-interactive` launches it).
        argv = [self.program, "chat", f"--query={prompt}"]
        if not interactive:
            argv.insert(2, "-Q")
        return LaunchSpec(argv=argv, cwd=workspace)


# -- database access --------------------------------------------------------------
def _connect(path: Path, diag: Diagnostics | None = None) -> sqlite3.Connection:
    conn, warning = open_sqlite_readonly(path)
    if warning and diag is not None:
        diag.warnings.append(warning)
    return conn


def _session_refs(db: Path, agent: str) -> list[SessionRef]:
    """The sessions a user sees: top-level ones and the newest part of a compressed
    chain (a part that was continued is not listed on its own)."""
    try:
        conn = _connect(db)
    except sqlite3.Error:
        return []
    refs: list[SessionRef] = []
    try:
        rows = conn.execute(
            "SELECT s.id, s.cwd, s.title, s.started_at, s.ended_at,"
            " (SELECT max(m.timestamp) FROM messages m WHERE m.session_id = s.id)"
            " FROM sessions s LEFT JOIN sessions p ON p.id = s.parent_session_id"
            " WHERE (s.parent_session_id IS NULL OR p.end_reason = ?)"
            " AND (s.end_reason IS NULL OR s.end_reason != ?)",
            (_CONTINUED, _CONTINUED),
        )
        for sid, cwd, title, started, ended, last in rows:
            if not isinstance(sid, str):
                continue  # not a row Hermes wrote
            stamps = [t for t in (started, ended, last) if _number(t)]
            refs.append(
                SessionRef(
                    agent=agent,
                    session_id=sid,
                    path=db,
                    cwd=_text(cwd),
                    started_at=_iso(started),
                    updated_at=float(max(stamps)) if stamps else 0.0,
                    title=_text(title),
                )
            )
    except sqlite3.Error:
        return refs
    finally:
        conn.close()
    return refs


def _events(ref: SessionRef, transcript: Transcript) -> Iterator[Event]:
    diag, info = transcript.diagnostics, transcript.info
    try:
        conn = _connect(ref.path, diag)
    except sqlite3.Error as exc:
        diag.warnings.append(f"could not open {ref.path.name}: {exc}")
        return
    digest = hashlib.sha256()
    try:
        conn.execute("BEGIN")  # one snapshot for every query below
        chain = _chain(conn, ref.session_id)
        if not chain:
            diag.warnings.append(f"session {ref.session_id} is not in the database")
            return
        reader = _Reader(info, diag, digest)
        for n, row in enumerate(chain):
            if n:
                yield Compaction(summary=None, trigger="auto", timestamp=_iso(row["started_at"]))
            reader.session(row)
            yield from reader.messages(conn, str(row["id"]))
        yield from _subagents(conn, [str(r["id"]) for r in chain])
        last = chain[-1]
        ending = _gave_up(ref.path.parent, str(last["id"]), reader.last_at)
        if ending is not None:
            yield ending
        transcript.sha256 = digest.hexdigest()
    except sqlite3.Error as exc:
        diag.warnings.append(f"stopped reading {ref.path.name} early: {exc}")
    finally:
        conn.close()


_SESSION_COLUMNS = (
    "id, parent_session_id, model, cwd, git_branch, title, started_at, ended_at, end_reason"
)


def _chain(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's compression chain, oldest part first (cycles and overlong chains
    stop the walk)."""
    conn.row_factory = sqlite3.Row
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: object = session_id
    while isinstance(current, str) and current not in seen and len(chain) < _CHAIN_MAX:
        seen.add(current)
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (current,)
        ).fetchone()
        if row is None or (chain and row["end_reason"] != _CONTINUED):
            break
        chain.append(dict(row))
        current = row["parent_session_id"]
    conn.row_factory = None
    return chain[::-1]


def _subagents(conn: sqlite3.Connection, chain: list[str]) -> Iterator[SubagentNote]:
    marks = ",".join("?" * len(chain))
    rows = conn.execute(
        f"SELECT id, title FROM sessions WHERE parent_session_id IN ({marks})"
        " AND (end_reason IS NULL OR end_reason != ?) ORDER BY started_at, id",
        (*chain, _CONTINUED),
    )
    for sid, title in rows:
        if isinstance(sid, str) and sid not in chain:
            yield SubagentNote(agent_id=sid, description=_text(title))


class _Dump(msgspec.Struct):
    class Error(msgspec.Struct):
        type: str | None = None
        message: str | None = None
        status_code: int | None = None

    timestamp: str | None = None
    reason: str | None = None
    error: Error | None = None


_DUMP = LazyDecoder(_Dump)
_DUMP_MAX_BYTES = 8 << 20  # a dump holds the whole request: larger ones are not read


def _gave_up(home: Path, session_id: str, last_at: float) -> SessionEnding | None:
    """The failure Hermes gave up on after the session's last message, from its newest
    request dump (see the module docstring); None when there is none."""
    from passdown.agents._common import list_folder
    from passdown.agents._document import decode_side_file

    prefix = f"request_dump_{session_id}_"
    dumps = [p for p in list_folder(home / "sessions") if p.name.startswith(prefix)]
    if not dumps:
        return None
    newest = max(dumps, key=lambda p: p.name)  # the name ends in a sortable time
    dump = decode_side_file(newest, _DUMP, _DUMP_MAX_BYTES)
    if dump is None or dump.error is None:
        return None
    when = _local_seconds(dump.timestamp)
    if when is None or when < last_at:
        return None  # the session went on after it
    error = dump.error
    what = f"HTTP {error.status_code}" if error.status_code else (error.type or "an error")
    message = f"the model API failed ({what}: {error.type or 'error'}) and Hermes gave up"
    return api_error_ending(
        message, status=error.status_code, kind=error.type, timestamp=_iso(when)
    )


def _local_seconds(stamp: str | None) -> float | None:
    """Hermes's local time without a zone, as epoch seconds."""
    try:
        when = datetime.fromisoformat(stamp or "")
    except ValueError:
        return None
    try:
        return (when if when.tzinfo else when.astimezone()).timestamp()
    except (OverflowError, OSError, ValueError):
        return None


class _Reader:
    """The messages of each part of a session, in order."""

    def __init__(self, info: SessionInfo, diag: Diagnostics, digest: Any) -> None:
        self.info = info
        self.diag = diag
        self.digest = digest
        self.calls: dict[str, ToolCall] = {}
        self.last_at = 0.0  # the last message's time (epoch seconds)

    def session(self, row: dict[str, Any]) -> None:
        info = self.info
        info.cwd = _text(row.get("cwd")) or info.cwd
        info.git_branch = _text(row.get("git_branch")) or info.git_branch
        info.title = _text(row.get("title")) or info.title
        info.started_at = info.started_at or _iso(row.get("started_at"))
        model = _text(row.get("model"))
        if model and model not in info.models:
            info.models.append(model)

    def messages(self, conn: sqlite3.Connection, session_id: str) -> Iterator[Event]:
        rows = conn.execute(
            "SELECT id, role, content, tool_calls, tool_call_id, tool_name, timestamp"
            " FROM messages WHERE session_id = ? AND active = 1 ORDER BY id",
            (session_id,),
        )
        for row in rows:
            self.digest.update(repr(row).encode("utf-8", "replace"))
            self.diag.lines += 1
            _id, role, content, calls, call_id, tool_name, stamp = row
            when = _iso(stamp)
            if when:
                self.info.updated_at = when
                self.last_at = max(self.last_at, float(stamp))
            text = content if isinstance(content, str) else ""
            if role == "user":
                if text.strip():
                    yield Message(role="user", text=text.strip(), timestamp=when)
            elif role == "assistant":
                if text.strip():
                    yield Message(role="assistant", text=text.strip(), timestamp=when)
                if isinstance(calls, str) and calls:
                    yield from self._calls(calls, when)
            elif role == "tool":
                yield self._result(_text(call_id) or "", _text(tool_name), text, when)
            else:
                self.diag.unknown(str(role or "(no role)"))

    def _calls(self, raw: str, stamp: str | None) -> Iterator[ToolCall]:
        decoded = decode_or_none(_CALLS, raw)
        if not isinstance(decoded, list):
            self.diag.bad_lines += 1
            return
        for entry in decoded:
            function = entry.function or _Function()
            args_raw = decode_or_none(_ARGS, function.arguments or "{}")
            args = args_raw if isinstance(args_raw, dict) else {}
            call = _call(entry.id or entry.call_id or "", function.name, args, stamp)
            self.calls[call.call_id] = call
            if len(self.calls) > _CALLS_KEEP:  # calls whose result never came
                del self.calls[next(iter(self.calls))]
            yield call

    def _result(self, call_id: str, tool: str | None, text: str, stamp: str | None) -> ToolResult:
        call = self.calls.pop(call_id, None)
        result = ToolResult(call_id=call_id, timestamp=stamp)
        decoded = decode_or_none(_OUTPUT, text) if text.lstrip().startswith("{") else None
        out = decoded if isinstance(decoded, _Output) else _Output()
        error = out.error if isinstance(out.error, str) and out.error else None
        result.exit_code = out.exit_code
        result.is_error = bool(error) or out.success is False or bool(out.exit_code)
        if result.is_error:
            output = out.output if isinstance(out.output, str) else ""
            result.error = first_error_line(output) or first_error_line(error or text)
        if call is not None and call.action == "plan" and out.todos is not None:
            call.plan = PlanOp(op="replace", items=_plan_items(out.todos))  # the whole list
        return result


def _call(call_id: str, name: str, args: dict[str, object], stamp: str | None) -> ToolCall:
    call = ToolCall(call_id=call_id, name=name, timestamp=stamp)
    if name in _FILE_TOOLS:
        call.action = _FILE_TOOLS[name]
        path = args.get("path")
        if isinstance(path, str) and path:
            call.paths = (path,)
        elif isinstance(args.get("patch"), str):
            call.paths = tuple(dict.fromkeys(_PATCH_FILE.findall(str(args["patch"]))))
    elif name == "terminal":
        command = args.get("command")
        call.action = "command"
        call.command = command if isinstance(command, str) else ""
    elif name == "todo":
        todos = args.get("todos")
        if todos is None:
            call.action = "read"  # no list: a read of the current one
        else:
            call.action = "plan"
            listed = decode_or_none(_TODOS, msgspec.json.encode(todos))
            if isinstance(listed, list) and not args.get("merge"):
                call.plan = PlanOp(op="replace", items=_plan_items(listed))
    elif name == "delegate_task":
        call.action = "subagent"
    elif name in _READ_TOOLS:
        call.action = "read"
    return call


def _plan_items(todos: list[_Todo]) -> tuple[PlanItem, ...]:
    items = []
    for n, todo in enumerate(todos, start=1):
        status: PlanStatus = TODO_STATUS.get((todo.status or "").lower(), "pending")  # type: ignore[assignment]
        key = str(todo.id) if todo.id not in (None, "") else str(n)
        items.append(PlanItem(id=key, subject=todo.content or "", status=status))
    return tuple(items)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _iso(seconds: object) -> str | None:
    if not _number(seconds):
        return None
    try:
        stamp = datetime.fromtimestamp(float(seconds), tz=UTC)  # type: ignore[arg-type]
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["HermesAgent", "hermes_home"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
HermesAgent.integration = "passdown.integrations._hermes:HermesHooks"  # type: ignore[attr-defined]
