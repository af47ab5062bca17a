"""Cline CLI 3 (npm `cline`, the SDK-based CLI; not the VS Code extension's task
folders): sessions under `~/.cline/data/sessions/<id>/` on Linux, macOS and Windows
alike (`%USERPROFILE%\\.cline\\data` there; the CLI resolves it from the home folder).
`CLINE_SESSION_DATA_DIR` replaces the `sessions` folder, `CLINE_DATA_DIR` the `data`
folder, `CLINE_DIR` the `.cline` folder.

Each session folder holds two files, both rewritten in place per turn:
- `<id>.json`, the manifest: `cwd`, `workspace_root`, `started_at`, `ended_at`,
  `status` (completed|failed|cancelled|...), `exit_code`, `model`, the prompt, and
  `metadata.sessionHistoryOrigin.version` (the CLI version).
- `<id>.messages.json`, **one JSON document** `{messages[], system_prompt, ...}` with
  Anthropic-style blocks (`text`, `tool_use {id, name, input}`, `tool_result
  {tool_use_id, content}`) and a millisecond `ts` per message. The user's prompt is
  wrapped in `<user_input mode="act">`. A resumed turn is appended to the same file.

Being one document, the messages file cannot be read line by line: its `messages` array
is read as a stream (`_json_stream.DocumentStream`), one message at a time, up to
`MAX_MESSAGES_BYTES` (past it, or past a cut, the messages before that point and a
warning), so memory holds one message, not the file.

The CLI has no per-session todo tool; its plan is the `team_task` tool (create, claim,
complete, block), whose rows live in SQLite `data/db/teams.db` (`team_tasks`, keyed by
the session id as `team_name`): the calls are replayed, then the table's rows give the
final statuses. A command is `run_commands {commands[]}`, answered by one result entry
per command (`{query, result, error: "Command exited with code 2", success}`). A 429 the
AI SDK retried leaves no trace; a request that still fails after the retries ends the run:
an assistant message `{metadata: {displayOnly, displayRole: "error"}}` holding the error
("Rate limit reached"), and `status: "failed"`, `exit_code: 1` in the manifest.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents import _record_fields
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_or_none,
    file_mtime,
    first_error_line,
    is_dir,
    list_folder,
    open_sqlite_readonly,
    parse_exit_code,
)
from passdown.agents._document import decode_side_file, find_first
from passdown.agents._endings import api_error_ending
from passdown.agents.base import Agent, LaunchSpec, candidate_of
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    PlanStatus,
    SessionEnding,
    SessionInfo,
    SessionRef,
    ToolAction,
    ToolCall,
    ToolResult,
    Transcript,
)

# The messages file is one JSON document, streamed: read no further than this.
MAX_MESSAGES_BYTES = 256 * 1024 * 1024
_MANIFEST_BYTES = 4 * 1024 * 1024
_MESSAGES_SUFFIX = ".messages.json"
_USER_INPUT = lazy_compile(r"^\s*<user_input(?: [^>]*)?>(.*)</user_input>\s*$", re.DOTALL)
_READ_TOOLS = frozenset({"read_files", "search_codebase", "fetch_web_content"})
_TASK_STATUS: dict[str, PlanStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "blocked": "blocked",
    "completed": "completed",
}
_ACTION_STATUS: dict[str, PlanStatus] = {
    "claim": "in_progress",
    "complete": "completed",
    "block": "blocked",
}
# manifest statuses that mean the run did not end on the agent's own answer
_ENDED_BADLY: dict[str, tuple[str, str]] = {
    "failed": ("error", "the Cline run failed"),
    "error": ("error", "the Cline run failed"),
    "cancelled": ("interrupted", "the Cline run was cancelled"),
    "aborted": ("interrupted", "the Cline run was aborted"),
}


class _Origin(msgspec.Struct):
    version: str | None = None


class _Meta(msgspec.Struct):
    sessionHistoryOrigin: _Origin | None = None
    title: str | None = None
    terminal_marker: str | None = None


class _Manifest(msgspec.Struct):
    session_id: str | None = None
    cwd: str | None = None
    workspace_root: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    status: str | None = None
    exit_code: int | None = None
    model: str | None = None
    prompt: str | None = None
    metadata: _Meta | None = None


class _ModelInfo(msgspec.Struct):
    id: str | None = None


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, object] | None = None
    tool_use_id: str | None = None
    content: object = None
    is_error: bool = False


class _Display(msgspec.Struct):
    displayOnly: bool = False
    displayRole: str | None = None  # "error": a request that failed after its retries


class _Message(msgspec.Struct):
    role: str = ""
    content: str | list[_Block] | None = None
    ts: int | float | None = None
    modelInfo: _ModelInfo | None = None
    metadata: _Display | None = None


class _CommandOutcome(msgspec.Struct):
    query: str | None = None
    result: str | None = None
    error: str | None = None
    success: bool | None = None


_MANIFEST = LazyDecoder(_Manifest)
_MESSAGE = LazyDecoder(_Message)
_OUTCOMES = LazyDecoder(list[_CommandOutcome])
_ANY = LazyDecoder()


class ClineCLI(Agent):
    name = "cline"
    display_name = "Cline CLI"
    program = "cline"
    store_env = ("CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR")

    def data_dir(self) -> Path:
        data = os.environ.get("CLINE_DATA_DIR")
        if data:
            return Path(data).expanduser()
        base = os.environ.get("CLINE_DIR")
        return (Path(base).expanduser() if base else Path.home() / ".cline") / "data"

    def sessions_dir(self) -> Path:
        configured = os.environ.get("CLINE_SESSION_DATA_DIR")
        return Path(configured).expanduser() if configured else self.data_dir() / "sessions"

    def store_roots(self) -> list[Path]:
        return [self.sessions_dir()]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for folder in list_folder(self.sessions_dir()):
            if not is_dir(folder):
                continue
            ref = self.ref_for_path(folder / f"{folder.name}{_MESSAGES_SUFFIX}")
            if candidate_of(ref, workspace):  # no folder per workspace: unplaced is anyone's
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        session_id = _session_id(path)
        messages = path.with_name(f"{session_id}{_MESSAGES_SUFFIX}")
        manifest_path = path.with_name(f"{session_id}.json")
        manifest = _manifest(manifest_path)
        mtime, size = file_mtime(messages)
        title = manifest.metadata.title if manifest.metadata else None
        cwd, unplaced = manifest.cwd or manifest.workspace_root, None
        manifest_size = file_mtime(manifest_path)[1]
        if cwd is None and manifest_size > _MANIFEST_BYTES:
            cwd, unplaced = _large_manifest_cwd(manifest_path, manifest_size)
        return SessionRef(
            agent=self.name,
            session_id=manifest.session_id or session_id,
            path=messages,
            cwd=cwd,
            started_at=manifest.started_at,
            updated_at=mtime,
            size=size,
            title=title or manifest.prompt,
            unplaced=unplaced,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        manifest = _manifest(ref.path.with_name(f"{ref.session_id}.json"))
        _fill_info(info, manifest)
        from passdown.agents._json_stream import DocumentStream  # loaded to read, not to list

        document = DocumentStream(
            ref.path,
            "messages.item",
            ("sessionId",),
            diag,
            limit=MAX_MESSAGES_BYTES,
            shape="a Cline messages document",
        )
        reader = _MessagesReader(info, diag)
        for raw in document.items():
            yield from reader.message(msgspec.Raw(raw))
        plan = _team_tasks(self.data_dir() / "db" / "teams.db", ref.session_id, diag)
        if plan is not None:
            yield plan
        ending = _ending(manifest)
        if ending is not None and not reader.failed:  # else the error itself said why
            yield ending

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # `cline PROMPT` runs one task and exits; `-i` opens the TUI. "--" keeps a prompt
        # that starts with "-" one argument, not an option.
        argv = [self.program, "-i", "--", prompt] if interactive else [self.program, "--", prompt]
        return LaunchSpec(argv=argv, cwd=workspace, env={"CLINE_NO_AUTO_UPDATE": "1"})


def _session_id(path: Path) -> str:
    name = path.name
    if name.endswith(_MESSAGES_SUFFIX):
        return name[: -len(_MESSAGES_SUFFIX)]
    return name[:-5] if name.endswith(".json") else name


def _manifest(path: Path) -> _Manifest:
    return decode_side_file(path, _MANIFEST, _MANIFEST_BYTES) or _Manifest()


_MANIFEST_CWD = lazy_compile(rb'"(?:cwd|workspace_root)"\s*:\s*("(?:[^"\\]|\\.)*")')


def _large_manifest_cwd(path: Path, size: int) -> tuple[str | None, str | None]:
    """The cwd of a manifest too large to decode (a long prompt: it is kept there), read
    in pieces, and why the session is unplaced when none is found as far as discovery
    reads (None when the whole manifest was read)."""
    limit = _record_fields.MAX_SCAN_BYTES
    found = find_first(path, _MANIFEST_CWD, limit)
    try:
        cwd = msgspec.json.decode(found) if found else None
    except DECODE_ERRORS:
        cwd = None
    if isinstance(cwd, str) and cwd:
        return cwd, None
    return None, _record_fields.not_within(limit) if size > limit else None


def _fill_info(info: SessionInfo, manifest: _Manifest) -> None:
    info.cwd = manifest.cwd or manifest.workspace_root or info.cwd
    info.started_at = manifest.started_at
    info.updated_at = manifest.ended_at
    origin = manifest.metadata.sessionHistoryOrigin if manifest.metadata else None
    info.agent_version = origin.version if origin else None
    if manifest.metadata and manifest.metadata.title:
        info.title = manifest.metadata.title
    info.add_model(manifest.model)


def _ending(manifest: _Manifest) -> SessionEnding | None:
    found = _ENDED_BADLY.get((manifest.status or "").lower())
    if found is None:
        return None
    reason, message = found
    marker = manifest.metadata.terminal_marker if manifest.metadata else None
    if marker:
        message = f"{message} ({marker})"
    return SessionEnding(reason=reason, message=message, timestamp=manifest.ended_at)  # type: ignore[arg-type]


class _MessagesReader:
    """Turns one message at a time into events; remembers the calls awaiting a result."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.calls: dict[str, ToolCall] = {}
        self.commands: dict[str, int] = {}  # run_commands call id -> how many commands
        self.failed = False  # the last message read was an error the run ended on

    def message(self, raw: msgspec.Raw) -> Iterator[Event]:
        self.diag.lines += 1
        msg = decode_or_none(_MESSAGE, raw)
        if not isinstance(msg, _Message):
            self.diag.bad_lines += 1
            return
        stamp = _iso(msg.ts)
        if msg.metadata is not None and msg.metadata.displayOnly:
            yield from self._shown_only(msg, stamp)
            return
        self.failed = False
        if msg.role == "assistant" and msg.modelInfo is not None:
            self.info.add_model(msg.modelInfo.id)
        blocks = (
            [_Block(type="text", text=msg.content)]
            if isinstance(msg.content, str)
            else msg.content or []
        )
        texts: list[str] = []
        for block in blocks:
            if block.type == "text" and block.text:
                texts.append(block.text)
            elif block.type == "tool_use":
                yield from _text(msg.role, texts, stamp)  # what it said before the call
                texts = []
                yield from self._tool_use(block, stamp)
            elif block.type == "tool_result":
                yield from self._tool_result(block, stamp)
            elif block.type not in ("thinking", "redacted_thinking", "image"):
                self.diag.unknown(f"block:{block.type or '(no type)'}")
        yield from _text(msg.role, texts, stamp)

    def _shown_only(self, msg: _Message, stamp: str | None) -> Iterator[Event]:
        """A message shown to the user but never sent to the model: an error that ended
        the run ("Rate limit reached" after the retries) is its ending; the rest is UI."""
        if msg.role != "assistant" or msg.metadata is None or msg.metadata.displayRole != "error":
            return
        if isinstance(msg.content, str):
            text = msg.content
        else:
            text = "\n".join(b.text for b in msg.content or [] if b.type == "text" and b.text)
        text = text.strip() or "the request failed"
        self.failed = True
        yield api_error_ending(text, timestamp=stamp)

    def _tool_use(self, block: _Block, stamp: str | None) -> Iterator[Event]:
        call_id, name, args = block.id or "", block.name or "", block.input or {}
        if name == "run_commands":
            commands = [c for c in _list(args.get("commands")) if isinstance(c, str)]
            self.commands[call_id] = len(commands)
            for n, command in enumerate(commands):
                yield ToolCall(
                    call_id=_nth(call_id, n),
                    name=name,
                    action="command",
                    command=command,
                    timestamp=stamp,
                )
            return
        call = ToolCall(call_id=call_id, name=name, timestamp=stamp)
        if name == "editor":
            path = args.get("path")
            creates = args.get("old_text") is None and args.get("insert_line") is None
            call.action = "write" if creates else "edit"
            call.paths = (path,) if isinstance(path, str) and path else ()
        elif name == "team_task":
            call.action, call.plan = _team_task(args)
        elif name == "spawn_agent":
            call.action = "subagent"
        elif name in _READ_TOOLS:
            call.action = "read"
        self.calls[call_id] = call
        yield call

    def _tool_result(self, block: _Block, stamp: str | None) -> Iterator[Event]:
        call_id = block.tool_use_id or ""
        count = self.commands.pop(call_id, None)
        if count is not None:
            yield from _command_results(call_id, count, block.content, stamp)
            return
        call = self.calls.pop(call_id, None)
        text = _content_text(block.content)
        outcome = _json_object(text)
        failed = block.is_error or outcome.get("success") is False or "error" in outcome
        result = ToolResult(call_id=call_id, is_error=failed, timestamp=stamp)
        if failed:
            error = outcome.get("error")
            result.error = first_error_line(error if isinstance(error, str) else text)
        elif call is not None and call.plan is not None and call.plan.op == "create":
            task_id = outcome.get("taskId")
            result.created_item_id = task_id if isinstance(task_id, str) else None
        yield result


def _team_task(args: dict[str, object]) -> tuple[ToolAction, PlanOp | None]:
    action = args.get("action")
    if action == "create":
        title = args.get("title")
        description = args.get("description")
        item = PlanItem(
            id="",
            subject=title if isinstance(title, str) else "",
            description=description if isinstance(description, str) else None,
        )
        return "plan", PlanOp(op="create", items=(item,))
    task_id = args.get("taskId")
    status = _ACTION_STATUS.get(action) if isinstance(action, str) else None
    if status is None or not isinstance(task_id, str):
        return "read", None  # list, or a call of another shape
    return "plan", PlanOp(op="update", item_id=task_id, status=status)


def _command_results(
    call_id: str, count: int, content: object, stamp: str | None
) -> Iterator[ToolResult]:
    """One result per command: `content` is a list of outcomes, in the commands' order
    (a JSON string of that list in some versions)."""
    if isinstance(content, str):
        decoded = decode_or_none(_OUTCOMES, content)
        outcomes = decoded if isinstance(decoded, list) else []
    else:
        outcomes = [
            _CommandOutcome(
                query=_str(o.get("query")),
                result=_str(o.get("result")),
                error=_str(o.get("error")),
                success=o.get("success") if isinstance(o.get("success"), bool) else None,
            )
            for o in _list(content)
            if isinstance(o, dict)
        ]
    for n in range(count):
        outcome = outcomes[n] if n < len(outcomes) else None
        if outcome is None:
            continue  # no answer for it: the call stays unanswered
        code = parse_exit_code(outcome.error) or parse_exit_code(outcome.result)
        failed = outcome.success is False or code not in (None, 0)
        result = ToolResult(call_id=_nth(call_id, n), is_error=failed, timestamp=stamp)
        if failed:
            result.exit_code = code
            body = _without_exit_header(outcome.result or "")
            result.error = first_error_line(body) or first_error_line(outcome.error)
        else:
            result.exit_code = code if code is not None else 0
        yield result


def _without_exit_header(text: str) -> str:
    # "[Command exited with code 2]\n\n[stderr]\nls: cannot access ..."
    lines = [
        line
        for line in text.splitlines()
        if not (line.startswith("[Command exited") or line.strip() in ("[stderr]", "[stdout]"))
    ]
    return "\n".join(lines)


def _text(role: str, texts: list[str], stamp: str | None) -> Iterator[Message]:
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    if not text or role not in ("user", "assistant"):
        return
    if role == "assistant":
        yield Message(role="assistant", text=text, timestamp=stamp)
        return
    match = _USER_INPUT.match(text)
    if match:
        yield Message(role="user", text=match.group(1).strip(), timestamp=stamp)
    else:  # "[SYSTEM] You still have team obligations..." and other injected text
        yield Message(role="user", text=text, timestamp=stamp, synthetic=True)


def _team_tasks(db: Path, session_id: str, diag: Diagnostics) -> PlanOp | None:
    """The session's team tasks as they stand: the final plan."""
    if not db.is_file():
        return None
    try:
        conn, warning = open_sqlite_readonly(db)
    except sqlite3.Error as exc:
        diag.warnings.append(f"could not open {db.name}: {exc}")
        return None
    if warning:
        diag.warnings.append(warning)
    try:
        rows = conn.execute(
            "SELECT task_id, title, description, status FROM team_tasks"
            " WHERE team_name = ? ORDER BY task_id",
            (session_id,),
        ).fetchall()
    except sqlite3.Error:  # an older or foreign schema: the replayed calls stand
        return None
    finally:
        conn.close()
    items = tuple(
        PlanItem(
            id=task_id,
            subject=title if isinstance(title, str) else "",
            status=_TASK_STATUS.get(status, "pending") if isinstance(status, str) else "pending",
            description=description if isinstance(description, str) else None,
        )
        for task_id, title, description, status in rows
        if isinstance(task_id, str)
    )
    return PlanOp(op="replace", items=items) if items else None


def _nth(call_id: str, n: int) -> str:
    return call_id if n == 0 else f"{call_id}#{n + 1}"


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = [
        b.get("text") for b in _list(content) if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "\n".join(p for p in parts if isinstance(p, str))


def _json_object(text: str) -> dict[str, object]:
    if not text.startswith("{"):
        return {}
    try:
        decoded = _ANY.decode(text)
    except DECODE_ERRORS:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _iso(millis: object) -> str | None:
    if not isinstance(millis, (int, float)) or isinstance(millis, bool) or millis <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["ClineCLI"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
ClineCLI.integration = "passdown.integrations._cline:ClineHooks"  # type: ignore[attr-defined]
