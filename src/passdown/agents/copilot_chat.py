"""VS Code's chat (GitHub Copilot Chat and the other chat participants) as a source to hand
off from: the sessions the editor's chat service keeps per workspace. Not a launch
target (the editor is no CLI that takes a prompt and a folder to work in).

Where (github.com/microsoft/vscode `src/vs/workbench/contrib/chat/common/model/
chatSessionStore.ts`): `<User>/workspaceStorage/<id>/chatSessions/<sessionId>.json` or,
in newer builds, `.jsonl`; chats opened with no folder under
`<User>/globalStorage/emptyWindowChatSessions/` (earlier `workspaceStorage/no-workspace/
chatSessions/`). `<User>` is each editor's User folder
(`passdown.agents._editors`: Code, Code - Insiders, VSCodium, Cursor; Linux, macOS,
Windows, remote servers); `workspaceStorage/<id>/workspace.json` names the folder.
The file formats are in `passdown.agents._chat_log`.

What is read, all from documented (open-source) shapes, `ISerializableChatData` v3 in
`common/model/chatModel.ts` and the parts in `common/chatService/chatService.ts`:
- `requests[]`: `message.text` (the user's request), `timestamp` (ms), `modelId`;
- `response[]`: markdown parts (`{value}`, `{kind:"markdownContent"}`) are the answer;
  `toolInvocationSerialized` parts are tool calls: `toolSpecificData` `terminal`
  (`commandLine.original|toolEdited|userEdited`, `terminalCommandState.exitCode`,
  `terminalCommandOutput.text`) is a command, `todoList` (`todoList[{id, title,
  status: not-started|in-progress|completed}]`, the `manage_todo_list` tool) the plan;
  `resultDetails {input, output, isError}` gives other tools' input and failure;
  `textEditGroup`/`notebookEditGroup` parts (`uri`) are the files edited;
- `editedFileEvents[{uri, eventKind: 1 kept | 2 undone | 3 modified by the user}]`;
- how a request ended: `modelState.value` (`ResponseModelState`: 0 pending, 1 complete,
  2 cancelled, 3 failed), the older `isCanceled`, and `result.errorDetails {message,
  isRateLimited, isQuotaExceeded}`; a `.json` cut inside a request (the editor stopped
  while writing it) keeps what was written of it, the request's text first
  (`ChatModel.toExport` writes `message` before `response`), and ends interrupted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from passdown._lazy_re import lazy_compile
from passdown.agents import _editors
from passdown.agents._common import file_mtime, first_error_line, is_file, list_folder, read_head
from passdown.agents._editors import iso_millis as _iso
from passdown.agents._endings import api_error_ending
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
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
    ToolCall,
    ToolResult,
    Transcript,
)

_SUFFIXES = (".jsonl", ".json")
# where chats of a window with no folder are kept: now, and in older builds
_EMPTY_WINDOW_FOLDERS = (
    "globalStorage/emptyWindowChatSessions",
    "workspaceStorage/no-workspace/chatSessions",
)
_TITLE = lazy_compile(rb'"customTitle"\s*:\s*("(?:[^"\\]|\\.){1,2000}")')
_CREATED = lazy_compile(rb'"creationDate"\s*:\s*(\d{1,15})\b')
_FIRST_TEXT = lazy_compile(rb'"message"\s*:\s*\{[^{}]*?"text"\s*:\s*("(?:[^"\\]|\\.){1,2000}")')
_FILE_URI = lazy_compile(r"file://[^\s)\]\"'>]+")
_TODO_STATUS: dict[str, PlanStatus] = {
    "not-started": "pending",
    "in-progress": "in_progress",
    "completed": "completed",
}
_TODO_TOOLS = frozenset({"manage_todo_list", "copilot_manageTodoList", "vscode_manageTodoList"})
_WRITE_TOOLS = frozenset({"copilot_createFile", "create_file", "copilot_createNewJupyterNotebook"})
_EDIT_TOOLS = frozenset(
    {
        "copilot_replaceString",
        "replace_string_in_file",
        "copilot_multiReplaceString",
        "multi_replace_string_in_file",
        "copilot_insertEdit",
        "insert_edit_into_file",
        "copilot_applyPatch",
        "apply_patch",
        "copilot_editNotebook",
        "edit_notebook_file",
    }
)
_READ_TOOLS = frozenset(
    {
        "copilot_readFile",
        "read_file",
        "copilot_listDirectory",
        "list_dir",
        "copilot_findFiles",
        "file_search",
        "copilot_findTextInFiles",
        "grep_search",
        "copilot_searchCodebase",
        "semantic_search",
        "copilot_getErrors",
        "get_errors",
        "copilot_fetchWebPage",
        "fetch_webpage",
    }
)
# Response parts that carry nothing a handoff keeps (UI, progress, references).
_QUIET_PARTS = frozenset(
    {
        "thinking",
        "undoStop",
        "codeblockUri",
        "progressMessage",
        "progressTask",
        "progressTaskSerialized",
        "confirmation",
        "warning",
        "info",
        "elicitation",
        "elicitationSerialized",
        "prepareToolInvocation",
        "mcpServersStarting",
        "command",
        "treeData",
        "multiDiffData",
        "extensions",
        "pullRequest",
        "questionCarousel",
        "clearToPreviousToolInvocation",
        "hook",
        "disabledClaudeHooks",
        "workspaceEdit",
        "markdownVuln",
        "textEdit",
        "notebookEdit",
        "usage",
        "references",
        "contentReference",
        "codeCitation",
    }
)
_USER_KEPT = frozenset({1, 3})  # editedFileEvents: kept, modified by the user (2: undone)


class CopilotChat(Agent):
    name = "copilot-chat"
    display_name = "VS Code Copilot Chat"
    program = "code"
    store_env = ("PASSDOWN_EDITOR_USER_DIRS",)

    def store_roots(self) -> list[Path]:
        return _editors.user_dirs()

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for user in self.store_roots():
            for storage, folder in _editors.workspace_storages(user):
                if cwd_in_workspace(folder, workspace):
                    yield from self._refs(storage / "chatSessions", folder)
            if workspace is None:  # chats of windows with no folder: no workspace to match
                for folder in _EMPTY_WINDOW_FOLDERS:
                    yield from self._refs(user / folder, None)

    def _refs(self, folder: Path, cwd: str | None) -> Iterator[SessionRef]:
        names = {p.name for p in list_folder(folder)}
        for name in sorted(names):
            stem, suffix = _split(name)
            if suffix is None or (suffix == ".json" and f"{stem}.jsonl" in names):
                continue  # the .jsonl log supersedes a .json left from an older build
            path = folder / name
            if is_file(path):
                yield self._ref(path, cwd)

    def ref_for_path(self, path: Path) -> SessionRef:
        cwd = None
        if path.parent.name == "chatSessions":
            cwd = _editors.workspace_folder(path.parent.parent)
        return self._ref(path, cwd)

    def _ref(self, path: Path, cwd: str | None) -> SessionRef:
        mtime, size = file_mtime(path)
        started, title = _head_facts(path)
        return SessionRef(
            agent=self.name,
            session_id=_split(path.name)[0],
            path=path,
            cwd=cwd,
            updated_at=mtime,
            size=size,
            started_at=started,
            title=title,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, _events)

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        raise _editors.not_a_launch_target(self.display_name)


def _split(name: str) -> tuple[str, str | None]:
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return name, None


def _head_facts(path: Path) -> tuple[str | None, str | None]:
    """(when the chat started, its custom title or else its first request), from the
    file's first 64 KB: listing never reads a whole chat."""
    head = read_head(path, 64 * 1024)
    created = _CREATED.search(head)
    started = _iso(int(created.group(1))) if created else None
    match = _TITLE.search(head) or _FIRST_TEXT.search(head)
    if match is None:
        return started, None
    try:
        text = msgspec.json.decode(match.group(1))
    except (msgspec.DecodeError, RecursionError):
        return started, None
    return started, " ".join(text.split())[:200] or None if isinstance(text, str) else None


def _events(info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
    from passdown.agents._chat_log import SessionDocument, replay_log  # to read, not to list

    if info.path.name.endswith(".jsonl"):
        replay = replay_log(info.path, diag)
        if replay is None:
            return
        yield from _requests(replay.requests(), info, diag)
        fields: Callable[[str], object] = replay.state.get
    else:  # a .json document streams: its fields come after its requests
        document = SessionDocument(info.path, diag)
        yield from _requests(document.requests(), info, diag)
        if document.cut:
            yield SessionEnding(
                reason="interrupted",
                message=f"{info.path.name} ends inside its last request (cut while being "
                "written?): what came after the cut is not known",
            )
        fields = document.field
    info.started_at = _iso(fields("creationDate"))
    title = fields("customTitle")
    info.title = title if isinstance(title, str) and title else None


def _requests(requests: Iterator[object], info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
    last: object = None
    for n, request in enumerate(requests):
        if isinstance(request, dict):
            yield from _request(request, n, info, diag)
            last = request.get("timestamp", last)
        else:
            diag.bad_lines += 1
    info.updated_at = _iso(last)


def _request(
    request: dict[str, Any], n: int, info: SessionInfo, diag: Diagnostics
) -> Iterator[Event]:
    stamp = _iso(request.get("timestamp"))
    yield from _kept_edits(request, n, stamp)
    text = _message_text(request.get("message"))
    if text:
        yield Message(role="user", text=text, timestamp=stamp)
    model = request.get("modelId")
    info.add_model(model if isinstance(model, str) else None)
    said: list[str] = []
    for k, part in enumerate(_list(request.get("response"))):
        if isinstance(part, str):
            said.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        markdown = _markdown_part(part, kind)
        if markdown is not None:
            said.append(markdown)
            continue
        events = _part_events(part, kind, f"{n}.{k}", stamp, diag)
        if events:
            yield from _said(said, stamp)
            said = []
            yield from events
    yield from _said(said, stamp)
    ending = _ending(request, stamp)
    if ending is not None:
        yield ending


def _markdown_part(part: dict[str, Any], kind: object) -> str | None:
    if kind is None:  # an IMarkdownString: {value, supportThemeIcons, uris}
        value = part.get("value")
        return value if isinstance(value, str) else None
    if kind == "markdownContent":
        return _text_of(part.get("content"))
    if kind == "inlineReference":  # a file or symbol named inside the answer
        name = part.get("name")
        ref = part.get("inlineReference")
        if not isinstance(name, str):
            path = _path_of(
                ref if isinstance(ref, dict) and "scheme" in ref else _dict(ref).get("uri")
            )
            name = path.rsplit("/", 1)[-1] if path else None
        return f"`{name}`" if name else None
    return None


def _part_events(
    part: dict[str, Any], kind: object, call_id: str, stamp: str | None, diag: Diagnostics
) -> list[Event]:
    if kind == "toolInvocationSerialized":
        return _tool(part, call_id, stamp)
    if kind in ("textEditGroup", "notebookEditGroup"):
        path = _path_of(part.get("uri"))
        if path is None:
            return []
        edit = ToolCall(
            call_id=call_id, name=str(kind), action="edit", paths=(path,), timestamp=stamp
        )
        if part.get("done") is False:  # still streaming when the editor stopped
            return [edit]
        return [edit, ToolResult(call_id, timestamp=stamp)]
    if not isinstance(kind, str) or kind not in _QUIET_PARTS:
        diag.unknown(f"part:{kind}" if isinstance(kind, str) else "part:(no kind)")
    return []


def _tool(part: dict[str, Any], fallback_id: str, stamp: str | None) -> list[Event]:
    tool = part.get("toolId")
    tool = tool if isinstance(tool, str) else ""
    call_id = part.get("toolCallId")
    call_id = call_id if isinstance(call_id, str) and call_id else fallback_id
    data = _dict(part.get("toolSpecificData"))
    details = part.get("resultDetails")
    call = ToolCall(call_id=call_id, name=tool, timestamp=stamp)
    todos = _todo_list(tool, data, details)
    if data.get("kind") == "terminal":
        call.action, call.command = "command", _command_line(data)
    elif todos is not None:
        call.action, call.plan = "plan", PlanOp(op="replace", items=todos)
    elif data.get("kind") == "subagent" or tool in ("runSubagent", "copilot_runSubagent"):
        call.action = "subagent"
    elif tool in _WRITE_TOOLS or tool in _EDIT_TOOLS:
        call.action = "write" if tool in _WRITE_TOOLS else "edit"
        call.paths = _tool_paths(part, details)
    elif tool in _READ_TOOLS:
        call.action = "read"
    events: list[Event] = [call]
    result = _tool_result(call, part, data, details, stamp)
    if result is not None:
        events.append(result)
    return events


def _tool_result(
    call: ToolCall,
    part: dict[str, Any],
    data: dict[str, Any],
    details: object,
    stamp: str | None,
) -> ToolResult | None:
    if _dict(part.get("isConfirmed")).get("type") == 0 or part.get("isConfirmed") is False:
        return ToolResult(
            call.call_id, is_error=True, error="the user declined the tool call", timestamp=stamp
        )
    if part.get("isComplete") is not True:
        return None  # it never finished: the call stays unanswered
    output = "\n".join(
        _text_of(item) or ""
        for item in _list(_dict(details).get("output"))
        if isinstance(item, dict)
    )
    if call.action == "command":
        output = _text_of(data.get("terminalCommandOutput")) or output
        code = _dict(data.get("terminalCommandState")).get("exitCode")
        if isinstance(code, int) and not isinstance(code, bool):
            failed = code != 0
            error = first_error_line(output) if failed else None
            return ToolResult(
                call.call_id, is_error=failed, exit_code=code, error=error, timestamp=stamp
            )
    if _dict(details).get("isError") is True:
        return ToolResult(
            call.call_id,
            is_error=True,
            error=first_error_line(output) or "the tool failed",
            timestamp=stamp,
        )
    return ToolResult(call.call_id, timestamp=stamp)


def _command_line(data: dict[str, Any]) -> str | None:
    line = _dict(data.get("commandLine"))
    for key in ("userEdited", "toolEdited", "original"):
        value = line.get(key)
        if isinstance(value, str) and value:
            return value
    legacy = data.get("command")  # ILegacyChatTerminalToolInvocationData
    return legacy if isinstance(legacy, str) and legacy else None


def _todo_list(tool: str, data: dict[str, Any], details: object) -> tuple[PlanItem, ...] | None:
    todos: object = None
    if data.get("kind") == "todoList":
        todos = data.get("todoList")
    elif tool in _TODO_TOOLS:
        raw = (
            data.get("rawInput")
            if data.get("kind") == "input"
            else _json(_dict(details).get("input"))
        )
        todos = _dict(raw).get("todoList")
    if not isinstance(todos, list):
        return None
    items = []
    for n, todo in enumerate(todos, start=1):
        if not isinstance(todo, dict):
            continue
        title = todo.get("title")
        status = todo.get("status")
        ident = todo.get("id")
        items.append(
            PlanItem(
                id=str(ident) if isinstance(ident, (str, int)) and ident != "" else str(n),
                subject=title if isinstance(title, str) else "",
                status=_TODO_STATUS.get(status, "pending")
                if isinstance(status, str)
                else "pending",
                description=_str(todo.get("description")),
            )
        )
    return tuple(items)


def _tool_paths(part: dict[str, Any], details: object) -> tuple[str, ...]:
    """The files an edit tool named: its input (when recorded), its result's URIs, or the
    file links in its messages ("Edited [](file:///w/app.py)")."""
    found: list[str] = []
    args = _dict(_json(_dict(details).get("input")))
    for key in ("filePath", "path", "uri"):
        value = args.get(key)
        if isinstance(value, str) and value:
            found.append(value)
    for item in details if isinstance(details, list) else []:
        path = _path_of(_dict(item).get("uri") if "uri" in _dict(item) else item)
        if path:
            found.append(path)
    if not found:
        for key in ("pastTenseMessage", "invocationMessage"):
            message = part.get(key)
            links = _dict(message).get("uris")
            for uri in _dict(links).values():
                path = _path_of(uri)
                if path:
                    found.append(path)
            for uri in _FILE_URI.findall(_text_of(message) or ""):
                path = _editors.folder_of_uri(uri)
                if path:
                    found.append(path)
            if found:
                break
    return tuple(dict.fromkeys(found))


def _kept_edits(request: dict[str, Any], n: int, stamp: str | None) -> Iterator[Event]:
    """Files the previous answer edited that the user kept or changed himself (the chat's
    editing session records them with the next request)."""
    paths = []
    for event in _list(request.get("editedFileEvents")):
        event = _dict(event)
        if event.get("eventKind") in _USER_KEPT:
            path = _path_of(event.get("uri"))
            if path:
                paths.append(path)
    if paths:
        call_id = f"{n}.edited"
        yield ToolCall(
            call_id=call_id,
            name="editedFileEvents",
            action="edit",
            paths=tuple(dict.fromkeys(paths)),
            timestamp=stamp,
        )
        yield ToolResult(call_id, timestamp=stamp)


def _ending(request: dict[str, Any], stamp: str | None) -> SessionEnding | None:
    error = _dict(_dict(request.get("result")).get("errorDetails"))
    message = _str(error.get("message"))
    state = _dict(request.get("modelState")).get("value")
    if error.get("isRateLimited") is True:
        return api_error_ending(message or "rate limited", kind="rate_limit", timestamp=stamp)
    if error.get("isQuotaExceeded") is True:
        return api_error_ending(message or "quota exceeded", kind="usage_limit", timestamp=stamp)
    if state == 2 or request.get("isCanceled") is True:
        return SessionEnding(
            reason="interrupted", message="the request was cancelled", timestamp=stamp
        )
    if message or state == 3:
        return api_error_ending(message or "the request failed", timestamp=stamp)
    if state == 0:
        return SessionEnding(
            reason="interrupted",
            message="the request never finished (the editor closed)",
            timestamp=stamp,
        )
    return None


def _said(parts: list[str], stamp: str | None) -> Iterator[Message]:
    text = "".join(parts).strip()
    if text:
        yield Message(role="assistant", text=text, timestamp=stamp)


def _message_text(message: object) -> str | None:
    if isinstance(message, str):
        return message.strip() or None
    text = _dict(message).get("text")
    return text.strip() or None if isinstance(text, str) else None


def _text_of(value: object) -> str | None:
    """A string or an IMarkdownString `{value}`."""
    if isinstance(value, str):
        return value
    for key in ("value", "text"):
        inner = _dict(value).get(key)
        if isinstance(inner, str):
            return inner
    return None


def _path_of(uri: object) -> str | None:
    """A local path from a serialized URI (`{scheme, path, fsPath}`) or a `file://` string."""
    if isinstance(uri, str):
        return _editors.folder_of_uri(uri) if uri.startswith("file:") else None
    uri = _dict(uri)
    if uri.get("scheme") not in ("file", "vscode-notebook-cell"):
        return None
    for key in ("fsPath", "path"):
        value = uri.get(key)
        if isinstance(value, str) and value:
            # a URI's path is decoded already; a Windows drive is written "/c:/..."
            drive = key == "path" and len(value) >= 3 and value[0] == "/" and value[2] == ":"
            return value[1:] if drive else value
    return None


def _json(value: object) -> object:
    if not isinstance(value, str) or not value.startswith("{"):
        return value
    try:
        return msgspec.json.decode(value)
    except (msgspec.DecodeError, RecursionError):
        return None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


__all__ = ["CopilotChat"]
