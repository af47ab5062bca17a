"""What the Cline and Roo Code extensions' task folders say, message by message
(`passdown.agents._task_folders` finds the folders and their index).

From github.com/cline/cline `src/shared/ExtensionMessage.ts` (`ClineMessage`, `ClineSay`,
`ClineAsk`, `ClineSayTool`, `ClineApiReqInfo`) and github.com/RooCodeInc/Roo-Code
`packages/types/src/message.ts` (the same shapes, with `user_edit_todos` and the
`updateTodoList` tool):
- `ui_messages.json`, `ClineMessage[]` `{ts, type: "say"|"ask", say|ask, text, partial}`:
  one JSON array, rewritten whole per message. It is read as a stream
  (`_json_stream.DocumentStream`), one message at a time, whatever its size: memory
  stays flat and the task's first message is read however long the task grew (a file
  cut while being written gives the messages before the cut, and a warning).
- the first message is the request: Cline's `say:task`, Roo's `say:text` (`Task.startTask`
  says the task as text); its `ts` is when the task started (the history item's `ts` is
  its last activity); `say:user_feedback` the user's later messages; `say:text`,
  `say:completion_result`, `ask:followup` (JSON `{question}`) and
  `ask:plan_mode_respond` (JSON `{response}`) the assistant's;
- `ask|say:command` a command (Cline's approval ask may end in `REQ_APP`), answered by the
  `command_output` messages after it: the terminal's output only. Its exit code is in the
  result the model was sent next: `[execute_command for 'CMD'] Result:` then "Command
  failed with exit code 1." (Cline, `CommandOrchestrator`) or "...\nExit code: 1" (Roo,
  `ExecuteCommandTool`), before "\nOutput:". That result is in the next
  `say:api_req_started` JSON's `request` (Cline; Roo until October 2025) and in
  `api_conversation_history.json` (a text block, or a `tool_result` answering an
  `execute_command` `tool_use`), read forward alongside (`CommandResults`);
- `ask|say:tool`, JSON `ClineSayTool {tool, path, ...}`: `newFileCreated`,
  `editedExistingFile`, Roo's `appliedDiff`/`insertContent`/`searchAndReplace` are edits
  (applied when said, proposed when asked), Roo's `updateTodoList {todos[{id, content,
  status}]}` its plan, as is the user's own edit `say:user_edit_todos`;
- `say:task_progress`, Cline's focus chain as it stood (a markdown checklist);
- `say:api_req_started`, JSON `{cancelReason: "user_cancelled"|"streaming_failed",
  streamingFailedMessage}`: a request cancelled or cut off; `ask:api_req_failed` (its
  text the API's error, a 429 among them) a request that failed; `ask:resume_task` a task
  interrupted (the editor closed) and reopened without going on.
- `api_conversation_history.json`, Anthropic `MessageParam[]`: the commands' results, and
  the whole task when `ui_messages.json` is gone or holds no message: its text blocks, the
  request unwrapped from `<task>` (Cline) or `<user_message>` (Roo).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from passdown._lazy_re import lazy_compile
from passdown.agents._common import DECODE_ERRORS, TODO_STATUS, first_error_line, parse_exit_code
from passdown.agents._editors import iso_millis
from passdown.agents._endings import api_error_ending
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    SessionEnding,
    SessionInfo,
    ToolAction,
    ToolCall,
    ToolResult,
)

_CHECKBOX = lazy_compile(r"^\s*[-*]\s+\[([ xX~-])\]\s+(.+?)\s*$")
_TASK_TAG = lazy_compile(r"<(task|feedback|answer|user_message)>\s*(.*?)\s*</\1>", re.DOTALL)
_RESULT_OF = lazy_compile(r"\[execute_command for '(.*?)'\] Result:\n?", re.DOTALL)
_OUTPUT_STARTS = lazy_compile(r"\nOutput\b")
_SIGNAL = lazy_compile(r"(?:terminated|killed) by signal", re.IGNORECASE)
_REQ_APP = "REQ_APP"  # Cline's COMMAND_REQ_APP_STRING, appended to an approval's text
_STATUS_CHARS = 2000
_WAITING_RESULTS = 256  # results read past while looking for a command's, kept for later

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


def _stream(path: Path, diag: Diagnostics) -> Iterator[object]:
    """The items of a message file (one JSON array), as plain data, in order."""
    from passdown.agents._json_stream import NO_LIMIT, DocumentStream  # to read, not to list

    document = DocumentStream(path, "item", (), diag, limit=NO_LIMIT, shape="a list of messages")
    return document.values()


def first_ts(path: Path) -> str | None:
    """When a message file's first message was written (`ui_messages.json`'s, or
    `api_conversation_history.json`'s where Cline gave it a `ts`): the file streams, so
    only that message is read."""
    for item in _stream(path, Diagnostics()):
        return iso_millis(item.get("ts")) if isinstance(item, dict) else None
    return None


class UiMessages:
    """Turns `ClineMessage`s into events, one at a time; `results` gives the results the
    model was sent for its commands (`api_conversation_history.json`), when there is one."""

    def __init__(
        self, info: SessionInfo, diag: Diagnostics, results: CommandResults | None = None
    ) -> None:
        self.info = info
        self.diag = diag
        self.results = results
        self.command: ToolCall | None = None  # awaiting its output
        self.output: list[str] = []
        self.saw_task = False
        self.count = 0  # the messages the file holds

    def read(self, path: Path, task: str | None) -> Iterator[Event]:
        """The events of `path`; `task` is the request as the task history has it (for a
        file whose first message is not the task). A file of no message gives nothing:
        `count` says so."""
        for n, item in enumerate(_stream(path, self.diag)):
            self.diag.lines += 1
            self.count += 1
            msg = _decode(item)
            if n == 0 and task and (msg is None or not _is_request(msg, n)):
                yield from self._task_from_history(task)
            if msg is None:
                self.diag.bad_lines += 1
                continue
            yield from self.message(msg, n)

    def _task_from_history(self, task: str) -> Iterator[Event]:
        """The request as the task history has it, for a file whose first message is not
        the task."""
        yield Message(role="user", text=task.strip())
        self.saw_task = True

    def message(self, msg: _UiMessage, n: int) -> Iterator[Event]:
        kind = msg.say if msg.type == "say" else msg.ask if msg.type == "ask" else None
        stamp = iso_millis(msg.ts)
        if n == 0 and not self.info.started_at:
            self.info.started_at = stamp  # the task's first message: when it started
        text = (msg.text or "").strip()
        if kind == "command":
            text = _command_text(text)
        pending = self.command
        if (
            kind == "command"
            and pending is not None
            and pending.command == text
            and not self.output
        ):
            return  # the approval asked, then the run said: one command
        if kind != "command_output":
            yield from self._flush_command(stamp, msg if kind == "api_req_started" else None)
        if _is_request(msg, n) and text:
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
        yield from self._flush_command(None, None)

    def _flush_command(self, stamp: str | None, request: _UiMessage | None) -> Iterator[ToolResult]:
        """The pending command's result: its exit code as the result the model was sent
        says it (the `api_req_started` that follows, else the API history), else as its
        output states one."""
        call = self.command
        if call is None:
            return
        self.command = None
        command = call.command or ""
        status = _result_in_request(request, command) if request is not None else None
        if status is None and self.results is not None:
            status = self.results.find(command)
        verdict = _verdict(status) if status is not None else None
        if not self.output and verdict is None:
            return  # no output, no result: the command stays unanswered
        output = "".join(self.output)
        if verdict is not None:
            failed, code = verdict
        else:
            code = parse_exit_code(output[-4000:])
            failed = code not in (None, 0)
        yield ToolResult(
            call_id=call.call_id,
            is_error=failed,
            exit_code=code,
            error=(first_error_line(output) or first_error_line(status)) if failed else None,
            timestamp=stamp,
        )


def _is_request(msg: _UiMessage, n: int) -> bool:
    """Whether `msg` says the task's request: Cline's `say:task`, or the first message
    when it is Roo's `say:text`."""
    return msg.type == "say" and (msg.say == "task" or (n == 0 and msg.say == "text"))


def _command_text(text: str) -> str:
    return text[: -len(_REQ_APP)].rstrip() if text.endswith(_REQ_APP) else text


def _same_command(ours: str, theirs: str) -> bool:
    """Whether a result's command is the one the UI showed (Roo shows it with its HTML
    entities unescaped)."""
    ours, theirs = ours.strip(), _command_text(theirs.strip())
    import html  # here: loading the module for discovery needs none of it

    return bool(ours) and ours in (theirs, html.unescape(theirs))


def _verdict(status: str) -> tuple[bool, int | None] | None:
    """(failed, exit code) as a command's result states them ("Command failed with exit
    code 1.", "Exit code: 1", "Process terminated by signal SIGKILL"); None when it states
    neither (still running, denied, an unknown exit code)."""
    code = parse_exit_code(status)
    if code is not None:
        return code != 0, code
    if _SIGNAL.search(status):
        return True, None
    return None


def _status_of(result: str) -> str:
    """A command's result without its output: the lines that say how it ended."""
    return _OUTPUT_STARTS.split(result[: _STATUS_CHARS * 2], maxsplit=1)[0][:_STATUS_CHARS]


def _result_in_request(request: _UiMessage, command: str) -> str | None:
    """The status of `command`'s result in an `api_req_started` message's `request`."""
    said = _json_object((request.text or "").strip()).get("request")
    if not isinstance(said, str):
        return None
    for match in _RESULT_OF.finditer(said):
        if _same_command(command, match.group(1)):
            return _status_of(said[match.end() :])
    return None


class CommandResults:
    """The results the model was sent for its `execute_command` calls, read forward from
    `api_conversation_history.json` as the UI messages ask for them (both files are in
    the task's order: one pass over each). A result read past while looking for another
    command's waits in a short queue."""

    def __init__(self, path: Path) -> None:
        self._messages = _stream(path, Diagnostics())  # the UI messages' reading warns
        self._waiting: deque[tuple[str, str]] = deque(maxlen=_WAITING_RESULTS)
        self._uses: dict[str, str] = {}  # tool_use id -> its command

    def find(self, command: str) -> str | None:
        """The status of the next result of `command`, or None when there is none."""
        for n, (theirs, status) in enumerate(self._waiting):
            if _same_command(command, theirs):
                del self._waiting[n]
                return status
        for theirs, status in self._read():
            if _same_command(command, theirs):
                return status
            self._waiting.append((theirs, status))
        return None

    def _read(self) -> Iterator[tuple[str, str]]:
        for message in self._messages:
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            for block in _list(content):
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "tool_use" and block.get("name") == "execute_command":
                    said = _dict(block.get("input")).get("command")
                    if isinstance(said, str) and isinstance(block.get("id"), str):
                        self._uses[block["id"]] = said
                elif kind == "tool_result":
                    text = _block_text(block.get("content"))
                    used = self._uses.pop(str(block.get("tool_use_id")), None)
                    found = _described_result(text)
                    if found is not None:
                        yield found
                    elif used is not None:
                        yield used, _status_of(text)
                elif kind == "text":
                    found = _described_result(_str(block.get("text")) or "")
                    if found is not None:
                        yield found


def _described_result(text: str) -> tuple[str, str] | None:
    """(command, status) of a result written `[execute_command for 'CMD'] Result:\n...`."""
    match = _RESULT_OF.match(text.lstrip())
    if match is None:
        return None
    return match.group(1), _status_of(text.lstrip()[match.end() :])


def _block_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        b["text"]
        for b in _list(content)
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _decode(item: object) -> _UiMessage | None:
    try:
        return msgspec.convert(item, _UiMessage)
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
def api_history(path: Path, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
    """The task's messages as the model was sent them; the first one's `ts` (Cline writes
    one) is when the task started, where `info` does not know it yet."""
    for n, message in enumerate(_stream(path, diag)):
        diag.lines += 1
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        stamp = iso_millis(message.get("ts"))
        if n == 0 and not info.started_at:
            info.started_at = stamp
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else _list(content)
        text = "\n\n".join(
            b["text"].strip()
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ).strip()
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


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
