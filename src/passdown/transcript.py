"""The normalised transcript: what every agent adapter produces and extraction consumes.

Adapters stream a session file and yield `Event`s in conversation order (for agents
whose history is a tree, only the active branch). Events are agent-neutral: a tool
call says what it *does* (edit files, run a command, change the plan), so extraction
never needs to know which agent wrote the session.

Events are msgspec Structs (slotted, built in C at half a slotted dataclass's cost: a
large session yields millions of them) rather than pydantic models; the handoff model
(`passdown.handoff`) is the validated, published shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

ToolAction = Literal["edit", "write", "delete", "command", "plan", "subagent", "read", "other"]
PlanStatus = Literal["pending", "in_progress", "completed", "deleted", "blocked", "cancelled"]
# How a session ended. Anything but "normal" means the next agent should know the last
# turn did not finish on its own terms (the seed's main case: a usage or rate limit).
EndReason = Literal[
    "rate_limit",
    "usage_limit",
    "overloaded",
    "auth",
    "context_length",
    "error",
    "interrupted",
    "normal",
]


class SessionRef(msgspec.Struct):
    """A session found on disk: enough to list and select it without reading it."""

    agent: str
    session_id: str
    path: Path
    cwd: str | None = None
    started_at: str | None = None  # ISO 8601, as the agent wrote it
    updated_at: float = 0.0  # file mtime (epoch seconds): what "newest" means
    size: int = 0
    title: str | None = None
    # Why discovery could not tell which workspace the session ran in (its first records
    # run past what discovery reads: `agents._record_fields`), for a session found where
    # the workspace's sessions are kept; None when placed (or not looked for). Listed
    # with its workspace unknown, and never passed over for an older session.
    unplaced: str | None = None


class PlanItem(msgspec.Struct):
    id: str
    subject: str
    status: PlanStatus = "pending"
    description: str | None = None
    active_form: str | None = None
    blocked_by: tuple[str, ...] = ()


class PlanOp(msgspec.Struct):
    """A change to the plan: replace the whole list, create one item, or update one."""

    op: Literal["replace", "create", "update"]
    items: tuple[PlanItem, ...] = ()  # replace: the whole list; create: one item
    item_id: str | None = None  # update: which item
    status: PlanStatus | None = None  # update: its new status
    subject: str | None = None  # update: a new subject, if changed
    # replace: what the list being replaced counted and left out (`Plan.set_aside`,
    # `Plan.dropped`); set by a replacement that only fills gaps of the same plan
    set_aside: int = 0
    dropped: int = 0


# The most items a plan replay keeps (open ones first, then the latest closed ones):
# far above any handoff's plan budget; it bounds a replay's memory and work.
PLAN_KEEP = 1000
_CLOSED = ("completed", "cancelled")


class Plan(msgspec.Struct):
    """The plan as replayed, id -> item in plan order, bounded: the one replay that
    extraction and the readers checking a plan share.

    A created id already in the plan is reused: Claude Code numbers its tasks within a
    session, and a forked session numbers them again from 1. The new task takes the id
    (later updates name it); the earlier one belongs to an earlier plan and is counted in
    `set_aside`, not kept. Past `2 * PLAN_KEEP` items the plan is cut back to
    `PLAN_KEEP` (the oldest closed items first, then the newest pending ones, then the
    oldest of the rest) and the cut is counted in `dropped`: amortised O(1) per operation whatever repeats."""

    items: dict[str, PlanItem] = msgspec.field(default_factory=dict)
    counter: int = 0  # items created so far: a created item without an id takes its number
    set_aside: int = 0
    dropped: int = 0

    def apply(self, op: PlanOp, created_id: str | None = None) -> bool:
        """Replay one change in place; True when a created id was reused. A created item
        takes the id the tool's result gave it, else its own, else its creation number."""
        items = self.items
        kind = op.op
        if kind == "create":  # the common changes first: a replay runs one per plan call
            reused = False
            for item in op.items:
                self.counter += 1
                key = created_id or item.id or str(self.counter)
                if items.pop(key, None) is not None:  # the new task goes last, as created
                    self.set_aside += 1
                    reused = True
                items[key] = PlanItem(
                    key, item.subject, item.status, item.description, item.active_form
                )
            if len(items) > 2 * PLAN_KEEP:
                self._bound()
            return reused
        if kind == "update":
            found = items.get(op.item_id or "")
            if found is not None:
                if op.status == "deleted":
                    del items[found.id]
                else:
                    found.status = op.status or found.status
                    found.subject = op.subject or found.subject
            return False
        items.clear()  # a replacement
        items.update((item.id, item) for item in op.items)
        self.set_aside, self.dropped = op.set_aside, op.dropped
        self._bound()
        return False

    def _bound(self) -> None:
        if len(self.items) <= 2 * PLAN_KEEP:
            return
        excess = len(self.items) - PLAN_KEEP
        closed = [k for k, v in self.items.items() if v.status in _CLOSED]
        newest_pending = [k for k, v in reversed(self.items.items()) if v.status == "pending"]
        others = [k for k, v in self.items.items() if v.status not in (*_CLOSED, "pending")]
        for key in [*closed, *newest_pending, *others][:excess]:
            del self.items[key]
        self.dropped += excess


class Message(msgspec.Struct):
    role: Literal["user", "assistant"]
    text: str
    timestamp: str | None = None
    # a user message that is really a compaction summary, a command wrapper, etc.
    synthetic: bool = False


class ToolCall(msgspec.Struct):
    call_id: str
    name: str
    action: ToolAction = "other"
    paths: tuple[str, ...] = ()
    command: str | None = None
    plan: PlanOp | None = None
    timestamp: str | None = None
    # the sub-agent that made the call (its id), None for the session's own agent
    by: str | None = None


class ToolResult(msgspec.Struct):
    call_id: str
    is_error: bool = False
    exit_code: int | None = None
    # first error line(s), only for failures; never the raw output of a success
    error: str | None = None
    # for plan tools whose result names the created item (Claude TaskCreate)
    created_item_id: str | None = None
    timestamp: str | None = None


class Compaction(msgspec.Struct):
    """The agent compacted its context; `summary` is the prior context it kept."""

    summary: str | None
    trigger: str | None = None
    timestamp: str | None = None


class SubagentNote(msgspec.Struct):
    """A sub-agent ran. Its tool calls, when its transcript can be read, follow as
    events with `by` set to `agent_id`; its prompt is never the user's request."""

    agent_id: str
    path: str | None = None
    description: str | None = None
    agent_type: str | None = None


class SessionEnding(msgspec.Struct):
    """The turn stopped on something other than the agent's own final answer (an API
    error record, an interruption). A later assistant message or tool call means the
    session recovered, so extraction keeps only an ending that nothing follows."""

    reason: EndReason
    message: str | None = None
    timestamp: str | None = None


Event = Message | ToolCall | ToolResult | Compaction | PlanOp | SubagentNote | SessionEnding


class SessionInfo(msgspec.Struct):
    """Facts about the session, filled in by the adapter while it reads."""

    agent: str
    session_id: str
    path: Path
    cwd: str | None = None
    agent_version: str | None = None
    models: list[str] = msgspec.field(default_factory=list)
    started_at: str | None = None
    updated_at: str | None = None
    git_branch: str | None = None
    title: str | None = None

    def add_model(self, model: str | None) -> None:
        if model and model != "<synthetic>" and model not in self.models:
            self.models.append(model)


class Diagnostics(msgspec.Struct):
    """What the reader skipped or could not read; surfaced as warnings, never raised."""

    lines: int = 0
    bad_lines: int = 0
    torn_last_line: bool = False
    oversized_lines: int = 0
    unknown_types: dict[str, int] = msgspec.field(default_factory=dict)
    off_branch_records: int = 0
    sidechain_records: int = 0
    warnings: list[str] = msgspec.field(default_factory=list)

    def unknown(self, record_type: str) -> None:
        # A type name is the session's own text: bounded, so a hostile 20 MB `type` costs
        # nothing further on (redaction, rendering) and cannot flood the warnings.
        if len(record_type) > 80:
            record_type = record_type[:79] + "…"
        self.unknown_types[record_type] = self.unknown_types.get(record_type, 0) + 1

    def add(self, later: Diagnostics) -> None:
        """What a reader of a later part of the file noted (a window read after the
        checkpoint)."""
        self.lines += later.lines
        self.bad_lines += later.bad_lines
        self.torn_last_line = self.torn_last_line or later.torn_last_line
        self.oversized_lines += later.oversized_lines
        for kind, count in later.unknown_types.items():
            self.unknown_types[kind] = self.unknown_types.get(kind, 0) + count
        self.off_branch_records += later.off_branch_records
        self.sidechain_records += later.sidechain_records
        self.warnings.extend(later.warnings)

    def summary(self) -> list[str]:
        out = list(self.warnings)
        if self.torn_last_line:
            out.append("the last line of the session file was incomplete and was ignored")
        if self.bad_lines:
            out.append(f"{self.bad_lines} unreadable line(s) were skipped")
        if self.oversized_lines:
            out.append(f"{self.oversized_lines} oversized line(s) were skipped")
        if self.unknown_types:
            kinds = ", ".join(f"{k} x{v}" for k, v in sorted(self.unknown_types.items()))
            out.append(f"unknown record types skipped: {kinds}")
        return out


class Transcript(msgspec.Struct):
    """A session being read. Iterate `events()` once; `info` and `diagnostics` are
    complete after the iteration ends."""

    info: SessionInfo
    diagnostics: Diagnostics
    _events: Iterator[Event]
    sha256: str | None = None  # filled by the reader once the whole file was hashed

    def events(self) -> Iterator[Event]:
        return self._events
