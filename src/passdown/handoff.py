"""The handoff: what `handoff.json` holds, validated, with a published JSON Schema.

HANDOFF.md, the launch prompt and the stored record are all rendered from this one
model, after redaction, so they can never disagree with each other.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

# the rules every handoff carries: in a light module of their own for the session-start hook
from passdown._contract import TAKEOVER_CONTRACT as TAKEOVER_CONTRACT
from passdown._model_defaults import empty_list
from passdown._workspace import WorkspaceSnapshot
from passdown.transcript import PLAN_KEEP, EndReason

SCHEMA_ID: Final = "passdown.handoff/1"


class _Model(BaseModel):
    # each model's validator is built when first used: a hook builds only those it uses
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Source(_Model):
    agent: str
    session_id: str
    agent_version: str | None = None
    models: list[str] = Field(default_factory=empty_list)
    started_at: str | None = None
    updated_at: str | None = None
    title: str | None = None
    cwd: str | None = None
    transcript_path: str
    transcript_sha256: str | None = Field(
        default=None,
        description=(
            "The session file's digest as read: a SHA-256 chain over its 2 MiB blocks "
            "(passdown._digest), which incremental export can resume; not the file's "
            "sha256sum. Agents whose sessions are databases hash the rows read."
        ),
    )


class TranscriptEntry(_Model):
    role: Literal["user", "assistant", "cut"]
    text: str
    timestamp: str | None = None
    truncated: bool = False  # the text itself was shortened to fit the budget


class Task(_Model):
    original_request: str | None = None
    latest_user_message: str | None = None
    latest_progress: str | None = None
    compaction_summary: str | None = None
    compactions: int = 0
    transcript: list[TranscriptEntry] = Field(default_factory=empty_list)
    messages_total: int = 0
    messages_omitted: int = 0


PlanStatus = Literal["pending", "in_progress", "completed", "blocked", "cancelled"]


class PlanEntry(_Model):
    id: str
    subject: str
    status: PlanStatus = "pending"
    description: str | None = None
    active_form: str | None = None
    blocked_by: list[str] = Field(default_factory=empty_list)


class FileTouched(_Model):
    path: str
    actions: list[str] = Field(default_factory=empty_list)  # write, edit, delete, or git's status
    # "tool": a successful edit/write tool call; "git": seen changed in the workspace
    # (edits made through shell commands leave no tool record)
    source: Literal["tool", "git", "tool+git"] = "tool"
    confirmed: bool = True  # False when the session ended before the tool reported back
    by: str | None = (
        None  # the sub-agent (id) whose tool call touched it, if not the session's own agent
    )


class CommandRun(_Model):
    command: str
    exit_code: int | None = None
    ok: bool | None = None
    error: str | None = None  # first error line, only for failures
    timestamp: str | None = None
    by: str | None = None  # the sub-agent (id) that ran it


class Failure(_Model):
    tool: str
    command: str | None = None
    path: str | None = None
    exit_code: int | None = None
    error: str | None = None
    timestamp: str | None = None
    resolved_later: bool = False  # the same command later succeeded
    by: str | None = None  # the sub-agent (id) whose call failed


class Subagent(_Model):
    id: str
    path: str | None = None
    agent_type: str | None = None  # e.g. Claude's subagent_type
    task: str | None = None  # what it was asked to do (its description, not the user's request)


class Ended(_Model):
    """How the session ended: `normal` unless its files record something else."""

    reason: EndReason = "normal"
    at: str | None = None
    message: str | None = None


# The most items extraction keeps of each list (what bounds its memory); a budget
# (`Limits`) can be at most this. The plan's is `transcript.PLAN_KEEP`.
FILES_KEEP = 2000
COMMANDS_KEEP = 100
FAILED_EDITS_KEEP = 100
SUBAGENTS_KEEP = 200
NOTES_KEEP = 100
WARNINGS_KEEP = 200


class Limits(_Model):
    """The budgets this handoff was cut to: each list keeps at most this many items and
    counts the rest in `State.omitted`; HANDOFF.md as a whole fits in `max_doc_chars`
    (the current plan's open items and the last failure always stay). Set by the
    options of inspect/export/switch or the `[handoff]` table of config.toml."""

    max_plan_items: int = Field(default=40, ge=1, le=PLAN_KEEP)
    max_files: int = Field(default=50, ge=1, le=FILES_KEEP)  # files_touched, workspace_changes
    max_commands: int = Field(default=20, ge=1, le=COMMANDS_KEEP)
    max_failures: int = Field(default=10, ge=1, le=FAILED_EDITS_KEEP)  # failed_edits
    max_subagents: int = Field(default=20, ge=1, le=SUBAGENTS_KEEP)
    max_notes: int = Field(default=10, ge=1, le=NOTES_KEEP)  # decisions, blockers, ... each
    max_warnings: int = Field(default=20, ge=1, le=WARNINGS_KEEP)
    max_doc_chars: int = Field(default=100_000, ge=10_000, le=10_000_000)


def _count(description: str) -> int:
    return Field(default=0, ge=0, description=description)


class Omitted(_Model):
    """How many items each list of the handoff leaves out to stay in its budget
    (`Limits`); 0: the list is whole. The transcript's own count is
    `task.messages_omitted`, the workspace's dirty files' `workspace.dirty_total`."""

    plan: int = _count(
        "current-plan items not listed: the oldest completed or cancelled first, then the "
        "newest pending (open items fill the budget first)"
    )
    plan_set_aside: int = _count(
        "tasks of an earlier plan, set aside when a later task reused their id (a forked "
        "Claude Code session numbers its tasks from 1 again): counted, never listed"
    )
    files_touched: int = _count("files touched not listed: the least recently touched")
    workspace_changes: int = _count("workspace changes not listed")
    failed_edits: int = _count("failed edits not listed: the oldest")
    commands: int = _count("commands not listed: the oldest (commands_total counts all)")
    subagents: int = _count("sub-agents not listed: the oldest")
    decisions: int = _count("decisions not listed")
    blockers: int = _count("blockers not listed")
    open_questions: int = _count("open questions not listed")
    next_steps: int = _count("next steps not listed: the last ones")
    warnings: int = _count("the handoff's top-level warnings not listed: the last ones")

    def total(self) -> int:
        return sum(self.model_dump().values())


class State(_Model):
    plan: list[PlanEntry] = Field(default_factory=empty_list)
    plan_source: str | None = None  # which tool or file the plan came from
    files_touched: list[FileTouched] = Field(default_factory=empty_list)
    # changed in git while the session ran, but no tool call of this session (or of a
    # concurrent session) explains them: listed apart, never claimed as this session's work
    workspace_changes: list[FileTouched] = Field(default_factory=empty_list)
    failed_edits: list[Failure] = Field(default_factory=empty_list)
    commands: list[CommandRun] = Field(default_factory=empty_list)  # the most recent ones
    commands_total: int = 0
    commands_failed: int = 0
    last_failure: Failure | None = None
    decisions: list[str] = Field(default_factory=empty_list)
    blockers: list[str] = Field(default_factory=empty_list)
    open_questions: list[str] = Field(default_factory=empty_list)
    next_steps: list[str] = Field(default_factory=empty_list)
    subagents: list[Subagent] = Field(default_factory=empty_list)
    subagent_calls: int = 0
    omitted: Omitted = Field(
        default_factory=Omitted,
        description="how many items each list (and the handoff's warnings) leaves out",
    )


class Redaction(_Model):
    applied: bool = False
    findings: dict[str, int] = Field(default_factory=dict)


class Handoff(_Model):
    schema_: Literal["passdown.handoff/1"] = Field(default=SCHEMA_ID, alias="schema")
    id: str
    created_at: str
    source: Source
    target_agent: str | None = None
    ended: Ended = Field(default_factory=Ended)
    task: Task
    state: State
    workspace: WorkspaceSnapshot
    contract: list[str] = Field(default_factory=lambda: list(TAKEOVER_CONTRACT))
    warnings: list[str] = Field(default_factory=empty_list)  # state.omitted.warnings: cut ones
    redaction: Redaction = Field(default_factory=Redaction)
    limits: Limits = Field(
        default_factory=Limits, description="the budgets the lists and HANDOFF.md were cut to"
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def handoff_json_schema() -> dict[str, object]:
    schema = Handoff.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://passdown.dev/schemas/handoff.schema.json"
    return schema


def handoff_schema_text() -> str:
    import json

    return json.dumps(handoff_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m passdown.handoff > schemas/handoff.schema.json
    import sys

    sys.stdout.write(handoff_schema_text())
