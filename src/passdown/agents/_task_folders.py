"""The task folders the Cline and Roo Code VS Code extensions keep: what both share.

Each extension keeps `globalStorage/<extension id>/tasks/<taskId>/` under every editor's
User folder (`passdown.agents._editors`), holding (github.com/cline/cline
`src/core/storage/disk.ts` GlobalFileNames; github.com/RooCodeInc/Roo-Code
`src/shared/globalFileNames.ts`):
- `ui_messages.json`, `ClineMessage[]` (`src/shared/ExtensionMessage.ts`): `{ts, type:
  "say"|"ask", say|ask, text, partial, modelInfo}`, what the user saw. One JSON array,
  rewritten whole per message: it is read whole up to `MAX_UI_BYTES`; past that, only its
  last `MAX_UI_BYTES` are read and the messages left out are counted in a warning.
- `api_conversation_history.json`: Anthropic `MessageParam[]`, read only when
  `ui_messages.json` is missing (its text blocks become the conversation).
- `task_metadata.json` (`src/core/context/context-tracking/ContextTrackerTypes.ts`):
  `files_in_context[{path, record_source: read_tool|user_edited|cline_edited|roo_edited|
  file_mentioned, cline_edit_date, user_edit_date}]`: the files the task edited, and
  those the user edited while it ran.

What the messages say (the kinds are `ClineSay`/`ClineAsk`):
- `say:task` the request; `say:user_feedback` the user's later messages; `say:text`,
  `say:completion_result`, `ask:followup` (JSON `{question}`) and
  `ask:plan_mode_respond` (JSON `{response}`) the assistant's;
- `ask|say:command` a command, answered by the `command_output` messages after it (an
  exit code only where its output states one);
- `ask|say:tool`, JSON `ClineSayTool {tool, path, ...}`: `newFileCreated`,
  `editedExistingFile`, Roo's `appliedDiff`/`insertContent`/`searchAndReplace` are edits,
  Roo's `updateTodoList {todos[{id, content, status}]}` its plan;
- `say:api_req_started`, JSON `{cancelReason: "user_cancelled"|"streaming_failed",
  streamingFailedMessage}`: a request cancelled or cut off; `ask:api_req_failed` (its
  text the API's error, a 429 among them) a request that failed; `ask:resume_task` a task
  interrupted (the editor closed) and reopened without going on.
The agent modules (`cline_ext`, `roo`) add where their index and their plan live.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from passdown._jsonl import open_regular, read_side_file
from passdown.agents import _editors
from passdown.agents._common import (
    DECODE_ERRORS,
    TODO_STATUS,
    first_error_line,
    is_dir,
    is_file,
    list_folder,
    parse_exit_code,
)
from passdown.agents._endings import api_error_ending
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    SessionEnding,
    SessionInfo,
    SessionRef,
    ToolAction,
    ToolCall,
    ToolResult,
    Transcript,
)

MAX_UI_BYTES = 64 * 1024 * 1024  # ui_messages.json read whole up to this; past it, its tail
MAX_INDEX_BYTES = 64 * 1024 * 1024  # taskHistory.json, _index.json
UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"
_BOUNDARY = b',{"ts":'  # between two messages of the compact array (never inside a string)
_CHECKBOX = re.compile(r"^\s*[-*]\s+\[([ xX~-])\]\s+(.+?)\s*$")
_TASK_TAG = re.compile(r"<(task|feedback|answer|user_message)>\s*(.*?)\s*</\1>", re.DOTALL)

_TOOL_ACTIONS: dict[str, ToolAction] = {
    "newFileCreated": "write",
    "editedExistingFile": "edit",
    "appliedDiff": "edit",
    "insertContent": "edit",
    "searchAndReplace": "edit",
    "fileDeleted": "delete",
    "readFile": "read",
    "listFilesTopLevel": "read",
    "listFilesRecursive": "read",
    "listCodeDefinitionNames": "read",
    "searchFiles": "read",
    "codebaseSearch": "read",
    "webFetch": "read",
    "newTask": "subagent",
    "updateTodoList": "plan",
}
_EDITED_SOURCES = {"cline_edited": "files_in_context", "roo_edited": "files_in_context"}
# Message kinds that carry nothing a handoff keeps (progress, UI, checkpoints).
_QUIET = frozenset(
    {
        "reasoning",
        "api_req_finished",
        "api_req_retried",
        "api_req_retry_delayed",
        "api_req_deleted",
        "checkpoint_created",
        "checkpoint_saved",
        "shell_integration_warning",
        "browser_action",
        "browser_action_launch",
        "browser_action_result",
        "mcp_server_request_started",
        "mcp_server_response",
        "use_mcp_server",
        "mcp_notification",
        "hook",
        "hook_status",
        "hook_output",
        "info",
        "error",
        "diff_error",
        "clineignore_error",
        "rooignore_error",
        "load_mcp_documentation",
        "deleted_api_reqs",
        "condense_context",
        "condense_context_error",
        "new_task",
        "new_task_with_feedback",
        "subtask_result",
        "codebase_search_result",
        "user_feedback_diff",
        "text_image",
        "image",
        "generate_explanation",
        "report_bug",
        "too_many_tools_warning",
        "resume_completed_task",
        "auto_approval_max_req_reached",
        "summarize_task",
        "user_edit_todos",
        "task_progress",
        "api_req_started",
        "completion_result",
        "command_output",
        "tool",
    }
)


@dataclass(slots=True)
class TaskFacts:
    """What an extension's history says about one task."""

    cwd: str | None = None
    task: str | None = None  # its first prompt
    ts: float | None = None
    model: str | None = None
    status: str | None = None  # Roo: active|completed|delegated


class TaskFolderAgent(Agent):
    """An extension that keeps one folder per task under its globalStorage."""

    extension_id: str  # "saoudrizwan.claude-dev"
    store_env = ("PASSDOWN_EDITOR_USER_DIRS",)

    def store_roots(self) -> list[Path]:
        return [user / "globalStorage" / self.extension_id for user in _editors.user_dirs()]

    def history(self, root: Path) -> dict[str, TaskFacts]:
        """The task index of one store root: task id -> facts."""
        raise NotImplementedError

    def facts(self, task_dir: Path, index: dict[str, TaskFacts]) -> TaskFacts:
        return index.get(task_dir.name) or TaskFacts()

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for root in self.store_roots():
            tasks = list_folder(root / "tasks")
            if not tasks:
                continue
            index = self.history(root)
            for task_dir in tasks:
                if not is_dir(task_dir):
                    continue
                facts = self.facts(task_dir, index)
                if not cwd_in_workspace(facts.cwd, workspace):
                    continue
                ref = self._ref(task_dir, facts)
                if ref is not None:
                    yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        task_dir = path if is_dir(path) else path.parent
        facts = self.facts(task_dir, self.history(task_dir.parent.parent))
        ref = self._ref(task_dir, facts)
        if ref is None:  # neither message file: named as given, reading says so
            ref = SessionRef(agent=self.name, session_id=task_dir.name, path=path, cwd=facts.cwd)
        return ref

    def _ref(self, task_dir: Path, facts: TaskFacts) -> SessionRef | None:
        for name in (UI_MESSAGES, API_HISTORY):
            path = task_dir / name
            if is_file(path):
                st = os.stat(path)
                return SessionRef(
                    agent=self.name,
                    session_id=task_dir.name,
                    path=path,
                    cwd=facts.cwd,
                    started_at=iso_millis(facts.ts),
                    updated_at=st.st_mtime,
                    size=st.st_size,
                    title=" ".join(facts.task.split())[:200] if facts.task else None,
                )
        return None

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        task_dir = ref.path.parent
        facts = self.facts(task_dir, self.history(task_dir.parent.parent))
        info.cwd = facts.cwd or info.cwd
        info.started_at = iso_millis(facts.ts)
        info.add_model(facts.model)
        if facts.task:
            info.title = " ".join(facts.task.split())[:200]
        yield from files_in_context(task_dir / "task_metadata.json")
        if ref.path.name == API_HISTORY:
            yield from api_history(ref.path, diag)
        else:
            reader = UiMessages(info, diag)
            yield from reader.read(ref.path, facts)
            yield from reader.close()
        plan = self.final_plan(task_dir, ref.session_id)
        if plan is not None:
            yield plan

    def final_plan(self, task_dir: Path, task_id: str) -> PlanOp | None:
        """The plan as the task left it, where the extension keeps one beside the
        messages (Cline's focus chain file); None when the messages have the last word."""
        return None

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        raise _editors.not_a_launch_target(self.display_name)


# -- the index files ----------------------------------------------------------------
def read_json(path: Path, limit: int = MAX_INDEX_BYTES) -> object:
    """A small JSON file as plain data; None when missing, unreadable, too large or bad."""
    data = read_side_file(path, limit)
    if data is None:
        return None
    try:
        return msgspec.json.decode(data)
    except DECODE_ERRORS:
        return None


def history_facts(item: object, *cwd_keys: str) -> tuple[str, TaskFacts] | None:
    """One `HistoryItem` as (task id, facts)."""
    if not isinstance(item, dict):
        return None
    task_id = item.get("id")
    if not isinstance(task_id, str) or not task_id:
        return None
    cwd = next((item[k] for k in cwd_keys if isinstance(item.get(k), str) and item[k]), None)
    ts = item.get("ts")
    return task_id, TaskFacts(
        cwd=cwd,
        task=_str(item.get("task")),
        ts=ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
        model=_str(item.get("modelId")),
        status=_str(item.get("status")),
    )


def files_in_context(path: Path) -> Iterator[Event]:
    """The files `task_metadata.json` records as edited by the agent or the user."""
    data = read_json(path, 16 * 1024 * 1024)
    entries = data.get("files_in_context") if isinstance(data, dict) else None
    by_source: dict[str, list[str]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        source, file = entry.get("record_source"), entry.get("path")
        if (
            isinstance(file, str)
            and file
            and source in ("cline_edited", "roo_edited", "user_edited")
        ):
            by_source.setdefault(str(source), []).append(file)
    for source, paths in by_source.items():
        yield ToolCall(
            call_id=f"files_in_context:{source}",
            name=_EDITED_SOURCES.get(source, source),
            action="edit",
            paths=tuple(dict.fromkeys(paths)),
        )
        yield ToolResult(call_id=f"files_in_context:{source}")


def checklist(markdown: str) -> tuple[PlanItem, ...]:
    """A markdown checklist (`- [ ] step` / `- [x] step`) as plan items."""
    items: list[PlanItem] = []
    for line in markdown.splitlines():
        match = _CHECKBOX.match(line)
        if match:
            mark = match.group(1)
            status = "completed" if mark in "xX" else "in_progress" if mark in "~-" else "pending"
            items.append(PlanItem(id=str(len(items) + 1), subject=match.group(2), status=status))  # type: ignore[arg-type]
    return tuple(items)


# -- ui_messages.json -------------------------------------------------------------------
class _UiMessage(msgspec.Struct):
    ts: float | int | None = None
    type: str | None = None
    say: str | None = None
    ask: str | None = None
    text: str | None = None
    partial: bool | None = None


_UI = msgspec.json.Decoder(_UiMessage)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


def ui_message_slices(path: Path, diag: Diagnostics) -> list[msgspec.Raw]:
    """The messages of `ui_messages.json` as undecoded slices; a file past `MAX_UI_BYTES`
    gives only the messages of its last `MAX_UI_BYTES`, the others counted in a warning."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size <= MAX_UI_BYTES:
            data = handle.read(MAX_UI_BYTES + 1)
            left_out = 0
        else:
            left_out, data = _tail(handle, size)
    try:
        slices = _RAW_LIST.decode(data)
    except DECODE_ERRORS:
        diag.warnings.append(f"{path.name} is not a list of messages")
        return []
    if left_out < 0:
        diag.warnings.append(
            f"{path.name} is {size // (1024 * 1024)} MB and its last "
            f"{MAX_UI_BYTES // (1024 * 1024)} MB hold no message start: none of it was read"
        )
    elif left_out:
        diag.warnings.append(
            f"{path.name} is {size // (1024 * 1024)} MB: only its last "
            f"{MAX_UI_BYTES // (1024 * 1024)} MB were read, {left_out} earlier message(s) left out"
        )
    return slices


def _tail(handle: Any, size: int) -> tuple[int, bytes]:
    """(messages before the tail, the tail as a JSON array) for an oversized file; -1
    when the tail holds no message start."""
    start = size - MAX_UI_BYTES
    handle.seek(start)
    tail = handle.read(MAX_UI_BYTES)
    cut = tail.find(_BOUNDARY)
    if cut < 0:  # one message larger than the bound, or not the compact array
        return -1, b"[]"
    handle.seek(0)
    left_out, done, carry = 1, 0, b""  # the first message has no boundary before it
    while done < start + cut:
        chunk = handle.read(min(8 * 1024 * 1024, start + cut - done))
        if not chunk:
            break
        done += len(chunk)
        left_out += (carry + chunk).count(_BOUNDARY)
        carry = chunk[-(len(_BOUNDARY) - 1) :]
    return left_out, b"[" + tail[cut + 1 :]


class UiMessages:
    """Turns `ClineMessage`s into events, one at a time."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.command: ToolCall | None = None  # awaiting its output
        self.output: list[str] = []
        self.last: _UiMessage | None = None
        self.saw_task = False

    def read(self, path: Path, facts: TaskFacts) -> Iterator[Event]:
        slices = ui_message_slices(path, self.diag)
        if facts.task:  # the task message left out with the head: the history has it
            first = _decode(slices[0]) if slices else None
            if first is None or first.say != "task":
                yield Message(role="user", text=facts.task.strip())
                self.saw_task = True
        for n, raw in enumerate(slices):
            self.diag.lines += 1
            msg = _decode(raw)
            if msg is None:
                self.diag.bad_lines += 1
                continue
            yield from self.message(msg, n)

    def message(self, msg: _UiMessage, n: int) -> Iterator[Event]:
        kind = msg.say if msg.type == "say" else msg.ask if msg.type == "ask" else None
        stamp = iso_millis(msg.ts)
        text = (msg.text or "").strip()
        pending = self.command
        if (
            kind == "command"
            and pending is not None
            and pending.command == text
            and not self.output
        ):
            return  # the approval asked, then the run said: one command
        if kind != "command_output":
            yield from self._flush_command(stamp)
        self.last = msg
        if kind == "task" and text:
            yield Message(role="user", text=text, timestamp=stamp, synthetic=self.saw_task)
            self.saw_task = True
        elif kind == "user_feedback" and text:
            yield Message(role="user", text=text, timestamp=stamp)
        elif kind in ("text", "completion_result") and text:
            yield Message(role="assistant", text=text, timestamp=stamp)
        elif kind in ("followup", "plan_mode_respond"):
            said = _json_field(text, "question", "response")
            if said:
                yield Message(role="assistant", text=said, timestamp=stamp)
        elif kind == "command" and text:
            self.command = ToolCall(
                call_id=f"cmd:{n}",
                name="execute_command",
                action="command",
                command=text,
                timestamp=stamp,
            )
            self.output = []
            yield self.command
        elif kind == "command_output":
            if msg.text:
                self.output.append(msg.text)
        elif kind in ("tool", "user_edit_todos"):
            yield from _tool(text, f"tool:{n}", confirmed=msg.type == "say", stamp=stamp)
        elif kind == "task_progress" and text:
            yield from _plan_call(f"plan:{n}", "focus_chain", checklist(text), stamp)
        elif kind == "api_req_started":
            yield from _cancelled(text, stamp)
        elif kind == "api_req_failed":
            yield api_error_ending(text or "the API request failed", timestamp=stamp)
        elif kind == "mistake_limit_reached":
            yield SessionEnding(
                reason="error", message=text or "the agent hit its mistake limit", timestamp=stamp
            )
        elif kind == "resume_task":
            yield SessionEnding(
                reason="interrupted",
                message="the task was interrupted and not resumed",
                timestamp=stamp,
            )
        elif kind is None or kind not in _QUIET:
            self.diag.unknown(f"{msg.type}:{kind}" if kind else str(msg.type))

    def close(self) -> Iterator[Event]:
        yield from self._flush_command(None)

    def _flush_command(self, stamp: str | None) -> Iterator[ToolResult]:
        call = self.command
        if call is None:
            return
        self.command = None
        if not self.output:
            return  # no output recorded: the command stays unanswered
        output = "".join(self.output)
        code = parse_exit_code(output[-4000:])
        failed = code not in (None, 0)
        yield ToolResult(
            call_id=call.call_id,
            is_error=failed,
            exit_code=code,
            error=first_error_line(output) if failed else None,
            timestamp=stamp,
        )


def _decode(raw: msgspec.Raw) -> _UiMessage | None:
    try:
        return _UI.decode(raw)
    except DECODE_ERRORS:
        return None


def _tool(text: str, call_id: str, *, confirmed: bool, stamp: str | None) -> Iterator[Event]:
    args = _json_object(text)
    name = args.get("tool")
    if not isinstance(name, str):
        return
    action = _TOOL_ACTIONS.get(name, "other")
    if action == "plan":
        todos = args.get("todos")
        if isinstance(todos, list):
            yield from _plan_call(call_id, name, _todos(todos), stamp)
        return
    paths = [args.get("path")] + [
        f.get("path")
        for f in _list(args.get("batchFiles")) + _list(args.get("batchDiffs"))
        if isinstance(f, dict)
    ]
    call = ToolCall(
        call_id=call_id,
        name=name,
        action=action,
        paths=tuple(dict.fromkeys(p for p in paths if isinstance(p, str) and p)),
        timestamp=stamp,
    )
    yield call
    if confirmed and action in ("edit", "write", "delete"):  # said: it was applied
        yield ToolResult(call_id=call_id, timestamp=stamp)


def _todos(todos: list[Any]) -> tuple[PlanItem, ...]:
    items: list[PlanItem] = []
    for n, todo in enumerate(todos, start=1):
        if not isinstance(todo, dict):
            continue
        ident, content, status = todo.get("id"), todo.get("content"), todo.get("status")
        items.append(
            PlanItem(
                id=str(ident) if isinstance(ident, (str, int)) and ident != "" else str(n),
                subject=content if isinstance(content, str) else "",
                status=TODO_STATUS.get(status, "pending") if isinstance(status, str) else "pending",  # type: ignore[arg-type]
            )
        )
    return tuple(items)


def _plan_call(
    call_id: str, name: str, items: tuple[PlanItem, ...], stamp: str | None
) -> Iterator[Event]:
    yield ToolCall(
        call_id=call_id,
        name=name,
        action="plan",
        plan=PlanOp(op="replace", items=items),
        timestamp=stamp,
    )
    yield ToolResult(call_id=call_id, timestamp=stamp)


def _cancelled(text: str, stamp: str | None) -> Iterator[SessionEnding]:
    info = _json_object(text)
    reason = info.get("cancelReason")
    if reason == "user_cancelled":
        yield SessionEnding(
            reason="interrupted", message="the request was cancelled", timestamp=stamp
        )
    elif reason == "streaming_failed" or isinstance(reason, str):
        message = _str(info.get("streamingFailedMessage")) or f"the request ended: {reason}"
        yield api_error_ending(message, timestamp=stamp)


# -- api_conversation_history.json (when the UI messages are gone) -----------------------
def api_history(path: Path, diag: Diagnostics) -> Iterator[Event]:
    data = read_side_file(path, MAX_UI_BYTES)
    try:
        slices = _RAW_LIST.decode(data) if data is not None else None
    except DECODE_ERRORS:
        slices = None
    if slices is None:
        diag.warnings.append(
            f"could not read {path.name} (missing, unreadable, too large or not a list)"
        )
        return
    for raw in slices:
        diag.lines += 1
        try:
            message = msgspec.json.decode(raw)
        except DECODE_ERRORS:
            diag.bad_lines += 1
            continue
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else _list(content)
        text = "\n\n".join(
            b["text"].strip()
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ).strip()
        stamp = iso_millis(message.get("ts"))
        if message["role"] == "assistant":
            if text:
                yield Message(role="assistant", text=text, timestamp=stamp)
            continue
        found = [m.group(2) for m in _TASK_TAG.finditer(text)]
        if found:  # the request wrapped with the environment details the model was sent
            yield Message(role="user", text="\n\n".join(found), timestamp=stamp)


# -- small helpers -----------------------------------------------------------------------
def _json_object(text: str) -> dict[str, Any]:
    if not text.startswith("{"):
        return {}
    try:
        decoded = msgspec.json.decode(text)
    except DECODE_ERRORS:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _json_field(text: str, *keys: str) -> str | None:
    data = _json_object(text)
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return text or None if not data else None


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def iso_millis(millis: object) -> str | None:
    """An epoch-milliseconds time as ISO 8601 (UTC), or None when it is no time."""
    if not isinstance(millis, (int, float)) or isinstance(millis, bool) or millis <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
