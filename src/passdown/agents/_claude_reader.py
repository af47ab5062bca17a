"""Claude Code's pass 2 (`passdown.agents.claude`): the active branch's records decoded
in order into events (`_ActiveReader`), a sub-agent's transcript read the same way, and
the decoder a tree reader resumes from a checkpoint (`_SessionDecoder`). The forward
pass, which reads a session without rewinds in one pass, takes pass 1's view of a line
outside the common case (`_claude_pass1`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import msgspec

from passdown._memo import for_short_strings
from passdown.agents._claude_blocks import blocks as _blocks
from passdown.agents._claude_blocks import joined_text as _joined_text
from passdown.agents._claude_endings import api_error_reason, clean_compact_summary
from passdown.agents._claude_pass1 import _CHAIN_TYPES as _CHAIN_TYPES
from passdown.agents._claude_pass1 import _node as _node
from passdown.agents._claude_pass1 import _pass1_view, _quiet_record
from passdown.agents._claude_plan import PlanReplay, plan_op, task_files
from passdown.agents._claude_records import (
    _RECORD,
    _TYPED_RECORD,
    AnyBlock,
    _bash_exit_code,
    _created_task_id,
    _outcome,
    _Record,
    _task_number_in,
    _tool_args,
    _ToolInput,
    _ToolOutcome,
    _TypedRecord,
    _untyped_record,
)
from passdown.agents._claude_subagents import Subagents, agent_id_in
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    first_error_line,
    parse_exit_code,
)
from passdown.agents._tree import (
    Branch,
    LeafHint,
    Node,
    branch_lines,
    restore_calls,
)
from passdown.agents._tree_forward import BranchLeft, StraightLine
from passdown.transcript import (
    Compaction,
    Diagnostics,
    Event,
    Message,
    Plan,
    PlanItem,
    SessionEnding,
    SessionInfo,
    SubagentNote,
    ToolAction,
    ToolCall,
    ToolResult,
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
_EDIT_TOOLS: dict[str, ToolAction] = {
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Write": "write",
}
_READ_TOOLS = frozenset(
    {"Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "TaskList", "TaskGet"}
)
# the most frequent records off the tree, when they carry no title: nothing for the
# forward pass but last-prompt's leaf hint
_NOTHING_ELSE = frozenset({"last-prompt", "queue-operation"})
_PLAN_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TodoWrite"})
_AGENT_TOOLS = frozenset({"Task", "Agent"})


class _ActiveReader:
    """Pass 2: decode the active branch's records in order and emit events.

    With `by` set, the same reader reads a sub-agent's transcript: only its tool calls
    and their results count, attributed to it. Its prompt and messages are neither the
    user's nor the session agent's, and its plan calls do not change the session's plan.
    """

    def __init__(
        self,
        path: Path,
        info: SessionInfo,
        diag: Diagnostics,
        branch: Branch,
        *,
        subagents: Subagents,
        by: str | None = None,
        depth: int = 0,
    ) -> None:
        self.path = path
        self.info = info
        self.diag = diag
        self.branch = branch
        self.subagents = subagents
        self.by = by
        self.depth = depth
        self.calls: dict[str, ToolCall] = {}
        self.agent_tasks: dict[str, tuple[str | None, str | None]] = {}  # call -> task, type
        self.plan = PlanReplay()
        self.pending_trigger: str | None = None
        self.assistant_id: str | None = None
        self.assistant_text: list[str] = []
        self.assistant_ts: str | None = None

    def events(self) -> Iterator[Event]:
        yield from self.feed(branch_lines(self.path, self.diag, self.branch))
        yield from self._flush_assistant()

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        for offset, line, tail in lines:
            try:
                record: object = _TYPED_RECORD.decode(line)
            except msgspec.ValidationError:
                record = _untyped_record(line, offset, tail, self.diag)
            except DECODE_ERRORS:
                record = decode_line(_RECORD, line, offset, tail, self.diag)
            if not isinstance(record, _Record):
                continue
            events = self._record(record)
            if events:
                yield from events

    def feed_straight(
        self, lines: Iterable[tuple[int, bytes]], straight: StraightLine, tail: Callable[[], int]
    ) -> Iterator[Event]:
        """The forward pass (`passdown.agents._tree_forward`): every line of the file,
        each tree record checked to continue the straight line and decoded once; a line
        the record decode refuses is read as pass 1 reads it."""
        info, diag = self.info, self.diag
        decode, said, chain = _TYPED_RECORD.decode, self._said, _CHAIN_TYPES
        # the line's end and the session's facts, kept local in the loop (once per record)
        last, last_parent = straight.last, straight.last_parent
        started, updated, cwd = info.started_at, info.updated_at, info.cwd
        version, branch = info.agent_version, info.git_branch
        try:
            for offset, line in lines:
                try:
                    record: object = decode(line)
                except msgspec.ValidationError:
                    record = _quiet_record(line)
                except DECODE_ERRORS:
                    record = None
                if type(record) is not _TypedRecord and not isinstance(record, _Record):
                    # pass 1's view, noting what it notes; a tree record pass 2 would
                    # have decoded otherwise (mended bytes) is left to the two passes
                    node = _pass1_view(line, offset, tail(), info, diag)
                    if isinstance(node, Node):
                        raise BranchLeft(f"a tree record at byte {offset} needs pass 2's decode")
                    if isinstance(node, LeafHint):
                        straight.note_hint(node.id)
                    continue
                kind = record.type
                if kind in chain and record.uuid and not record.isSidechain:
                    parent = record.parentUuid
                    if parent is None and kind == "system" and record.logicalParentUuid:
                        parent = record.logicalParentUuid  # across a compaction
                    if parent != last or straight.hint is not None:
                        straight.last = last
                        straight.take(record.uuid, parent)  # raises when off the line
                    last_parent, last = parent, record.uuid
                    timestamp = record.timestamp  # `_note_facts`, inline: once per record
                    if timestamp:
                        if not started:
                            started = info.started_at = timestamp
                        updated = timestamp
                    if not cwd:
                        cwd = info.cwd = record.cwd
                    version = record.version or version
                    branch = record.gitBranch or branch
                    events = said(record)
                    if events:
                        yield from events
                elif kind in _NOTHING_ELSE and not (
                    record.customTitle or record.aiTitle or record.title
                ):
                    # `_node`'s answer without its steps: a leaf hint or nothing
                    if kind == "last-prompt" and record.leafUuid is not None:
                        straight.note_hint(record.leafUuid)
                else:
                    node = _node(record, info, diag, forward=True)
                    if isinstance(node, LeafHint):
                        straight.note_hint(node.id)
        finally:
            straight.last, straight.last_parent = last, last_parent
            info.updated_at, info.agent_version, info.git_branch = updated, version, branch

    # The handlers below return what a record says as a list or tuple (often empty),
    # not as generators: a generator per record cost more than most records' own work.
    def _record(self, rec: _Record) -> Sequence[Event]:
        """What one record says."""
        _note_facts(self.info, rec)
        return self._said(rec)

    def _said(self, rec: _Record) -> Sequence[Event]:
        """What one record says, its session facts noted (`_note_facts`)."""
        kind = rec.type
        if kind == "assistant":
            return self._assistant(rec)
        if self.assistant_text:
            flushed = self._assistant_message()
        else:  # nothing gathered: the gathering starts again, as `_assistant_message` does
            flushed = self.assistant_ts = self.assistant_id = None
        if kind == "user":
            events = self._user(rec)
            return events if flushed is None else [flushed, *events]
        if kind == "system" and rec.subtype == "compact_boundary":
            trigger = (rec.compactMetadata or {}).get("trigger")
            self.pending_trigger = str(trigger) if trigger else "unknown"
        elif kind not in _CHAIN_TYPES:
            self.diag.unknown(kind or "(no type)")  # a new record type on the chain
        return (flushed,) if flushed is not None else ()

    # assistant -------------------------------------------------------------------
    def _assistant(self, rec: _Record) -> Sequence[Event]:
        msg = rec.message
        if msg is None:
            return ()
        if rec.isApiErrorMessage:
            # The CLI's own report of a failed API call: how the turn ended, never the
            # agent's progress. A sub-agent's failure reaches the session as a tool result.
            if self.by is None:
                return [*self._flush_assistant(), _api_error_ending(rec, _joined_text(msg.content))]
            return ()
        model = msg.model
        if model == "<synthetic>":
            return ()  # "No response requested." and the like: not the agent speaking
        if model and model not in self.info.models:
            self.info.add_model(model)
        events: list[Event] = []
        if msg.id != self.assistant_id:
            if self.assistant_text:
                message = self._assistant_message()
                if message is not None:
                    events.append(message)
            else:
                self.assistant_ts = None
            self.assistant_id = msg.id
        content = msg.content
        for block in content if type(content) is list else _blocks(content):
            kind = block.type
            if kind == "tool_use":
                call_id = block.id
                if call_id:
                    call = self._tool_call(block, call_id, rec.timestamp)
                    self.calls[call_id] = call
                    events.append(call)
            elif kind == "text" and block.text and self.by is None:
                self.assistant_text.append(block.text)
                self.assistant_ts = self.assistant_ts or rec.timestamp
        return events

    def _flush_assistant(self) -> Iterator[Event]:
        message = self._assistant_message()
        if message is not None:
            yield message

    def _assistant_message(self) -> Message | None:
        """The assistant's text gathered so far, as one message (None if there is none);
        the gathering starts again."""
        message = None
        texts = self.assistant_text
        if texts:
            text = _joined(texts)
            if text:
                message = Message(role="assistant", text=text, timestamp=self.assistant_ts)
            self.assistant_text = []
        self.assistant_ts = None
        self.assistant_id = None
        return message

    def _tool_call(self, block: AnyBlock, call_id: str, timestamp: str | None) -> ToolCall:
        name = block.name or ""
        raw = block.input
        args = raw if type(raw) is _ToolInput else _tool_args(raw)
        by = self.by
        action: ToolAction = "other"
        paths: tuple[str, ...] = ()
        command = None
        plan = None
        if name in _EDIT_TOOLS:
            action = _EDIT_TOOLS[name]
            target = args.file_path or args.notebook_path or args.path
            if target:
                paths = (target,)
        elif name == "Bash":
            action = "command"
            command = args.command or ""
        elif name in _PLAN_TOOLS:
            if by is None:
                action = "plan"
                plan = plan_op(name, args)
        elif name in _AGENT_TOOLS:
            action = "subagent"
            self.agent_tasks[call_id] = (args.description, args.subagent_type)
        elif name in _READ_TOOLS:
            action = "read"
        return ToolCall(call_id, name, action, paths, command, plan, timestamp, by)

    # user --------------------------------------------------------------------------
    def _user(self, rec: _Record) -> Sequence[Event]:
        msg = rec.message
        if msg is None:
            return ()
        if rec.isCompactSummary:
            pending, self.pending_trigger = self.pending_trigger, None
            if self.by is not None:
                return ()
            summary = clean_compact_summary(_joined_text(msg.content))
            return (Compaction(summary=summary, trigger=pending, timestamp=rec.timestamp),)
        texts: list[str] = []
        events: list[Event] = []
        content = msg.content
        if type(content) is str:
            if content:
                texts.append(content)
        else:
            for block in content if type(content) is list else _blocks(content):
                kind = block.type
                if kind == "tool_result":
                    use_id = block.tool_use_id
                    if not use_id:
                        continue
                    call = self.calls.pop(use_id, None)
                    result = self._tool_result(block, use_id, rec, call)
                    if call is not None:
                        if call.action == "subagent":
                            events.extend(self._subagent_work(call, block, rec))
                        elif call.plan is not None and not result.is_error:
                            self.plan.apply(call.plan, result.created_item_id)
                    events.append(result)
                elif kind == "text" and block.text:
                    texts.append(block.text)
        if not texts or self.by is not None:
            return events
        text = _joined(texts)
        if not text:
            return events
        if any(t.lstrip().startswith("[") and _INTERRUPTED.match(t.strip()) for t in texts):
            events.append(SessionEnding(reason="interrupted", timestamp=rec.timestamp))
        synthetic = rec.isMeta or _is_wrapper(text)
        events.append(Message(role="user", text=text, timestamp=rec.timestamp, synthetic=synthetic))
        return events

    def _subagent_work(self, call: ToolCall, block: AnyBlock, rec: _Record) -> Iterator[Event]:
        """The sub-agent ran between the call and its result: its work comes first."""
        outcome = _outcome(rec.toolUseResult)
        agent_id = (outcome.agentId if isinstance(outcome, _ToolOutcome) else None) or (
            agent_id_in(_joined_text(block.content))
        )
        yield from self._run_subagent(call.call_id, agent_id)

    def _tool_result(
        self, block: AnyBlock, call_id: str, rec: _Record, call: ToolCall | None
    ) -> ToolResult:
        if block.is_error:
            exit_code, error = _failure_in(block.content)
            return ToolResult(call_id, True, exit_code, error, None, rec.timestamp)
        exit_code = created = None
        if call is not None:
            if call.action == "command":
                exit_code = _bash_exit_code(rec.toolUseResult)
            elif call.plan is not None and call.plan.op == "create":
                created = _created_task_id(rec.toolUseResult) or _task_number_in(
                    _joined_text(block.content)
                )
        return ToolResult(call_id, False, exit_code, None, created, rec.timestamp)

    # sub-agents -----------------------------------------------------------------------
    def _run_subagent(self, call_id: str, agent_id: str | None) -> Iterator[Event]:
        """A sub-agent spawned on this branch: a note with its type and task, then its
        tool calls and results, attributed to it (nested sub-agents likewise)."""
        task, kind = self.agent_tasks.pop(call_id, (None, None))
        agent_id = agent_id or self.subagents.agent_for_call(call_id)
        if not agent_id or not self.subagents.claim(agent_id):
            return
        meta = self.subagents.meta(agent_id)
        path = self.subagents.transcript(agent_id)
        yield SubagentNote(
            agent_id=agent_id,
            path=str(path) if path else None,
            description=(meta.description if meta else None) or task,
            agent_type=(meta.agentType if meta else None) or kind,
        )
        if path is None or self.depth >= _MAX_SUBAGENT_DEPTH:
            return
        diag = Diagnostics()
        reader = _ActiveReader(
            path,
            SessionInfo(agent="claude", session_id=agent_id, path=path),
            diag,
            Branch(broken=True),  # a sub-agent's file is one linear thread: file order
            subagents=self.subagents,
            by=agent_id,
            depth=self.depth + 1,
        )
        yield from reader.events()
        yield from reader.unanswered_subagents()
        skipped = diag.bad_lines + (1 if diag.torn_last_line else 0)
        if skipped:
            self.diag.warnings.append(
                f"sub-agent {agent_id}: {skipped} unreadable line(s) of its transcript skipped"
            )

    def unanswered_subagents(self) -> Iterator[Event]:
        """Agent calls whose result never came (the session stopped while the sub-agent
        ran): their transcripts are found through the sub-agents' .meta.json files."""
        waiting = [cid for cid, call in self.calls.items() if call.action == "subagent"]
        for call_id in waiting:
            yield from self._run_subagent(call_id, None)


class _SessionState(msgspec.Struct):
    """What `_SessionDecoder` remembers between two lines (a checkpoint's reader state)."""

    calls: list[ToolCall] = []
    agent_tasks: dict[str, tuple[str | None, str | None]] = {}
    plan: list[tuple[str, PlanItem]] = []
    plan_counter: int = 0
    plan_seen: bool = False
    plan_rekeyed: bool = False
    plan_set_aside: int = 0
    plan_dropped: int = 0
    pending_trigger: str | None = None
    assistant_id: str | None = None
    assistant_text: list[str] = []
    assistant_ts: str | None = None
    # sub-agents already read, each with the stamp of its files then: a file changed
    # since means the checkpoint's events are stale (a full read)
    subagents: dict[str, str] = {}


class _SessionDecoder:
    """The session's own pass 2 (a `passdown.agents._tree.BranchDecoder`): the branch's
    records, then at the end of the file the sub-agents still running and the plan
    checked against the task files (both read anew on every export)."""

    def __init__(
        self,
        info: SessionInfo,
        diag: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
        *,
        config_dir: Path,
    ) -> None:
        self.config_dir = config_dir
        self.session_id = info.session_id
        path = info.path
        subagents = Subagents(path.parent / self.session_id / "subagents", path.parent)
        self.reader = _ActiveReader(path, info, diag, Branch(), subagents=subagents)
        if state is not None:
            self._restore(msgspec.convert(state, _SessionState), pending)

    def feed(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Event]:
        return self.reader.feed(lines)

    def feed_straight(
        self, lines: Iterable[tuple[int, bytes]], straight: StraightLine, tail: Callable[[], int]
    ) -> Iterator[Event]:
        return self.reader.feed_straight(lines, straight, tail)

    def share_plan(self, plan: Plan) -> None:
        """Extraction's plan replay, read instead of a replay of its own (`PlanReplay.share`)."""
        self.reader.plan.share(plan)

    def finish(self) -> Iterator[Event]:
        reader = self.reader
        yield from reader._flush_assistant()
        yield from reader.unanswered_subagents()
        merged = reader.plan.merged_with(task_files(self.config_dir, self.session_id))
        if merged is not None:
            yield merged

    def state(self) -> object:
        reader = self.reader
        return msgspec.to_builtins(
            _SessionState(
                calls=list(reader.calls.values()),
                agent_tasks=dict(reader.agent_tasks),
                plan=list(reader.plan.items.items()),
                plan_counter=reader.plan.counter,
                plan_seen=reader.plan.seen,
                plan_rekeyed=reader.plan.rekeyed,
                plan_set_aside=reader.plan.plan.set_aside,
                plan_dropped=reader.plan.plan.dropped,
                pending_trigger=reader.pending_trigger,
                assistant_id=reader.assistant_id,
                assistant_text=list(reader.assistant_text),
                assistant_ts=reader.assistant_ts,
                subagents={a: reader.subagents.stamp(a) for a in sorted(reader.subagents.read)},
            )
        )

    def _restore(self, saved: _SessionState, pending: dict[str, ToolCall]) -> None:
        reader = self.reader
        for agent_id, stamp in saved.subagents.items():
            if reader.subagents.stamp(agent_id) != stamp:
                raise ValueError(f"sub-agent {agent_id}'s files changed since the checkpoint")
        reader.subagents.read = set(saved.subagents)
        reader.calls = restore_calls(msgspec.to_builtins(saved.calls), pending)
        reader.agent_tasks = dict(saved.agent_tasks)
        reader.plan.items = dict(saved.plan)
        reader.plan.counter = saved.plan_counter
        reader.plan.seen = saved.plan_seen
        reader.plan.rekeyed = saved.plan_rekeyed
        reader.plan.plan.set_aside = saved.plan_set_aside
        reader.plan.plan.dropped = saved.plan_dropped
        reader.pending_trigger = saved.pending_trigger
        reader.assistant_id = saved.assistant_id
        reader.assistant_text = list(saved.assistant_text)
        reader.assistant_ts = saved.assistant_ts


_MAX_SUBAGENT_DEPTH = 4


def _api_error_ending(rec: _Record, text: str | None) -> SessionEnding:
    error = rec.error if isinstance(rec.error, str) else None
    details = rec.errorDetails if isinstance(rec.errorDetails, str) else ""
    message = (text or "").strip() or error or None
    reason = api_error_reason(error, f"{message or ''}\n{details[:2000]}")
    return SessionEnding(reason=reason, message=message, timestamp=rec.timestamp)


def _note_facts(info: SessionInfo, rec: _Record) -> None:
    """The session's facts a record carries: the first time and folder, the latest time,
    CLI version and git branch."""
    timestamp = rec.timestamp
    if timestamp:
        if not info.started_at:
            info.started_at = timestamp
        info.updated_at = timestamp
    if not info.cwd:
        info.cwd = rec.cwd
    if rec.version:
        info.agent_version = rec.version
    if rec.gitBranch:
        info.git_branch = rec.gitBranch


def _failure_in(content: msgspec.Raw) -> tuple[int | None, str | None]:
    """A failed tool result's exit code and error line, from its content (decoded once
    for each distinct content: a failing command run again gives the same output back)."""
    return _failure_in_bytes(bytes(content))


@for_short_strings(maxsize=256, longest=16384)
def _failure_in_bytes(content: bytes) -> tuple[int | None, str | None]:
    text = _joined_text(msgspec.Raw(content))
    return parse_exit_code(text), first_error_line(text) or (text or "").strip()[:300] or None


def _joined(texts: list[str]) -> str:
    """Text blocks stripped, the empty ones left out, one paragraph each."""
    if len(texts) == 1:
        return texts[0].strip()
    return "\n\n".join(t.strip() for t in texts if t.strip())


def _is_wrapper(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith(_WRAPPER_TAGS) or bool(_INTERRUPTED.match(stripped))
