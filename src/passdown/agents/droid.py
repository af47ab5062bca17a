"""Factory Droid (`droid`, npm `@factory/cli`, verified with 0.225.2): sessions under
`~/.factory/sessions/<cwd slug>/<uuid>.jsonl`, the slug being the cwd with "/" turned
into "-" (`$FACTORY_HOME_OVERRIDE` replaces the home folder; on macOS and Windows the
folder is `.factory` in the home folder too). Beside each log, `<uuid>.settings.json`
holds the model and token totals.

The log is Claude-shaped and only grows at its end: `{"type": "session_start", id,
title, cwd}`, then `{"type": "message", id, parentId, timestamp, message: {role,
content: [blocks], modelId, visibility, hookEventName}}` whose blocks are Claude's
(`text`, `tool_use`, `tool_result {is_error}`, decoded by `_claude_blocks`), and
`{"type": "agent_turn_outcome", reason}` at the end of each turn. Messages with
`visibility: "user_only"` are hook runs (SessionStart, PreToolUse, Stop, ...) and those
with `"llm_only"` injected context: neither is the conversation.

Tools: `Create {file_path, content}`, `Edit {file_path, old_str, new_str}`, `Execute
{command}` (a failing command is an `is_error` result, "Error: Command failed (exit
code: 2) ... [Process exited with code 2]"), `TodoWrite {todos}` (a list of `{content,
status}`, or the same as text lines such as `1. [in_progress] Write tests`; `droid exec`
refuses it, recorded as an `is_error` result that changes no plan), `Task` (a
sub-agent). A 429 Droid retried leaves no trace; a turn whose retries ran out ends with
an outcome such as `model_rate_limited`, which is the session's ending.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, cast

import msgspec

from passdown._jsonl import LineReader
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._claude_blocks import NULL, Block, blocks, decode_raw, joined_text
from passdown.agents._claude_plan import todo_items
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    file_mtime,
    first_error_line,
    is_dir,
    is_file,
    list_folder,
    parse_exit_code,
    read_head,
)
from passdown.agents._endings import api_error_ending, short_message
from passdown.agents._resumable import LineSessionAgent, LineStateReader, state_str
from passdown.agents.base import LaunchSpec, cwd_in_workspace
from passdown.transcript import (
    Diagnostics,
    EndReason,
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
)

_EDIT_TOOLS = {"Create": "write", "Edit": "edit", "MultiEdit": "edit", "ApplyPatch": "edit"}
_READ_TOOLS = frozenset({"Read", "LS", "Grep", "Glob", "WebSearch", "FetchUrl", "ToolSearch"})
_KNOWN_TYPES = frozenset({"session_start", "message", "agent_turn_outcome"})
# `agent_turn_outcome.reason` when a turn did not end on the agent's answer (Droid's own
# names for what stopped it); "completed" and "spec_handoff" are normal endings.
_OUTCOMES: dict[str, EndReason] = {
    "model_rate_limited": "rate_limit",
    "model_usage_exhausted": "usage_limit",
    "model_provider_unavailable": "overloaded",
    "model_authentication_failed": "auth",
    "cancelled": "interrupted",
    "canceled": "interrupted",
    "interrupted": "interrupted",
    "aborted": "interrupted",
}
_NORMAL_OUTCOMES = frozenset({"completed", "spec_handoff"})
# TodoWrite's text form, as Droid parses it: "1. [in_progress] Do x", "- [x] Do y", "[ ] z"
_TODO_STATUS_LINE = lazy_compile(
    r"^(?:\d+[.)]\s*|[-*]\s+)?\[(completed|in_progress|pending)\]\s*(.*)$"
)
_TODO_CHECKED = lazy_compile(r"^(?:\d+[.)]\s*|[-*]\s+)?\[[xX]\]\s*(.*)$")
_TODO_OPEN = lazy_compile(r"^(?:\d+[.)]\s*|[-*]\s+)?\[\s*\]\s*(.*)$")
# Around a failed command's output: "Error: Command failed (exit code: 2)\n...\n[Process
# exited with code 2]".
_COMMAND_FAILED = lazy_compile(
    r"\AError: Command failed \(exit code: -?\d+\)\n?|\[Process exited with code -?\d+\]\s*\Z"
)
_TODO_BULLET = lazy_compile(r"^(?:\d+[.)]\s+|[-*]\s+)(.+)$")


class _Message(msgspec.Struct):
    role: str = ""
    content: str | list[Block] | None = None
    modelId: str | None = None
    visibility: str | None = None
    hookEventName: str | None = None


class _Record(msgspec.Struct):
    type: str = ""
    id: str | None = None
    timestamp: str | None = None
    title: str | None = None
    cwd: str | None = None
    message: _Message | None = None
    reason: str | None = None


class _Input(msgspec.Struct):
    file_path: str | None = None
    path: str | None = None
    command: str | None = None
    todos: msgspec.Raw = NULL
    description: str | None = None


class _Head(msgspec.Struct):
    type: str = ""
    id: str | None = None
    cwd: str | None = None
    title: str | None = None
    timestamp: str | None = None


_RECORD = LazyDecoder(_Record)
_INPUT = LazyDecoder(_Input)
_HEAD = LazyDecoder(_Head)
_ANY = LazyDecoder()


def cwd_slug(cwd: str) -> str:
    """Droid's folder name for a cwd: "/" (and on Windows "\\" and ":") become "-"."""
    return re.sub(r"[\\/:]", "-", cwd)


class DroidCLI(LineSessionAgent):
    name = "droid"
    display_name = "Factory Droid"
    program = "droid"
    store_env = ("FACTORY_HOME_OVERRIDE",)

    def home(self) -> Path:
        override = os.environ.get("FACTORY_HOME_OVERRIDE")
        return (Path(override).expanduser() if override else Path.home()) / ".factory"

    def store_roots(self) -> list[Path]:
        return [self.home() / "sessions"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        folders = [p for p in list_folder(self.home() / "sessions") if is_dir(p)]
        if workspace is not None:
            # The slug is lossy ("/a/b-c" and "/a/b/c" share one): preselect by name,
            # then confirm with the cwd the session records.
            slug = cwd_slug(str(workspace))
            folders = [f for f in folders if f.name == slug or f.name.startswith(slug + "-")]
        for folder in folders:
            for path in list_folder(folder):
                if path.suffix == ".jsonl" and is_file(path):
                    ref = self.ref_for_path(path)
                    if cwd_in_workspace(ref.cwd, workspace):
                        yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        head = _read_head(path)
        return SessionRef(
            agent=self.name,
            session_id=head.id or path.stem,
            path=path,
            cwd=head.cwd,
            started_at=head.timestamp,
            updated_at=mtime,
            size=size,
            title=head.title,
        )

    # -- reading ------------------------------------------------------------------
    def line_reader(self) -> type[LineStateReader]:
        return _LogReader

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--" ends the options, so a prompt starting with "-" is still the prompt.
        if interactive:
            return LaunchSpec(argv=[self.program, "--", prompt], cwd=workspace)
        # `exec` is read-only unless told otherwise; medium lets a takeover edit files
        # and run the project's commands (builds, tests), not push or install system-wide.
        argv = [self.program, "exec", "--auto", "medium", "--", prompt]
        return LaunchSpec(argv=argv, cwd=workspace)


def _read_head(path: Path) -> _Head:
    """The session_start record's id, cwd and title, and the first timestamp."""
    found = _Head()
    for line in read_head(path, 64 * 1024).split(b"\n")[:50]:
        try:
            head = _HEAD.decode(line)
        except DECODE_ERRORS:
            continue
        if head.type == "session_start":
            found.id, found.cwd, found.title = head.id, head.cwd, head.title
        found.timestamp = found.timestamp or head.timestamp
        if found.cwd and found.timestamp:
            break
    return found


class _LogReader(LineStateReader):
    """One forward pass over the log; between lines it remembers only the tool calls
    still waiting for their result."""

    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(path, info, diag)
        # Droid's own note of a failed model call ("BYOK Error: 429 Rate limit ..."),
        # written just before the turn's outcome: that ending's message
        self.notice: str | None = None

    def events(self, stream: BinaryIO | None = None) -> Iterator[Event]:
        reader = LineReader(self.path, self.diag)
        for offset, line in reader.forward(stream):
            record = decode_line(_RECORD, line, offset, reader.tail_offset, self.diag)
            if isinstance(record, _Record):
                yield from self._record(record)

    def state(self) -> dict[str, object]:
        calls = [msgspec.to_builtins(call) for call in self.calls.values()]
        return {"calls": calls, "notice": self.notice}

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        calls = state.get("calls")
        for value in calls if isinstance(calls, list) else ():
            call = msgspec.convert(value, ToolCall)
            self.calls[call.call_id] = pending.get(call.call_id, call)
        self.notice = state_str(state, "notice")

    def _record(self, rec: _Record) -> Iterator[Event]:
        info = self.info
        if rec.timestamp:
            info.started_at = info.started_at or rec.timestamp
            info.updated_at = rec.timestamp
        if rec.type == "session_start":
            info.session_id = rec.id or info.session_id
            info.cwd = info.cwd or rec.cwd
            info.title = info.title or rec.title
        elif rec.type == "message" and rec.message is not None:
            yield from self._message(rec.message, rec.timestamp)
        elif rec.type == "agent_turn_outcome":
            ending = _outcome_ending(rec.reason, self.notice, rec.timestamp or info.updated_at)
            self.notice = None
            if ending is not None:
                yield ending
        elif rec.type not in _KNOWN_TYPES:
            self.diag.unknown(rec.type or "(no type)")

    def _message(self, msg: _Message, ts: str | None) -> Iterator[Event]:
        if msg.visibility in ("user_only", "llm_only") or msg.hookEventName:
            # a hook's run, context Droid injected, or its note of an error: not the
            # conversation
            if msg.visibility == "user_only" and not msg.hookEventName:
                self.notice = joined_text(msg.content) if msg.content else None
            return
        if msg.role == "assistant":
            self.info.add_model(msg.modelId)
        texts: list[str] = []
        for block in blocks(msg.content):
            if block.type == "text" and block.text:
                texts.append(block.text)
            elif block.type == "tool_use" and block.id and msg.role == "assistant":
                call = _tool_call(block, ts)
                self.calls[call.call_id] = call
                yield call
            elif block.type == "tool_result" and block.tool_use_id:
                yield self._result(block, ts)
        text = "\n\n".join(t.strip() for t in texts if t.strip())
        if text and msg.role in ("user", "assistant"):
            synthetic = msg.role == "user" and text.lstrip().startswith("<system-reminder>")
            yield Message(role=msg.role, text=text, timestamp=ts, synthetic=synthetic)  # type: ignore[arg-type]

    def _result(self, block: Block, ts: str | None) -> ToolResult:
        call = self.calls.pop(block.tool_use_id or "", None)
        result = ToolResult(call_id=block.tool_use_id or "", is_error=bool(block.is_error))
        result.timestamp = ts
        text = joined_text(block.content) or ""
        if result.is_error:
            result.exit_code = parse_exit_code(text)
            # the command's own words, not Droid's "Error: Command failed (...)" header
            output = _COMMAND_FAILED.sub("", text) if result.exit_code is not None else text
            result.error = first_error_line(output) or text.strip()[:300] or None
        elif call is not None and call.action == "command":
            code = parse_exit_code(text)
            result.exit_code = 0 if code is None else code
            if result.exit_code:
                result.error = first_error_line(text)
        return result


def _tool_call(block: Block, ts: str | None) -> ToolCall:
    name = block.name or ""
    args = decode_raw(_INPUT, block.input) or _Input()
    call = ToolCall(call_id=block.id or "", name=name, timestamp=ts)
    if name in _EDIT_TOOLS:
        call.action = _EDIT_TOOLS[name]  # type: ignore[assignment]
        target = args.file_path or args.path
        call.paths = (target,) if target else ()
    elif name == "Execute":
        call.action = "command"
        call.command = args.command or ""
    elif name == "TodoWrite":
        call.action = "plan"
        call.plan = PlanOp(op="replace", items=_todos(args.todos))
    elif name == "Task":
        call.action = "subagent"
    elif name in _READ_TOOLS:
        call.action = "read"
    return call


def _todos(raw: msgspec.Raw) -> tuple[PlanItem, ...]:
    """TodoWrite's list in any of the shapes Droid accepts: objects, strings (one item
    each), or one text (JSON of either, or one item per line)."""
    value = decode_raw(_ANY, raw)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = _ANY.decode(text.encode())
            except DECODE_ERRORS:
                return _todo_lines(text)
        else:
            return _todo_lines(text)
    if not isinstance(value, list):
        return ()
    if value and all(isinstance(v, str) for v in value):
        return _todo_lines("\n".join(cast(list[str], value)))
    return todo_items(value)


def _todo_lines(text: str) -> tuple[PlanItem, ...]:
    items: list[PlanItem] = []
    for line in (raw.strip() for raw in text.split("\n")):
        if not line:
            continue
        status: PlanStatus = "pending"
        if match := _TODO_STATUS_LINE.match(line):
            status, subject = cast(PlanStatus, match.group(1)), match.group(2)
        elif match := _TODO_CHECKED.match(line):
            status, subject = "completed", match.group(1)
        elif (match := _TODO_OPEN.match(line)) or (match := _TODO_BULLET.match(line)):
            subject = match.group(1)
        else:
            subject = line
        subject = subject.strip() or "(no description)"
        items.append(PlanItem(id=str(len(items) + 1), subject=subject, status=status))
    return tuple(items)


def _outcome_ending(reason: str | None, notice: str | None, ts: str | None) -> SessionEnding | None:
    """A turn's outcome other than its normal end, as the session's ending; an outcome
    Droid names only "error" is classified from its note (a status code, the wording)."""
    if not reason or reason in _NORMAL_OUTCOMES:
        return None
    known = _OUTCOMES.get(reason)
    if known is None:
        return api_error_ending(notice or reason, timestamp=ts)
    return SessionEnding(reason=known, message=short_message(notice) or reason, timestamp=ts)


__all__ = ["DroidCLI", "cwd_slug"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
DroidCLI.integration = "passdown.integrations._droid:DroidHooks"  # type: ignore[attr-defined]
