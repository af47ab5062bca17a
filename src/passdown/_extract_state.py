"""An extractor between two events as plain data, and back (checkpoints of incremental
export, and a two-core read's worker, send it): `extractor_state` and `restore_extractor`
continue exactly where extraction stopped."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from passdown._extract import (
    CommandRecord,
    FailureRecord,
    _Extractor,
    _OpenFailure,
)
from passdown._portable_transcript import Budget
from passdown._test_runs import Run
from passdown.handoff import FileTouched, Subagent
from passdown.transcript import Message, Plan, PlanItem, SessionEnding, ToolCall


class ExtractorState(msgspec.Struct, omit_defaults=True):
    """An `_Extractor` between two events, as data (for incremental export). Messages
    keep their identity where extraction compares by identity: the first request is
    stored as its place in `recent` when it is there, and the latest failure as its
    place in `open_failures` (a later passing run marks that same object resolved)."""

    workspace: str | None
    max_messages: int
    max_chars: int
    recent: list[Message] = []
    first_request: Message | None = None
    first_in_recent: int = -1
    latest_user: Message | None = None
    latest_assistant: Message | None = None
    messages_total: int = 0
    compactions: int = 0
    compaction_summary: str | None = None
    pending: list[ToolCall] = []
    plan: list[PlanItem] = []
    plan_source: str | None = None
    plan_counter: int = 0
    plan_set_aside: int = 0
    plan_dropped: int = 0
    files: list[dict[str, Any]] = []
    files_evicted: int = 0
    failed_edits: list[FailureRecord] = []
    failed_edits_total: int = 0
    commands: list[CommandRecord] = []
    commands_total: int = 0
    commands_failed: int = 0
    latest_failure: FailureRecord | None = None
    latest_failure_in_open: int = -1
    open_failures: list[FailureRecord] = []
    subagents: list[dict[str, Any]] = []
    subagents_total: int = 0
    subagent_calls: int = 0
    ending: SessionEnding | None = None


def extractor_state(extractor: _Extractor) -> ExtractorState:
    """The extractor's state before `finish` (which consumes the pending calls)."""
    recent = list(extractor.recent)
    first_in_recent = _index_by_identity(recent, extractor.first_request)
    open_failures = [item.failure for item in extractor.open_failures]
    latest_in_open = _index_by_identity(open_failures, extractor.latest_failure)
    return ExtractorState(
        workspace=extractor.workspace,
        max_messages=extractor.budget.max_messages,
        max_chars=extractor.budget.max_chars,
        recent=recent,
        first_request=extractor.first_request if first_in_recent < 0 else None,
        first_in_recent=first_in_recent,
        latest_user=extractor.latest_user,
        latest_assistant=extractor.latest_assistant,
        messages_total=extractor.messages_total,
        compactions=extractor.compactions,
        compaction_summary=extractor.compaction_summary,
        pending=list(extractor.pending.values()),
        plan=list(extractor.plan.values()),
        plan_source=extractor.plan_source,
        plan_counter=extractor.plan_counter,
        plan_set_aside=extractor.replay.set_aside,
        plan_dropped=extractor.replay.dropped,
        files=[entry.model_dump() for entry in extractor.files.values()],
        files_evicted=extractor.files_evicted,
        failed_edits=list(extractor.failed_edits),
        failed_edits_total=extractor.failed_edits_total,
        commands=list(extractor.commands),
        commands_total=extractor.commands_total,
        commands_failed=extractor.commands_failed,
        latest_failure=extractor.latest_failure if latest_in_open < 0 else None,
        latest_failure_in_open=latest_in_open,
        open_failures=open_failures,
        subagents=[s.model_dump() for s in extractor.subagents],
        subagents_total=extractor.subagents_total,
        subagent_calls=extractor.subagent_calls,
        ending=extractor.ending,
    )


def restore_extractor(state: ExtractorState) -> _Extractor:
    """An extractor that continues exactly where `extractor_state` left it."""
    extractor = _Extractor(
        workspace=state.workspace, budget=Budget(state.max_messages, state.max_chars)
    )
    extractor.recent.extend(state.recent)
    if 0 <= state.first_in_recent < len(extractor.recent):
        extractor.first_request = extractor.recent[state.first_in_recent]
    else:
        extractor.first_request = state.first_request
    extractor.latest_user = state.latest_user
    extractor.latest_assistant = state.latest_assistant
    extractor.messages_total = state.messages_total
    extractor.compactions = state.compactions
    extractor.compaction_summary = state.compaction_summary
    extractor.pending = {call.call_id: call for call in state.pending}
    extractor.replay = Plan(
        items={item.id: item for item in state.plan},
        counter=state.plan_counter,
        set_aside=state.plan_set_aside,
        dropped=state.plan_dropped,
    )
    extractor.plan_source = state.plan_source
    extractor.files = OrderedDict((entry["path"], FileTouched(**entry)) for entry in state.files)
    extractor.files_evicted = state.files_evicted
    extractor.failed_edits.extend(state.failed_edits)
    extractor.failed_edits_total = state.failed_edits_total
    extractor.commands.extend(state.commands)
    extractor.commands_total = state.commands_total
    extractor.commands_failed = state.commands_failed
    failures = list(state.open_failures)
    extractor.open_failures.extend(_OpenFailure(f, Run.of(f.command or "")) for f in failures)
    if 0 <= state.latest_failure_in_open < len(failures):
        extractor.latest_failure = failures[state.latest_failure_in_open]
    else:
        extractor.latest_failure = state.latest_failure
    extractor.subagents.extend(Subagent(**s) for s in state.subagents)
    extractor.subagents_total = state.subagents_total
    extractor.subagent_calls = state.subagent_calls
    extractor.ending = state.ending
    return extractor


def _index_by_identity(items: list[Any], wanted: object) -> int:
    if wanted is None:
        return -1
    return next((i for i, item in enumerate(items) if item is wanted), -1)
