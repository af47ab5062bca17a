"""Codex CLI: rollouts under `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Sessions are sharded by date, not by project, so the workspace is matched through the
first record's `cwd`. The history is linear (a resumed session appends to the same
file), so one forward pass suffices. Traps handled here: the user's prompt is written
several times (response item, event, item_completed), user-role items also carry
injected context, and edits made through shell commands leave no patch record (the
pipeline adds those from git).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import msgspec

from passdown._jsonl import LineReader, open_binary
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._codex_tools import (
    command_text,
    embedded_patch,
    output_exit_code,
    output_text,
    patch_action,
    patch_failed,
    patch_from_args,
    patch_paths,
    plan_items,
    strip_exec_header,
)
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    env_path,
    file_mtime,
    first_error_line,
    list_folder,
)
from passdown.agents._endings import api_error_ending
from passdown.agents._record_fields import not_within
from passdown.agents._resumable import LineSessionAgent, LineStateReader, state_str
from passdown.agents.base import LaunchSpec, candidate_of
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
    ToolCall,
    ToolResult,
)

_ROLLOUT_ID = lazy_compile(
    r"rollout-.*?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<permissions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
    "# AGENTS.md",
    "<app-context>",
    "<collaboration_mode>",
)
_KNOWN_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)
_BARE_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
_GOAL_STATUS = {
    "complete": "completed",
    "completed": "completed",
    "blocked": "blocked",
    "paused": "pending",
    "active": "in_progress",
}
_SHELL_TOOLS = frozenset(
    {"exec_command", "shell", "container.exec", "shell_command", "local_shell"}
)
_READ_TOOLS = frozenset({"read_file", "list_dir", "grep_files", "view_image", "web_search"})
_FIRST_LINE_LIMIT = 16 * 1024 * 1024


class _Line(msgspec.Struct):
    type: str = ""
    timestamp: str | None = None
    payload: msgspec.Raw = msgspec.Raw(b"null")


class _Content(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Payload(msgspec.Struct):
    """The union of the payload fields passdown reads; everything else is skipped."""

    type: str = ""
    # session_meta
    id: str | None = None
    cwd: str | None = None
    cli_version: str | None = None
    timestamp: str | None = None
    # turn_context
    model: str | None = None
    # response_item: message / function calls
    role: str | None = None
    content: list[_Content] | None = None
    name: str | None = None
    arguments: str | None = None
    input: str | None = None
    call_id: str | None = None
    output: msgspec.Raw = msgspec.Raw(b"null")
    action: dict[str, object] | None = None
    status: str | None = None
    # compacted
    message: str | None = None
    # event_msg
    exit_code: int | None = None
    success: bool | None = None
    # task_complete {error: {message, codex_error_info}}, turn_aborted {reason}; raw, so
    # an unexpected shape in some build never makes the whole line unreadable
    error: msgspec.Raw = msgspec.Raw(b"null")
    reason: msgspec.Raw = msgspec.Raw(b"null")


_LINE = LazyDecoder(_Line)
_PAYLOAD = LazyDecoder(_Payload)


class _TypedLine(msgspec.Struct):
    type: str = ""
    timestamp: str | None = None
    payload: _Payload | None = None


_TYPED_LINE = LazyDecoder(_TypedLine)
_ANY = LazyDecoder()


class CodexCLI(LineSessionAgent):
    name = "codex"
    display_name = "Codex CLI"
    program = "codex"
    store_env = ("CODEX_HOME",)

    def home(self) -> Path:
        return env_path("CODEX_HOME", Path.home() / ".codex")

    def store_roots(self) -> list[Path]:
        return [self.home() / "sessions", self.home() / "archived_sessions"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for path in self._rollouts():
            ref = self.ref_for_path(path)
            if candidate_of(ref, workspace):  # no folder per workspace: unplaced is anyone's
                yield ref

    def _rollouts(self) -> Iterator[Path]:
        for root in self.store_roots():
            if not list_folder(root):  # missing or empty; an unreadable store raises (exit 5)
                continue
            try:
                candidates = list(root.rglob("rollout-*.jsonl*"))
            except OSError:
                continue
            plain = {p.name for p in candidates if p.name.endswith(".jsonl")}
            for path in candidates:
                name = path.name
                if name.endswith(".jsonl") or (
                    name.endswith(".jsonl.zst") and name[:-4] not in plain
                ):
                    yield path

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        meta, cut = _session_meta(path)
        match = _ROLLOUT_ID.search(path.name)
        session_id = (meta.id if meta else None) or (match.group(1) if match else path.name)
        return SessionRef(
            agent=self.name,
            session_id=session_id,
            path=path,
            cwd=meta.cwd if meta else None,
            started_at=(meta.timestamp if meta else None),
            updated_at=mtime,
            size=size,
            unplaced=not_within(_FIRST_LINE_LIMIT) if cut and meta is None else None,
        )

    # -- reading ------------------------------------------------------------------
    def line_reader(self) -> type[LineStateReader]:
        return _RolloutReader

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--" ends the options, so a prompt starting with "-" is still the prompt.
        if interactive:
            return LaunchSpec(argv=[self.program, "--", prompt], cwd=workspace)
        # exec runs once; the workspace-write sandbox lets the takeover edit the workspace.
        argv = [self.program, "exec", "--sandbox", "workspace-write"]
        if not (workspace / ".git").exists():
            argv.append("--skip-git-repo-check")
        return LaunchSpec(argv=[*argv, "--", prompt], cwd=workspace)


def _session_meta(path: Path) -> tuple[_Payload | None, bool]:
    """The first record (session_meta, or a legacy bare header) without reading on, and
    whether that record ran past `_FIRST_LINE_LIMIT` (then it is not read)."""
    line, cut = _first_line(path)
    if not line or cut:
        return None, cut
    try:
        first = _LINE.decode(line)
        if first.type == "session_meta":
            return _PAYLOAD.decode(first.payload), False
        legacy = _PAYLOAD.decode(line)  # early 2025: a bare {id, timestamp, ...} header
        return (legacy if legacy.id else None), False
    except DECODE_ERRORS:
        return None, False


def _first_line(path: Path) -> tuple[bytes, bool]:
    """Read up to the first newline (zstd streams have no readline), and whether the
    line went on past `_FIRST_LINE_LIMIT`."""
    pieces: list[bytes] = []
    size = 0
    try:
        with open_binary(path) as stream:
            while chunk := stream.read(64 * 1024):
                end = chunk.find(b"\n")
                if end >= 0:
                    pieces.append(chunk[:end])
                    break
                if size + len(chunk) > _FIRST_LINE_LIMIT:
                    return b"", True
                pieces.append(chunk)
                size += len(chunk)
    except Exception:
        return b"", False
    return b"".join(pieces), False


_NOTHING: tuple[Event, ...] = ()


class _RolloutReader(LineStateReader):
    """Nothing is buffered across lines: `close` has no events."""

    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics) -> None:
        super().__init__(path, info, diag)
        self.last_user_text: str | None = None
        # a `compacted` item was read and its `context_compacted` event not yet: the CLI
        # writes both for one compaction, which counts once
        self.compacted_pending = False

    def state(self) -> dict[str, object]:
        # a call waiting for its output is only ever asked its action
        return {
            "calls": {call_id: call.action for call_id, call in self.calls.items()},
            "last_user_text": self.last_user_text,
            "compacted_pending": self.compacted_pending,
        }

    def restore(self, state: Mapping[str, object], pending: dict[str, ToolCall]) -> None:
        calls = state.get("calls")
        if isinstance(calls, dict):
            self.calls = {
                str(call_id): ToolCall(call_id=str(call_id), name="", action=action)
                for call_id, action in calls.items()
            }
        self.last_user_text = state_str(state, "last_user_text")
        self.compacted_pending = state.get("compacted_pending") is True

    def events(self, stream: BinaryIO | None = None) -> Iterator[Event]:
        reader = LineReader(self.path, self.diag)
        for offset, line in reader.forward(stream):
            try:  # one decode for the common shape; anything unusual takes the slow path
                typed = _TYPED_LINE.decode(line)
            except DECODE_ERRORS:
                typed = None
            if typed is not None and typed.type in _KNOWN_TYPES:
                yield from self._line(typed.type, typed.timestamp, typed.payload, line)
                continue
            decoded = decode_line(_LINE, line, offset, reader.tail_offset, self.diag)
            if not isinstance(decoded, _Line):
                continue
            if decoded.type in _BARE_ITEM_TYPES:  # legacy files: items without an envelope
                payload = _payload(msgspec.Raw(line))
                if payload is not None:
                    yield from self._response_item(payload, decoded.timestamp)
                continue
            yield from self._line(decoded.type, decoded.timestamp, _payload(decoded.payload), line)

    # The handlers below return what a line says as a tuple (usually empty) rather than
    # being generators: one generator per line cost more than the rest of most lines.
    def _line(
        self, kind: str, timestamp: str | None, payload: _Payload | None, raw: bytes
    ) -> tuple[Event, ...]:
        if timestamp:
            self.info.updated_at = timestamp
        if kind not in _KNOWN_TYPES:
            if kind or b'"id"' not in raw:
                self.diag.unknown(kind or "(no type)")
            else:
                self._legacy_header(raw)
            return _NOTHING
        if kind in ("world_state", "token_usage_record"):
            return _NOTHING
        if payload is None:
            self.diag.bad_lines += 1
            return _NOTHING
        if kind == "response_item":
            return self._response_item(payload, timestamp)
        if kind == "event_msg":
            ending = self._event(payload, timestamp)
            return (ending,) if ending is not None else _NOTHING
        if kind == "session_meta":
            self._meta(payload)
        elif kind == "turn_context":
            self.info.add_model(payload.model)
            self.info.cwd = self.info.cwd or payload.cwd
            self.compacted_pending = False
        elif kind == "compacted":
            self.compacted_pending = True
            return (Compaction(summary=payload.message, trigger="auto", timestamp=timestamp),)
        return _NOTHING

    def _meta(self, meta: _Payload) -> None:
        info = self.info
        info.session_id = meta.id or info.session_id
        info.cwd = meta.cwd or info.cwd
        info.agent_version = meta.cli_version or info.agent_version
        info.started_at = info.started_at or meta.timestamp

    def _legacy_header(self, raw: bytes) -> None:
        try:
            self._meta(_PAYLOAD.decode(raw))
        except DECODE_ERRORS:
            self.diag.bad_lines += 1

    # response items ----------------------------------------------------------------
    def _response_item(self, item: _Payload, timestamp: str | None) -> tuple[Event, ...]:
        kind = item.type
        if kind == "message":
            message = self._message(item, timestamp)
            return (message,) if message is not None else _NOTHING
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call = self._tool_call(item, timestamp)
            if call is None:
                return _NOTHING
            self.last_user_text = None
            self.calls[call.call_id] = call
            return (call,)
        if kind in ("function_call_output", "custom_tool_call_output"):
            result = self._tool_result(item, timestamp)
            return (result,) if result is not None else _NOTHING
        # reasoning (hidden), web_search_call and unknown items are not exported
        return _NOTHING

    def _message(self, item: _Payload, timestamp: str | None) -> Message | None:
        if item.role not in ("user", "assistant"):
            return None  # developer/system instructions never cross the boundary
        texts = [
            c.text
            for c in item.content or ()
            if c.text and c.type in ("input_text", "output_text", "text")
        ]
        text = "\n\n".join(t.strip() for t in texts if t.strip())
        if not text:
            return None
        if item.role == "user":
            if text.lstrip().startswith(_INJECTED_PREFIXES):
                return None
            if text == self.last_user_text:
                return None  # the same prompt written again for the same turn
            self.last_user_text = text
        else:
            self.last_user_text = None
        return Message(role=item.role, text=text, timestamp=timestamp)  # type: ignore[arg-type]

    def _tool_call(self, item: _Payload, timestamp: str | None) -> ToolCall | None:
        call_id = item.call_id or item.id
        if not call_id:
            return None
        name = item.name or ("local_shell" if item.type == "local_shell_call" else "")
        call = ToolCall(call_id=call_id, name=name, timestamp=timestamp)
        args = _arguments(item)
        patch = item.input if item.type == "custom_tool_call" else patch_from_args(args)
        if name == "apply_patch" and patch:
            call.action = patch_action(patch)  # type: ignore[assignment]
            call.paths = tuple(patch_paths(patch))
        elif name in _SHELL_TOOLS:
            call.action = "command"
            call.command = command_text(args)
            embedded = embedded_patch(args)
            if embedded:
                call.action = patch_action(embedded)  # type: ignore[assignment]
                call.paths = tuple(patch_paths(embedded))
        elif name == "update_plan":
            call.action = "plan"
            call.plan = PlanOp(op="replace", items=plan_items(args.get("plan")))
        elif name == "create_goal" and isinstance(args.get("objective"), str) and args["objective"]:
            call.action = "plan"  # a thread goal: one plan item that lasts the session
            goal = PlanItem(id="goal", subject=f"Goal: {args['objective']}", status="in_progress")
            call.plan = PlanOp(op="create", items=(goal,))
        elif (
            name == "update_goal"
            and isinstance(args.get("status"), str)
            and args["status"] in _GOAL_STATUS
        ):
            call.action = "plan"
            status = _GOAL_STATUS[str(args["status"])]
            call.plan = PlanOp(op="update", item_id="goal", status=status)  # type: ignore[arg-type]
        elif name in _READ_TOOLS:
            call.action = "read"
        return call

    def _tool_result(self, item: _Payload, timestamp: str | None) -> ToolResult | None:
        call_id = item.call_id or ""
        call = self.calls.pop(call_id, None)
        if call is None:
            return None
        text = output_text(item.output)
        exit_code = output_exit_code(text)
        result = ToolResult(call_id=call_id, exit_code=exit_code, timestamp=timestamp)
        if call.action in ("edit", "write", "delete"):
            result.is_error = exit_code not in (None, 0) or patch_failed(text)
        elif call.action == "command":
            result.is_error = exit_code not in (None, 0)
        if result.is_error:
            result.error = first_error_line(strip_exec_header(text))
        return result

    # events ------------------------------------------------------------------------
    def _event(self, event: _Payload, timestamp: str | None) -> Compaction | SessionEnding | None:
        kind = event.type
        if kind == "context_compacted":
            if self.compacted_pending:  # the event of the compaction just counted
                self.compacted_pending = False
                return None
            return Compaction(summary=None, trigger="auto", timestamp=timestamp)
        if kind == "task_complete":
            return _turn_error(event.error, timestamp)
        if kind == "turn_aborted":
            if _raw_value(event.reason) in ("interrupted", None):
                return SessionEnding(
                    reason="interrupted", message="the turn was interrupted", timestamp=timestamp
                )
        elif kind in ("error", "stream_error") and event.message:
            # older builds' error event; a stream_error nothing follows (the CLI stopped
            # while reconnecting). A later answer or tool call makes either moot.
            return api_error_ending(event.message, timestamp=timestamp)
        # user_message / agent_message / item_completed repeat the response items.
        return None


def _raw_value(raw: msgspec.Raw) -> object:
    try:
        return _ANY.decode(raw)
    except DECODE_ERRORS:
        return None


def _turn_error(raw: msgspec.Raw, timestamp: str | None) -> SessionEnding | None:
    """0.171 ends a failed turn with `task_complete {error: {message, codex_error_info}}`;
    `codex_error_info` is a name ("usage_limit_exceeded", "context_window_exceeded",
    "internal_server_error") or `{variant: {http_status_code}}` (a 429 after the retries:
    `response_too_many_failed_attempts`; a 401 or 503: `http_connection_failed`)."""
    error = _raw_value(raw)
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    info = error.get("codex_error_info")
    kind: str | None = None
    status: int | None = None
    if isinstance(info, str):
        kind = info
    elif isinstance(info, dict) and info:
        kind, detail = next(iter(info.items()))
        code = detail.get("http_status_code") if isinstance(detail, dict) else None
        status = code if isinstance(code, int) else None
    if status is not None:
        kind = None  # "http_connection_failed 401": the status says more than the variant
    return api_error_ending(
        message if isinstance(message, str) else None,
        status=status,
        kind=kind,
        timestamp=timestamp,
    )


def _payload(raw: msgspec.Raw) -> _Payload | None:
    try:
        return _PAYLOAD.decode(raw)
    except DECODE_ERRORS:
        return None


def _arguments(item: _Payload) -> dict[str, object]:
    if item.action:
        return item.action
    if not item.arguments:
        return {}
    try:
        value = _ANY.decode(item.arguments)
    except DECODE_ERRORS:
        return {}
    return value if isinstance(value, dict) else {}


__all__ = ["CodexCLI"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
CodexCLI.integration = "passdown.integrations._codex:CodexHooks"  # type: ignore[attr-defined]
