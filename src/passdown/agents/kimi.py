"""Kimi CLI (PyPI `kimi-cli`, the Python CLI; 1.51.0 is its last working release, 1.52
an archived stub): sessions under `~/.kimi/sessions/<md5 of the cwd>/<session uuid>/`
on Linux, macOS and Windows alike (`%USERPROFILE%\\.kimi` there); `KIMI_SHARE_DIR`
replaces `~/.kimi`. `~/.kimi/kimi.json` maps each working folder to its last session
(`work_dirs[{path, last_session_id}]`): it is how a folder name is turned back into a cwd.

A session folder holds:
- `wire.jsonl`, the event log, append-only: `{"type":"metadata"}` first, then
  `{timestamp (float seconds), message{type, payload}}` with `TurnBegin{user_input}`,
  `ContentPart{type: text|think}`, `ToolCall{id, function{name, arguments}}`,
  `ToolResult{tool_call_id, return_value{is_error, output, message}}`,
  `StepRetry{status_code, error_type}`, `StepInterrupted`, `CompactionBegin`, `TurnEnd`.
  This is the file read (one forward pass, resumable: incremental export).
- `context.jsonl`, the model's context (rewritten on compaction): not read.
- `state.json`: `{custom_title, todos[{title, status: pending|in_progress|done}]}`,
  the plan as it stands, read at the end as the final plan.

The plan tool is `SetTodoList {todos}` (the whole list each time). A failed `Shell` is
`is_error: true` with "Command failed with exit code: 2." as its message. A 429 the HTTP
client retried leaves nothing; one Kimi itself retried is `StepRetry {status_code: 429}`;
a turn that gave up is `StepInterrupted` (with the last retry's status, a rate limit).
Neither the CLI version nor the model is written in the session.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import msgspec

from passdown._jsonl import LineReader
from passdown._lazy_json import LazyDecoder
from passdown.agents._common import (
    TODO_STATUS,
    decode_line,
    decode_or_none,
    file_mtime,
    first_error_line,
    is_dir,
    list_folder,
    parse_exit_code,
)
from passdown.agents._document import decode_side_file
from passdown.agents._endings import api_error_ending
from passdown.agents._resumable import LineSessionAgent, LineStateReader, state_str, state_strs
from passdown.agents.base import LaunchSpec, cwd_in_workspace
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
)

_WIRE = "wire.jsonl"
_EDIT_TOOLS: dict[str, ToolAction] = {"WriteFile": "write", "StrReplaceFile": "edit"}
_READ_TOOLS = frozenset({"ReadFile", "Glob", "Grep", "FetchURL", "TaskList", "TaskOutput"})
# Events passdown knows and deliberately does not export.
_QUIET = frozenset(
    {
        "StepBegin",
        "StatusUpdate",
        "CompactionEnd",
        "HookTriggered",
        "HookResolved",
        "MCPLoadingBegin",
        "MCPLoadingEnd",
        "MCPStatusSnapshot",
        "MCPServerSnapshot",
        "Notification",
        "PlanDisplay",
        "BtwBegin",
        "BtwEnd",
        "SubagentEvent",  # a sub-agent's own steps: not the session's work
        "ApprovalRequest",
        "ApprovalResponse",
        "QuestionRequest",
        "QuestionResponse",
        "ToolCallRequest",
        "HookRequest",
        "HookResponse",
        "ToolCallPart",
    }
)


class _Function(msgspec.Struct):
    name: str = ""
    arguments: str | None = None


class _ReturnValue(msgspec.Struct):
    is_error: bool = False
    output: object = None
    message: str | None = None


class _Part(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Payload(msgspec.Struct):
    # TurnBegin / SteerInput
    user_input: str | list[_Part] | None = None
    # ContentPart
    type: str | None = None
    text: str | None = None
    # ToolCall
    id: str | None = None
    function: _Function | None = None
    # ToolResult
    tool_call_id: str | None = None
    return_value: _ReturnValue | None = None
    # StepRetry
    status_code: int | None = None
    error_type: str | None = None
    max_attempts: int | None = None


class _Envelope(msgspec.Struct):
    type: str = ""
    payload: _Payload | None = None


class _Record(msgspec.Struct):
    type: str | None = None  # the first line: {"type": "metadata", "protocol_version"}
    timestamp: float | None = None
    message: _Envelope | None = None


class _Args(msgspec.Struct):
    """The arguments that say what a call did; a written file's content is skipped."""

    path: object = None
    command: object = None
    todos: object = None
    description: object = None


class _Todo(msgspec.Struct):
    title: str | None = None
    status: str | None = None


class _State(msgspec.Struct):
    custom_title: str | None = None
    todos: list[_Todo] | None = None


class _WorkDir(msgspec.Struct):
    path: str | None = None
    kaos: str | None = None


class _Registry(msgspec.Struct):
    work_dirs: list[_WorkDir] = []


_RECORD = LazyDecoder(_Record)
_ARGS = LazyDecoder(_Args)
_TODOS = LazyDecoder(list[_Todo])
_STATE = LazyDecoder(_State)
_REGISTRY = LazyDecoder(_Registry)


def folder_name(cwd: str) -> str:
    """Kimi's folder for a working folder: the md5 of its path as text."""
    return hashlib.md5(cwd.encode("utf-8"), usedforsecurity=False).hexdigest()


class KimiCLI(LineSessionAgent):
    name = "kimi"
    display_name = "Kimi CLI"
    program = "kimi"
    store_env = ("KIMI_SHARE_DIR",)

    def share_dir(self) -> Path:
        configured = os.environ.get("KIMI_SHARE_DIR")
        return Path(configured).expanduser() if configured else Path.home() / ".kimi"

    def store_roots(self) -> list[Path]:
        return [self.share_dir() / "sessions"]

    def work_dirs(self) -> dict[str, str]:
        """Folder name -> working folder, from kimi.json (small; bounded read)."""
        registry = decode_side_file(self.share_dir() / "kimi.json", _REGISTRY)
        if registry is None:
            return {}
        found: dict[str, str] = {}
        for wd in registry.work_dirs:
            if wd.path:
                name = folder_name(wd.path)
                local = wd.kaos in (None, "", "local")
                found[name if local else f"{wd.kaos}_{name}"] = wd.path
        return found

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        known = self.work_dirs()
        if workspace is not None:
            known.setdefault(folder_name(str(workspace)), str(workspace))
        root = self.store_roots()[0]
        for folder in list_folder(root):
            cwd = known.get(folder.name)
            if workspace is not None and not cwd_in_workspace(cwd, workspace):
                continue
            if not is_dir(folder):
                continue
            for session in list_folder(folder):
                if is_dir(session):
                    yield self._ref(session / _WIRE, cwd)

    def ref_for_path(self, path: Path) -> SessionRef:
        wire = path if path.name == _WIRE else path.with_name(_WIRE)
        return self._ref(wire, self.work_dirs().get(wire.parent.parent.name))

    def _ref(self, wire: Path, cwd: str | None) -> SessionRef:
        mtime, size = file_mtime(wire)
        state = _state(wire.parent)
        return SessionRef(
            agent=self.name,
            session_id=wire.parent.name,
            path=wire,
            cwd=cwd,
            updated_at=mtime,
            size=size,
            title=state.custom_title,
        )

    # -- reading ------------------------------------------------------------------
    def line_reader(self) -> type[LineStateReader]:
        return _WireReader

    def before_reading(self, ref: SessionRef, info: SessionInfo) -> None:
        info.title = ref.title

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--prompt=..." keeps a prompt that starts with "-" attached to its option;
        # --print runs one turn unattended and exits.
        argv = [self.program, f"--prompt={prompt}"]
        if not interactive:
            argv.insert(1, "--print")
        return LaunchSpec(argv=argv, cwd=workspace)


def _state(folder: Path) -> _State:
    return decode_side_file(folder / "state.json", _STATE) or _State()


class _WireReader(LineStateReader):
    """One forward pass over wire.jsonl; an assistant reply is buffered until the next
    event that is not a part of it, and the last retry is kept for an interrupted step."""

    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(path, info, diag)
        self.text: list[str] = []
        self.text_at: str | None = None
        self.retry_status: int | None = None
        self.retry_kind: str | None = None

    def events(self, stream: BinaryIO | None = None) -> Iterator[Event]:
        reader = LineReader(self.path, self.diag)
        for offset, line in reader.forward(stream):
            record = decode_line(_RECORD, line, offset, reader.tail_offset, self.diag)
            if not isinstance(record, _Record) or record.message is None:
                continue  # the metadata line, or one that could not be read
            stamp = _iso(record.timestamp)
            if stamp:
                self.info.started_at = self.info.started_at or stamp
                self.info.updated_at = stamp
            yield from self._event(record.message, stamp)

    def close(self) -> Iterator[Event]:
        yield from self._flush()
        state = _state(self.path.parent)
        self.info.title = self.info.title or state.custom_title
        if state.todos:
            yield PlanOp(op="replace", items=_plan_items(state.todos))

    def _event(self, message: _Envelope, stamp: str | None) -> Iterator[Event]:
        kind, payload = message.type, message.payload or _Payload()
        if kind == "ContentPart":
            if payload.type == "text" and payload.text:
                self.text.append(payload.text)
                self.text_at = self.text_at or stamp
            return  # "think": hidden reasoning, never exported
        yield from self._flush()
        if kind in ("TurnBegin", "SteerInput"):
            self.retry_status = self.retry_kind = None
            text = _user_text(payload.user_input)
            if text:
                yield Message(role="user", text=text, timestamp=stamp)
        elif kind == "ToolCall":
            yield from _tool_call(payload, stamp)
        elif kind == "ToolResult":
            yield _tool_result(payload, stamp)
        elif kind == "StepRetry":
            self.retry_status, self.retry_kind = payload.status_code, payload.error_type
        elif kind == "StepInterrupted":
            yield self._interrupted(stamp)
        elif kind == "CompactionBegin":
            yield Compaction(summary=None, trigger="auto", timestamp=stamp)
        elif kind == "TurnEnd":
            self.retry_status = self.retry_kind = None
        elif kind not in _QUIET:
            self.diag.unknown(kind or "(no type)")

    def _interrupted(self, stamp: str | None) -> SessionEnding:
        """A step stopped: on the error it was retrying, else by the user."""
        if self.retry_status is None and self.retry_kind is None:
            return SessionEnding(reason="interrupted", message="the step was interrupted")
        status = self.retry_status
        what = f"HTTP {status}" if status else (self.retry_kind or "an error")
        ending = api_error_ending(
            f"the model API failed ({what}: {self.retry_kind or 'error'}) and Kimi gave up",
            status=status,
            timestamp=stamp,
        )
        self.retry_status = self.retry_kind = None
        return ending

    def _flush(self) -> Iterator[Event]:
        text = "".join(self.text).strip()
        if text:
            yield Message(role="assistant", text=text, timestamp=self.text_at)
        self.text, self.text_at = [], None

    def state(self) -> dict[str, object]:
        return {
            "text": list(self.text),
            "text_at": self.text_at,
            "retry_status": self.retry_status,
            "retry_kind": self.retry_kind,
            "started_at": self.info.started_at,
            "updated_at": self.info.updated_at,
        }

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        self.text = state_strs(state, "text")
        self.text_at = state_str(state, "text_at")
        status = state.get("retry_status")
        self.retry_status = status if isinstance(status, int) else None
        self.retry_kind = state_str(state, "retry_kind")
        self.info.started_at = state_str(state, "started_at")
        self.info.updated_at = state_str(state, "updated_at")


def _user_text(user_input: str | list[_Part] | None) -> str:
    if isinstance(user_input, str):
        return user_input.strip()
    parts = [p.text for p in user_input or [] if p.type == "text" and p.text]
    return "\n".join(parts).strip()


def _tool_call(payload: _Payload, stamp: str | None) -> Iterator[Event]:
    function = payload.function or _Function()
    name = function.name
    call = ToolCall(call_id=payload.id or "", name=name, timestamp=stamp)
    args = decode_or_none(_ARGS, function.arguments or "{}")
    args = args if isinstance(args, _Args) else _Args()
    if name in _EDIT_TOOLS:
        call.action = _EDIT_TOOLS[name]
        call.paths = (args.path,) if isinstance(args.path, str) and args.path else ()
    elif name == "Shell":
        call.action = "command"
        call.command = args.command if isinstance(args.command, str) else ""
    elif name == "SetTodoList":
        todos = _todos(args.todos)
        if todos is not None:  # no list: a read of the current one
            call.action = "plan"
            call.plan = PlanOp(op="replace", items=_plan_items(todos))
        else:
            call.action = "read"
    elif name == "Agent":
        call.action = "subagent"
        description = args.description if isinstance(args.description, str) else None
        yield SubagentNote(agent_id=call.call_id, description=description)
    elif name in _READ_TOOLS:
        call.action = "read"
    yield call


def _tool_result(payload: _Payload, stamp: str | None) -> ToolResult:
    value = payload.return_value or _ReturnValue()
    result = ToolResult(
        call_id=payload.tool_call_id or "", is_error=value.is_error, timestamp=stamp
    )
    output = value.output if isinstance(value.output, str) else ""
    code = parse_exit_code(value.message)
    if value.is_error:
        result.exit_code = code
        result.error = first_error_line(output) or first_error_line(value.message)
    else:
        result.exit_code = code
    return result


def _todos(value: object) -> list[_Todo] | None:
    if not isinstance(value, list):
        return None
    decoded = decode_or_none(_TODOS, msgspec.json.encode(value))
    return decoded if isinstance(decoded, list) else None


def _plan_items(todos: list[_Todo]) -> tuple[PlanItem, ...]:
    items = []
    for n, todo in enumerate(todos, start=1):
        status: PlanStatus = TODO_STATUS.get((todo.status or "").lower(), "pending")  # type: ignore[assignment]
        items.append(PlanItem(id=str(n), subject=todo.title or "", status=status))
    return tuple(items)


def _iso(seconds: object) -> str | None:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["KimiCLI", "folder_name"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
KimiCLI.integration = "passdown.integrations._kimi:KimiHooks"  # type: ignore[attr-defined]
