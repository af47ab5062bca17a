"""OpenHands CLI (PyPI `openhands` 1.16, SDK 1.21, Python 3.12): conversations under
`~/.openhands/conversations/<id without dashes>/` on Linux, macOS and Windows alike
(`%USERPROFILE%\\.openhands` there: the CLI expands `~/.openhands`).
`OPENHANDS_CONVERSATIONS_DIR` replaces the `conversations` folder,
`OPENHANDS_PERSISTENCE_DIR` the `.openhands` folder.

A conversation folder holds:
- `base_state.json`: `{id, agent{llm{model}}, workspace{working_dir}, execution_status:
  idle|running|paused|finished|error|stuck, ...}`, rewritten as the state changes: the
  session's reference file (its mtime is the session's).
- `events/event-<5-digit seq>-<uuid>.json`, one JSON file per event, in sequence order:
  `MessageEvent {source: user|agent, llm_message{content[{type: text, text}]}}`,
  `ActionEvent {thought[{text}], tool_name, tool_call_id, tool_call{arguments}, action}`,
  `ObservationEvent {tool_call_id, observation{is_error, exit_code, content[{text}]}}`,
  `AgentErrorEvent {tool_call_id, error}` (a tool call that failed validation),
  `ConversationErrorEvent {code, detail}` (the run stopped on an error: an LLM request
  that failed after LiteLLM's retries), `Condensation` / `CondensationSummaryEvent`
  (compaction), `HookExecutionEvent` and `SystemPromptEvent` (not exported). Timestamps
  are ISO without a zone.
- `TASKS.json`: the plan as it stands, `[{title, notes, status: todo|in_progress|done}]`.

Events are separate files, so there is no one file that grows: no incremental export.
The plan tool is `task_tracker {command: view|plan, task_list}` (the whole list each
time); a command is `terminal {command}` whose observation carries `exit_code` (a failed
command is not `is_error`); files are written by `file_editor {command: create|str_replace|
insert|undo_edit|view, path}`; the turn ends with `finish {message}`, the final answer.
A 429 LiteLLM retried leaves nothing; one that outlived the retries is a
`ConversationErrorEvent` and `execution_status: "error"`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from passdown._jsonl import read_side_file
from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    decode_or_none,
    file_mtime,
    first_error_line,
    is_dir,
    list_folder,
    parse_exit_code,
)
from passdown.agents._document import decode_side_file
from passdown.agents._endings import api_error_ending
from passdown.agents._prompt_file import is_long, write_prompt_file
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
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
    Transcript,
)

_STATE = "base_state.json"
_EVENT_FILE = lazy_compile(r"event-(\d{1,12})-[0-9A-Za-z-]{1,64}\.json")
MAX_EVENT_BYTES = 16 * 1024 * 1024  # one event; a larger one is skipped and counted
_FILE_COMMANDS: dict[str, ToolAction] = {
    "create": "write",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
}
_STATUS: dict[str, PlanStatus] = {
    "todo": "pending",
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
    "completed": "completed",
}
# Events passdown knows and deliberately does not export.
_QUIET = frozenset(
    {
        "SystemPromptEvent",
        "HookExecutionEvent",
        "ConversationStateUpdateEvent",
        "LLMCompletionLogEvent",
        "TokenEvent",
        "StreamingDeltaEvent",
        "ACPToolCallEvent",
        "CondensationRequest",
    }
)


class _Workspace(msgspec.Struct):
    working_dir: str | None = None


class _LLM(msgspec.Struct):
    model: str | None = None


class _AgentSpec(msgspec.Struct):
    llm: _LLM | None = None


class _BaseState(msgspec.Struct):
    id: str | None = None
    agent: _AgentSpec | None = None
    workspace: _Workspace | None = None
    execution_status: str | None = None


class _Text(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _LLMMessage(msgspec.Struct):
    role: str = ""
    content: list[_Text] | str | None = None


class _ToolCallSpec(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _Observation(msgspec.Struct):
    kind: str | None = None
    is_error: bool = False
    exit_code: int | None = None
    content: list[_Text] | str | None = None


class _Event(msgspec.Struct):
    kind: str = ""
    timestamp: str | None = None
    source: str | None = None
    llm_message: _LLMMessage | None = None
    thought: list[_Text] | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_call: _ToolCallSpec | None = None
    observation: _Observation | None = None
    error: str | None = None
    code: str | None = None
    detail: str | None = None
    summary: str | None = None


class _Args(msgspec.Struct):
    """The arguments that say what a call did; a written file's content is skipped."""

    command: object = None
    path: object = None
    task_list: object = None
    message: object = None
    description: object = None
    prompt: object = None


class _Task(msgspec.Struct):
    title: str | None = None
    notes: str | None = None
    status: str | None = None


_BASE_STATE = LazyDecoder(_BaseState)
_EVENT = LazyDecoder(_Event)
_ARGS = LazyDecoder(_Args)
_TASKS = LazyDecoder(list[_Task])


class OpenHandsCLI(Agent):
    name = "openhands"
    display_name = "OpenHands CLI"
    program = "openhands"
    store_env = ("OPENHANDS_CONVERSATIONS_DIR", "OPENHANDS_PERSISTENCE_DIR")

    def persistence_dir(self) -> Path:
        configured = os.environ.get("OPENHANDS_PERSISTENCE_DIR")
        return Path(configured).expanduser() if configured else Path.home() / ".openhands"

    def conversations_dir(self) -> Path:
        configured = os.environ.get("OPENHANDS_CONVERSATIONS_DIR")
        if configured:
            return Path(configured).expanduser()
        return self.persistence_dir() / "conversations"

    def store_roots(self) -> list[Path]:
        return [self.conversations_dir()]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for folder in list_folder(self.conversations_dir()):
            if not is_dir(folder):
                continue
            ref = self._ref(folder)
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        folder = path.parent.parent if path.parent.name == "events" else path.parent
        return self._ref(folder)

    def _ref(self, folder: Path) -> SessionRef:
        state = _base_state(folder)
        path = folder / _STATE
        mtime, size = file_mtime(path)
        workspace = state.workspace
        return SessionRef(
            agent=self.name,
            session_id=folder.name,
            path=path,
            cwd=workspace.working_dir if workspace else None,
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: _events(ref.path.parent, info, diag))

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # `-t TASK` seeds the TUI with the task; `--headless` runs it unattended (it
        # needs the model from the CLI's own settings). "--task=" keeps a prompt that
        # starts with "-" attached to its option; a long one goes in a file (`--file`).
        if is_long(prompt):
            argv = [self.program, "--file", str(write_prompt_file(prompt, workspace, self.name))]
        else:
            argv = [self.program, f"--task={prompt}"]
        if not interactive:
            argv.insert(1, "--headless")
        return LaunchSpec(argv=argv, cwd=workspace, env={"OPENHANDS_SUPPRESS_BANNER": "1"})


def _base_state(folder: Path) -> _BaseState:
    return decode_side_file(folder / _STATE, _BASE_STATE) or _BaseState()


def event_files(folder: Path) -> list[Path]:
    """The conversation's event files in sequence order (other names are not events)."""
    return [folder / "events" / name for name in _event_names(folder)]


def _event_names(folder: Path) -> Iterator[str]:
    """The event files' names in sequence order, kept packed (a long conversation has
    hundreds of thousands of files)."""
    from passdown.agents._numbered_files import numbered_names  # to list one session's

    return numbered_names(folder / "events", _EVENT_FILE)


def _events(folder: Path, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
    state = _base_state(folder)
    if state.workspace is not None:
        info.cwd = state.workspace.working_dir or info.cwd
    if state.agent is not None and state.agent.llm is not None:
        info.add_model(state.agent.llm.model)
    reader = _EventReader(info, diag)
    events = folder / "events"
    for name in _event_names(folder):
        yield from reader.file(events / name)
    yield from reader.close()
    plan = _tasks(folder)
    if plan is not None:
        yield plan
    if (state.execution_status or "") == "error" and not reader.failed:
        yield SessionEnding(reason="error", message="the OpenHands conversation ended on an error")


def _tasks(folder: Path) -> PlanOp | None:
    tasks = decode_side_file(folder / "TASKS.json", _TASKS)
    if tasks is None:
        return None
    return PlanOp(op="replace", items=_plan_items(tasks))


class _EventReader:
    """Turns one event file at a time into events."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.calls: dict[str, ToolCall] = {}
        self.failed = False  # the last event was a conversation error
        # a plan call waits for the next event: a call OpenHands refused (a missing
        # argument: AgentErrorEvent) changed no plan
        self.held: ToolCall | None = None

    def close(self) -> Iterator[Event]:
        held, self.held = self.held, None
        if held is not None:
            yield held

    def file(self, path: Path) -> Iterator[Event]:
        self.diag.lines += 1
        data = read_side_file(path, MAX_EVENT_BYTES)
        event = decode_or_none(_EVENT, data) if data is not None else None
        if not isinstance(event, _Event):
            if data is None and file_mtime(path)[1] > MAX_EVENT_BYTES:
                self.diag.oversized_lines += 1
            else:
                self.diag.bad_lines += 1
            return
        stamp = event.timestamp
        if stamp:
            self.info.started_at = self.info.started_at or stamp
            self.info.updated_at = stamp
        yield from self._event(event, stamp)

    def _event(self, event: _Event, stamp: str | None) -> Iterator[Event]:
        kind = event.kind
        if kind in _QUIET:
            return
        held, self.held = self.held, None
        if held is not None:
            if kind == "AgentErrorEvent" and event.tool_call_id == held.call_id:
                held.action, held.plan = "other", None  # refused before it ran: no plan
            yield held
        self.failed = False
        if kind == "MessageEvent":
            message = event.llm_message or _LLMMessage()
            text = _text(message.content)
            if text:
                yield Message(
                    role="user" if event.source == "user" else "assistant",
                    text=text,
                    timestamp=stamp,
                )
        elif kind == "ActionEvent":
            thought = _text(event.thought)
            if thought:
                yield Message(role="assistant", text=thought, timestamp=stamp)
            yield from self._action(event, stamp)
        elif kind in ("ObservationEvent", "UserRejectObservation"):
            yield self._observation(event, stamp)
        elif kind == "AgentErrorEvent":
            self.calls.pop(event.tool_call_id or "", None)
            error = first_error_line(event.error) or "the tool call failed"
            yield ToolResult(
                call_id=event.tool_call_id or "", is_error=True, error=error, timestamp=stamp
            )
        elif kind == "ConversationErrorEvent":
            self.failed = True
            detail = event.detail or event.code or "the conversation stopped on an error"
            yield api_error_ending(detail, kind=event.code, timestamp=stamp)
        elif kind in ("Condensation", "CondensationSummaryEvent"):
            yield Compaction(summary=event.summary, trigger="auto", timestamp=stamp)
        elif kind == "PauseEvent":
            yield SessionEnding(reason="interrupted", message="paused by the user", timestamp=stamp)
        else:
            self.diag.unknown(kind or "(no kind)")

    def _action(self, event: _Event, stamp: str | None) -> Iterator[Event]:
        spec = event.tool_call or _ToolCallSpec()
        name = event.tool_name or spec.name or ""
        call = ToolCall(call_id=event.tool_call_id or "", name=name, timestamp=stamp)
        decoded = decode_or_none(_ARGS, spec.arguments or "{}")
        args = decoded if isinstance(decoded, _Args) else _Args()
        command = args.command if isinstance(args.command, str) else ""
        if name == "file_editor":
            call.action = _FILE_COMMANDS.get(command, "read")
            path = args.path if isinstance(args.path, str) and args.path else None
            call.paths = (path,) if path and call.action != "read" else ()
        elif name in ("terminal", "execute_bash", "bash"):
            call.action, call.command = "command", command
        elif name == "task_tracker":
            tasks = _task_list(args.task_list)
            if command == "plan" and tasks is not None:
                call.action = "plan"
                call.plan = PlanOp(op="replace", items=_plan_items(tasks))
            else:
                call.action = "read"  # a view of the current list
        elif name in ("task", "delegate"):
            call.action = "subagent"
            about = args.description if isinstance(args.description, str) else None
            yield SubagentNote(agent_id=call.call_id, description=about)
        elif name == "finish":
            message = args.message if isinstance(args.message, str) else ""
            if message.strip():
                yield Message(role="assistant", text=message.strip(), timestamp=stamp)
        elif name == "think":
            call.action = "read"
        self.calls[call.call_id] = call
        if call.action == "plan":
            self.held = call
        else:
            yield call

    def _observation(self, event: _Event, stamp: str | None) -> ToolResult:
        seen = event.observation or _Observation()
        call = self.calls.pop(event.tool_call_id or "", None)
        text = _text(seen.content)
        code = seen.exit_code
        if call is not None and call.action == "command" and code is None:
            code = parse_exit_code(text)
        failed = seen.is_error or bool(code) or event.kind == "UserRejectObservation"
        result = ToolResult(
            call_id=event.tool_call_id or "", is_error=failed, exit_code=code, timestamp=stamp
        )
        if failed:
            result.error = first_error_line(text) or "the tool call failed"
        return result


def _text(content: list[_Text] | str | None) -> str:
    if isinstance(content, str):
        return content.strip()
    parts = [p.text for p in content or [] if p.type in ("text", "") and p.text]
    return "\n".join(parts).strip()


def _task_list(value: object) -> list[_Task] | None:
    if not isinstance(value, list):
        return None
    decoded = decode_or_none(_TASKS, msgspec.json.encode(value))
    return decoded if isinstance(decoded, list) else None


def _plan_items(tasks: list[_Task]) -> tuple[PlanItem, ...]:
    items = []
    for n, task in enumerate(tasks, start=1):
        status = _STATUS.get((task.status or "").lower(), "pending")
        items.append(
            PlanItem(
                id=str(n), subject=task.title or "", status=status, description=task.notes or None
            )
        )
    return tuple(items)


__all__ = ["OpenHandsCLI", "event_files"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
OpenHandsCLI.integration = "passdown.integrations._openhands:OpenHandsHooks"  # type: ignore[attr-defined]
