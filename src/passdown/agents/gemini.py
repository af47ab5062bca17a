"""Gemini CLI: sessions under `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl`.

`<project>` is a short name registered in `~/.gemini/projects.json` (`{"projects": {root:
name}}`, the root also written to `tmp/<name>/.project_root`); builds before the registry
used the sha256 of the project root. The project root is the folder Gemini ran in, so a
workspace matches its own project and every registered project below it (a hash-named
folder can only be matched to the workspace itself: a hash cannot be reversed).

A session file is an append-only log the CLI replays: a header `{sessionId, projectHash,
startTime, ...}`; message records `{id, type: user|gemini|info|error|warning, content,
toolCalls, thoughts, model}` where a repeated id updates the earlier message in place;
`{"$set": {...}}` patches metadata and, with `messages`, replaces the whole history (on
resume, after a compression, after an aborted turn); `{"$rewindTo": id}` drops that
message and every later one. Builds before 0.2x wrote one pretty-printed JSON object per
session (`session-*.json`); those are streamed message by message.

Reading takes two passes so memory is bounded by the number of messages, never by their
size. Pass 1 streams the file decoding only ids and control records and replays the log
into the ordered list of live messages, each pointing at the offset of its latest line.
Pass 2 seeks to those lines and decodes them in that order. `$set.messages` is applied
as a replay, not literally: a message it keeps that was written as a record keeps that
record (which has the tool statuses and results the API-shaped copy lacks), and its
`<id>_response` copies of tool results are dropped; a compression (a new
`<state_snapshot>` summary) keeps the earlier messages and adds the summary as a
Compaction. Hidden reasoning (`thoughts`, `thought: true` parts) is never decoded.

The session files carry no CLI version, so `agent_version` stays unknown.

The Gemini-style parts (`functionCall`/`functionResponse`) and tool names are shared with
Qwen Code, a fork of Gemini CLI (`passdown.agents.qwen` imports the helpers below).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    file_mtime,
    first_error_line,
    is_dir,
    is_file,
    list_folder,
    read_head,
)
from passdown.agents._endings import api_error_ending
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
from passdown.jsonl import LineReader, line_limit, read_side_file, seekable
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    SessionEnding,
    SessionInfo,
    SessionRef,
    SubagentNote,
    ToolCall,
    ToolResult,
    Transcript,
)

_NULL = msgspec.Raw(b"null")
_HASH_NAME = re.compile(r"[0-9a-f]{64}")
_HEAD_FIELD = re.compile(rb'"(sessionId|startTime)"\s*:\s*"([^"\\]{1,200})"')
_SESSION_CONTEXT = "<session_context>"
_SNAPSHOT = "<state_snapshot>"
# The model's acknowledgement the CLI inserts after a compression summary.
_ACK = "Got it. Thanks for the additional context!"
_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_REGISTRY_LIMIT = 16 * 1024 * 1024

# -- tools (shared with Qwen Code) ------------------------------------------------
EDIT_TOOLS = {
    "write_file": "write",
    "replace": "edit",
    "edit": "edit",
    "smart_edit": "edit",
    "notebook_edit": "edit",
}
SHELL_TOOLS = frozenset({"run_shell_command"})
PLAN_TOOLS = frozenset({"write_todos", "todo_write"})
READ_TOOLS = frozenset(
    {
        "read_file",
        "read_many_files",
        "list_directory",
        "ls",
        "glob",
        "grep",
        "grep_search",
        "search_file_content",
        "web_fetch",
        "google_web_search",
        "web_search",
    }
)
SUBAGENT_TOOLS = frozenset({"invoke_agent", "delegate_to_agent", "agent", "task"})
_TODO_STATUS = {
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
# Lines the shell tools wrap around a command's own output.
_SHELL_FRAME = (
    "Command: ",
    "Directory: ",
    "Error: (none)",
    "Exit Code:",
    "Signal:",
    "Background PIDs:",
    "Process Group PGID:",
    "<untrusted_context>",
    "</untrusted_context>",
)
# A lone UTF-16 surrogate escape (JavaScript writes one when it cuts a string inside an
# emoji); msgspec rejects the whole line for it. Group 1 is the run of backslashes.
# The lookbehind starts a match only at the first backslash of a run: without it every
# position inside a long run of backslashes rescans the run (quadratic).
_SURROGATE = re.compile(
    rb"(?<!\\)(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
)
_EXIT_LINE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)
_SIGNAL_LINE = re.compile(r"^Signal: (\d+|SIG\w+)\s*$", re.MULTILINE)


class FunctionCall(msgspec.Struct):
    id: str | None = None
    name: str = ""
    args: msgspec.Raw = _NULL


class FunctionResponse(msgspec.Struct):
    id: str | None = None
    name: str = ""
    response: msgspec.Raw = _NULL


class Part(msgspec.Struct):
    """One Gemini content part; `thought` parts are hidden reasoning and are skipped."""

    text: str | None = None
    thought: Any = None
    functionCall: FunctionCall | None = None
    functionResponse: FunctionResponse | None = None


class _Response(msgspec.Struct):
    output: msgspec.Raw = _NULL
    error: msgspec.Raw = _NULL


class _Todo(msgspec.Struct):
    id: str | int | None = None
    description: str | None = None
    content: str | None = None
    status: str | None = None


class ToolArgs(msgspec.Struct):
    """The tool arguments passdown reads; file bodies and edit strings are skipped."""

    file_path: str | None = None
    absolute_path: str | None = None
    path: str | None = None
    notebook_path: str | None = None
    command: str | None = None
    todos: list[_Todo] | None = None


_PARTS = msgspec.json.Decoder(str | list[Part] | Part)
_RESPONSE = msgspec.json.Decoder(_Response)
_ARGS = msgspec.json.Decoder(ToolArgs)
_ANY = msgspec.json.Decoder()


def lenient(decoder: msgspec.json.Decoder[Any], raw: msgspec.Raw | bytes) -> Any:
    """Decode a nested field; a bad or unexpected shape gives None, never an exception."""
    if len(raw) == 0 or (len(raw) == 4 and bytes(raw) == b"null"):
        return None
    try:
        return decoder.decode(raw)
    except DECODE_ERRORS:
        pass
    try:  # invalid UTF-8 or lone surrogates inside the field: keep what can be read
        return decoder.decode(repair(bytes(raw)).decode("utf-8", "replace").encode("utf-8"))
    except DECODE_ERRORS:
        return None


def decode_record(
    decoder: msgspec.json.Decoder[Any],
    line: bytes,
    offset: int,
    tail_offset: int,
    diag: Diagnostics,
) -> object | None:
    """`decode_line`, plus repair of the lone surrogate escapes Node can write."""
    try:
        decoded: object = decoder.decode(line)
        return decoded
    except DECODE_ERRORS:
        pass
    return decode_line(decoder, repair(line), offset, tail_offset, diag)


def repair(line: bytes) -> bytes:
    return _SURROGATE.sub(_replace_surrogate, line) if b"\\u" in line else line


def _replace_surrogate(match: re.Match[bytes]) -> bytes:
    slashes, unit, low = match.group(1), match.group(2), match.group(3)
    if len(slashes) % 2 == 0 or (low and unit[1:2].lower() in b"89ab"):
        return match.group(0)  # an escaped backslash, or a valid high+low pair
    return slashes[:-1] + b"\\ufffd" + (b"\\ufffd" if low else b"")


def parts_of(raw: msgspec.Raw) -> list[Part]:
    value = lenient(_PARTS, raw)
    if value is None:
        return []
    if isinstance(value, str):
        return [Part(text=value)]
    return [value] if isinstance(value, Part) else value


def visible_text(parts: list[Part]) -> str:
    texts = [p.text.strip() for p in parts if p.text and not p.thought]
    return "\n\n".join(t for t in texts if t)


def as_text(raw: msgspec.Raw) -> str | None:
    """A response field as text (usually a string; objects are shown as JSON)."""
    value = lenient(_ANY, raw)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)[:20000]
    except (RecursionError, ValueError):  # nested deeper than json can print
        return None


def response_texts(resp: FunctionResponse) -> tuple[str | None, str | None]:
    """(output, error) of a functionResponse; a present `error` means the tool failed."""
    response = lenient(_RESPONSE, resp.response)
    if not isinstance(response, _Response):
        return as_text(resp.response), None
    return as_text(response.output), as_text(response.error)


def make_tool_call(
    call_id: str, name: str, args_raw: msgspec.Raw, timestamp: str | None
) -> ToolCall:
    call = ToolCall(call_id=call_id, name=name, timestamp=timestamp)
    args = lenient(_ARGS, args_raw)
    if not isinstance(args, ToolArgs):
        args = ToolArgs()
    if name in EDIT_TOOLS:
        call.action = EDIT_TOOLS[name]  # type: ignore[assignment]
        target = args.file_path or args.absolute_path or args.path or args.notebook_path
        call.paths = (target,) if target else ()
    elif name in SHELL_TOOLS:
        call.action = "command"
        call.command = args.command or ""
    elif name in PLAN_TOOLS and args.todos is not None:
        call.action = "plan"
        call.plan = PlanOp(op="replace", items=todo_items(args.todos))
    elif name in SUBAGENT_TOOLS:
        call.action = "subagent"
    elif name in READ_TOOLS:
        call.action = "read"
    return call


def todo_items(todos: list[_Todo]) -> tuple[PlanItem, ...]:
    items = []
    for n, todo in enumerate(todos, start=1):
        status = _TODO_STATUS.get((todo.status or "").lower(), "pending")
        items.append(
            PlanItem(
                id=str(todo.id if todo.id not in (None, "") else n),
                subject=todo.description or todo.content or "",
                status=status,  # type: ignore[arg-type]
            )
        )
    return tuple(items)


def make_tool_result(
    call: ToolCall,
    *,
    failed: bool,
    output: str | None,
    error: str | None,
    timestamp: str | None,
    exit_code: int | None = None,
) -> ToolResult:
    """A tool's outcome. Shell tools report success even for a non-zero exit: the exit
    code is in the output text (`Exit Code: N`; Gemini omits the line for 0)."""
    result = ToolResult(call_id=call.call_id, timestamp=timestamp)
    failed = failed or error is not None
    text = error if error is not None else (output or "")
    if call.action == "command":
        code = exit_code if exit_code is not None else shell_exit_code(text)
        signalled = _SIGNAL_LINE.search(text[-2000:]) is not None
        if code is None and not failed and not signalled:
            code = 0
        result.exit_code = code
        result.is_error = failed or signalled or code not in (None, 0)
        if result.is_error:
            result.error = first_error_line(shell_output(text)) or _head(text)
        return result
    result.is_error = failed
    if failed:
        result.error = first_error_line(text) or _head(text) or "the tool call failed"
    return result


def shell_exit_code(text: str) -> int | None:
    codes = _EXIT_LINE.findall(text[-2000:])
    return int(codes[-1]) if codes else None


def shell_output(text: str) -> str:
    """The command's own output, without the frame lines the shell tool adds (they would
    otherwise pass for error lines: the command echoed back, `Error: (none)`)."""
    if len(text) > 24000:  # first_error_line reads the head and the tail only
        text = text[:20000] + "\n" + text[-3000:]
    lines = []
    for line in text.splitlines():
        if line.startswith(_SHELL_FRAME):
            continue
        lines.append(line[len("Output: ") :] if line.startswith("Output: ") else line)
    return "\n".join(lines)


def _head(text: str | None) -> str | None:
    stripped = (text or "").strip()
    return stripped[:300] or None


# -- session files ------------------------------------------------------------------
class _Brief(msgspec.Struct):
    """A message inside `$set.messages`: only what pass 1 needs (typed: a `$set` whose
    messages have ids or types of the wrong kind is skipped as unreadable)."""

    id: str | None = None
    type: str | None = None
    content: msgspec.Raw = _NULL


class _Patch(msgspec.Struct):
    messages: list[_Brief] | None = None
    summary: Any = None
    lastUpdated: Any = None


class _Control(msgspec.Struct):
    """Pass 1's view of a line: message ids, control records and header fields."""

    id: Any = None
    sessionId: Any = None
    projectHash: Any = None
    startTime: Any = None
    lastUpdated: Any = None
    summary: Any = None
    messages: list[_Brief] | None = None
    set: _Patch | None = msgspec.field(default=None, name="$set")
    rewind: Any = msgspec.field(default=None, name="$rewindTo")


class _ToolRecord(msgspec.Struct):
    id: str | None = None
    name: str = ""
    args: msgspec.Raw = _NULL
    result: msgspec.Raw = _NULL
    status: str | None = None
    timestamp: str | None = None


class _Message(msgspec.Struct):
    """A message in the shapes the CLI writes (typed: one decode in the common case)."""

    id: str | None = None
    timestamp: str | None = None
    type: str | None = None
    content: str | list[Part] | None = None
    toolCalls: list[_ToolRecord] | None = None
    model: str | None = None


class _LooseMessage(msgspec.Struct):
    """The fallback for a message of an unexpected shape: nested fields decoded leniently."""

    id: Any = None
    timestamp: str | None = None
    type: Any = None
    content: msgspec.Raw = _NULL
    toolCalls: msgspec.Raw = _NULL
    model: Any = None


class _FullPatch(msgspec.Struct):
    messages: list[_Message] | None = None


class _FullLine(msgspec.Struct):
    messages: list[_Message] | None = None
    set: _FullPatch | None = msgspec.field(default=None, name="$set")


class _Legacy(msgspec.Struct):
    sessionId: Any = None
    startTime: Any = None
    lastUpdated: Any = None
    summary: Any = None
    messages: list[_Message] | None = None


_CONTROL = msgspec.json.Decoder(_Control)
_MESSAGE = msgspec.json.Decoder(_Message)
_LOOSE_MESSAGE = msgspec.json.Decoder(_LooseMessage)
_FULL_LINE = msgspec.json.Decoder(_FullLine)
_LEGACY = msgspec.json.Decoder(_Legacy)
_TOOL_RECORDS = msgspec.json.Decoder(list[_ToolRecord])


class GeminiCLI(Agent):
    name = "gemini"
    display_name = "Gemini CLI"
    program = "gemini"

    def gemini_dir(self) -> Path:
        configured = os.environ.get("GEMINI_CLI_HOME")  # the CLI's own home override
        home = Path(configured).expanduser() if configured else Path.home()
        if os.environ.get("SANDBOX") == "sandbox-exec":  # macOS seatbelt runs keep state here
            return home / ".cache" / ".gemini"
        return home / ".gemini"

    def store_roots(self) -> list[Path]:
        return [self.gemini_dir() / "tmp"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for folder, root in self._projects(workspace):
            for path in _session_files(folder / "chats"):
                yield self._ref(path, root)

    def _projects(self, workspace: Path | None) -> Iterator[tuple[Path, str | None]]:
        tmp = self.gemini_dir() / "tmp"
        roots = {name: root for root, name in _registry(self.gemini_dir()).items()}
        folders = [p for p in list_folder(tmp) if is_dir(p)]
        ws_hash = hashlib.sha256(str(workspace).encode()).hexdigest() if workspace else None
        for folder in folders:
            root = _marker(folder) or roots.get(folder.name)
            if root is None and _HASH_NAME.fullmatch(folder.name):
                if workspace is not None and folder.name != ws_hash:
                    continue
                root = str(workspace) if workspace is not None else None
            elif root is None:
                continue  # not a project folder (bin/, ...)
            if workspace is None or cwd_in_workspace(root, workspace):
                yield folder, root

    def ref_for_path(self, path: Path) -> SessionRef:
        project = path.parent.parent
        root = _marker(project) or {n: r for r, n in _registry(self.gemini_dir()).items()}.get(
            project.name
        )
        return self._ref(path, root)

    def _ref(self, path: Path, root: str | None) -> SessionRef:
        mtime, size = file_mtime(path)
        fields = _head_fields(path)
        session_id = fields.get("sessionId") or path.name.split(".")[0]
        return SessionRef(
            agent=self.name,
            session_id=session_id,
            path=path,
            cwd=root,
            started_at=fields.get("startTime"),
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        emitter = _Emitter(info, diag)
        if ref.path.name.endswith(".json"):
            yield from _read_legacy(ref.path, emitter)
        else:
            replay = _Replay(ref.path, info, diag)
            replay.run()
            yield from replay.messages(emitter)
        yield from _subagents(ref)

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--flag=value" keeps a prompt that starts with "-" one value (yargs would read
        # "-p -x" as two flags). auto_edit approves edits, as Claude's acceptEdits does.
        if interactive:
            return LaunchSpec(argv=[self.program, f"--prompt-interactive={prompt}"], cwd=workspace)
        argv = [self.program, "--approval-mode", "auto_edit", f"--prompt={prompt}"]
        return LaunchSpec(argv=argv, cwd=workspace)


# -- discovery helpers -----------------------------------------------------------------
def _registry(gemini_dir: Path) -> dict[str, str]:
    """projects.json: {project root: short name}; missing or broken gives {}."""
    raw = read_side_file(gemini_dir / "projects.json", _REGISTRY_LIMIT)
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {
        str(k): str(v) for k, v in projects.items() if isinstance(v, str) and isinstance(k, str)
    }


def _marker(folder: Path) -> str | None:
    """The project root a folder belongs to (`.project_root`, written by 0.2x+)."""
    raw = read_side_file(folder / ".project_root", 8192)
    root = raw.decode("utf-8", "replace").strip() if raw is not None else ""
    return root or None


def _session_files(chats: Path) -> list[Path]:
    entries = [p for p in list_folder(chats) if p.name.startswith("session-") and is_file(p)]
    names = {p.name for p in entries}
    # A resumed legacy session.json is continued as session.jsonl next to it.
    return [
        p
        for p in entries
        if p.name.endswith(".jsonl") or (p.name.endswith(".json") and p.name + "l" not in names)
    ]


def _head_fields(path: Path) -> dict[str, str]:
    """sessionId and startTime from the first bytes (a header line, or the top of a
    pretty-printed legacy file), without reading on."""
    found: dict[str, str] = {}
    for match in _HEAD_FIELD.finditer(read_head(path, 8192)):
        key = match.group(1).decode()
        found.setdefault(key, match.group(2).decode("utf-8", "replace"))
        if len(found) == 2:
            break
    return found


def _subagents(ref: SessionRef) -> Iterator[SubagentNote]:
    """Sub-agent transcripts live in chats/<parent session id>/<id>.jsonl."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", ref.session_id)
    try:
        files = sorted((ref.path.parent / safe).glob("*.jsonl"))
    except OSError:
        return
    for path in files:
        yield SubagentNote(agent_id=path.stem, path=str(path))


# -- pass 1: replay the log into the live message list ----------------------------------
class _Replay:
    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        self.path = path
        self.info = info
        self.diag = diag
        # id -> (offset, index): index -1 is the record line itself, otherwise the
        # position inside that line's `$set.messages` (or header `messages`).
        self.live: dict[str, tuple[int, int]] = {}
        # id -> offset of the latest record line for that id (the richest version).
        self.best: dict[str, int] = {}

    def run(self) -> None:
        reader = LineReader(self.path, self.diag)
        for offset, line in reader.forward():
            rec = decode_record(_CONTROL, line, offset, reader.tail_offset, self.diag)
            if isinstance(rec, _Control):
                self._record(rec, offset)

    def _record(self, rec: _Control, offset: int) -> None:
        if isinstance(rec.rewind, str):
            self._rewind(rec.rewind)
        elif isinstance(rec.id, str):
            self.best[rec.id] = offset
            self.live[rec.id] = (offset, -1)  # an existing key keeps its position
        elif rec.set is not None:
            self._patch(rec.set, offset)
        elif isinstance(rec.sessionId, str) and isinstance(rec.projectHash, str):
            self._header(rec, offset)
        else:
            self.diag.unknown("(unrecognised record)")

    def _header(self, rec: _Control, offset: int) -> None:
        info = self.info
        info.session_id = rec.sessionId or info.session_id
        if isinstance(rec.startTime, str):
            info.started_at = info.started_at or rec.startTime
        self._note_meta(rec.lastUpdated, rec.summary)
        for index, brief in enumerate(rec.messages or ()):  # a converted legacy file
            if isinstance(brief.id, str) and not _injected(brief):
                self.live[brief.id] = (offset, index)

    def _patch(self, patch: _Patch, offset: int) -> None:
        self._note_meta(patch.lastUpdated, patch.summary)
        if patch.messages is not None:
            self._replace(patch.messages, offset)

    def _note_meta(self, updated: Any, summary: Any) -> None:
        if isinstance(updated, str):
            self.info.updated_at = updated
        if isinstance(summary, str) and summary.strip():
            self.info.title = summary.strip()

    def _replace(self, messages: list[_Brief], offset: int) -> None:
        old, best = self.live, self.best
        compaction = any(_is_snapshot(m) and m.id not in old and m.id not in best for m in messages)
        new: dict[str, tuple[int, int]] = dict(old) if compaction else {}
        for index, brief in enumerate(messages):
            mid = brief.id
            if not isinstance(mid, str) or _injected(brief) or (compaction and mid in new):
                continue
            if mid in best:
                new[mid] = (best[mid], -1)
            elif mid in old:
                new[mid] = old[mid]
            elif mid.endswith("_response") and mid[: -len("_response")] in best:
                continue  # a copy of tool results the record already holds
            else:
                new[mid] = (offset, index)
        self.live = new

    def _rewind(self, target: str) -> None:
        keys = list(self.live)
        dropped = keys[keys.index(target) :] if target in self.live else keys
        for key in dropped:  # the CLI drops everything when the target is unknown
            del self.live[key]
            self.best.pop(key, None)
        self.diag.off_branch_records += len(dropped)

    # -- pass 2 ---------------------------------------------------------------------
    def messages(self, emitter: _Emitter) -> Iterator[Event]:
        if not self.live:
            return
        cached: tuple[int, list[_Message]] = (-1, [])
        limit = line_limit(self.path)
        with seekable(self.path, self.diag) as handle:
            for offset, index in list(self.live.values()):
                line = _line_at(handle, offset, limit)
                if index < 0:
                    msg = _message(line)
                else:
                    if cached[0] != offset:  # decode a large $set line once
                        cached = (offset, _set_messages(line))
                    msg = cached[1][index] if index < len(cached[1]) else None
                if isinstance(msg, _Message):
                    yield from emitter.message(msg)
                else:
                    self.diag.bad_lines += 1


def _line_at(handle: Any, offset: int, limit: int) -> bytes:
    handle.seek(offset)
    line: bytes = handle.readline(limit + 1)
    return line.rstrip(b"\r\n")


def _message(blob: bytes) -> _Message | None:
    try:
        return _MESSAGE.decode(blob)
    except DECODE_ERRORS:
        pass
    loose = lenient(_LOOSE_MESSAGE, blob)
    if not isinstance(loose, _LooseMessage) or not isinstance(loose.type, str):
        return None  # not a message, or one whose type is of the wrong kind: unreadable
    return _Message(
        id=loose.id if isinstance(loose.id, str) else None,
        timestamp=loose.timestamp if isinstance(loose.timestamp, str) else None,
        type=loose.type,
        content=parts_of(loose.content),
        toolCalls=lenient(_TOOL_RECORDS, loose.toolCalls),
        model=loose.model if isinstance(loose.model, str) else None,
    )


def _set_messages(line: bytes) -> list[_Message]:
    full = lenient(_FULL_LINE, msgspec.Raw(line))
    if not isinstance(full, _FullLine):
        return []
    if full.set is not None and full.set.messages is not None:
        return full.set.messages
    return full.messages or []


def _injected(brief: _Brief) -> bool:
    """The CLI's own context message (date, OS, folder listing): never exported."""
    return brief.type == "user" and _SESSION_CONTEXT.encode() in bytes(brief.content)[:200]


def _is_snapshot(brief: _Brief) -> bool:
    return brief.type == "user" and _SNAPSHOT.encode() in bytes(brief.content)[:400]


# -- pass 2: one message to events -------------------------------------------------------
def _content_parts(content: str | list[Part] | None) -> list[Part]:
    if isinstance(content, str):
        return [Part(text=content)]
    return content or []


class _Emitter:
    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.pending: dict[str, ToolCall] = {}  # calls whose result is still to come

    def message(self, msg: _Message) -> Iterator[Event]:
        if msg.timestamp:
            self.info.started_at = self.info.started_at or msg.timestamp
            self.info.updated_at = max(self.info.updated_at or "", msg.timestamp)
        kind = msg.type
        if kind == "user":
            yield from self._user(msg)
        elif kind == "gemini":
            yield from self._gemini(msg)
        elif kind == "error" or kind == "info":
            yield from _notice_ending(msg)
        elif kind not in _MESSAGE_TYPES:
            self.diag.unknown(f"message type {kind!r}")
        # info / error / warning are the CLI's notices, not the conversation; an API
        # error or a cancelled request nothing follows is how the session ended

    def _user(self, msg: _Message) -> Iterator[Event]:
        parts = _content_parts(msg.content)
        for part in parts:
            resp = part.functionResponse
            call = self.pending.pop(resp.id or "", None) if resp else None
            if resp is not None and call is not None:
                output, error = response_texts(resp)
                yield make_tool_result(
                    call, failed=False, output=output, error=error, timestamp=msg.timestamp
                )
        text = visible_text(parts)
        if not text or text.startswith(_SESSION_CONTEXT):
            return
        if _SNAPSHOT in text[:400]:
            yield Compaction(summary=text, trigger="auto", timestamp=msg.timestamp)
            return
        yield Message(role="user", text=text, timestamp=msg.timestamp)

    def _gemini(self, msg: _Message) -> Iterator[Event]:
        self.info.add_model(msg.model)
        parts = _content_parts(msg.content)
        text = visible_text(parts)
        if text and text != _ACK:
            yield Message(role="assistant", text=text, timestamp=msg.timestamp)
        emitted: set[str] = set()
        for part in parts:  # the API shape (a history re-serialised by $set)
            fc = part.functionCall
            if fc is not None and fc.id:
                call = make_tool_call(fc.id, fc.name, fc.args, msg.timestamp)
                emitted.add(fc.id)
                self.pending[fc.id] = call
                yield call
        for record in msg.toolCalls or ():
            yield from self._tool_record(record, emitted, msg.timestamp)

    def _tool_record(
        self, record: _ToolRecord, emitted: set[str], timestamp: str | None
    ) -> Iterator[Event]:
        if not record.id:
            return
        if record.id not in emitted:
            call = make_tool_call(
                record.id, record.name, record.args, record.timestamp or timestamp
            )
            self.pending[record.id] = call
            yield call
        if record.status not in ("success", "error", "cancelled"):
            return  # still running when the session was written: the result may follow
        finished = self.pending.pop(record.id) if record.id in self.pending else None
        if finished is None:
            return
        output = error = None
        for part in parts_of(record.result):
            if part.functionResponse is not None:
                output, error = response_texts(part.functionResponse)
                break
        if record.status == "cancelled" and error is None:
            error = "cancelled by the user"
        yield make_tool_result(
            finished,
            failed=record.status != "success",
            output=output,
            error=error,
            timestamp=record.timestamp or timestamp,
        )


# -- legacy: one pretty-printed JSON object per session ------------------------------------
def _notice_ending(msg: _Message) -> Iterator[Event]:
    """The interactive CLI records its error notices ("[API Error: ...]", with a rate
    limit hint on a 429) and "Request cancelled." (info); `gemini -p` records neither."""
    text = visible_text(_content_parts(msg.content)).strip()
    if msg.type == "error" and text:
        yield api_error_ending(text, timestamp=msg.timestamp)
    elif msg.type == "info" and text == "Request cancelled.":
        yield SessionEnding(reason="interrupted", message=text, timestamp=msg.timestamp)


def _read_legacy(path: Path, emitter: _Emitter) -> Iterator[Event]:
    """Stream `{..., "messages": [ {...}, ... ]}` written with 2-space indentation: each
    message spans the lines from `    {` to `    }`; a compact one-line file is one line."""
    reader = LineReader(path, emitter.diag)
    chunk: list[bytes] = []
    in_messages = False
    first = True
    for _, line in reader.forward():
        if first and line.strip() != b"{":
            yield from _legacy_compact(line, reader, emitter)
            return
        first = False
        if not in_messages:
            in_messages = line.startswith(b'  "messages": [')
            _legacy_meta(line, emitter.info)
            continue
        if line.startswith(b"    {"):
            chunk = [line]
        elif line.startswith(b"    }") and chunk:
            chunk.append(b"}")
            yield from _legacy_message(b"\n".join(chunk), emitter)
            chunk = []
        elif chunk:
            chunk.append(line)
        elif line.startswith(b"  ]"):
            in_messages = False
    if chunk:
        emitter.diag.torn_last_line = True  # the file ended inside a message


def _legacy_meta(line: bytes, info: SessionInfo) -> None:
    match = _HEAD_FIELD.search(line)
    if match and match.group(1) == b"sessionId":
        info.session_id = match.group(2).decode("utf-8", "replace")
    elif match:
        info.started_at = info.started_at or match.group(2).decode("utf-8", "replace")


def _legacy_message(blob: bytes, emitter: _Emitter) -> Iterator[Event]:
    msg = _message(blob)
    if isinstance(msg, _Message):
        yield from emitter.message(msg)
    else:
        emitter.diag.bad_lines += 1


def _legacy_compact(line: bytes, reader: LineReader, emitter: _Emitter) -> Iterator[Event]:
    legacy = decode_record(_LEGACY, line, 0, reader.tail_offset, emitter.diag)
    if not isinstance(legacy, _Legacy):
        return
    if isinstance(legacy.sessionId, str):
        emitter.info.session_id = legacy.sessionId
    if isinstance(legacy.startTime, str):
        emitter.info.started_at = legacy.startTime
    for msg in legacy.messages or ():
        yield from emitter.message(msg)


__all__ = ["GeminiCLI"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
GeminiCLI.integration = "passdown.integrations.settings_json:GeminiHooks"  # type: ignore[attr-defined]
