"""From a transcript's events to the durable state of the task.

One forward pass, bounded memory and O(1) amortised work per event whatever repeats:
the portable transcript is a ring buffer; the plan (`transcript.Plan`), the files
touched, the commands, failed edits, sub-agents and open failures each keep at most a
fixed number of items (`handoff.*_KEEP`, `transcript.PLAN_KEEP`) and count the rest.
The handoff's budgets (`handoff.Limits`) cut these further, after extraction
(`passdown._budgets.fit_lists`), so a checkpoint serves every budget. Structured
state comes from tool calls, not from prose; prose only adds decisions, open questions
and next steps when the tools say nothing.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from passdown import _platform
from passdown._notes import derive_notes
from passdown._portable_transcript import Budget as _Budget
from passdown._portable_transcript import budgeted as _budgeted
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

# What the CLIs wrap around a compaction summary for the model that continues: not part
# of the summary, and an instruction the next agent must not follow. Codex prefixes
# codex-rs/core/templates/compact/summary_prefix.md; Claude Code opens with "This session
# is being continued..." and closes with its resume instructions.
CODEX_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by "
    "that language model. Use this to build on the work that has already been done and "
    "avoid duplicating work. Here is the summary produced by the other language model, use "
    "the information in this summary to assist with your own analysis:"
)
_CODEX_PREFIX_START = re.compile(
    r"\s*Another language model started to solve this problem and produced a summary"
    r"(?: of its thinking process)?\.",
)
_CODEX_PREFIX_END = "use the information in this summary to assist with your own analysis:"
_CLAUDE_PREAMBLE = re.compile(
    r"\s*This session is being continued from a previous conversation that ran out of "
    r"context\.[^\n]*\n+(?:\s*Summary:\s*\n)?",
)
_CLAUDE_TRAILERS = (
    "If you need specific details from before compaction",
    "Continue the conversation from where it left off without asking the user",
    "Please continue the conversation from where we left it off without asking the user",
    "Resume directly",
)


@dataclass(slots=True)
class Extracted:
    task: Task
    state: State
    session_start: str | None = None
    ended: Ended = field(default_factory=Ended)


@dataclass(slots=True)
class CommandRecord:
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


@dataclass(slots=True)
class FailureRecord:
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


@dataclass
class _Extractor:
    workspace: str | None
    budget: _Budget
    first_request: Message | None = None
    latest_user: Message | None = None
    latest_assistant: Message | None = None
    recent: deque[Message] = field(default_factory=deque)
    messages_total: int = 0
    compactions: int = 0
    compaction_summary: str | None = None
    pending: dict[str, ToolCall] = field(default_factory=dict)
    replay: Plan = field(default_factory=Plan)
    plan_source: str | None = None
    # the most recently touched FILES_KEEP paths; `files_evicted` counts the others
    files: OrderedDict[str, FileTouched] = field(default_factory=OrderedDict)
    files_evicted: int = 0
    # the most recent only: a long session's failed edits must not grow memory with its size
    failed_edits: deque[FailureRecord] = field(
        default_factory=lambda: deque(maxlen=RECENT_FAILED_EDITS)
    )
    failed_edits_total: int = 0
    commands: deque[CommandRecord] = field(default_factory=lambda: deque(maxlen=RECENT_COMMANDS))
    commands_total: int = 0
    commands_failed: int = 0
    latest_failure: FailureRecord | None = None
    # failures no later passing run has covered yet, oldest first; bounded: a session with
    # thousands of failures only needs the newest ones to name the open blocker
    open_failures: deque[_OpenFailure] = field(default_factory=lambda: deque(maxlen=OPEN_FAILURES))
    subagents: deque[Subagent] = field(default_factory=lambda: deque(maxlen=SUBAGENTS_KEEP))
    subagents_total: int = 0
    subagent_calls: int = 0
    ending: SessionEnding | None = None

    def __post_init__(self) -> None:
        self.recent = deque(maxlen=max(self.budget.max_messages, 2))

    @property
    def plan(self) -> dict[str, PlanItem]:
        """The current plan (id -> item, in plan order), as replayed."""
        return self.replay.items

    @property
    def plan_counter(self) -> int:
        return self.replay.counter

    @plan_counter.setter
    def plan_counter(self, counter: int) -> None:
        self.replay.counter = counter

    # events -------------------------------------------------------------------
    def feed(self, event: Event) -> None:
        # one dict lookup on the exact type instead of an isinstance chain per event
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _plan_file_op(self, op: PlanOp) -> None:
        self._plan(op, source="task files")

    def _compaction(self, event: Compaction) -> None:
        self.compactions += 1
        summary = strip_compaction_instructions(event.summary or "")
        if summary:
            self.compaction_summary = summary

    def _subagent(self, event: SubagentNote) -> None:
        self.subagents_total += 1
        self.subagents.append(
            Subagent(
                id=event.agent_id,
                path=event.path,
                agent_type=event.agent_type,
                task=event.description,
            )
        )

    def _ending(self, event: SessionEnding) -> None:
        self.ending = event

    def _message(self, msg: Message) -> None:
        if msg.synthetic:
            return
        if msg.role == "assistant":
            self.ending = None  # the agent answered after the error: the session recovered
        self.messages_total += 1
        if msg.role == "user":
            if self.first_request is None:
                self.first_request = msg
            self.latest_user = msg
        else:
            self.latest_assistant = msg
        self.recent.append(msg)

    def _call(self, call: ToolCall) -> None:
        if call.by is None:
            self.ending = None
        if call.action == "subagent":
            self.subagent_calls += 1
        if call.action in ("edit", "write", "delete", "command", "plan"):
            pending = self.pending
            pending[call.call_id] = call
            if len(pending) > PENDING_KEEP:  # the oldest will never be answered now
                self._unanswered(pending.pop(next(iter(pending))))

    def _result(self, result: ToolResult) -> None:
        call = self.pending.pop(result.call_id, None)
        if call is None:
            return
        if call.action == "command":
            self._command(call, result)
        elif call.action in ("edit", "write", "delete"):
            if result.is_error:
                self.failed_edits_total += 1
                self.failed_edits.append(
                    FailureRecord(
                        tool=call.name,
                        path=self._rel(call.paths[0]) if call.paths else None,
                        error=result.error,
                        timestamp=result.timestamp,
                        by=call.by,
                    )
                )
            else:
                self._touch(call, confirmed=True)
        elif call.action == "plan" and call.plan is not None and not result.is_error:
            self._plan(call.plan, source=call.name, created_id=result.created_item_id)

    def _command(self, call: ToolCall, result: ToolResult | None) -> None:
        command = (call.command or "").strip()
        exit_code = result.exit_code if result else None
        failed = bool(result and (result.is_error or (exit_code not in (None, 0))))
        ok = None if result is None else not failed
        self.commands_total += 1
        run = CommandRecord(
            command,
            exit_code,
            ok,
            result.error if (result and failed) else None,
            call.timestamp,
            call.by,
        )
        self.commands.append(run)
        if failed:
            self.commands_failed += 1
            if is_probe(command, exit_code):
                return  # "no match" from grep/test/diff: an answer, not a failure to fix
            failure = FailureRecord(
                tool=call.name,
                command=command,
                exit_code=exit_code,
                error=result.error if result else None,
                timestamp=call.timestamp,
                by=call.by,
            )
            self.latest_failure = failure
            self.open_failures.append(_OpenFailure(failure, Run.of(command)))
        elif ok and self.open_failures:
            self._resolve(command)

    def _resolve(self, passed: str) -> None:
        """A passing run fixes every open failure it covers: the same command, or a run
        of the same test runner over the failed test, its file, its folder or everything."""
        if any(o.run.tests is not None for o in self.open_failures):
            run = Run.of(passed)
        else:  # only the same command can cover these: no need to parse it as a test run
            run = Run(" ".join(passed.split()), None)
        if run.tests is None:  # no test run: only the very same command covers a failure
            text = run.text
            fixed = [o for o in self.open_failures if o.run.text == text]
        else:
            fixed = [o for o in self.open_failures if run.covers(o.run)]
        if not fixed:
            return  # the usual case: keep the deque as it is
        for open_failure in fixed:
            open_failure.failure.resolved_later = True
        self.open_failures = deque(
            (o for o in self.open_failures if not o.failure.resolved_later), maxlen=OPEN_FAILURES
        )

    def _touch(self, call: ToolCall, *, confirmed: bool) -> None:
        for path in call.paths:
            rel = self._rel(path)
            entry = self.files.get(rel)
            if entry is None:
                entry = self.files[rel] = FileTouched(path=rel, confirmed=confirmed, by=call.by)
                if len(self.files) > FILES_KEEP:
                    self.files.popitem(last=False)  # the least recently touched
                    self.files_evicted += 1
            else:
                self.files.move_to_end(rel)
                entry.confirmed = entry.confirmed or confirmed
            if call.action not in entry.actions:
                entry.actions.append(call.action)

    def _plan(self, op: PlanOp, *, source: str, created_id: str | None = None) -> None:
        self.plan_source = source
        self.replay.apply(op, created_id)

    def _rel(self, path: str) -> str:
        """Paths inside the workspace are shown relative to it."""
        root = self.workspace
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
        for call in self.pending.values():  # no result: the session ended first
            self._unanswered(call)
        self.pending.clear()
        # the open blocker: the newest failure nothing fixed; else the newest one
        last_failure = self.open_failures[-1].failure if self.open_failures else self.latest_failure
        state = State(
            plan=[_plan_entry(item) for item in self.plan.values()],
            plan_source=self.plan_source if self.plan else None,
            files_touched=list(self.files.values()),
            failed_edits=[failure.to_model() for failure in self.failed_edits],
            commands=[run.to_model() for run in self.commands],
            commands_total=self.commands_total,
            commands_failed=self.commands_failed,
            last_failure=last_failure.to_model() if last_failure else None,
            subagents=list(self.subagents),
            subagent_calls=self.subagent_calls,
            omitted=Omitted(
                plan=self.replay.dropped,
                plan_set_aside=self.replay.set_aside,
                files_touched=self.files_evicted,
                failed_edits=max(self.failed_edits_total - len(self.failed_edits), 0),
                commands=max(self.commands_total - len(self.commands), 0),
                subagents=max(self.subagents_total - len(self.subagents), 0),
            ),
        )
        derive_notes(state, self.latest_assistant, list(self.recent))
        return Extracted(task=self._task(), state=state, ended=self._ended())

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
        if self.ending is None:
            return Ended()
        return Ended(
            reason=self.ending.reason, at=self.ending.timestamp, message=self.ending.message
        )

    def _task(self) -> Task:
        entries, omitted = _budgeted(
            self.first_request, list(self.recent), self.messages_total, self.budget
        )
        return Task(
            original_request=self.first_request.text if self.first_request else None,
            latest_user_message=self.latest_user.text if self.latest_user else None,
            latest_progress=self.latest_assistant.text if self.latest_assistant else None,
            compaction_summary=self.compaction_summary,
            compactions=self.compactions,
            transcript=entries,
            messages_total=self.messages_total,
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


def strip_compaction_instructions(text: str) -> str:
    """A compaction summary without what the CLI wrapped around it for the model that
    continued (Codex's "Another language model started to solve this problem..." prefix,
    Claude Code's "This session is being continued..." opening and resume instructions)."""
    body = text
    codex = _CODEX_PREFIX_START.match(body)
    if codex:
        end = body.find(_CODEX_PREFIX_END)
        # the whole preamble; a shorter variant without its closing words: its first sentence
        body = body[end + len(_CODEX_PREFIX_END) :] if 0 <= end < 1000 else body[codex.end() :]
    opening = _CLAUDE_PREAMBLE.match(body)
    if opening:
        body = body[opening.end() :]
        cut = min((i for i in (body.find(t) for t in _CLAUDE_TRAILERS) if i >= 0), default=-1)
        if cut >= 0:
            body = body[:cut]
    return body.strip()


@dataclass(slots=True)
class _OpenFailure:
    failure: FailureRecord
    run: Run


def extract(
    events: object,
    *,
    workspace: str | None,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Extracted:
    extractor = _Extractor(workspace=workspace, budget=_Budget(max_messages, max_chars))
    feed = extractor.feed
    for event in events:  # type: ignore[attr-defined]
        feed(event)
    return extractor.finish()


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


def new_extractor(*, workspace: str | None, max_messages: int, max_chars: int) -> _Extractor:
    """An empty extractor, fed event by event (`feed`) and closed with `finish`."""
    return _Extractor(workspace=workspace, budget=_Budget(max_messages, max_chars))
