"""Continue CLI (`cn`, npm `@continuedev/cli`, verified with 1.5.47): sessions under
`~/.continue/sessions/<uuid>.json` on Linux, macOS and Windows alike
(`%USERPROFILE%\\.continue` there); `CONTINUE_GLOBAL_DIR` replaces `~/.continue`. The
index `sessions/sessions.json` lists `[{sessionId, title, dateCreated (ms, as text),
workspaceDirectory, messageCount}]`.

A session is **one JSON document** rewritten after each turn: `{sessionId, title,
workspaceDirectory, history[], usage}`. Each history entry is `{message{role, content,
toolCalls[{id, function{name, arguments (text)}}], usage{model}}, toolCallStates
[{toolCallId, status: done|errored|canceled|..., parsedArgs, output[{content}]}]}`: the
tool's outcome sits beside the call that asked for it. There are no timestamps per
message and no CLI version; the model is only in each reply's `usage.model`.

Tools: `Write {filepath, content}`, `Edit`/`MultiEdit {filepath}`, `Bash {command}` (a
failing command is `status: "errored"` with "Error executing tool Bash: Error (exit code
2): <stderr>"), `Checklist {checklist}`, the plan as Markdown check boxes (`- [ ]`,
`- [x]`), the whole list each time. A 429 the CLI retried leaves no trace (normal); a
request that failed after its retries is not written down at all (a first turn that
fails leaves no session file). So Continue records no rate limit; a session whose last
request got no reply is read as interrupted.

Continue has no hooks that fire: its bundle carries a Claude-style hook engine, but
nothing calls it in 1.5.47 (hooks in `~/.continue/settings.json` never ran), so there is
no `passdown install continue`; the handoff is taken up with `passdown run`/`switch`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    decode_or_none,
    file_mtime,
    first_error_line,
    is_file,
    list_folder,
    parse_exit_code,
    read_head,
)
from passdown.agents._document import decode_side_file
from passdown.agents._prompt_file import is_long, write_prompt_file
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
    ToolAction,
    ToolCall,
    ToolResult,
    Transcript,
)

# The session is one JSON document, its history streamed: read no further than this.
MAX_SESSION_BYTES = 256 * 1024 * 1024
_INDEX_BYTES = 16 * 1024 * 1024
_INDEX = "sessions.json"
_UNTITLED = "Untitled Session"
_EDIT_TOOLS: dict[str, ToolAction] = {"Write": "write", "Edit": "edit", "MultiEdit": "edit"}
_READ_TOOLS = frozenset({"Read", "List", "Search", "Fetch", "Diff", "Status", "Skills"})
_FINISHED = frozenset({"done", "errored"})
_BOX = lazy_compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX/~-])\]\s*(.*?)\s*$")
_BOX_STATUS: dict[str, PlanStatus] = {
    " ": "pending",
    "x": "completed",
    "/": "in_progress",
    "~": "in_progress",
    "-": "cancelled",
}
# "Error executing tool Bash: Error (exit code 2): ls: cannot access ..."
_ERROR_PREFIX = lazy_compile(r"\AError executing tool [^:]*:\s*(?:Error \(exit code -?\d+\):\s*)?")
_HEAD_WORKSPACE = lazy_compile(rb'"workspaceDirectory"\s*:\s*("(?:[^"\\]|\\.)*")')
_HEAD_TITLE = lazy_compile(rb'"title"\s*:\s*("(?:[^"\\]|\\.)*")')
_STRING = LazyDecoder(str)
# The message after a takeover prompt handed over as a file (`cn -p` needs one).
LONG_PROMPT_TAIL = "Take over the task described above."


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _Call(msgspec.Struct):
    id: str | None = None
    function: _Function | None = None


class _Usage(msgspec.Struct):
    model: str | None = None


class _Part(msgspec.Struct):
    type: str | None = None
    text: str | None = None


class _Message(msgspec.Struct):
    role: str = ""
    content: str | list[_Part] | None = None
    toolCalls: list[_Call] | None = None
    usage: _Usage | None = None


class _Output(msgspec.Struct):
    content: str | None = None


class _CallState(msgspec.Struct):
    toolCallId: str | None = None
    status: str | None = None
    output: list[_Output] | None = None


class _Entry(msgspec.Struct):
    message: _Message | None = None
    toolCallStates: list[_CallState] | None = None


class _Indexed(msgspec.Struct):
    sessionId: str | None = None
    title: str | None = None
    dateCreated: str | int | None = None
    workspaceDirectory: str | None = None


class _Args(msgspec.Struct):
    filepath: object = None
    command: object = None
    checklist: object = None


_ENTRY = LazyDecoder(_Entry)
_INDEXED = LazyDecoder(list[_Indexed])
_ARGS = LazyDecoder(_Args)


class ContinueCLI(Agent):
    name = "continue"
    display_name = "Continue CLI"
    program = "cn"
    store_env = ("CONTINUE_GLOBAL_DIR",)
    # `passdown install continue` says this instead of pretending to install anything
    no_hooks = (
        "Continue CLI has no hooks that fire: its bundle carries a hook engine, but the "
        "pinned release never calls it (hooks in ~/.continue/settings.json do not run)"
    )

    def global_dir(self) -> Path:
        configured = os.environ.get("CONTINUE_GLOBAL_DIR")
        return Path(configured).expanduser() if configured else Path.home() / ".continue"

    def store_roots(self) -> list[Path]:
        return [self.global_dir() / "sessions"]

    def index(self) -> dict[str, _Indexed]:
        """sessions.json: id -> entry (bounded read; a bad index is no index)."""
        entries = decode_side_file(self.store_roots()[0] / _INDEX, _INDEXED, _INDEX_BYTES)
        if entries is None:
            return {}
        return {e.sessionId: e for e in entries if e.sessionId}

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        index = self.index()
        for path in list_folder(self.store_roots()[0]):
            if path.suffix != ".json" or path.name == _INDEX or not is_file(path):
                continue
            ref = self._ref(path, index.get(path.stem))
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        return self._ref(path, self.index().get(path.stem))

    def _ref(self, path: Path, indexed: _Indexed | None) -> SessionRef:
        """The workspace and title from the file's head (they precede the history),
        else from the index: discovery never decodes a whole session."""
        head = read_head(path, 16 * 1024)
        mtime, size = file_mtime(path)
        cwd = _head_string(_HEAD_WORKSPACE, head) or (
            indexed.workspaceDirectory if indexed else None
        )
        title = _head_string(_HEAD_TITLE, head) or (indexed.title if indexed else None)
        return SessionRef(
            agent=self.name,
            session_id=path.stem,
            path=path,
            cwd=cwd,
            started_at=_millis_iso(indexed.dateCreated) if indexed else None,
            updated_at=mtime,
            size=size,
            title=None if title == _UNTITLED else title,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        from passdown.agents._json_stream import DocumentStream  # loaded to read, not to list

        document = DocumentStream(
            ref.path,
            "history.item",
            ("sessionId", "title", "workspaceDirectory"),
            diag,
            limit=MAX_SESSION_BYTES,
            shape="a Continue session document",
        )
        # the fields precede the history in the file: their passes stop at once
        info.cwd = document.field("workspaceDirectory", _STRING) or info.cwd
        info.started_at = ref.started_at
        info.updated_at = _millis_iso(int(ref.updated_at * 1000))  # rewritten each turn
        title = document.field("title", _STRING)
        if title and title != _UNTITLED:
            info.title = title
        reader = _HistoryReader(info, diag)
        for raw in document.items():
            yield from reader.entry(msgspec.Raw(raw))
        ending = reader.ending()
        if ending is not None:
            yield ending

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--" keeps a prompt that starts with "-" one argument, not an option; -p runs
        # one turn and exits. A prompt too long for one argument is handed over as a
        # file through --prompt (which puts a path's content first in the message).
        mode = [] if interactive else ["-p"]
        if is_long(prompt):
            path = write_prompt_file(prompt, workspace, self.name)
            argv = [self.program, *mode, "--prompt", str(path), "--", LONG_PROMPT_TAIL]
        else:
            argv = [self.program, *mode, "--", prompt]
        return LaunchSpec(argv=argv, cwd=workspace)


def _head_string(pattern: re.Pattern[bytes], head: bytes) -> str | None:
    match = pattern.search(head)
    if match is None:
        return None
    value = decode_or_none(_STRING, match.group(1))
    return value.strip() or None if isinstance(value, str) else None


def _millis_iso(value: str | int | None) -> str | None:
    from datetime import UTC, datetime

    try:
        millis = int(value) if value is not None else 0
        if millis <= 0:
            return None
        stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _HistoryReader:
    """Turns one history entry at a time into events (a call and its outcome are in the
    same entry); remembers how the last entry left the turn for the ending."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.last_role: str | None = None
        self.open_calls = 0  # calls of the last entry that never finished

    def entry(self, raw: msgspec.Raw) -> Iterator[Event]:
        self.diag.lines += 1
        entry = decode_or_none(_ENTRY, raw)
        if not isinstance(entry, _Entry) or entry.message is None:
            self.diag.bad_lines += 1
            return
        message = entry.message
        if message.role not in ("user", "assistant"):
            if message.role not in ("system", "tool"):
                self.diag.unknown(f"role:{message.role or '(none)'}")
            return
        self.last_role, self.open_calls = message.role, 0
        text = _text(message.content)
        if message.role == "user":
            if text:
                yield Message(role="user", text=text)
            return
        if message.usage is not None:
            self.info.add_model(message.usage.model or None)
        if text:
            yield Message(role="assistant", text=text)
        states = {s.toolCallId: s for s in entry.toolCallStates or [] if s.toolCallId}
        for raw_call in message.toolCalls or []:
            call = _tool_call(raw_call)
            yield call
            state = states.get(call.call_id)
            if state is None or state.status not in _FINISHED:
                self.open_calls += 1
                continue
            yield _tool_result(call, state)

    def ending(self) -> SessionEnding | None:
        if self.last_role == "user":
            return SessionEnding(
                reason="interrupted",
                message="the last request got no reply (Continue writes down no reason: a "
                "request that failed after its retries, or the user stopped it)",
            )
        if self.open_calls:
            return SessionEnding(
                reason="interrupted", message="the turn stopped while a tool call was running"
            )
        return None


def _text(content: str | list[_Part] | None) -> str:
    if isinstance(content, str):
        return content.strip()
    return "\n".join(p.text for p in content or [] if p.type == "text" and p.text).strip()


def _tool_call(raw: _Call) -> ToolCall:
    function = raw.function or _Function()
    name = function.name or ""
    call = ToolCall(call_id=raw.id or "", name=name)
    args = decode_or_none(_ARGS, function.arguments or "{}")
    args = args if isinstance(args, _Args) else _Args()
    if name in _EDIT_TOOLS:
        call.action = _EDIT_TOOLS[name]
        call.paths = (args.filepath,) if isinstance(args.filepath, str) and args.filepath else ()
    elif name == "Bash":
        call.action = "command"
        call.command = args.command if isinstance(args.command, str) else ""
    elif name == "Checklist":
        items = _checklist(args.checklist)
        if items is not None:
            call.action = "plan"
            call.plan = PlanOp(op="replace", items=items)
    elif name in _READ_TOOLS:
        call.action = "read"
    return call


def _tool_result(call: ToolCall, state: _CallState) -> ToolResult:
    output = "\n".join(o.content for o in state.output or [] if o.content)
    failed = state.status == "errored"
    result = ToolResult(call_id=call.call_id, is_error=failed)
    if call.action == "command":
        code = parse_exit_code(output)
        result.exit_code = code if code is not None or failed else 0
    if failed:
        result.error = first_error_line(_ERROR_PREFIX.sub("", output, count=1))
    return result


def _checklist(value: object) -> tuple[PlanItem, ...] | None:
    """`- [ ] a` / `- [x] b` lines as plan items; None when the text has no box at all."""
    if not isinstance(value, str):
        return None
    items: list[PlanItem] = []
    for line in value.splitlines():
        match = _BOX.match(line)
        if match and match.group(2):
            status = _BOX_STATUS.get(match.group(1).lower(), "pending")
            items.append(PlanItem(id=str(len(items) + 1), subject=match.group(2), status=status))
    return tuple(items) if items else None


__all__ = ["MAX_SESSION_BYTES", "ContinueCLI"]

# No hook integration: Continue's hook engine is never called in the pinned release.
