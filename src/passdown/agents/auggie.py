"""Auggie (Augment Code's CLI, npm `@augmentcode/auggie`, verified with 0.36.0): sessions
under `~/.augment/sessions/<conversation id>.json` on Linux, macOS and Windows alike
(`%USERPROFILE%\\.augment` there; the CLI takes the home folder). Auggie has no
environment variable for the folder (only `--augment-cache-dir`): passdown reads
`$PASSDOWN_AUGGIE_DIR` instead of `~/.augment` when it is set.

A session is **one JSON document** rewritten in place after each exchange: `{sessionId,
created, modified, chatHistory[], agentState{modelId}, rootTaskUuid}`. Each history entry
is `{exchange{request_message, response_text, request_nodes[], response_nodes[]},
completed, finishedAt}`. Request nodes: `0 text_node{content}` (the user's words; empty on
the exchanges that only carry tool results), `4 ide_state_node` (the workspace folders and
the terminal's cwd), `1 tool_result_node{tool_use_id, content, is_error}`. Response nodes:
`0` text, `5 tool_use{tool_use_id, tool_name, input_json}`, `8` thinking (never exported).
A tool's result arrives in the next exchange's request. Neither the CLI's version nor,
offline, the model is written (`agentState.modelId` is empty then).

Tools: `save-file {path, file_content}`, `str-replace-editor {path}`, `apply_patch
{input}`, `remove-files {file_paths}`, `launch-process {command}` (its result holds
`<return-code>N</return-code>`, `is_error` when it failed). The plan is a task tree: the
tools `add_tasks`/`update_tasks`/`reorganize_tasklist` answer with the tasks they touched
(`[x] UUID:<short id> NAME:<name> DESCRIPTION:...`, `[ ]` not started, `[/]` in progress,
`[x]` complete, `[-]` cancelled), replayed here; the tree as it stands is kept in
`task-storage/tasks/<uuid>` (one JSON per task, `rootTaskUuid` names the root) and read
at the end as the final plan.

Endings: a 429 Auggie retried leaves no trace (normal). A request that failed after its
retries is not written down either: the session just stops after a tool call whose
result was never sent on; that is read as an interrupted turn (the same as a user's
Ctrl-C, which leaves the same shape). Auggie records no rate limit in a session.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents import _record_fields
from passdown.agents._common import (
    decode_or_none,
    file_mtime,
    first_error_line,
    is_file,
    list_folder,
    parse_exit_code,
    read_head,
)
from passdown.agents._document import decode_side_file, find_first
from passdown.agents._prompt_file import is_long, write_prompt_file
from passdown.agents.base import Agent, LaunchSpec, candidate_of
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    Plan,
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

# The session is one JSON document, its history streamed: read no further than this.
MAX_SESSION_BYTES = 256 * 1024 * 1024
MAX_TASKS = 1000
_HEAD_BYTES = 64 * 1024  # task files read for the final plan (the tree is walked, bounded)
_TASK_BYTES = 256 * 1024
_EDIT_TOOLS: dict[str, ToolAction] = {
    "save-file": "write",
    "str-replace-editor": "edit",
    "apply_patch": "edit",
    "remove-files": "delete",
}
_PLAN_TOOLS = frozenset({"add_tasks", "update_tasks", "reorganize_tasklist"})
_READ_TOOLS = frozenset(
    {"view", "view_tasklist", "codebase-retrieval", "web-fetch", "web-search", "read-process"}
)
_STATE: dict[str, PlanStatus] = {
    "NOT_STARTED": "pending",
    "IN_PROGRESS": "in_progress",
    "COMPLETE": "completed",
    "CANCELLED": "cancelled",
}
_MARK: dict[str, PlanStatus] = {
    " ": "pending",
    "/": "in_progress",
    "x": "completed",
    "-": "cancelled",
}
# "[x] UUID:5HKHK1jabB4Uv3bKeFeVzA NAME:Write hello.txt DESCRIPTION:Greet"
_TASK_LINE = lazy_compile(r"^\s*\[([ /xX-])\] UUID:(\S+) NAME:(.*?) DESCRIPTION:(.*)$", re.M)
_SECTION = lazy_compile(r"^## (Created|Updated|Deleted) Tasks\s*$", re.M)
_ROOT_DESCRIPTION = "Root task for conversation"
_RETURN_CODE = lazy_compile(r"<return-code>\s*(-?\d+)\s*</return-code>")
_OUTPUT = lazy_compile(r"<output>\n?(.*?)</output>", re.S)
_PATCH_FILE = lazy_compile(r"^\*\*\*\s+(Add|Update|Delete)\s+File:\s+(.+?)\s*$", re.M)
_HEAD_CWD = lazy_compile(rb'"current_working_directory"\s*:\s*("(?:[^"\\]|\\.)*")')
_HEAD_ROOT = lazy_compile(rb'"(?:repository_root|folder_root)"\s*:\s*("(?:[^"\\]|\\.)*")')
# the first request, as a title: its first 500 characters (it may run past the head)
_HEAD_REQUEST = lazy_compile(rb'"request_message"\s*:\s*"((?:[^"\\]|\\.){1,500})')
_HEAD_CREATED = lazy_compile(rb'"created"\s*:\s*("[^"]*")')
_STRING = LazyDecoder(str)


class _TextNode(msgspec.Struct):
    content: str | None = None


class _Folder(msgspec.Struct):
    repository_root: str | None = None
    folder_root: str | None = None


class _Terminal(msgspec.Struct):
    current_working_directory: str | None = None


class _IdeState(msgspec.Struct):
    workspace_folders: list[_Folder] | None = None
    current_terminal: _Terminal | None = None


class _ToolResultNode(msgspec.Struct):
    tool_use_id: str | None = None
    content: str | None = None
    is_error: bool = False


class _ToolUse(msgspec.Struct):
    tool_use_id: str | None = None
    tool_name: str | None = None
    input_json: str | None = None


class _Node(msgspec.Struct):
    type: int | None = None
    content: str | None = None
    timestamp_ms: int | float | None = None
    text_node: _TextNode | None = None
    ide_state_node: _IdeState | None = None
    tool_result_node: _ToolResultNode | None = None
    tool_use: _ToolUse | None = None


class _Exchange(msgspec.Struct):
    request_message: str | None = None
    response_text: str | None = None
    request_nodes: list[_Node] | None = None
    response_nodes: list[_Node] | None = None


class _Entry(msgspec.Struct):
    exchange: _Exchange | None = None
    finishedAt: str | None = None


class _AgentState(msgspec.Struct):
    modelId: str | None = None


class _Task(msgspec.Struct):
    uuid: str | None = None
    name: str | None = None
    description: str | None = None
    state: str | None = None
    subTasks: list[str] | None = None


class _Args(msgspec.Struct):
    path: object = None
    file_paths: object = None
    command: object = None
    input: object = None


_AGENT_STATE = LazyDecoder(_AgentState)
_ENTRY = LazyDecoder(_Entry)
_TASK = LazyDecoder(_Task)
_ARGS = LazyDecoder(_Args)


class Auggie(Agent):
    name = "auggie"
    display_name = "Auggie"
    program = "auggie"
    store_env = ("PASSDOWN_AUGGIE_DIR",)

    def augment_dir(self) -> Path:
        configured = os.environ.get("PASSDOWN_AUGGIE_DIR")
        return Path(configured).expanduser() if configured else Path.home() / ".augment"

    def store_roots(self) -> list[Path]:
        return [self.augment_dir() / "sessions"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for path in list_folder(self.store_roots()[0]):
            if path.suffix != ".json" or not is_file(path):
                continue
            ref = self.ref_for_path(path)
            if candidate_of(ref, workspace):  # one store for all: an unplaced one is anyone's
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        """The cwd, first request and start time from the file's head (the first
        exchange names them): discovery never decodes a whole session."""
        head = read_head(path, _HEAD_BYTES)
        mtime, size = file_mtime(path)
        cwd = _head_string(_HEAD_CWD, head) or _head_string(_HEAD_ROOT, head)
        unplaced = None
        if cwd is None and size > len(head):  # a long first prompt comes before it
            limit = _record_fields.MAX_SCAN_BYTES
            found = find_first(path, _HEAD_CWD, limit)
            cwd = _json_string(found) if found else None
            if cwd is None and size > limit:  # read as far as discovery reads: not placed
                unplaced = _record_fields.not_within(limit)
        return SessionRef(
            agent=self.name,
            session_id=path.stem,
            path=path,
            cwd=cwd,
            started_at=_head_string(_HEAD_CREATED, head),
            updated_at=mtime,
            size=size,
            title=_title(head),
            unplaced=unplaced,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        from passdown.agents._json_stream import DocumentStream  # loaded to read, not to list

        document = DocumentStream(
            ref.path,
            "chatHistory.item",
            ("created", "modified", "agentState", "rootTaskUuid"),
            diag,
            limit=MAX_SESSION_BYTES,
            shape="an Auggie session document",
        )
        reader = _HistoryReader(info, diag)
        for raw in document.items():
            yield from reader.entry(msgspec.Raw(raw))
        yield from reader.close()
        info.started_at = document.field("created", _STRING)
        info.updated_at = document.field("modified", _STRING)
        info.title = ref.title
        state = document.field("agentState", _AGENT_STATE)
        if state is not None:
            info.add_model(state.modelId or None)
        root = document.field("rootTaskUuid", _STRING)
        plan = _task_tree(self.augment_dir() / "task-storage" / "tasks", root)
        if plan is not None:
            yield plan

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--instruction=..." keeps a prompt that starts with "-" attached to its option;
        # a prompt too long for one argument goes through --instruction-file.
        if is_long(prompt):
            path = write_prompt_file(prompt, workspace, self.name)
            argv = [self.program, f"--instruction-file={path}"]
        else:
            argv = [self.program, f"--instruction={prompt}"]
        if not interactive:
            argv.insert(1, "--print")
        return LaunchSpec(argv=argv, cwd=workspace, env={"AUGMENT_DISABLE_AUTO_UPDATE": "1"})


def _head_string(pattern: re.Pattern[bytes], head: bytes) -> str | None:
    match = pattern.search(head)
    return None if match is None else _json_string(match.group(1))


def _title(head: bytes) -> str | None:
    match = _HEAD_REQUEST.search(head)
    return None if match is None else _json_string(b'"' + match.group(1) + b'"')


def _json_string(raw: bytes) -> str | None:
    value = decode_or_none(_STRING, raw)
    return value.strip() or None if isinstance(value, str) else None


class _HistoryReader:
    """Turns one exchange at a time into events; a plan call waits for its result (the
    result says which tasks it made, under which ids) and the running plan is kept."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.plan_calls: dict[str, ToolCall] = {}  # the last exchange's, awaiting results
        self.plan = Plan()  # short UUID -> item, as the results showed (bounded replay)
        self.unanswered: set[str] = set()  # the last exchange's calls not answered yet
        self.last_stamp: str | None = None

    def entry(self, raw: msgspec.Raw) -> Iterator[Event]:
        self.diag.lines += 1
        entry = decode_or_none(_ENTRY, raw)
        if not isinstance(entry, _Entry) or entry.exchange is None:
            self.diag.bad_lines += 1
            return
        exchange, stamp = entry.exchange, entry.finishedAt
        self.last_stamp = stamp or self.last_stamp
        for node in exchange.request_nodes or []:
            if node.type == 1 and node.tool_result_node is not None:
                yield from self._result(node.tool_result_node, stamp)
            elif node.type == 4 and node.ide_state_node is not None and not self.info.cwd:
                self.info.cwd = _cwd(node.ide_state_node)
        # a call is answered in the very next exchange: what is still waiting never will
        yield from self.plan_calls.values()
        self.plan_calls.clear()
        self.unanswered.clear()
        user = _user_text(exchange)
        if user:
            yield Message(role="user", text=user, timestamp=stamp)
        texts: list[str] = []
        for node in exchange.response_nodes or []:
            if node.type == 0 and node.content:
                texts.append(node.content)
            elif node.type == 5 and node.tool_use is not None:
                yield from _assistant(texts, stamp)
                texts = []
                yield from self._tool_use(node.tool_use, stamp)
            elif node.type not in (0, 5, 8):
                self.diag.unknown(f"response_node:{node.type}")
        if not exchange.response_nodes and exchange.response_text:
            texts.append(exchange.response_text)
        yield from _assistant(texts, stamp)

    def close(self) -> Iterator[Event]:
        yield from self.plan_calls.values()  # never answered: the change did not happen
        if self.unanswered:
            yield SessionEnding(
                reason="interrupted",
                message="the turn stopped before the result of its last tool call went "
                "back to the model (Auggie writes down no reason: a request that failed "
                "after its retries, or the user stopped it)",
                timestamp=self.last_stamp,
            )

    def _tool_use(self, use: _ToolUse, stamp: str | None) -> Iterator[Event]:
        call_id, name = use.tool_use_id or "", use.tool_name or ""
        call = ToolCall(call_id=call_id, name=name, timestamp=stamp)
        args = decode_or_none(_ARGS, use.input_json or "{}")
        args = args if isinstance(args, _Args) else _Args()
        self.unanswered.add(call_id)
        if name in _EDIT_TOOLS:
            call.action = _EDIT_TOOLS[name]
            call.paths = _paths(name, args)
        elif name == "launch-process":
            call.action = "command"
            call.command = args.command if isinstance(args.command, str) else ""
        elif name in _PLAN_TOOLS:
            call.action = "plan"
            self.plan_calls[call_id] = call
            return  # emitted with its result, which says what changed
        elif name in _READ_TOOLS:
            call.action = "read"
        elif name.startswith("sub-agent"):
            call.action = "subagent"
        yield call

    def _result(self, node: _ToolResultNode, stamp: str | None) -> Iterator[Event]:
        call_id = node.tool_use_id or ""
        self.unanswered.discard(call_id)
        text = node.content or ""
        plan_call = self.plan_calls.pop(call_id, None)
        if plan_call is not None:
            if not node.is_error:
                plan_call.plan = self._apply(text)
            yield plan_call
        result = ToolResult(call_id=call_id, is_error=node.is_error, timestamp=stamp)
        code = _RETURN_CODE.search(text)
        result.exit_code = int(code.group(1)) if code else parse_exit_code(text)
        if node.is_error:
            output = _OUTPUT.search(text)
            result.error = first_error_line(output.group(1) if output else text)
        yield result

    def _apply(self, text: str) -> PlanOp:
        """The plan after a task tool's answer: its created and updated tasks are set,
        its deleted ones dropped (the root task is the list itself, not an item). An
        answer that changed one task hands on that one change (O(1) to replay, however
        long the plan); one that changed several, the whole plan."""
        plan = self.plan
        changes: list[PlanOp] = []
        sections = _SECTION.split(text)
        # split gives [before, name, body, name, body, ...]
        for kind, body in zip(sections[1::2], sections[2::2], strict=False):
            for mark, short_id, name, description in _TASK_LINE.findall(body):
                if description.startswith(_ROOT_DESCRIPTION):
                    continue
                item = PlanItem(short_id, name, _MARK.get(mark.lower(), "pending"))
                item.description = description or None
                changes.append(_change(plan, kind, item))
        if len(changes) == 1 and changes[0].op != "replace":
            return changes[0]
        items = tuple(plan.items.values())
        return PlanOp(op="replace", items=items, set_aside=plan.set_aside, dropped=plan.dropped)


def _change(plan: Plan, kind: str, item: PlanItem) -> PlanOp:
    """Apply one task line to the reader's plan; the same change as an op for extraction
    ("replace" when no single op says it: a changed description)."""
    found = plan.items.get(item.id)
    if kind == "Deleted":
        plan.items.pop(item.id, None)
        return PlanOp(op="update", item_id=item.id, status="deleted")
    if found is None:
        plan.apply(PlanOp(op="create", items=(item,)))
        return PlanOp(op="create", items=(item,))
    plan.items[item.id] = item  # a new object: ops handed on stay as they were
    if found.description != item.description:
        return PlanOp(op="replace")
    return PlanOp(op="update", item_id=item.id, status=item.status, subject=item.subject)


def _user_text(exchange: _Exchange) -> str:
    for node in exchange.request_nodes or []:
        if node.type == 0 and node.text_node is not None and node.text_node.content:
            return node.text_node.content.strip()
    return (exchange.request_message or "").strip()


def _assistant(texts: list[str], stamp: str | None) -> Iterator[Message]:
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    if text:
        yield Message(role="assistant", text=text, timestamp=stamp)


def _cwd(state: _IdeState) -> str | None:
    terminal = state.current_terminal
    if terminal is not None and terminal.current_working_directory:
        return terminal.current_working_directory
    for folder in state.workspace_folders or []:
        if folder.folder_root or folder.repository_root:
            return folder.folder_root or folder.repository_root
    return None


def _paths(name: str, args: _Args) -> tuple[str, ...]:
    if name == "remove-files":
        files = args.file_paths if isinstance(args.file_paths, list) else []
        return tuple(p for p in files if isinstance(p, str) and p)
    if name == "apply_patch":
        patch = args.input if isinstance(args.input, str) else ""
        return tuple(dict.fromkeys(path for _kind, path in _PATCH_FILE.findall(patch)))
    return (args.path,) if isinstance(args.path, str) and args.path else ()


def _task_tree(folder: Path, root_id: str | None) -> PlanOp | None:
    """The task tree under the session's root, depth first, as the final plan: each task
    file is read once, at most MAX_TASKS of them (a cycle or a huge tree stays bounded)."""
    if not root_id or not _safe_name(root_id):
        return None
    root = _read_task(folder, root_id)
    if root is None:
        return None
    items: list[PlanItem] = []
    seen = {root_id}
    stack = list(reversed(root.subTasks or []))
    while stack and len(seen) <= MAX_TASKS:
        task_id = stack.pop()
        if task_id in seen or not _safe_name(task_id):
            continue
        seen.add(task_id)
        task = _read_task(folder, task_id)
        if task is None:
            continue
        items.append(
            PlanItem(
                id=task_id,
                subject=task.name or "",
                status=_STATE.get(task.state or "", "pending"),
                description=task.description or None,
            )
        )
        stack.extend(reversed(task.subTasks or []))
    return PlanOp(op="replace", items=tuple(items)) if items else None


def _read_task(folder: Path, task_id: str) -> _Task | None:
    return decode_side_file(folder / task_id, _TASK, _TASK_BYTES)


def _safe_name(name: str) -> bool:
    """A task id names a file in the tasks folder: never a path."""
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


__all__ = ["MAX_SESSION_BYTES", "Auggie"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
Auggie.integration = "passdown.integrations._auggie:AuggieHooks"  # type: ignore[attr-defined]
