"""GitHub Copilot CLI: sessions under `$COPILOT_HOME/session-state/<id>/` (default
`~/.copilot`): `events.jsonl` (the event log), `workspace.yaml` (`id`, `cwd`, times) and
`session.db` (SQLite: the `todos` table the agent keeps its plan in, through its `sql`
tool).

The event log is linear (a resumed session appends `session.resume` and the new turn), so
one forward pass suffices. Events are `{type, data, id, timestamp, parentId}`; the ones
read: `session.start`/`session.resume` (version, cwd, model), `user.message`,
`assistant.message {content, toolRequests}`, `tool.execution_start`/`_complete {success,
result, error, shellExecution.exitCode, fileEdits}`, `session.compaction_complete
{summaryContent}`, `subagent.started`. Events a sub-agent wrote carry `agentId` (or
`parentToolCallId`) and are left out of the main session; hidden reasoning
(`reasoningText`, `encryptedContent`) is never decoded. A shell command's success flag is
true even for a non-zero exit: the exit code is `shellExecution.exitCode`. Rewinds
(`session.snapshot_rewind`) are ephemeral: Copilot removes the withdrawn events from the
log itself, so the file on disk is already the active history.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import msgspec

from passdown._jsonl import LineReader
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    decode_or_none,
    env_path,
    file_mtime,
    first_error_line,
    is_dir,
    is_file,
    list_folder,
    read_head,
)
from passdown.agents._endings import api_error_ending
from passdown.agents._resumable import LineSessionAgent, LineStateReader, state_str, state_strs
from passdown.agents.base import LaunchSpec, cwd_in_workspace
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    SessionInfo,
    SessionRef,
    SubagentNote,
    ToolCall,
    ToolResult,
)

_NULL = msgspec.Raw(b"null")
_EDIT_TOOLS = {"create": "write", "edit": "edit", "write": "write"}
_SHELL_TOOLS = frozenset({"bash", "powershell", "shell"})
_READ_TOOLS = frozenset(
    {
        "view",
        "read_bash",
        "list_bash",
        "grep",
        "glob",
        "web_fetch",
        "fetch_copilot_cli_documentation",
    }
)
_SUBAGENT_TOOLS = frozenset({"task", "write_agent"})
# Event families passdown knows and does not need (anything else is counted as unknown).
_QUIET_PREFIXES = (
    "assistant.",
    "session.",
    "system.",
    "tool.",
    "subagent.",
    "hook.",
    "permission.",
    "mcp",
    "skill.",
    "model.",
    "user_input.",
    "elicitation.",
    "command",
    "pending_messages.",
    "sampling.",
    "external_tool.",
    "exit_plan_mode.",
    "human_response.",
    "sandbox.",
    "capabilities.",
    "auto_mode_switch.",
    "workflow.",
    "agent.",
    "ui.",
    "tool_search.",
    "session_limits_exhausted.",
)
_SHELL_MARKER = lazy_compile(r"\n?<shellId: [^>]*>\s*$")


class _Context(msgspec.Struct):
    cwd: str | None = None
    branch: str | None = None


class _Request(msgspec.Struct):
    toolCallId: str = ""
    name: str = ""
    arguments: msgspec.Raw = _NULL


class _Result(msgspec.Struct):
    content: str | None = None


class _Error(msgspec.Struct):
    message: str | None = None


class _Shell(msgspec.Struct):
    exitCode: int | None = None


class _FileEdit(msgspec.Struct):
    path: str = ""
    kind: str | None = None


class _Data(msgspec.Struct):
    """The union of the `data` fields passdown reads; everything else is skipped."""

    # session.start / session.resume / session.model_change / session.title_changed
    sessionId: str | None = None
    copilotVersion: str | None = None
    startTime: str | None = None
    selectedModel: str | None = None
    newModel: str | None = None
    context: _Context | None = None
    title: str | None = None
    # user.message / assistant.message
    content: str | None = None
    source: str | None = None
    isAutopilotContinuation: bool = False
    messageId: str | None = None
    model: str | None = None
    toolRequests: list[_Request] | None = None
    parentToolCallId: str | None = None
    # tool.execution_start / tool.execution_complete
    toolCallId: str | None = None
    toolName: str | None = None
    arguments: msgspec.Raw = _NULL
    success: bool | None = None
    result: _Result | None = None
    error: _Error | str | None = None
    shellExecution: _Shell | None = None
    fileEdits: list[_FileEdit] | None = None
    # session.compaction_complete
    summaryContent: str | None = None
    trigger: msgspec.Raw = _NULL
    # subagent.started
    agentName: str | None = None
    agentDescription: str | None = None


class _Event(msgspec.Struct):
    type: str = ""
    timestamp: str | None = None
    agentId: str | None = None
    data: msgspec.Raw = _NULL  # decoded only for the event types passdown reads


class _DecodedEvent(msgspec.Struct):
    """A line decoded at once, `data` straight into `_Data`: an event type passdown does
    not read only costs msgspec skipping its fields, which is cheaper than decoding every
    line twice (envelope, then payload)."""

    type: str = ""
    timestamp: str | None = None
    agentId: str | None = None
    data: _Data | None = None


class _StartEvent(msgspec.Struct):
    type: str = ""
    data: _Data | None = None


class _Args(msgspec.Struct):
    path: str | None = None
    file_path: str | None = None
    command: str | None = None


_EVENT = LazyDecoder(_Event)
_DECODED_EVENT = LazyDecoder(_DecodedEvent)
_DATA = LazyDecoder(_Data)
_START = LazyDecoder(_StartEvent)
_HANDLED = frozenset(
    {
        "session.start",
        "session.resume",
        "user.message",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "session.compaction_complete",
        "subagent.started",
        "session.model_change",
        "session.title_changed",
    }
)
_ARGS = LazyDecoder(_Args)
_ANY = LazyDecoder()


class CopilotCLI(LineSessionAgent):
    name = "copilot"
    display_name = "GitHub Copilot CLI"
    program = "copilot"
    store_env = ("COPILOT_HOME",)

    def home(self) -> Path:
        return env_path("COPILOT_HOME", Path.home() / ".copilot")

    def store_roots(self) -> list[Path]:
        return [self.home() / "session-state"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        root = self.home() / "session-state"
        folders = [p for p in list_folder(root) if is_dir(p)]
        for folder in folders:
            events = folder / "events.jsonl"
            if not is_file(events):
                continue
            ref = self.ref_for_path(events)
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        from passdown.agents._copilot_side import workspace_yaml  # to read, not to list

        mtime, size = file_mtime(path)
        meta = workspace_yaml(path.parent / "workspace.yaml")
        cwd = meta.get("cwd")
        started = meta.get("created_at")
        if not cwd:
            start = _first_start(path)
            cwd = start.context.cwd if start and start.context else None
            started = started or (start.startTime if start else None)
        return SessionRef(
            agent=self.name,
            session_id=meta.get("id") or path.parent.name,
            path=path,
            cwd=cwd,
            started_at=started,
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def line_reader(self) -> type[LineStateReader]:
        return _EventReader

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--opt=value" keeps a prompt that starts with "-" attached to its option.
        if interactive:
            return LaunchSpec(argv=[self.program, f"--interactive={prompt}"], cwd=workspace)
        # -p runs once; without --allow-all-tools it cannot use any tool unattended.
        argv = [self.program, f"--prompt={prompt}", "--allow-all-tools"]
        return LaunchSpec(argv=argv, cwd=workspace)


def _first_start(path: Path) -> _Data | None:
    for line in read_head(path).split(b"\n")[:50]:
        if b'"session.start"' not in line:
            continue
        try:
            event = _START.decode(line)
        except DECODE_ERRORS:
            continue
        if event.type == "session.start":
            return event.data
    return None


class _EventReader(LineStateReader):
    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(path, info, diag)
        self.text: list[str] = []
        self.text_id: str | None = None
        self.text_ts: str | None = None

    def events(self, stream: BinaryIO | None = None) -> Iterator[Event]:
        """The log's events; the reply still being assembled stays buffered until the
        next event or `close`."""
        reader = LineReader(self.path, self.diag)
        for offset, line in reader.forward(stream):
            try:  # the common line decodes at once, in one go
                event: _DecodedEvent | None = _DECODED_EVENT.decode(line)
            except DECODE_ERRORS:
                event = None
            if event is not None and event.type != "session.error":
                found = self._event(event)
            else:  # a payload of another shape, bad bytes, a torn line, an error
                found = self._by_parts(line, offset, reader.tail_offset)
            if found:
                yield from found

    def _by_parts(self, line: bytes, offset: int, tail: int) -> tuple[Event, ...]:
        """A line the one-go decode refused: the envelope first (`decode_line` mends or
        counts it), then the payload only for an event passdown reads."""
        event = decode_line(_EVENT, line, offset, tail, self.diag)
        if not isinstance(event, _Event):
            return ()
        kind, ts = event.type, event.timestamp
        if kind == "session.error" and not event.agentId:
            if ts:
                self.info.updated_at = ts
            # the answer before the error comes first
            return (*self._flush(), *_session_error(event.data, ts))
        data = None
        if kind in _HANDLED:
            data = self._data(event.data)
            if data is None:
                return ()  # counted as a bad line
        return self._event(_DecodedEvent(kind, ts, event.agentId, data))

    def close(self) -> Iterator[Event]:
        """The end of the log: the buffered reply, then the plan from session.db."""
        from passdown.agents._copilot_side import todo_plan

        yield from self._flush()
        plan = todo_plan(self.path.parent / "session.db", self.diag)
        if plan is not None:
            yield plan

    def state(self) -> dict[str, object]:
        return {
            "calls": [msgspec.to_builtins(call) for call in self.calls.values()],
            "text": list(self.text),
            "text_id": self.text_id,
            "text_ts": self.text_ts,
        }

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        """Continue from `state`; a call extraction still waits for is that same object
        (its result may add the paths Copilot recorded as edited)."""
        calls = state.get("calls")
        for value in calls if isinstance(calls, list) else ():
            call = msgspec.convert(value, ToolCall)
            self.calls[call.call_id] = pending.get(call.call_id, call)
        self.text = state_strs(state, "text")
        self.text_id = state_str(state, "text_id")
        self.text_ts = state_str(state, "text_ts")

    # `_event` returns what a line says as a tuple (usually empty) rather than being a
    # generator: one generator per line cost more than the rest of most lines (as Codex's)
    def _event(self, event: _DecodedEvent) -> tuple[Event, ...]:
        kind, ts = event.type, event.timestamp
        if ts:
            self.info.updated_at = ts
        if kind not in _HANDLED:
            if not kind.startswith(_QUIET_PREFIXES):
                self.diag.unknown(kind or "(no type)")
            return ()
        data = event.data
        if data is None:  # an event passdown reads, without its payload
            self.diag.bad_lines += 1
            return ()
        if kind == "subagent.started":
            note = SubagentNote(
                agent_id=data.toolCallId or data.agentName or "subagent",
                description=data.agentDescription or data.agentName,
            )
            return (note,)
        if event.agentId or data.parentToolCallId:
            self.diag.sidechain_records += 1  # a sub-agent's own events
            return ()
        if kind in ("session.start", "session.resume"):
            self._session(data)
        elif kind == "user.message":
            return (*self._flush(), *self._user(data, ts))
        elif kind == "assistant.message":
            return tuple(self._assistant(data, ts))
        elif kind == "tool.execution_start":
            return tuple(self._start(data, ts))
        elif kind == "tool.execution_complete":
            result = self._complete(data, ts)
            return (result,) if result is not None else ()
        elif kind == "session.compaction_complete":
            return tuple(self._compaction(data, ts))
        elif kind == "session.model_change":
            self.info.add_model(data.newModel)
        elif kind == "session.title_changed" and data.title:
            self.info.title = data.title
        return ()

    def _data(self, raw: msgspec.Raw) -> _Data | None:
        try:
            return _DATA.decode(raw)
        except DECODE_ERRORS:
            pass
        try:  # non-UTF-8 bytes inside the payload: keep what can be read
            return _DATA.decode(bytes(raw).decode("utf-8", "replace").encode("utf-8"))
        except DECODE_ERRORS:
            self.diag.bad_lines += 1
            return None

    def _session(self, data: _Data) -> None:
        info = self.info
        info.session_id = data.sessionId or info.session_id
        info.agent_version = data.copilotVersion or info.agent_version
        info.started_at = info.started_at or data.startTime
        if data.context:
            info.cwd = info.cwd or data.context.cwd
            info.git_branch = data.context.branch or info.git_branch
        info.add_model(data.selectedModel)

    def _user(self, data: _Data, ts: str | None) -> Iterator[Event]:
        text = (data.content or "").strip()
        if not text:
            return
        synthetic = data.isAutopilotContinuation or (data.source or "user") not in ("user", "")
        yield Message(role="user", text=text, timestamp=ts, synthetic=synthetic)

    def _assistant(self, data: _Data, ts: str | None) -> Iterator[Event]:
        self.info.add_model(data.model)
        if data.messageId != self.text_id:
            yield from self._flush()
            self.text_id = data.messageId
        text = (data.content or "").strip()
        if text:  # one reply can arrive in chunks sharing a messageId
            self.text.append(text)
            self.text_ts = self.text_ts or ts
        for request in data.toolRequests or ():
            if request.toolCallId and request.toolCallId not in self.calls:
                call = _tool_call(request.toolCallId, request.name, request.arguments, ts)
                self.calls[call.call_id] = call
                yield call

    def _flush(self) -> Iterator[Event]:
        if self.text:
            yield Message(role="assistant", text="\n\n".join(self.text), timestamp=self.text_ts)
        self.text, self.text_id, self.text_ts = [], None, None

    def _start(self, data: _Data, ts: str | None) -> Iterator[Event]:
        # Normally announced by assistant.message already; older logs may only have this.
        call_id = data.toolCallId
        if call_id and call_id not in self.calls:
            call = _tool_call(call_id, data.toolName or "", data.arguments, ts)
            self.calls[call_id] = call
            yield call

    def _complete(self, data: _Data, ts: str | None) -> ToolResult | None:
        call_id = data.toolCallId or ""
        call = self.calls.pop(call_id, None)
        if call is None:
            return None
        output = data.result.content if data.result else None
        result = ToolResult(call_id=call_id, is_error=data.success is False, timestamp=ts)
        if call.action == "command":
            shell = data.shellExecution
            result.exit_code = shell.exitCode if shell else (None if result.is_error else 0)
            output = _without_shell_marker(output or "")
        if result.is_error or result.exit_code not in (None, 0):
            error = data.error.message if isinstance(data.error, _Error) else data.error
            text = "\n".join(t for t in (error, output) if t)
            result.error = first_error_line(text) or text.strip()[:300] or None
        elif call.action in ("edit", "write") and data.fileEdits:
            # What Copilot itself recorded as changed is the authoritative list.
            call.paths = tuple(dict.fromkeys(e.path for e in data.fileEdits if e.path))
        return result

    def _compaction(self, data: _Data, ts: str | None) -> Iterator[Event]:
        if data.success is False:
            return
        yield from self._flush()
        trigger = _raw_string(data.trigger)
        yield Compaction(summary=data.summaryContent or None, trigger=trigger, timestamp=ts)


class _SessionError(msgspec.Struct):
    errorType: msgspec.Raw = _NULL
    message: msgspec.Raw = _NULL
    statusCode: msgspec.Raw = _NULL


_SESSION_ERROR = LazyDecoder(_SessionError)


def _session_error(raw: msgspec.Raw, timestamp: str | None) -> Iterator[Event]:
    """1.0.102 ends a turn whose retries ran out with `session.error {errorType:
    "rate_limit", message: "Failed to get response from the AI model; retried 5 times
    ... Last error: 429 ...", statusCode}`."""
    try:
        data = _SESSION_ERROR.decode(raw)
        kind, message, status = (
            _ANY.decode(data.errorType),
            _ANY.decode(data.message),
            _ANY.decode(data.statusCode),
        )
    except DECODE_ERRORS:
        return
    yield api_error_ending(
        message if isinstance(message, str) else None,
        status=status if isinstance(status, int) else None,
        kind=kind if isinstance(kind, str) else None,
        timestamp=timestamp,
    )


def _without_shell_marker(output: str) -> str:
    """The output without the `<shellId: N>` line Copilot appends. Searched for in the
    tail only: over the whole text the pattern costs quadratic time on an output full of
    unclosed `<shellId: ` (20,000 of them took 3 s)."""
    cut = max(len(output) - 512, 0)
    return output[:cut] + _SHELL_MARKER.sub("", output[cut:])


def _tool_call(call_id: str, name: str, raw_args: msgspec.Raw, ts: str | None) -> ToolCall:
    call = ToolCall(call_id=call_id, name=name, timestamp=ts)
    args = _decode_args(raw_args)
    if name in _EDIT_TOOLS:
        call.action = _EDIT_TOOLS[name]  # type: ignore[assignment]
        target = args.path or args.file_path
        call.paths = (target,) if target else ()
    elif name == "str_replace_editor":  # older builds: one tool, a `command` argument
        target = args.path or args.file_path
        action = {"create": "write", "str_replace": "edit", "insert": "edit"}.get(
            args.command or ""
        )
        if action:
            call.action = action  # type: ignore[assignment]
            call.paths = (target,) if target else ()
        else:
            call.action = "read"
    elif name in _SHELL_TOOLS:
        call.action = "command"
        call.command = args.command or ""
    elif name in _SUBAGENT_TOOLS:
        call.action = "subagent"
    elif name in _READ_TOOLS:
        call.action = "read"
    return call


def _decode_args(raw: msgspec.Raw) -> _Args:
    if len(raw) == 0 or bytes(raw) == b"null":
        return _Args()
    args = decode_or_none(_ARGS, raw)
    return args if isinstance(args, _Args) else _Args()


def _raw_string(raw: msgspec.Raw) -> str | None:
    value = decode_or_none(_ANY, raw)
    return value if isinstance(value, str) else None


__all__ = ["CopilotCLI"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
CopilotCLI.integration = "passdown.integrations._copilot:CopilotHooks"  # type: ignore[attr-defined]
