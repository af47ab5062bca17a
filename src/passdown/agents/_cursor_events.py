"""Cursor's chat values (`composerData`, bubbles) as transcript events. The shapes are
reverse-engineered (see `cursor_ide`): every field is typed `object` or raw JSON and
checked where it is used, so one value of an unexpected type skips that value only.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown.agents._common import (
    TODO_STATUS,
    decode_or_none,
    first_error_line,
    parse_exit_code,
)
from passdown.agents._editors import folder_of_uri
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    PlanStatus,
    SessionEnding,
    ToolAction,
    ToolCall,
    ToolResult,
)

MAX_TEXT_CHARS = 200_000  # of one message; the transcript budget cuts further
MAX_FILES = 5_000  # paths taken from originalFileStates / newlyCreatedFiles
MAX_TODOS = 20_000  # items read of one list; the rest is counted as dropped
_RICH_TEXT_NODES = 20_000  # Lexical nodes walked for a message without plain text

_EDIT_TOOLS: dict[str, ToolAction] = {
    "edit_file": "edit",
    "edit_file_v2": "edit",
    "search_replace": "edit",
    "multi_edit": "edit",
    "apply_patch": "edit",
    "reapply": "edit",
    "write": "write",
    "create_file": "write",
    "delete_file": "delete",
}
_COMMAND_TOOLS = frozenset({"run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2"})
_READ_TOOLS = frozenset(
    {
        "read_file",
        "read_file_v2",
        "codebase_search",
        "grep_search",
        "grep",
        "file_search",
        "list_dir",
        "glob_file_search",
        "web_search",
        "fetch_rules",
        "read_lints",
    }
)
_PATH_KEYS = ("target_file", "file_path", "path", "relativeWorkspacePath", "targetFile")
# composerData `status` values that say the last request did not end on its own answer
_ENDINGS: dict[str, tuple[str, str]] = {
    "error": ("error", "Cursor marked the chat's last request as failed (status: error)"),
    "aborted": ("interrupted", "the chat's last request was stopped (status: aborted)"),
    "cancelled": ("interrupted", "the chat's last request was cancelled"),
    "canceled": ("interrupted", "the chat's last request was cancelled"),
    "generating": (
        "interrupted",
        "Cursor was still generating an answer when the chat was read (the editor is "
        "busy with it, or was closed mid-answer)",
    ),
}


_NULL = msgspec.Raw(b"null")


class Header(msgspec.Struct):
    bubbleId: object = None
    type: object = None


class Composer(msgspec.Struct):
    """composerData: the lists are kept raw and decoded where used (`lists`), so one
    of an unexpected shape empties that list only."""

    v: object = msgspec.field(name="_v", default=None)
    name: object = None
    createdAt: object = None
    lastUpdatedAt: object = None
    status: object = None
    modelConfig: object = None
    createdOnBranch: object = None
    fullConversationHeadersOnly: msgspec.Raw = _NULL
    conversation: msgspec.Raw = _NULL
    conversationMap: msgspec.Raw = _NULL
    originalFileStates: msgspec.Raw = _NULL
    newlyCreatedFiles: msgspec.Raw = _NULL
    todos: msgspec.Raw = _NULL


class Bubble(msgspec.Struct):
    v: object = msgspec.field(name="_v", default=None)
    type: object = None
    text: object = None
    richText: object = None
    createdAt: object = None
    modelInfo: object = None
    toolFormerData: object = None


def model_name(holder: object) -> str | None:
    """`modelConfig` / `modelInfo`: `{modelName}`."""
    name = holder.get("modelName") if isinstance(holder, dict) else None
    return name if isinstance(name, str) else None


_LIST_RAW = LazyDecoder(list[msgspec.Raw])
_DICT_RAW = LazyDecoder(dict[str, msgspec.Raw])
_HEADER = LazyDecoder(Header)


def raw_list(raw: msgspec.Raw) -> list[msgspec.Raw]:
    decoded = decode_or_none(_LIST_RAW, raw)
    return decoded if isinstance(decoded, list) else []


def raw_dict(raw: msgspec.Raw) -> dict[str, msgspec.Raw]:
    decoded = decode_or_none(_DICT_RAW, raw)
    return decoded if isinstance(decoded, dict) else {}


def bubble_ids(composer: Composer) -> list[str]:
    """The chat's message ids in order, from its headers (split storage)."""
    ids = []
    for raw in raw_list(composer.fullConversationHeadersOnly):
        header = decode_or_none(_HEADER, raw)
        if isinstance(header, Header) and isinstance(header.bubbleId, str) and header.bubbleId:
            ids.append(header.bubbleId[:200])
    return ids


_ANY = LazyDecoder()


def bubble_events(bubble: Bubble, calls: int, diag: Diagnostics) -> Iterator[Event]:
    """A bubble's message, then its tool call and the call's result."""
    stamp = _stamp(bubble.createdAt)
    kind = bubble.type
    if kind not in (1, 2):
        diag.unknown(f"bubble type {str(kind)[:20]}")
        return
    role: Literal["user", "assistant"] = "user" if kind == 1 else "assistant"
    text = _text(bubble)
    if text:
        yield Message(role=role, text=text, timestamp=stamp)
    tool = bubble.toolFormerData
    if role == "assistant" and isinstance(tool, dict) and isinstance(tool.get("name"), str):
        yield from _tool_events(tool, f"cursor-ide-{calls + 1}", stamp)


def _text(bubble: Bubble) -> str:
    text = bubble.text if isinstance(bubble.text, str) else ""
    if not text.strip() and isinstance(bubble.richText, str) and bubble.richText:
        text = _lexical_text(bubble.richText)
    text = text.strip()
    return text[:MAX_TEXT_CHARS]


def _lexical_text(rich: str) -> str:
    """The text nodes of a Lexical editor state, paragraph by paragraph."""
    state = decode_or_none(_ANY, rich)
    root = state.get("root") if isinstance(state, dict) else None
    if not isinstance(root, dict):
        return ""
    paragraphs: list[str] = []
    stack: list[object] = [root]
    seen = 0
    parts: list[str] = []
    while stack and seen < _RICH_TEXT_NODES:
        node = stack.pop()
        seen += 1
        if not isinstance(node, dict):
            continue
        if node.get("type") == "paragraph" and parts:
            paragraphs.append("".join(parts))
            parts = []
        text = node.get("text")
        if isinstance(text, str):
            parts.append(text)
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(reversed(children))
    paragraphs.append("".join(parts))
    return "\n".join(p for p in paragraphs if p)


def _tool_events(tool: dict[str, Any], call_id: str, stamp: str | None) -> Iterator[Event]:
    name = str(tool["name"])[:100]
    args = _json_dict(tool.get("rawArgs")) or _json_dict(tool.get("params"))
    call = ToolCall(call_id=call_id, name=name, timestamp=stamp)
    low = name.lower()
    more: list[PlanOp] = []  # a merge's further items, one call each
    if low in _EDIT_TOOLS:
        call.action = _EDIT_TOOLS[low]
        path = _first_str(args, _PATH_KEYS) or _first_str(
            _json_dict(tool.get("params")), _PATH_KEYS
        )
        call.paths = (path,) if path else ()
    elif low in _COMMAND_TOOLS or low.startswith("run_terminal"):
        call.action = "command"
        command = args.get("command")
        call.command = command[:10_000] if isinstance(command, str) else ""
    elif low.startswith("todo_write") or low == "update_todos":
        ops = _todo_ops(args)
        if ops:
            call.action, call.plan, more = "plan", ops[0], ops[1:]
    elif low in _READ_TOOLS:
        call.action = "read"
    yield call
    result = _result(tool, call, stamp)
    if result is not None:
        yield result
    for n, op in enumerate(more, start=2):
        extra = ToolCall(f"{call_id}#{n}", name, "plan", plan=op, timestamp=stamp)
        yield extra
        if result is not None:
            yield ToolResult(extra.call_id, is_error=result.is_error, timestamp=stamp)


def _result(tool: dict[str, Any], call: ToolCall, stamp: str | None) -> ToolResult | None:
    """The call's outcome from `status` (completed|error|cancelled) and `result`; a call
    still running (loading, pending) has none yet."""
    status = tool.get("status")
    status = status.lower() if isinstance(status, str) else ""
    outcome = _json_dict(tool.get("result"))
    raw_result = tool.get("result") if isinstance(tool.get("result"), str) else None
    known = ("completed", "error", "cancelled", "canceled", "rejected", "aborted")
    if status not in known and not outcome:
        return None
    failed = status in ("error", "cancelled", "canceled", "rejected", "aborted")
    result = ToolResult(call_id=call.call_id, is_error=failed, timestamp=stamp)
    if call.action == "command":
        code = _exit_code(outcome)
        if code is None and raw_result:
            code = parse_exit_code(raw_result)
        result.exit_code = code if code is not None else (None if failed else 0)
        failed = failed or (code not in (None, 0))
        result.is_error = failed
        if failed:
            output = _first_str(outcome, ("output", "stderr", "error", "stdout")) or raw_result
            result.error = first_error_line(output) or (
                f"the command was {status}" if status else None
            )
    elif failed:
        error = _first_str(outcome, ("error", "message")) or raw_result
        result.error = first_error_line(error) or f"the tool call ended: {status}"
    return result


def _exit_code(outcome: dict[str, Any]) -> int | None:
    for key in ("exitCode", "exitCodeV2", "exit_code", "code"):
        value = outcome.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and -(2**31) < value < 2**31:
            return value
    return None


def _todo_ops(args: dict[str, Any]) -> list[PlanOp]:
    """`todo_write {merge, todos}`: the whole list, or (merge) an update per item named."""
    todos = args.get("todos")
    items = todo_items(todos)
    if items is None or not isinstance(todos, list):
        return []
    if args.get("merge") is True:
        return [
            PlanOp(op="update", item_id=i.id, status=i.status, subject=i.subject or None)
            for i in items
        ]
    return [PlanOp(op="replace", items=items, dropped=max(len(todos) - MAX_TODOS, 0))]


def todo_items(todos: object) -> tuple[PlanItem, ...] | None:
    if not isinstance(todos, list):
        return None
    items: list[PlanItem] = []
    for n, todo in enumerate(todos[:MAX_TODOS], start=1):
        if not isinstance(todo, dict):
            continue
        content = todo.get("content") or todo.get("description") or todo.get("text")
        ident = todo.get("id")
        status = todo.get("status")
        plan_status: PlanStatus = TODO_STATUS.get(  # type: ignore[assignment]
            status.lower() if isinstance(status, str) else "", "pending"
        )
        items.append(
            PlanItem(
                id=str(ident)[:100] if isinstance(ident, str | int) and ident != "" else str(n),
                subject=content[:2000] if isinstance(content, str) else "",
                status=plan_status,
            )
        )
    return tuple(items)


def todos_plan(composer: Composer) -> Iterator[Event]:
    """composerData `todos`: the chat's checklist as it stands (the final plan), as the
    editor's own call, so the handoff names where the plan came from."""
    todos = decode_or_none(_ANY, composer.todos)
    items = todo_items(todos)
    if not items or not isinstance(todos, list):
        return
    op = PlanOp(op="replace", items=items, dropped=max(len(todos) - MAX_TODOS, 0))
    yield ToolCall("cursor-ide-todos", "composerData.todos", "plan", plan=op)
    yield ToolResult("cursor-ide-todos")


def file_events(composer: Composer, diag: Diagnostics) -> Iterator[Event]:
    """The files the editor tracks as changed by the chat: `originalFileStates` (the
    files it edited, keyed by URI) and `newlyCreatedFiles`. The editor keeps them to
    accept or undo the chat's edits, so they are confirmed, as a successful edit is."""
    edited = [p for p in map(_path_of, raw_dict(composer.originalFileStates)) if p]
    new_files = decode_or_none(_ANY, composer.newlyCreatedFiles)
    new_files = new_files[:MAX_FILES] if isinstance(new_files, list) else []
    created = [p for p in map(_path_of, new_files) if p]
    if len(edited) > MAX_FILES:
        diag.warnings.append(f"only {MAX_FILES} of {len(edited)} edited files read")
        edited = edited[:MAX_FILES]
    created_set = set(created)
    for action, paths in (
        ("edit", [p for p in edited if p not in created_set]),
        ("write", created),
    ):
        if not paths:
            continue
        call_id = f"cursor-ide-files-{action}"
        name = "originalFileStates" if action == "edit" else "newlyCreatedFiles"
        yield ToolCall(call_id=call_id, name=name, action=action, paths=tuple(paths))  # type: ignore[arg-type]
        yield ToolResult(call_id=call_id)


def _path_of(entry: object) -> str | None:
    """A file named as a URI string, or as `{uri: {fsPath|path}}` / `{fsPath|path}`."""
    if isinstance(entry, dict):
        inner = entry.get("uri", entry)
        if isinstance(inner, str):
            entry = inner
        elif isinstance(inner, dict):
            entry = inner.get("fsPath") or inner.get("path") or inner.get("external")
    if not isinstance(entry, str) or not entry or len(entry) > 4096:
        return None
    if "://" in entry[:20]:
        return folder_of_uri(entry)
    return entry


def ending_of(composer: Composer) -> SessionEnding | None:
    status = composer.status
    found = _ENDINGS.get(status.lower()) if isinstance(status, str) else None
    if found is None:
        return None
    reason, message = found
    stamp = None
    if isinstance(composer.lastUpdatedAt, int | float) and not isinstance(
        composer.lastUpdatedAt, bool
    ):
        stamp = _stamp(composer.lastUpdatedAt)
    return SessionEnding(reason=reason, message=message, timestamp=stamp)  # type: ignore[arg-type]


def _stamp(value: object) -> str | None:
    if isinstance(value, str):
        return value[:40] or None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e14:
        try:
            stamp = datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return None


def _json_dict(value: object) -> dict[str, Any]:
    """A tool field that is an object, or a JSON string of one."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.startswith("{"):
        decoded = decode_or_none(_ANY, value)
        if isinstance(decoded, dict):
            return decoded
    return {}


def _first_str(data: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


__all__ = [
    "Bubble",
    "Composer",
    "bubble_events",
    "bubble_ids",
    "ending_of",
    "file_events",
    "model_name",
    "raw_dict",
    "raw_list",
    "todos_plan",
]
