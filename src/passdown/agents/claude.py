"""Claude Code: sessions under `$CLAUDE_CONFIG_DIR/projects/<encoded cwd>/<id>.jsonl`.

The conversation is a tree (uuid/parentUuid): rewinds and forks leave dead branches in
the file. Reading takes two streaming passes so memory stays flat however large the
file is: pass 1 walks the file *backwards* from the newest leaf, following parent links
(parents are always written before children), and keeps only the byte offsets of the
active branch; pass 2 reads forwards and decodes just those lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    env_path,
    file_mtime,
    first_error_line,
    is_dir,
    list_folder,
    parse_exit_code,
    read_head,
)
from passdown.agents._tree import Branch, LeafHint, Node, branch_lines, find_active_branch
from passdown.agents.base import Agent, LaunchSpec, cwd_in_workspace
from passdown.jsonl import read_side_file
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    PlanItem,
    PlanOp,
    SessionInfo,
    SessionRef,
    SubagentNote,
    ToolCall,
    ToolResult,
    Transcript,
)

# Records that belong to the conversation tree.
_CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
# Records we know and deliberately ignore (everything else is counted as unknown).
_KNOWN_OTHER = frozenset(
    {
        "summary",
        "last-prompt",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "custom-title",
        "ai-title",
        "agent-name",
        "tag",
        "pr-link",
        "mode",
        "worktree-state",
    }
)
_WRAPPER_TAGS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
)
_INTERRUPTED = re.compile(r"^\[Request interrupted by user.*\]$")
_EDIT_TOOLS = {"Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit", "Write": "write"}
_READ_TOOLS = frozenset(
    {"Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "TaskList", "TaskGet"}
)


_NULL = msgspec.Raw(b"null")


class _Envelope(msgspec.Struct):
    type: str = ""
    subtype: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    leafUuid: str | None = None
    isSidechain: bool = False
    summary: str | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    title: str | None = None


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: msgspec.Raw = _NULL
    tool_use_id: str | None = None
    content: msgspec.Raw = _NULL
    is_error: bool | None = None


class _Message(msgspec.Struct):
    role: str = ""
    content: str | list[_Block] | None = None
    model: str | None = None
    id: str | None = None


class _LooseMessage(msgspec.Struct):
    """For content of an unexpected shape: kept raw, decoded leniently."""

    role: str = ""
    content: msgspec.Raw = _NULL
    model: str | None = None
    id: str | None = None


class _Record(msgspec.Struct):
    type: str = ""
    subtype: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    version: str | None = None
    gitBranch: str | None = None
    sessionId: str | None = None
    message: _Message | None = None
    isMeta: bool = False
    isCompactSummary: bool = False
    toolUseResult: msgspec.Raw = _NULL
    compactMetadata: dict[str, object] | None = None


class _LooseRecord(_Record):
    message: _LooseMessage | None = None  # type: ignore[assignment]


class _ToolInput(msgspec.Struct):
    """The tool-call arguments passdown reads; file bodies and edit strings are skipped."""

    file_path: str | None = None
    notebook_path: str | None = None
    path: str | None = None
    command: str | None = None
    subject: str | None = None
    description: str | None = None
    activeForm: str | None = None
    taskId: str | int | None = None
    id: str | int | None = None
    status: str | None = None
    todos: list[dict[str, object]] | None = None


class _ToolOutcome(msgspec.Struct):
    """The parts of `toolUseResult` passdown reads (stdout and file bodies are skipped)."""

    exitCode: int | None = None
    returnCode: int | None = None
    interrupted: bool = False
    task: dict[str, object] | None = None
    taskId: str | int | None = None


class _Head(msgspec.Struct):
    cwd: str | None = None
    timestamp: str | None = None
    sessionId: str | None = None


class _TaskFile(msgspec.Struct):
    id: str | int = ""
    subject: str = ""
    description: str | None = None
    activeForm: str | None = None
    status: str = "pending"
    blockedBy: list[str | int] = []


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_RECORD = msgspec.json.Decoder(_Record)
_LOOSE_RECORD = msgspec.json.Decoder(_LooseRecord)
_HEAD = msgspec.json.Decoder(_Head)
_BLOCKS = msgspec.json.Decoder(str | list[_Block])
_INPUT = msgspec.json.Decoder(_ToolInput)
_OUTCOME = msgspec.json.Decoder(str | _ToolOutcome)
_TASK = msgspec.json.Decoder(_TaskFile)
_PLAN_STATUSES = {"pending", "in_progress", "completed", "deleted", "blocked", "cancelled"}


def encode_cwd(cwd: str) -> str:
    """Claude's folder name for a cwd: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class ClaudeCode(Agent):
    name = "claude"
    display_name = "Claude Code"
    program = "claude"

    def config_dir(self) -> Path:
        return env_path("CLAUDE_CONFIG_DIR", Path.home() / ".claude")

    def store_roots(self) -> list[Path]:
        return [self.config_dir() / "projects"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        projects = self.config_dir() / "projects"
        # an unreadable store raises: the Agent base class reports it (exit 5)
        folders = [p for p in list_folder(projects) if is_dir(p)]
        if workspace is not None:
            # The encoding is lossy: preselect by name, then confirm with the records' cwd.
            prefix = encode_cwd(str(workspace))
            folders = [f for f in folders if f.name == prefix or f.name.startswith(prefix + "-")]
        for folder in folders:
            for path in _session_files(folder):
                ref = self.ref_for_path(path)
                if cwd_in_workspace(ref.cwd, workspace):
                    yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        head = _read_head_fields(path)
        session_id = _strip_suffixes(path.name)
        return SessionRef(
            agent=self.name,
            session_id=session_id,
            path=path,
            cwd=head.cwd,
            started_at=head.timestamp,
            updated_at=mtime,
            size=size,
        )

    # -- reading ------------------------------------------------------------------
    def read(self, ref: SessionRef) -> Transcript:
        return self.stream(ref, lambda info, diag: self._events(ref, info, diag))

    def _events(self, ref: SessionRef, info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
        branch = find_active_branch(
            ref.path, diag, lambda o, line, t: _node(line, o, t, info, diag)
        )
        diag.lines = 0  # pass 2 counts again; report lines once
        yield from _ActiveReader(ref.path, info, diag, branch).events()
        yield from self._subagents(ref)
        plan = self._task_files(ref.session_id)
        if plan is not None:
            yield plan

    def _subagents(self, ref: SessionRef) -> Iterator[SubagentNote]:
        folder = ref.path.parent / ref.session_id / "subagents"
        try:
            files = sorted(folder.glob("agent-*.jsonl*"))
        except OSError:
            return
        for path in files:
            yield SubagentNote(
                agent_id=_strip_suffixes(path.name).removeprefix("agent-"), path=str(path)
            )

    def _task_files(self, session_id: str) -> PlanOp | None:
        """Claude keeps each task's final state in ~/.claude/tasks/<session>/<n>.json."""
        folder = self.config_dir() / "tasks" / session_id
        if not session_id or "/" in session_id or ".." in session_id:
            return None
        try:
            files = [p for p in folder.iterdir() if p.suffix == ".json"]
        except OSError:
            return None
        items: list[tuple[tuple[int, str], PlanItem]] = []
        for path in files:
            data = read_side_file(path)  # regular files only, size-bounded
            try:
                task = _TASK.decode(data) if data is not None else None
            except DECODE_ERRORS:
                continue
            if task is None:
                continue
            task_id = str(task.id or path.stem)
            status = task.status if task.status in _PLAN_STATUSES else "pending"
            item = PlanItem(
                id=task_id,
                subject=task.subject,
                status=status,  # type: ignore[arg-type]
                description=task.description,
                active_form=task.activeForm,
                blocked_by=tuple(str(b) for b in task.blockedBy),
            )
            items.append(((int(task_id) if task_id.isdigit() else 1 << 30, task_id), item))
        if not items:
            return None
        items.sort(key=lambda pair: pair[0])
        return PlanOp(op="replace", items=tuple(item for _, item in items))

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--" ends the options, so a prompt starting with "-" is still the prompt.
        if interactive:
            return LaunchSpec(argv=[self.program, "--", prompt], cwd=workspace)
        # -p runs once; acceptEdits lets the takeover edit files without a person there.
        argv = [self.program, "-p", "--permission-mode", "acceptEdits", "--", prompt]
        return LaunchSpec(argv=argv, cwd=workspace)


def _strip_suffixes(name: str) -> str:
    for suffix in (".zst", ".jsonl"):
        name = name.removesuffix(suffix)
    return name


def _session_files(folder: Path) -> list[Path]:
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    plain = {p.name for p in entries if p.name.endswith(".jsonl")}
    files = []
    for path in entries:
        name = path.name
        if name.startswith("agent-") or not path.is_file():
            continue  # older builds kept sub-agent transcripts beside sessions
        if name.endswith(".jsonl") or (name.endswith(".jsonl.zst") and name[:-4] not in plain):
            files.append(path)
    return files


def _read_head_fields(path: Path) -> _Head:
    """cwd and start time from the first records that carry them."""
    found = _Head()
    for line in read_head(path).split(b"\n")[:200]:
        if b'"cwd"' not in line and b'"timestamp"' not in line:
            continue
        try:
            head = _HEAD.decode(line)
        except DECODE_ERRORS:
            continue
        found.timestamp = found.timestamp or head.timestamp
        found.cwd = found.cwd or head.cwd
        if found.cwd and found.timestamp:
            break
    return found


def _node(
    line: bytes, offset: int, tail: int, info: SessionInfo, diag: Diagnostics
) -> Node | LeafHint | None:
    """Pass 1's view of a line: its place in the tree, a leaf hint, or nothing."""
    env = decode_line(_ENVELOPE, line, offset, tail, diag)
    if not isinstance(env, _Envelope):
        return None
    kind = env.type
    if kind not in _CHAIN_TYPES:
        _note_title(env, info)
        if kind in ("last-prompt", "summary"):
            return LeafHint(env.leafUuid)
        if kind not in _KNOWN_OTHER:
            diag.unknown(kind or "(no type)")
        return None
    if env.isSidechain:
        diag.sidechain_records += 1
        return None
    if not env.uuid:
        return None
    parent = env.parentUuid
    if parent is None and kind == "system" and env.logicalParentUuid:
        parent = env.logicalParentUuid  # across a compaction
    return Node(env.uuid, parent)


def _note_title(env: _Envelope, info: SessionInfo) -> None:
    # Backwards: the first title seen is the newest.
    if info.title is None:
        info.title = (
            env.customTitle
            or env.aiTitle
            or env.title
            or (env.summary if env.type == "summary" else None)
        )


class _ActiveReader:
    """Pass 2: decode the active branch's records in order and emit events."""

    def __init__(self, path: Path, info: SessionInfo, diag: Diagnostics, branch: Branch) -> None:
        self.path = path
        self.info = info
        self.diag = diag
        self.branch = branch
        self.calls: dict[str, ToolCall] = {}
        self.pending_trigger: str | None = None
        self.assistant_id: str | None = None
        self.assistant_text: list[str] = []
        self.assistant_ts: str | None = None
        self.plan_counter = 0

    def events(self) -> Iterator[Event]:
        for offset, line, tail in branch_lines(self.path, self.diag, self.branch):
            try:
                record: object = _RECORD.decode(line)
            except msgspec.ValidationError:
                record = decode_line(_LOOSE_RECORD, line, offset, tail, self.diag)
            except DECODE_ERRORS:
                record = decode_line(_RECORD, line, offset, tail, self.diag)
            if not isinstance(record, _Record):
                continue
            yield from self._record(record)
        yield from self._flush_assistant()

    def _record(self, rec: _Record) -> Iterator[Event]:
        info = self.info
        if rec.timestamp:
            info.started_at = info.started_at or rec.timestamp
            info.updated_at = rec.timestamp
        info.cwd = info.cwd or rec.cwd
        info.agent_version = rec.version or info.agent_version
        info.git_branch = rec.gitBranch or info.git_branch
        if rec.type == "assistant":
            yield from self._assistant(rec)
            return
        yield from self._flush_assistant()
        if rec.type == "user":
            yield from self._user(rec)
        elif rec.type == "system" and rec.subtype == "compact_boundary":
            trigger = (rec.compactMetadata or {}).get("trigger")
            self.pending_trigger = str(trigger) if trigger else "unknown"
        elif rec.type not in _CHAIN_TYPES:
            self.diag.unknown(rec.type or "(no type)")  # a new record type on the chain

    # assistant -------------------------------------------------------------------
    def _assistant(self, rec: _Record) -> Iterator[Event]:
        msg = rec.message
        if msg is None:
            return
        if msg.model == "<synthetic>":
            return  # "No response requested." and the like: not the agent speaking
        self.info.add_model(msg.model)
        if msg.id != self.assistant_id:
            yield from self._flush_assistant()
            self.assistant_id = msg.id
        for block in _blocks(msg.content):
            if block.type == "text" and block.text:
                self.assistant_text.append(block.text)
                self.assistant_ts = self.assistant_ts or rec.timestamp
            elif block.type == "tool_use" and block.id:
                call = self._tool_call(block, rec.timestamp)
                self.calls[block.id] = call
                yield call

    def _flush_assistant(self) -> Iterator[Event]:
        if self.assistant_text:
            text = "\n\n".join(t.strip() for t in self.assistant_text if t.strip())
            if text:
                yield Message(role="assistant", text=text, timestamp=self.assistant_ts)
        self.assistant_text = []
        self.assistant_ts = None
        self.assistant_id = None

    def _tool_call(self, block: _Block, timestamp: str | None) -> ToolCall:
        name = block.name or ""
        args = _decode_input(block.input)
        call = ToolCall(call_id=block.id or "", name=name, timestamp=timestamp)
        if name in _EDIT_TOOLS:
            call.action = _EDIT_TOOLS[name]  # type: ignore[assignment]
            target = args.file_path or args.notebook_path or args.path
            call.paths = (target,) if target else ()
        elif name == "Bash":
            call.action = "command"
            call.command = args.command or ""
        elif name == "TaskCreate":
            call.action = "plan"
            item = PlanItem(
                id="",
                subject=args.subject or "",
                description=args.description or None,
                active_form=args.activeForm or None,
            )
            call.plan = PlanOp(op="create", items=(item,))
        elif name == "TaskUpdate":
            call.action = "plan"
            status = args.status
            task_id = args.taskId if args.taskId is not None else args.id
            call.plan = PlanOp(
                op="update",
                item_id=str(task_id) if task_id is not None else "",
                status=status if status in _PLAN_STATUSES else None,  # type: ignore[arg-type]
                subject=args.subject or None,
            )
        elif name == "TodoWrite":
            call.action = "plan"
            call.plan = PlanOp(op="replace", items=_todo_items(args.todos))
        elif name in ("Task", "Agent"):
            call.action = "subagent"
        elif name in _READ_TOOLS:
            call.action = "read"
        return call

    # user --------------------------------------------------------------------------
    def _user(self, rec: _Record) -> Iterator[Event]:
        msg = rec.message
        if msg is None:
            return
        if rec.isCompactSummary:
            yield Compaction(
                summary=_joined_text(msg.content),
                trigger=self.pending_trigger,
                timestamp=rec.timestamp,
            )
            self.pending_trigger = None
            return
        content = _blocks(msg.content)
        texts = []
        for block in content:
            if block.type == "text" and block.text:
                texts.append(block.text)
            elif block.type == "tool_result" and block.tool_use_id:
                yield self._tool_result(block, rec)
        text = "\n\n".join(t.strip() for t in texts if t.strip())
        if text:
            synthetic = rec.isMeta or _is_wrapper(text)
            yield Message(role="user", text=text, timestamp=rec.timestamp, synthetic=synthetic)

    def _tool_result(self, block: _Block, rec: _Record) -> ToolResult:
        call = self.calls.pop(block.tool_use_id or "", None)
        is_error = bool(block.is_error)
        result = ToolResult(
            call_id=block.tool_use_id or "", is_error=is_error, timestamp=rec.timestamp
        )
        if is_error:
            text = _joined_text(block.content)
            result.exit_code = parse_exit_code(text)
            result.error = first_error_line(text) or (text or "").strip()[:300] or None
            return result
        if call is None:
            return result
        if call.action == "command":
            result.exit_code = _bash_exit_code(rec.toolUseResult)
        elif call.plan is not None and call.plan.op == "create":
            result.created_item_id = _created_task_id(rec.toolUseResult)
        return result


def _decode_raw(decoder: msgspec.json.Decoder, raw: msgspec.Raw) -> Any:
    """Decode a nested field; invalid UTF-8 inside it is replaced, not fatal."""
    if _is_null(raw):
        return None
    try:
        return decoder.decode(raw)
    except DECODE_ERRORS:
        pass
    try:
        return decoder.decode(bytes(raw).decode("utf-8", "replace").encode("utf-8"))
    except DECODE_ERRORS:
        return None


def _decode_input(raw: msgspec.Raw) -> _ToolInput:
    return _decode_raw(_INPUT, raw) or _ToolInput()


def _blocks(content: str | list[_Block] | msgspec.Raw | None) -> list[_Block]:
    if content is None:
        return []
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [_Block(type="text", text=content)]
    value = _decode_raw(_BLOCKS, content)
    if value is None:
        return []
    if isinstance(value, str):
        return [_Block(type="text", text=value)]
    return value


def _joined_text(raw: str | list[_Block] | msgspec.Raw | None) -> str | None:
    """Text of a content field: a string, or text blocks (tool results nest them)."""
    parts = [b.text for b in _blocks(raw) if b.type == "text" and b.text]
    return "\n".join(parts) if parts else None


def _is_null(raw: msgspec.Raw) -> bool:
    return len(raw) == 0 or bytes(raw) == b"null"


def _is_wrapper(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith(_WRAPPER_TAGS) or bool(_INTERRUPTED.match(stripped))


def _opt_str(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _todo_items(todos: object) -> tuple[PlanItem, ...]:
    if not isinstance(todos, list):
        return ()
    items = []
    for n, todo in enumerate(todos, start=1):
        if not isinstance(todo, dict):
            continue
        status = todo.get("status")
        items.append(
            PlanItem(
                id=str(todo.get("id") or n),
                subject=str(todo.get("content") or todo.get("subject") or ""),
                status=status if status in _PLAN_STATUSES else "pending",  # type: ignore[arg-type]
                active_form=_opt_str(todo.get("activeForm")),
            )
        )
    return tuple(items)


def _outcome(raw: msgspec.Raw) -> str | _ToolOutcome | None:
    return _decode_raw(_OUTCOME, raw)


def _bash_exit_code(raw: msgspec.Raw) -> int | None:
    outcome = _outcome(raw)
    if outcome is None:
        return 0 if _is_null(raw) else None
    if isinstance(outcome, str):
        return parse_exit_code(outcome)
    for code in (outcome.exitCode, outcome.returnCode):
        if code is not None:
            return code
    return None if outcome.interrupted else 0


def _created_task_id(raw: msgspec.Raw) -> str | None:
    outcome = _outcome(raw)
    if not isinstance(outcome, _ToolOutcome):
        return None
    if outcome.task and outcome.task.get("id") is not None:
        return str(outcome.task["id"])
    return str(outcome.taskId) if outcome.taskId is not None else None


__all__ = ["ClaudeCode", "encode_cwd"]
