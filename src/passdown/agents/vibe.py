"""Mistral Vibe (PyPI `mistral-vibe` 3.0, Python 3.12+): sessions in its content-addressed
"unified session store", `~/.vibe/logs/session/unified/<session uuid>/` on Linux, macOS
and Windows alike (`%USERPROFILE%\\.vibe` there: Vibe takes `Path.home()`); `VIBE_HOME`
replaces `~/.vibe`.

A session folder holds (store_format `mistral.vibe.unified-session-store/v1`):
- `CURRENT`: `{generation: "0000000000000093", manifest_sha256, session_id, ...}`, the
  newest generation; it is the session's reference file (its digest names the content).
- `generations/<N>/manifest.json`: `checkpoint.chunks`, the chunk files
  (`chunks/<sha256>.json`) that hold the model's context: a JSON array of
  `{message{role: user|assistant|tool, content[{type: text}|{type: tool_call, id, name,
  arguments{raw, value}}], name, outcome: success|failure, tool_call_id}, turn_index}`.
- `generations/<N>/checkpoint.json`: the last turn, `turn{outcome{type, ...}}`:
  `completed` (the agent's own answer), `interrupted {reason: "client interrupt"}`, or
  `failed {error{code: "model_unauthorized", message, details{httpStatus}}}` (a request
  Vibe does not retry).
- `meta.json`: `environment.working_directory` (the cwd), `start_time`, `end_time`,
  `title`, `config.model_name`.
- `journal/<seq>.jsonl`, a hash-chained recovery journal: not read.

Every turn writes a new generation and new chunks (the context is rewritten whole), so
there is no incremental export: the context chunks are read whole, up to
`MAX_CHUNK_BYTES` each, their array decoded as raw slices and each entry decoded as the
events are made. Neither the CLI version is written in the session.

The plan tool is `todo {action: write|read, todos[{id, content, status, priority}]}`
(the whole list each time). A failed `bash` is `outcome: "success"` with a result text
`{"command", "returncode": 2, "stderr", "stdout", ...}`: a non-zero returncode is a
failure. Vibe retries a 429 without end (3.0.3 made 500 attempts in 40 s): a retried 429
leaves nothing in the session, and a run stopped while retrying ends `interrupted`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from passdown._jsonl import LineReader
from passdown._lazy_re import lazy_compile
from passdown.agents._common import (
    TODO_STATUS,
    decode_line,
    decode_or_none,
    file_mtime,
    first_error_line,
    is_dir,
    list_folder,
    parse_exit_code,
)
from passdown.agents._document import decode_document, decode_side_file
from passdown.agents._endings import api_error_ending
from passdown.agents._prompt_file import is_long, write_prompt_file
from passdown.agents._vibe_shapes import (
    ARGS,
    CHECKPOINT,
    CHUNK,
    CURRENT_DOC,
    ENTRY,
    MANIFEST,
    META,
    RECORD,
    SHELL,
    TODOS,
    ActionOutcome,
    Args,
    Arguments,
    Content,
    ContextMessage,
    Entry,
    Error,
    ErrorDetails,
    Inner,
    Input,
    Meta,
    Payload,
    Record,
    ShellResult,
    Todo,
)
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

# A context chunk is one JSON document: it is held in memory once, up to this size.
MAX_CHUNK_BYTES = 256 * 1024 * 1024
_CURRENT = "CURRENT"
_SHA256 = lazy_compile(r"[0-9a-f]{64}")
_GENERATION = lazy_compile(r"[0-9]{1,20}")
_SEGMENT = lazy_compile(r"[0-9]{1,20}\.jsonl")
_EDIT_TOOLS: dict[str, ToolAction] = {"write_file": "write", "edit": "edit"}
_READ_TOOLS = frozenset({"read_file", "grep", "web_fetch", "web_search", "skill"})
_COMMAND_TOOLS = frozenset({"bash", "git_bash", "windows_shell", "experimental_bash"})
# records that end like this carry nothing a handoff needs (the key order is Vibe's: sorted)
_SKIPPED_RECORD = lazy_compile(
    rb'"type":"(?:action_intent|projection_delta|command_reserved|receipt_succeeded)"\}\s*$'
)
_ENDED_BADLY = {"cancelled": "interrupted", "interrupted": "interrupted", "aborted": "interrupted"}


class MistralVibe(Agent):
    name = "vibe"
    display_name = "Mistral Vibe"
    program = "vibe"
    store_env = ("VIBE_HOME",)

    def vibe_home(self) -> Path:
        configured = os.environ.get("VIBE_HOME")
        return Path(configured).expanduser() if configured else Path.home() / ".vibe"

    def store_roots(self) -> list[Path]:
        return [self.vibe_home() / "logs" / "session" / "unified"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for folder in list_folder(self.store_roots()[0]):
            if folder.name.startswith(".") or not is_dir(folder):
                continue  # .session-index.json: a catalogue, not a session
            meta = _meta(folder)
            if meta.parent_session_id:
                continue  # a sub-agent's session (the `task` tool): not the user's
            ref = self._ref(folder, meta)
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        folder = session_folder(path)
        return self._ref(folder, _meta(folder))

    def _ref(self, folder: Path, meta: Meta) -> SessionRef:
        current = folder / _CURRENT
        mtime, size = file_mtime(current)
        return SessionRef(
            agent=self.name,
            session_id=folder.name,
            path=current,
            cwd=_cwd(meta),
            started_at=meta.start_time,
            updated_at=mtime,
            size=size,
            title=meta.title,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: _events(ref.path.parent, info, diag))

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # `vibe -- PROMPT` opens the TUI on the prompt; `--prompt=PROMPT` runs it unattended
        # and exits. "--" and "=" keep a prompt that starts with "-" one argument. A prompt
        # too long for one argument goes in a file: `--prompt-file`, or for the TUI a
        # short prompt naming the file.
        path = write_prompt_file(prompt, workspace, self.name) if is_long(prompt) else None
        if interactive:
            text = f"Read {path} and follow it." if path is not None else prompt
            return LaunchSpec(argv=[self.program, "--", text], cwd=workspace)
        given = ["--prompt-file", str(path)] if path is not None else [f"--prompt={prompt}"]
        return LaunchSpec(argv=[self.program, "--auto-approve", *given], cwd=workspace)


def session_folder(path: Path) -> Path:
    """The session folder of any file in it (CURRENT, meta.json, a chunk, a manifest)."""
    folder = path.parent
    if folder.name in ("chunks", "journal"):
        return folder.parent
    if folder.parent.name == "generations":
        return folder.parent.parent
    return folder


def _meta(folder: Path) -> Meta:
    return decode_side_file(folder / "meta.json", META) or Meta()


def _cwd(meta: Meta) -> str | None:
    env = meta.environment
    return (env.working_directory if env else None) or meta.origin_directory


def _events(folder: Path, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
    meta = _meta(folder)
    info.cwd = _cwd(meta) or info.cwd
    info.started_at, info.updated_at = meta.start_time, meta.end_time
    info.title = meta.title or info.title
    if meta.config is not None:
        info.add_model(meta.config.model_name or meta.config.active_model)
    reader = _ContextReader(info, diag)
    generation, snapshot = _generation(folder, diag)
    if generation is not None:
        for chunk in _checkpoint_chunks(generation, diag):
            yield from reader.chunk(chunk)
        ending = _ending(generation / "checkpoint.json", meta.end_time)
        if ending is not None:
            yield ending
    # what happened since that snapshot (a turn still running: where a hook sees it)
    for segment in _journal_segments(folder, snapshot):
        yield from reader.journal(segment, snapshot)


def _generation(folder: Path, diag: Diagnostics) -> tuple[Path | None, int]:
    """The newest generation's folder (the one CURRENT names, else the highest number)
    and the last journal sequence it holds."""
    current = decode_side_file(folder / _CURRENT, CURRENT_DOC)
    name = str(current.generation) if current is not None else ""
    snapshot = current.snapshot_sequence if current is not None else None
    generations = folder / "generations"
    if _GENERATION.fullmatch(name) and is_dir(generations / name):
        return generations / name, snapshot if snapshot is not None else int(name)
    found = sorted(
        (p for p in list_folder(generations) if _GENERATION.fullmatch(p.name) and is_dir(p)),
        key=lambda p: int(p.name),
    )
    if not found:
        diag.warnings.append(f"{folder.name}: no readable generation in the session store")
        return None, 0
    diag.warnings.append(f"{folder.name}: CURRENT is unreadable; read generation {found[-1].name}")
    return found[-1], int(found[-1].name)


def _journal_segments(folder: Path, snapshot: int) -> list[Path]:
    """The journal files that may hold records after `snapshot`, oldest first: a segment
    is named by its first sequence, so the one starting at or before it and all later."""
    segments = sorted(
        (p for p in list_folder(folder / "journal") if _SEGMENT.fullmatch(p.name)),
        key=lambda p: int(p.name[:-6]),
    )
    first = [n for n, p in enumerate(segments) if int(p.name[:-6]) <= snapshot + 1]
    return segments[first[-1] if first else 0 :]


def _checkpoint_chunks(generation: Path, diag: Diagnostics) -> Iterator[Path]:
    manifest = decode_side_file(generation / "manifest.json", MANIFEST)
    part = manifest.checkpoint if manifest is not None else None
    if part is None:
        diag.warnings.append(f"generation {generation.name}: no readable manifest")
        return
    chunks = generation.parent.parent / "chunks"
    for digest in part.chunks:
        if _SHA256.fullmatch(digest):  # a content address, never a path
            yield chunks / f"{digest}.json"
        else:
            diag.bad_lines += 1


class _ContextReader:
    """Turns the context entries into events; remembers the calls awaiting a result."""

    def __init__(self, info: SessionInfo, diag: Diagnostics) -> None:
        self.info = info
        self.diag = diag
        self.calls: dict[str, ToolCall] = {}

    def chunk(self, path: Path) -> Iterator[Event]:
        entries = decode_document(
            path, CHUNK, MAX_CHUNK_BYTES, self.diag, shape="a JSON array", what="context chunk "
        )
        if entries is None:
            return
        for raw in entries:
            yield from self.entry(raw)

    def entry(self, raw: msgspec.Raw) -> Iterator[Event]:
        self.diag.lines += 1
        entry = decode_or_none(ENTRY, raw)
        if not isinstance(entry, Entry) or entry.message is None:
            self.diag.bad_lines += 1
            return
        msg = entry.message
        parts = (
            [Content(type="text", text=msg.content)]
            if isinstance(msg.content, str)
            else msg.content or []
        )
        if msg.role == "tool":
            yield self._result(msg, _texts(parts))
            return
        if msg.role not in ("user", "assistant"):
            if msg.role != "system":
                self.diag.unknown(f"role:{msg.role or '(none)'}")
            return
        texts: list[str] = []
        for part in parts:
            if part.type == "text" and part.text:
                texts.append(part.text)
            elif part.type == "tool_call":
                yield from _said(msg.role, texts)
                texts = []
                call = _tool_call(part)
                self.calls[call.call_id] = call
                yield call
            elif part.type not in ("image", "thinking", "reasoning"):
                self.diag.unknown(f"content:{part.type or '(no type)'}")
        yield from _said(msg.role, texts)

    def _result(self, msg: ContextMessage, text: str) -> ToolResult:
        failed = (msg.outcome or "success") != "success"
        structured = decode_or_none(SHELL, text) if text.startswith("{") else None
        return self._tool_result(msg.tool_call_id or "", failed, text, structured)

    def _tool_result(self, call_id: str, failed: bool, text: str, shell: object) -> ToolResult:
        call = self.calls.pop(call_id, None)
        result = ToolResult(call_id=call_id, is_error=failed)
        if call is not None and call.action == "command":
            if isinstance(shell, ShellResult) and shell.returncode is not None:
                # a command that ran and failed is a tool "success": its returncode says
                result.exit_code = shell.returncode
                result.is_error = failed = failed or shell.returncode != 0 or shell.timed_out
                if failed:
                    result.error = first_error_line(shell.stderr) or first_error_line(shell.stdout)
                return result
            result.exit_code = parse_exit_code(text)
        if failed:
            result.error = first_error_line(text)
        return result

    # -- the recovery journal: records not yet folded into a generation --------------
    def journal(self, path: Path, snapshot: int) -> Iterator[Event]:
        lines = LineReader(path, self.diag)
        for offset, line in lines.forward():
            if _SKIPPED_RECORD.search(line[-80:]):
                continue  # requests, projections, receipts: nothing a handoff needs
            record = decode_line(RECORD, line, offset, lines.tail_offset, self.diag)
            if not isinstance(record, Record) or record.sequence <= snapshot:
                continue
            payload = record.payload or Payload()
            if record.type == "core_input":
                yield from self._input(payload.input)
            elif record.type == "action_result" and payload.result is not None:
                yield from self._action(payload.result)

    def _input(self, value: Input | None) -> Iterator[Event]:
        command = value.command if value is not None else None
        if command is None:
            return
        if command.type == "user_message":
            yield from _said("user", [p.text for p in command.content or [] if p.text])
        elif command.type == "interrupt":
            why = f" ({command.reason})" if command.reason else ""
            yield SessionEnding(reason="interrupted", message=f"the Vibe turn was interrupted{why}")

    def _action(self, outcome: ActionOutcome) -> Iterator[Event]:
        inner = outcome.result or Inner()
        if outcome.type == "completion_succeeded":
            texts: list[str] = []
            for part in inner.parts or []:
                if part.type == "text" and part.text:
                    texts.append(part.text)
                elif part.type == "tool_call":
                    yield from _said("assistant", texts)
                    texts = []
                    raw = part.arguments_json or "{}"
                    call = _tool_call(
                        Content(
                            type="tool_call",
                            id=part.id,
                            name=part.name,
                            arguments=Arguments(raw=raw),
                        )
                    )
                    self.calls[call.call_id] = call
                    yield call
            yield from _said("assistant", texts)
        elif outcome.type == "completion_failed":
            error = outcome.error or Error()
            if error.code != "effect_recovery_failed":  # a cancelled request: the interrupt says
                details = error.details or ErrorDetails()
                message = error.message or error.code or "the model request failed"
                yield api_error_ending(message, status=details.httpStatus, kind=error.code)
        elif outcome.type.startswith("tool_") and outcome.call_id:
            text = _texts(inner.content or [])
            shell = inner.structured_content
            structured = (
                decode_or_none(SHELL, msgspec.json.encode(shell))
                if isinstance(shell, dict)
                else None
            )
            failed = outcome.type != "tool_succeeded" or (inner.type or "success") != "success"
            if not text and outcome.error is not None:
                text = outcome.error.message or ""
            yield self._tool_result(outcome.call_id, failed, text, structured)


def _said(role: str, texts: list[str]) -> Iterator[Message]:
    text = "\n".join(texts).strip()
    if text:
        yield Message(role="user" if role == "user" else "assistant", text=text)


def _texts(parts: list[Content]) -> str:
    return "\n".join(p.text for p in parts if p.type == "text" and p.text)


def _tool_call(part: Content) -> ToolCall:
    name = part.name or ""
    call = ToolCall(call_id=part.id or "", name=name)
    args = _arguments(part.arguments)
    if name in _EDIT_TOOLS:
        path = args.path if isinstance(args.path, str) and args.path else args.file_path
        call.action = _EDIT_TOOLS[name]
        call.paths = (path,) if isinstance(path, str) and path else ()
    elif name in _COMMAND_TOOLS:
        call.action = "command"
        call.command = args.command if isinstance(args.command, str) else ""
    elif name == "todo":
        todos = _todos(args.todos)
        if args.action == "write" and todos is not None:
            call.action = "plan"
            call.plan = PlanOp(op="replace", items=_plan_items(todos))
        else:
            call.action = "read"  # a read of the current list
    elif name == "task":
        call.action = "subagent"
    elif name in _READ_TOOLS:
        call.action = "read"
    return call


def _arguments(arguments: Arguments | None) -> Args:
    if arguments is None:
        return Args()
    if isinstance(arguments.value, dict):
        decoded = decode_or_none(ARGS, msgspec.json.encode(arguments.value))
    else:
        decoded = decode_or_none(ARGS, arguments.raw or "{}")
    return decoded if isinstance(decoded, Args) else Args()


def _todos(value: object) -> list[Todo] | None:
    if not isinstance(value, list):
        return None
    decoded = decode_or_none(TODOS, msgspec.json.encode(value))
    return decoded if isinstance(decoded, list) else None


def _plan_items(todos: list[Todo]) -> tuple[PlanItem, ...]:
    items = []
    for n, todo in enumerate(todos, start=1):
        status: PlanStatus = TODO_STATUS.get((todo.status or "").lower(), "pending")  # type: ignore[assignment]
        key = str(todo.id) if todo.id not in (None, "") else str(n)
        items.append(PlanItem(id=key, subject=todo.content or "", status=status))
    return tuple(items)


def _ending(path: Path, stamp: str | None) -> SessionEnding | None:
    """How the last turn ended, when not on the agent's own answer."""
    checkpoint = decode_side_file(path, CHECKPOINT)
    turn = checkpoint.turn if checkpoint is not None else None
    outcome = turn.outcome if turn is not None else None
    kind = (outcome.type or "") if outcome is not None else ""
    if outcome is None or kind in ("", "completed"):
        return None
    if kind in _ENDED_BADLY:
        why = f" ({outcome.reason})" if outcome.reason else ""
        message = f"the Vibe turn was {kind}{why}"
        return SessionEnding(reason="interrupted", message=message, timestamp=stamp)
    error = outcome.error or Error()
    details = error.details or ErrorDetails()
    return api_error_ending(
        error.message or error.code or f"the Vibe turn {kind}",
        status=details.httpStatus,
        kind=error.code,
        timestamp=stamp,
    )


__all__ = ["MistralVibe", "session_folder"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
MistralVibe.integration = "passdown.integrations._vibe:VibeHooks"  # type: ignore[attr-defined]
