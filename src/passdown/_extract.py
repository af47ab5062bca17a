"""From a transcript's events to the durable state of the task.

One forward pass, bounded memory and O(1) amortised work per event whatever repeats:
the portable transcript is a ring buffer; the plan (`transcript.Plan`), the files
touched, the commands, failed edits, sub-agents and open failures each keep at most a
fixed number of items (`handoff.*_KEEP`, `transcript.PLAN_KEEP`) and count the rest.
The handoff's budgets (`handoff.Limits`) cut these further, after extraction
(`passdown._budgets.fit_lists`), so a checkpoint serves every budget. Structured
state comes from tool calls, not from prose; prose only adds decisions, open questions
and next steps when the tools say nothing.

Everything the pass knows between two events is one msgspec struct (`ExtractorState`),
plain data with no relation held by object identity: incremental export's checkpoint
(`passdown._checkpoint`) encodes it as it is and decodes it into an extractor that goes
on exactly where the saved one stopped. A handoff field extraction fills is a field of
that struct, updated by a handler and turned into the model in `finish`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import msgspec

from passdown import _platform
from passdown._compaction_summary import CODEX_SUMMARY_PREFIX as CODEX_SUMMARY_PREFIX
from passdown._compaction_summary import strip_compaction_instructions
from passdown._memo import for_short_strings
from passdown._notes import derive_notes
from passdown._portable_transcript import Budget as _Budget
from passdown._portable_transcript import budgeted as _budgeted
from passdown._seen import SeenEvents
from passdown._test_runs import Run, is_probe
from passdown.handoff import (
    COMMANDS_KEEP,
    FAILED_EDITS_KEEP,
    FILES_KEEP,
    SUBAGENTS_KEEP,
    CommandRun,
    Ended,
    Failure,
    FileTouched,
    Omitted,
    PlanEntry,
    State,
    Subagent,
    Task,
)
from passdown.transcript import (
    Compaction,
    Event,
    Message,
    Plan,
    PlanItem,
    PlanOp,
    SessionEnding,
    SubagentNote,
    ToolCall,
    ToolResult,
)

DEFAULT_MAX_MESSAGES = 24
DEFAULT_MAX_CHARS = 80_000
RECENT_COMMANDS = COMMANDS_KEEP
RECENT_FAILED_EDITS = FAILED_EDITS_KEEP
PENDING_KEEP = 4096  # tool calls awaiting a result; past it the oldest counts as unanswered
OPEN_FAILURES = 16  # unresolved failures remembered for "fixed later" (the newest ones)


class Extracted(msgspec.Struct):
    task: Task
    state: State
    session_start: str | None = None
    ended: Ended = msgspec.field(default_factory=Ended)


# grep, test, diff and the like exit 1 to answer "no"; a session reruns the same probes
@for_short_strings(maxsize=256, longest=4096)
def _is_probe(command: str) -> bool:
    return is_probe(command, 1)


class CommandRecord(msgspec.Struct, omit_defaults=True):
    """A command run as the pass keeps it: the fields of `handoff.CommandRun`, without a
    pydantic model per command (validation cost more than the rest of the command's
    handling); models are built once, in `finish`."""

    command: str
    exit_code: int | None = None
    ok: bool | None = None
    error: str | None = None
    timestamp: str | None = None
    by: str | None = None

    def to_model(self) -> CommandRun:
        return CommandRun(
            command=self.command,
            exit_code=self.exit_code,
            ok=self.ok,
            error=self.error,
            timestamp=self.timestamp,
            by=self.by,
        )


class FailureRecord(msgspec.Struct, omit_defaults=True):
    """A failure as the pass keeps it: the fields of `handoff.Failure` (see CommandRecord)."""

    tool: str
    command: str | None = None
    path: str | None = None
    exit_code: int | None = None
    error: str | None = None
    timestamp: str | None = None
    resolved_later: bool = False
    by: str | None = None

    def to_model(self) -> Failure:
        return Failure(
            tool=self.tool,
            command=self.command,
            path=self.path,
            exit_code=self.exit_code,
            error=self.error,
            timestamp=self.timestamp,
            resolved_later=self.resolved_later,
            by=self.by,
        )


class FileRecord(msgspec.Struct, omit_defaults=True):
    """A file touched as the pass keeps it (its path is its key in `files`): the fields of
    `handoff.FileTouched` that tool calls set."""

    actions: list[str] = []
    confirmed: bool = True
    by: str | None = None

    def to_model(self, path: str) -> FileTouched:
        return FileTouched(
            path=path, actions=list(self.actions), confirmed=self.confirmed, by=self.by
        )


class OpenFailure(msgspec.Struct):
    """A failure no later passing run has covered yet, with its command parsed once."""

    failure: FailureRecord
    run: Run


class ExtractorState(msgspec.Struct, omit_defaults=True):
    """Everything an `_Extractor` knows between two events: the extractor works on this
    struct itself, and a checkpoint encodes it as it is (`extractor_state`,
    `restore_extractor`). Relations that a live pass could hold by object identity are
    plain data, so a decoded state goes on exactly like the live one:

    - `recent` is a ring buffer of the last `max(max_messages, 2)` messages, the oldest
      at `recent_start`; the message numbered n (from 1) is in it while
      n > messages_total - len(recent);
    - the first request is the message numbered `first_request_at` (0: none yet): in
      `recent` while it is there, in `first_request` once it has left it;
    - the newest failure is `open_failures[-1]` while `newest_failure_open`, and
      `latest_failure` (resolved) once a passing run covered it.
    """

    workspace: str | None
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_chars: int = DEFAULT_MAX_CHARS
    # the digest of this struct's definition, set when it is saved (`extractor_state`):
    # a state saved by another definition is not restored
    shape: str = ""
    recent: list[Message] = []
    recent_start: int = 0
    first_request_at: int = 0
    first_request: Message | None = None
    latest_user: Message | None = None
    latest_assistant: Message | None = None
    messages_total: int = 0
    compactions: int = 0
    compaction_summary: str | None = None
    # tool calls awaiting their result, oldest first (the readers complete these objects)
    pending: dict[str, ToolCall] = {}
    replay: Plan = msgspec.field(default_factory=Plan)
    plan_source: str | None = None
    # the most recently touched FILES_KEEP paths, least recent first; `files_evicted`
    # counts the others
    files: dict[str, FileRecord] = {}
    files_evicted: int = 0
    # the most recent only: a long session's failed edits must not grow memory with its size
    failed_edits: list[FailureRecord] = []
    failed_edits_total: int = 0
    commands: list[CommandRecord] = []
    commands_total: int = 0
    commands_failed: int = 0
    # failures no later passing run has covered yet, oldest first; bounded: a session with
    # thousands of failures only needs the newest ones to name the open blocker
    open_failures: list[OpenFailure] = []
    newest_failure_open: bool = False
    latest_failure: FailureRecord | None = None
    subagents: list[SubagentNote] = []
    subagents_total: int = 0
    subagent_calls: int = 0
    ending: SessionEnding | None = None


class _Extractor:
    """One pass over a session's events (`feed`), closed with `finish`. What it knows is
    `self.state` and nothing else (`_recent_keep` is derived from its options)."""

    __slots__ = ("_recent_keep", "state")

    def __init__(self, state: ExtractorState) -> None:
        self.state = state
        self._recent_keep = max(state.max_messages, 2)

    @property
    def pending(self) -> dict[str, ToolCall]:
        """The tool calls awaiting a result: a reader that completes a call completes
        these objects."""
        return self.state.pending

    @property
    def replay(self) -> Plan:
        """The plan as replayed (a reader that checks plan changes shares it)."""
        return self.state.replay

    # events -------------------------------------------------------------------
    def feed(self, event: Event) -> None:
        # one dict lookup on the exact type instead of an isinstance chain per event
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def feed_all(self, events: Iterable[Event], seen: SeenEvents | None = None) -> None:
        """`feed` for each event, in one loop; with `seen`, each event goes by it first
        as through `SeenEvents.watch` (counted, its command kept)."""
        handler_of, count = _HANDLERS.get, 0
        keep = seen.keep if seen is not None else None
        try:
            for event in events:
                count += 1
                if type(event) is ToolCall and keep is not None and event.command:
                    keep(event.command)
                handler = handler_of(type(event))
                if handler is not None:
                    handler(self, event)
        finally:
            if seen is not None:
                seen.count += count

    def _plan_file_op(self, op: PlanOp) -> None:
        self._plan(op, source="task files")

    def _compaction(self, event: Compaction) -> None:
        s = self.state
        s.compactions += 1
        summary = strip_compaction_instructions(event.summary or "")
        if summary:
            s.compaction_summary = summary

    def _subagent(self, event: SubagentNote) -> None:
        s = self.state
        s.subagents_total += 1
        subagents = s.subagents
        subagents.append(event)
        if len(subagents) > SUBAGENTS_KEEP:
            del subagents[0]

    def _ending(self, event: SessionEnding) -> None:
        self.state.ending = event

    def _message(self, msg: Message) -> None:
        if msg.synthetic:
            return
        s = self.state
        if msg.role == "assistant":
            s.ending = None  # the agent answered after the error: the session recovered
            s.latest_assistant = msg
        else:
            if not s.first_request_at:
                s.first_request_at = s.messages_total + 1
            s.latest_user = msg
        s.messages_total += 1
        recent = s.recent
        if len(recent) < self._recent_keep:
            recent.append(msg)
            return
        at = s.recent_start  # the oldest message makes room
        if s.messages_total - len(recent) == s.first_request_at:
            s.first_request = recent[at]  # the first request leaves the ring
        recent[at] = msg
        s.recent_start = at + 1 if at + 1 < len(recent) else 0

    def _call(self, call: ToolCall) -> None:
        s = self.state
        if call.by is None:
            s.ending = None
        action = call.action
        if action == "subagent":
            s.subagent_calls += 1
        if action in ("edit", "write", "delete", "command", "plan"):
            pending = s.pending
            pending[call.call_id] = call
            if len(pending) > PENDING_KEEP:  # the oldest will never be answered now
                self._unanswered(pending.pop(next(iter(pending))))

    def _result(self, result: ToolResult) -> None:
        s = self.state
        call = s.pending.pop(result.call_id, None)
        if call is None:
            return
        if call.action == "command":
            self._command(call, result)
        elif call.action in ("edit", "write", "delete"):
            if result.is_error:
                s.failed_edits_total += 1
                failed_edits = s.failed_edits
                failed_edits.append(
                    FailureRecord(
                        tool=call.name,
                        path=self._rel(call.paths[0]) if call.paths else None,
                        error=result.error,
                        timestamp=result.timestamp,
                        by=call.by,
                    )
                )
                if len(failed_edits) > RECENT_FAILED_EDITS:
                    del failed_edits[0]
            else:
                self._touch(call, confirmed=True)
        elif call.action == "plan" and call.plan is not None and not result.is_error:
            self._plan(call.plan, source=call.name, created_id=result.created_item_id)

    def _command(self, call: ToolCall, result: ToolResult | None) -> None:
        s = self.state
        command = (call.command or "").strip()
        exit_code = result.exit_code if result else None
        failed = bool(result and (result.is_error or (exit_code not in (None, 0))))
        ok = None if result is None else not failed
        s.commands_total += 1
        commands = s.commands
        commands.append(
            CommandRecord(
                command,
                exit_code,
                ok,
                result.error if (result and failed) else None,
                call.timestamp,
                call.by,
            )
        )
        if len(commands) > RECENT_COMMANDS:
            del commands[0]
        if failed:
            s.commands_failed += 1
            if exit_code == 1 and _is_probe(command):
                return  # "no match" from grep/test/diff: an answer, not a failure to fix
            failure = FailureRecord(
                tool=call.name,
                command=command,
                exit_code=exit_code,
                error=result.error if result else None,
                timestamp=call.timestamp,
                by=call.by,
            )
            open_failures = s.open_failures
            open_failures.append(OpenFailure(failure, Run.of(command)))
            if len(open_failures) > OPEN_FAILURES:
                del open_failures[0]
            s.newest_failure_open = True
            s.latest_failure = None
        elif ok and s.open_failures:
            self._resolve(command)

    def _resolve(self, passed: str) -> None:
        """A passing run fixes every open failure it covers: the same command, or a run
        of the same test runner over the failed test, its file, its folder or everything."""
        s = self.state
        open_failures = s.open_failures
        run = None
        for open_failure in open_failures:
            if open_failure.run.tests is not None:
                run = Run.of(passed)
                break
        if run is None or run.tests is None:
            # no test run: only the very same command (its words) covers a failure
            text = " ".join(passed.split())
            fixed = [o for o in open_failures if o.run.text == text]
        else:
            fixed = [o for o in open_failures if run.covers(o.run)]
        if not fixed:
            return  # the usual case: keep the list as it is
        for open_failure in fixed:
            open_failure.failure.resolved_later = True
        if s.newest_failure_open and fixed[-1] is open_failures[-1]:
            s.latest_failure = fixed[-1].failure
            s.newest_failure_open = False
        s.open_failures = [o for o in open_failures if not o.failure.resolved_later]

    def _touch(self, call: ToolCall, *, confirmed: bool) -> None:
        s = self.state
        files = s.files
        for path in call.paths:
            rel = self._rel(path)
            entry = files.pop(rel, None)
            if entry is None:
                entry = FileRecord(confirmed=confirmed, by=call.by)
                files[rel] = entry
                if len(files) > FILES_KEEP:
                    del files[next(iter(files))]  # the least recently touched
                    s.files_evicted += 1
            else:
                files[rel] = entry  # now the most recently touched
                entry.confirmed = entry.confirmed or confirmed
            if call.action not in entry.actions:
                entry.actions.append(call.action)

    def _plan(self, op: PlanOp, *, source: str, created_id: str | None = None) -> None:
        s = self.state
        s.plan_source = source
        s.replay.apply(op, created_id)

    def _rel(self, path: str) -> str:
        """Paths inside the workspace are shown relative to it."""
        root = self.state.workspace
        if root and path.startswith(root):
            rest = path[len(root) :]
            if rest.startswith("/"):
                return rest.lstrip("/") or "."
        if root and (_platform.is_windows_path(root) or _platform.case_insensitive_fs()):
            # compared as paths: `c:\\` for `C:\\`, `\\` for `/`, case, /private/tmp
            rel = _platform.relative_inside(path, root)
            if rel is not None:
                return rel or "."
        return path

    # the end ----------------------------------------------------------------------
    def finish(self) -> Extracted:
        s = self.state
        for call in s.pending.values():  # no result: the session ended first
            self._unanswered(call)
        s.pending.clear()
        # the open blocker: the newest failure nothing fixed; else the newest one
        last_failure = s.open_failures[-1].failure if s.open_failures else s.latest_failure
        replay = s.replay
        state = State(
            plan=[_plan_entry(item) for item in replay.items.values()],
            plan_source=s.plan_source if replay.items else None,
            files_touched=[entry.to_model(path) for path, entry in s.files.items()],
            failed_edits=[failure.to_model() for failure in s.failed_edits],
            commands=[run.to_model() for run in s.commands],
            commands_total=s.commands_total,
            commands_failed=s.commands_failed,
            last_failure=last_failure.to_model() if last_failure else None,
            subagents=[
                Subagent(id=n.agent_id, path=n.path, agent_type=n.agent_type, task=n.description)
                for n in s.subagents
            ],
            subagent_calls=s.subagent_calls,
            omitted=Omitted(
                plan=replay.dropped,
                plan_set_aside=replay.set_aside,
                files_touched=s.files_evicted,
                failed_edits=max(s.failed_edits_total - len(s.failed_edits), 0),
                commands=max(s.commands_total - len(s.commands), 0),
                subagents=max(s.subagents_total - len(s.subagents), 0),
            ),
        )
        recent = self._recent()
        derive_notes(state, s.latest_assistant, recent)
        return Extracted(task=self._task(recent), state=state, ended=self._ended())

    def _recent(self) -> list[Message]:
        """The ring buffer in conversation order."""
        s = self.state
        return s.recent[s.recent_start :] + s.recent[: s.recent_start]

    def _unanswered(self, call: ToolCall) -> None:
        """A tool call with no result: the session ended first (or, past PENDING_KEEP
        calls awaiting one, it never came). Plan changes still count; an edit is listed
        as unconfirmed; a command has no exit code."""
        if call.action == "plan" and call.plan is not None:
            self._plan(call.plan, source=call.name)
        elif call.action in ("edit", "write", "delete"):
            self._touch(call, confirmed=False)
        elif call.action == "command":
            self._command(call, None)

    def _ended(self) -> Ended:
        ending = self.state.ending
        if ending is None:
            return Ended()
        return Ended(reason=ending.reason, at=ending.timestamp, message=ending.message)

    def _task(self, recent: list[Message]) -> Task:
        s = self.state
        first = s.first_request
        before = s.messages_total - len(recent)  # the messages that left the ring
        if s.first_request_at > before:  # still in the ring: the same object, by identity
            first = recent[s.first_request_at - before - 1]
        entries, omitted = _budgeted(
            first, recent, s.messages_total, _Budget(s.max_messages, s.max_chars)
        )
        return Task(
            original_request=first.text if first else None,
            latest_user_message=s.latest_user.text if s.latest_user else None,
            latest_progress=s.latest_assistant.text if s.latest_assistant else None,
            compaction_summary=s.compaction_summary,
            compactions=s.compactions,
            transcript=entries,
            messages_total=s.messages_total,
            messages_omitted=omitted,
        )


_HANDLERS: dict[type, Callable[[_Extractor, Any], None]] = {
    Message: _Extractor._message,
    ToolCall: _Extractor._call,
    ToolResult: _Extractor._result,
    PlanOp: _Extractor._plan_file_op,
    Compaction: _Extractor._compaction,
    SubagentNote: _Extractor._subagent,
    SessionEnding: _Extractor._ending,
}


def extract(
    events: object,
    *,
    workspace: str | None,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Extracted:
    extractor = new_extractor(workspace=workspace, max_messages=max_messages, max_chars=max_chars)
    extractor.feed_all(events)  # type: ignore[arg-type]
    return extractor.finish()


def new_extractor(*, workspace: str | None, max_messages: int, max_chars: int) -> _Extractor:
    """An empty extractor, fed event by event (`feed`) and closed with `finish`."""
    return _Extractor(
        ExtractorState(workspace=workspace, max_messages=max_messages, max_chars=max_chars)
    )


def extractor_state(extractor: _Extractor) -> ExtractorState:
    """The extractor's state before `finish` (which consumes the pending calls), stamped
    with the shape of its definition: the live struct, not a copy, so encode it before
    feeding the extractor on."""
    state = extractor.state
    state.shape = state_shape()
    return state


def restore_extractor(state: ExtractorState) -> _Extractor:
    """An extractor that goes on exactly where the one `extractor_state` saved stopped.
    ValueError: the state was saved by another definition of `ExtractorState`, or is not
    one a pass can reach."""
    if state.shape != state_shape():
        raise ValueError("extractor state of another shape")
    keep = max(state.max_messages, 2)
    recent = len(state.recent)
    first_in_ring = state.first_request_at > state.messages_total - recent
    if (
        recent > min(keep, state.messages_total)
        or not 0 <= state.recent_start < max(recent, 1)
        or (state.recent_start and recent < keep)
        or not 0 <= state.first_request_at <= state.messages_total
        or (state.first_request_at and not first_in_ring and state.first_request is None)
        or (state.newest_failure_open and not state.open_failures)
    ):
        raise ValueError("inconsistent extractor state")
    return _Extractor(state)


@cache
def state_shape() -> str:
    """A digest of `ExtractorState`'s definition (its fields and their types, nested
    ones included): a field added, removed or retyped changes it."""
    schema = msgspec.json.encode(msgspec.json.schema(ExtractorState))
    return hashlib.sha256(schema).hexdigest()[:16]


def _plan_entry(item: PlanItem) -> PlanEntry:
    status = item.status if item.status != "deleted" else "cancelled"
    return PlanEntry(
        id=item.id,
        subject=item.subject,
        status=status,
        description=item.description,
        active_form=item.active_form,
        blocked_by=list(item.blocked_by),
    )
