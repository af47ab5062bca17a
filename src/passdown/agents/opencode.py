"""opencode: sessions in SQLite, `$XDG_DATA_HOME/opencode/opencode.db` (default
`~/.local/share/opencode/`; `OPENCODE_DB` overrides the file, non-release channels use
`opencode-<channel>.db`).

A session is a row of `session` (its `directory` is the cwd; `parent_id` is set for a
sub-agent's session), with `message` rows (JSON `data`: role, model, time) and `part`
rows (JSON `data`: `text`, `reasoning`, `tool {tool, callID, state}`, `patch`,
`compaction`, ...). Parts are the content; messages only group them. `todo` holds the
final plan.

A `SessionRef` for opencode is the database file plus the session id: `path` is the
.db, `session_id` the `ses_...` id. `--session ID` (or a prefix) finds the session in
any database of the store; `--session PATH/opencode.db` means that database's newest
top-level session. Since the .db holds every session, the transcript fingerprint is a
sha256 over this session's rows as read, not over the file.

The database is opened read-only and never written, and no file is ever created next
to it (`open_sqlite_readonly`: a WAL database whose `-shm` opencode does not hold open
is read with `immutable=1`). Every column is type-checked as it is read: a row of the
wrong shape is skipped and counted.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, cast

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    DECODE_ERRORS,
    first_error_line,
    is_file,
    list_folder,
    open_sqlite_readonly,
    parse_exit_code,
)
from passdown.agents._endings import api_error_ending, short_message
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
    SessionInfo,
    SessionRef,
    SubagentNote,
    ToolCall,
    ToolResult,
    Transcript,
)

_EDIT_TOOLS = {"write": "write", "edit": "edit", "multiedit": "edit"}
_PATCH_TOOLS = frozenset({"patch", "apply_patch"})
_READ_TOOLS = frozenset(
    {"read", "glob", "grep", "list", "ls", "webfetch", "websearch", "codesearch", "todoread"}
)
_PLAN_STATUSES = {"pending", "in_progress", "completed", "cancelled"}
# Parts passdown knows and deliberately does not export.
_QUIET_PARTS = frozenset(
    {"reasoning", "step-start", "step-finish", "patch", "snapshot", "file", "agent", "retry"}
)
_PATCH_FILE = lazy_compile(r"^\*\*\* (?:(Add|Update|Delete) File: |Move to: )(.+)$", re.MULTILINE)


class _Time(msgspec.Struct):
    created: int | float | None = None
    completed: int | float | None = None


class _MessageData(msgspec.Struct):
    role: str = ""
    modelID: str | None = None
    time: _Time | None = None
    # an assistant message that holds a compaction summary has `summary: true`
    # (a user message's `summary` is an object of diffs)
    summary: msgspec.Raw = msgspec.Raw(b"null")
    mode: str | None = None
    # a failed turn: {name: APIError|ProviderAuthError|MessageAbortedError|...,
    # data: {message, statusCode, isRetryable, responseBody}}
    error: msgspec.Raw = msgspec.Raw(b"null")


class _State(msgspec.Struct):
    status: str = ""
    input: dict[str, object] | None = None
    output: str | None = None
    error: str | None = None
    metadata: dict[str, object] | None = None


class _Part(msgspec.Struct):
    type: str = ""
    text: str | None = None
    synthetic: bool = False
    ignored: bool = False
    tool: str | None = None
    callID: str | None = None
    state: _State | None = None
    auto: bool | None = None  # compaction
    description: str | None = None  # subtask
    agent: str | None = None  # subtask


class _Revert(msgspec.Struct):
    messageID: str | None = None
    partID: str | None = None


_MESSAGE = LazyDecoder(_MessageData)
_PART = LazyDecoder(_Part)
_REVERT = LazyDecoder(_Revert)


class OpenCode(Agent):
    name = "opencode"
    display_name = "opencode"
    program = "opencode"
    # What a fork of opencode renames (agents/kilo.py): its folder under the XDG data
    # home (also the databases' name prefix) and the variable that names one database.
    data_folder: ClassVar[str] = "opencode"
    db_env: ClassVar[str] = "OPENCODE_DB"
    store_env = ("OPENCODE_DB", "XDG_DATA_HOME")

    def data_dir(self) -> Path:
        # xdg-basedir's answer on every OS (macOS and Windows too): ~/.local/share
        base = os.environ.get("XDG_DATA_HOME")
        root = Path(base).expanduser() if base else Path.home() / ".local" / "share"
        return root / self.data_folder

    def databases(self) -> list[Path]:
        """The database files the agent may be using (its db variable, else every
        channel's: `opencode.db`, `opencode-<channel>.db`)."""
        configured = os.environ.get(self.db_env)
        if configured and configured != ":memory:":
            path = Path(configured).expanduser()
            return [path if path.is_absolute() else self.data_dir() / path]
        return sorted(
            p
            for p in list_folder(self.data_dir())
            if p.name.startswith(self.data_folder) and p.name.endswith(".db") and is_file(p)
        )

    def store_roots(self) -> list[Path]:
        roots = [self.data_dir()]
        configured = os.environ.get(self.db_env)
        if configured and configured != ":memory:" and Path(configured).is_absolute():
            roots.append(Path(configured).parent)
        return roots

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for db in self.databases():
            for ref in _session_refs(db, self.name):
                if cwd_in_workspace(ref.cwd, workspace):
                    yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        newest = max(_session_refs(path, self.name), key=lambda r: r.updated_at, default=None)
        if newest is None:
            raise SessionNotFound(f"no {self.display_name} session in {path}")
        return newest

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        info = SessionInfo(
            agent=self.name,
            session_id=ref.session_id,
            path=ref.path,
            cwd=ref.cwd,
            title=ref.title,
        )
        transcript = Transcript(info=info, diagnostics=Diagnostics(), _events=iter(()))
        transcript._events = self._events(ref, transcript)
        return transcript

    def _events(self, ref: SessionRef, transcript: Transcript) -> Iterator[Event]:
        diag = transcript.diagnostics
        try:
            conn = _connect(ref.path, diag)
        except sqlite3.Error as exc:
            diag.warnings.append(f"could not open {ref.path.name}: {exc}")
            return
        digest = hashlib.sha256()
        try:
            conn.execute("BEGIN")  # one snapshot for every query below
            revert = _session_row(conn, ref.session_id, transcript.info, diag)
            reader = _SessionReader(transcript.info, diag, digest, revert)
            yield from reader.events(conn, ref.session_id)
            yield from _subagents(conn, ref.session_id)
            plan = _todo_table(conn, ref.session_id)
            if plan is not None:
                yield plan
            transcript.sha256 = digest.hexdigest()
        except sqlite3.Error as exc:
            diag.warnings.append(f"stopped reading {ref.path.name} early: {exc}")
        finally:
            conn.close()

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # The TUI takes the prompt as an option value; "--prompt=" keeps a prompt that
        # starts with "-" attached to it. `run` takes it after "--".
        if interactive:
            return LaunchSpec(argv=[self.program, f"--prompt={prompt}"], cwd=workspace)
        return LaunchSpec(argv=[self.program, "run", "--", prompt], cwd=workspace)


# -- database access --------------------------------------------------------------
def _connect(path: Path, diag: Diagnostics | None = None) -> sqlite3.Connection:
    """A read-only connection that creates no file in opencode's folder (see
    `open_sqlite_readonly`); a read that may miss recent changes is warned about."""
    conn, warning = open_sqlite_readonly(path)
    if warning and diag is not None:
        diag.warnings.append(warning)
    return conn


def _session_refs(db: Path, agent: str) -> list[SessionRef]:
    """Top-level sessions of one database (sub-agent sessions are noted, not listed)."""
    try:
        conn = _connect(db)
    except sqlite3.Error:
        return []
    try:
        size = db.stat().st_size
    except OSError:
        size = 0
    refs: list[SessionRef] = []
    try:
        rows = conn.execute(
            "SELECT id, directory, title, time_created, time_updated FROM session"
            " WHERE parent_id IS NULL"
        )
        for sid, directory, title, created, updated in rows:
            if not isinstance(sid, str):
                continue  # not a session opencode wrote
            refs.append(
                SessionRef(
                    agent=agent,
                    session_id=sid,
                    path=db,
                    cwd=_text(directory),
                    started_at=_iso(created),
                    updated_at=_seconds(updated),
                    size=size,
                    title=_text(title),
                )
            )
    except sqlite3.Error:
        return refs
    finally:
        conn.close()
    return refs


def _session_row(
    conn: sqlite3.Connection, session_id: str, info: SessionInfo, diag: Diagnostics
) -> _Revert | None:
    row = conn.execute(
        "SELECT directory, title, version, time_created, time_updated, revert FROM session"
        " WHERE id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        diag.warnings.append(f"session {session_id} is not in the database")
        return None
    directory, title, version, created, updated, revert = row
    info.cwd = _text(directory) or info.cwd
    info.title = _text(title) or info.title
    info.agent_version = _text(version)
    info.started_at = _iso(created)
    info.updated_at = _iso(updated)
    if not revert:
        return None
    decoded = _decode_column(_REVERT, revert)
    if not isinstance(decoded, _Revert):
        diag.bad_lines += 1
        return None
    return decoded


def _subagents(conn: sqlite3.Connection, session_id: str) -> Iterator[SubagentNote]:
    rows = conn.execute(
        "SELECT id, title FROM session WHERE parent_id = ? ORDER BY time_created, id",
        (session_id,),
    )
    for sid, title in rows:
        yield SubagentNote(agent_id=str(sid), description=_text(title))


def _todo_table(conn: sqlite3.Connection, session_id: str) -> PlanOp | None:
    """opencode keeps the latest todowrite list in `todo`: the final plan."""
    try:
        rows = conn.execute(
            "SELECT content, status FROM todo WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
    except sqlite3.OperationalError:  # an older schema without the table
        return None
    if not rows:
        return None
    items = tuple(
        PlanItem(id=str(n), subject=_text(content) or "", status=_status(status))
        for n, (content, status) in enumerate(rows, start=1)
    )
    return PlanOp(op="replace", items=items)


# -- events -----------------------------------------------------------------------
class _SessionReader:
    """Messages in order, each message's parts in order: one streaming pass."""

    def __init__(
        self, info: SessionInfo, diag: Diagnostics, digest: hashlib._Hash, revert: _Revert | None
    ) -> None:
        self.info = info
        self.diag = diag
        self.digest = digest
        self.revert = revert
        self.compaction_trigger: str | None = None

    def events(self, conn: sqlite3.Connection, session_id: str) -> Iterator[Event]:
        messages = conn.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
            (session_id,),
        )
        parts = conn.cursor()
        for message_id, data in messages:
            if self.revert and message_id == self.revert.messageID and not self.revert.partID:
                self.diag.warnings.append("the session was reverted; undone messages were skipped")
                return
            self._hash(message_id, data)
            msg = self._decode(_MESSAGE, data)
            if not isinstance(msg, _MessageData):
                continue
            rows = parts.execute(
                "SELECT id, data FROM part WHERE message_id = ? ORDER BY id", (message_id,)
            )
            stop = yield from self._message(message_id, msg, rows)
            if stop:
                return

    def _message(
        self, message_id: str, msg: _MessageData, rows: sqlite3.Cursor
    ) -> Generator[Event, None, bool]:
        timestamp = _iso(msg.time.created if msg.time else None)
        if msg.role == "assistant":
            self.info.add_model(msg.modelID)
        texts: list[str] = []
        synthetic = False
        stopped = False
        for part_id, data in rows:
            if (
                self.revert
                and message_id == self.revert.messageID
                and part_id == self.revert.partID
            ):
                self.diag.warnings.append("the session was reverted; undone parts were skipped")
                stopped = True
                break
            self._hash(part_id, data)
            part = self._decode(_PART, data)
            if not isinstance(part, _Part):
                continue
            if part.type == "text":
                if part.text and not part.ignored:
                    if part.synthetic:
                        synthetic = True
                    texts.append(part.text)
            elif part.type == "tool":
                yield from self._tool(part, timestamp)
            elif part.type == "compaction":
                self.compaction_trigger = "auto" if part.auto else "manual"
                synthetic = True
            elif part.type == "subtask":
                yield SubagentNote(agent_id=part.agent or "subtask", description=part.description)
            elif part.type not in _QUIET_PARTS:
                self.diag.unknown(f"part:{part.type or '(no type)'}")
        yield from self._text(msg, texts, synthetic, timestamp)
        if msg.role == "assistant" and bytes(msg.error) != b"null":
            when = (msg.time.completed or msg.time.created) if msg.time else None
            yield from _turn_error(msg.error, _iso(when))
        return stopped

    def _text(
        self, msg: _MessageData, texts: list[str], synthetic: bool, timestamp: str | None
    ) -> Iterator[Event]:
        text = "\n\n".join(t.strip() for t in texts if t.strip())
        if msg.role == "assistant" and (bytes(msg.summary) == b"true" or msg.mode == "compaction"):
            yield Compaction(
                summary=text or None, trigger=self.compaction_trigger, timestamp=timestamp
            )
            self.compaction_trigger = None
            return
        if not text or msg.role not in ("user", "assistant"):
            return
        if msg.role == "user":
            text = _unquote(text)
        yield Message(role=msg.role, text=text, timestamp=timestamp, synthetic=synthetic)  # type: ignore[arg-type]

    def _tool(self, part: _Part, timestamp: str | None) -> Iterator[Event]:
        state = part.state or _State()
        call_id = part.callID or ""
        call = _tool_call(call_id, part.tool or "", state.input or {}, timestamp)
        yield call
        if state.status not in ("completed", "error"):
            return  # pending/running: the session stopped before the tool finished
        result = ToolResult(call_id=call_id, is_error=state.status == "error", timestamp=timestamp)
        if result.is_error:
            text = state.error or state.output or ""
            result.exit_code = parse_exit_code(text)
            result.error = first_error_line(text) or text.strip()[:300] or None
        elif call.action == "command":
            meta = state.metadata or {}
            code = meta.get("exit")
            result.exit_code = code if isinstance(code, int) else parse_exit_code(state.output)
            if result.exit_code not in (None, 0):
                output = meta.get("output")
                result.error = first_error_line(output if isinstance(output, str) else state.output)
        yield result

    def _decode(self, decoder: LazyDecoder[Any], data: object) -> object | None:
        self.diag.lines += 1
        decoded = _decode_column(decoder, data)
        if decoded is None:
            self.diag.bad_lines += 1
        return decoded

    def _hash(self, row_id: object, data: object) -> None:
        self.digest.update(str(row_id).encode())
        self.digest.update(data.encode("utf-8", "replace") if isinstance(data, str) else b"")


_ANY = LazyDecoder()
_ERROR_NAMES = {
    "ProviderAuthError": "auth",
    "MessageAbortedError": "interrupted",
    "ContextOverflowError": "context_length",
}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _turn_error(raw: msgspec.Raw, timestamp: str | None) -> Iterator[Event]:
    """1.18 gives up on a retryable error (a sticky 429) after a few attempts and stores
    it on the assistant message, as it does at once for a 401 or a 400."""
    try:
        error = _ANY.decode(raw)
    except DECODE_ERRORS:
        return
    if not isinstance(error, dict):
        return
    name = _str(error.get("name"))
    raw_data = error.get("data")
    data: dict[str, object] = raw_data if isinstance(raw_data, dict) else {}
    message = _str(data.get("message")) or name
    code = data.get("statusCode")
    status = code if isinstance(code, int) else None
    body = _str(data.get("responseBody")) or ""
    ending = api_error_ending(
        f"{message}\n{body[:2000]}" if body else message,
        status=status,
        kind=_ERROR_NAMES.get(name or ""),
        timestamp=timestamp,
    )
    ending.message = short_message(message)  # the classification also read the body
    yield ending


def _tool_call(call_id: str, name: str, args: dict[str, object], timestamp: str | None) -> ToolCall:
    call = ToolCall(call_id=call_id, name=name, timestamp=timestamp)
    if name in _EDIT_TOOLS:
        call.action = _EDIT_TOOLS[name]  # type: ignore[assignment]
        target = args.get("filePath") or args.get("path")
        call.paths = (target,) if isinstance(target, str) and target else ()
    elif name in _PATCH_TOOLS:
        patch = args.get("patchText") or args.get("patch") or ""
        call.action = "edit"
        patch_text = patch if isinstance(patch, str) else ""
        call.paths = tuple(
            dict.fromkeys(m.group(2).strip() for m in _PATCH_FILE.finditer(patch_text))
        )
    elif name == "bash":
        call.action = "command"
        call.command = _text(args.get("command")) or ""
    elif name == "todowrite":
        call.action = "plan"
        call.plan = PlanOp(op="replace", items=_todo_items(args.get("todos")))
    elif name == "task":
        call.action = "subagent"
    elif name in _READ_TOOLS:
        call.action = "read"
    return call


def _todo_items(todos: object) -> tuple[PlanItem, ...]:
    if not isinstance(todos, list):
        return ()
    return tuple(
        PlanItem(
            id=_text(todo.get("id")) or str(n),
            subject=_text(todo.get("content")) or "",
            status=_status(todo.get("status")),
        )
        for n, todo in enumerate(todos, start=1)
        if isinstance(todo, dict)
    )


def _status(value: object) -> PlanStatus:
    return (
        cast(PlanStatus, value) if isinstance(value, str) and value in _PLAN_STATUSES else "pending"
    )


def _unquote(text: str) -> str:
    """`opencode run` wraps each argument holding a space in double quotes (escaping
    inner quotes) before storing the prompt; a single wrapped argument is unwrapped."""
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        inner = text[1:-1]
        if '"' not in inner.replace('\\"', ""):
            return inner.replace('\\"', '"')
    return text


def _text(value: object) -> str | None:
    """A column or field that must be text: anything else (a number, a blob, JSON of
    another shape) counts as absent."""
    return value if isinstance(value, str) and value else None


def _seconds(millis: object) -> float:
    return millis / 1000 if isinstance(millis, (int, float)) and millis > 0 else 0.0


def _decode_column(decoder: LazyDecoder[Any], data: object) -> object | None:
    """A JSON column (text or blob) decoded into its typed shape, or None."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    if not isinstance(raw, bytes):
        return None
    try:
        decoded: object = decoder.decode(raw)
        return decoded
    except DECODE_ERRORS:
        return None


def _iso(millis: object) -> str | None:
    if not isinstance(millis, (int, float)) or millis <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["OpenCode"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
OpenCode.integration = "passdown.integrations._opencode:OpenCodeHooks"  # type: ignore[attr-defined]
