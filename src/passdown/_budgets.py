"""The handoff's budgets (`handoff.Limits`): where they come from and how a handoff is
cut to them.

A budget comes from the command's option, else the `[handoff]` table of the data
folder's config.toml, else its default:

    [handoff]
    max_plan_items = 40
    max_doc_chars = 100000

Each list keeps at most its budget, chosen for the agent taking over (the current
plan's open items, the newest commands and failures, ...), and counts what it leaves
out in `State.omitted`. The lists are cut before redaction (dropping whole items never
splits a secret, and redaction then works on the bounded lists); long texts are
shortened after it (a cut through an unredacted secret could hide it from the
patterns). HANDOFF.md as a whole is fitted to `max_doc_chars` when it is rendered
(`passdown._render`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import ValidationError

from passdown.errors import UsageError
from passdown.handoff import Handoff, Limits, PlanEntry, State

CONFIG_FILE = "config.toml"  # the data folder's (passdown.store._open reads [store] there)
CONFIG_TABLE = "handoff"
OPEN_STATUSES = ("in_progress", "blocked", "pending")  # in the order they fill a budget
# one item's text (a command, an error line, a plan subject, a path) and the task's texts
# (the request, the latest messages, the compaction summary), after redaction
ITEM_CHARS = 1_000
TASK_TEXT_CHARS = 20_000

T = TypeVar("T")


def load_limits(
    overrides: Mapping[str, int | None] | None = None, config: Path | None = None
) -> Limits:
    """The budgets: `overrides` (the options given; None: not given) over the config
    file's `[handoff]` table over the defaults. A bad value is a usage error."""
    values = _config_values(config if config is not None else _default_config())
    values.update({key: value for key, value in (overrides or {}).items() if value is not None})
    try:
        return Limits(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise UsageError(f"invalid handoff budget: {problems}") from None


def _default_config() -> Path:
    from passdown._paths import data_dir

    return data_dir() / CONFIG_FILE


def _config_values(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import tomllib

    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    table = config.get(CONFIG_TABLE, {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [{CONFIG_TABLE}] must be a table")
    known = set(Limits.model_fields)
    unknown = sorted(set(table) - known)
    if unknown:
        raise UsageError(
            f"{path}: unknown key(s) in [{CONFIG_TABLE}]: {', '.join(unknown)}",
            hint=f"known keys: {', '.join(sorted(known))}",
        )
    for key, value in table.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise UsageError(f"{path}: [{CONFIG_TABLE}] {key} must be a whole number")
    return dict(table)


# cutting the lists ----------------------------------------------------------------
def fit_lists(handoff: Handoff, limits: Limits) -> Handoff:
    """Cut every list of `handoff` to its budget, in place, adding what each leaves out
    to `state.omitted`; the handoff records the budgets it was cut to."""
    s, omitted = handoff.state, handoff.state.omitted
    s.plan, omitted.plan = _cut(s.plan, omitted.plan, _plan_order(s.plan), limits.max_plan_items)
    s.files_touched, omitted.files_touched = _cut(
        s.files_touched, omitted.files_touched, _files_order(s), limits.max_files
    )
    s.workspace_changes, omitted.workspace_changes = _first(
        s.workspace_changes, omitted.workspace_changes, limits.max_files
    )
    s.failed_edits, omitted.failed_edits = _last(
        s.failed_edits, omitted.failed_edits, limits.max_failures
    )
    s.commands, omitted.commands = _last(s.commands, omitted.commands, limits.max_commands)
    s.subagents, omitted.subagents = _last(s.subagents, omitted.subagents, limits.max_subagents)
    notes = limits.max_notes
    s.decisions, omitted.decisions = _last(s.decisions, omitted.decisions, notes)
    s.blockers, omitted.blockers = _cut(s.blockers, omitted.blockers, _blockers_order(s), notes)
    s.open_questions, omitted.open_questions = _first(
        s.open_questions, omitted.open_questions, notes
    )
    s.next_steps, omitted.next_steps = _first(s.next_steps, omitted.next_steps, notes)
    handoff.warnings, omitted.warnings = _first(
        handoff.warnings, omitted.warnings, limits.max_warnings
    )
    # the snapshot's dirty files: counted in full by its own `dirty_total`
    handoff.workspace.dirty = handoff.workspace.dirty[: limits.max_files]
    handoff.limits = limits
    return handoff


def _cut(items: list[T], omitted: int, order: Sequence[int], budget: int) -> tuple[list[T], int]:
    """The first `budget` items in preference `order`, kept in their own order."""
    if len(items) <= budget:
        return items, omitted
    kept = sorted(order[:budget])
    return [items[i] for i in kept], omitted + len(items) - len(kept)


def _first(items: list[T], omitted: int, budget: int) -> tuple[list[T], int]:
    return _cut(items, omitted, range(len(items)), budget)


def _last(items: list[T], omitted: int, budget: int) -> tuple[list[T], int]:
    return _cut(items, omitted, range(len(items) - 1, -1, -1), budget)


def _plan_order(plan: list[PlanEntry]) -> list[int]:
    """Open items first (in progress, blocked, then pending in plan order: the next to
    do), then the latest closed ones."""
    order: list[int] = []
    for status in OPEN_STATUSES:
        order += [i for i, item in enumerate(plan) if item.status == status]
    order += [i for i in range(len(plan) - 1, -1, -1) if plan[i].status not in OPEN_STATUSES]
    return order


def _files_order(s: State) -> list[int]:
    """What the session's own tool calls touched, the most recent first, then what git
    alone shows."""
    files = s.files_touched
    newest_first = range(len(files) - 1, -1, -1)
    return [i for i in newest_first if files[i].source != "git"] + [
        i for i in newest_first if files[i].source == "git"
    ]


def _blockers_order(s: State) -> list[int]:
    """The open failure's line first (the blocker the next agent meets first), then the
    rest in order."""
    failing = [i for i, b in enumerate(s.blockers) if b.startswith("last command failed")]
    return failing + [i for i in range(len(s.blockers)) if i not in failing]


# shortening long texts (after redaction) --------------------------------------------
def shorten_texts(handoff: Handoff) -> Handoff:
    """Every text of the handoff within its size (ITEM_CHARS, TASK_TEXT_CHARS): the
    beginning and the end kept, the cut marked. Run on the redacted handoff."""
    t, s = handoff.task, handoff.state
    t.original_request = shortened(t.original_request, TASK_TEXT_CHARS)
    t.latest_user_message = shortened(t.latest_user_message, TASK_TEXT_CHARS)
    t.latest_progress = shortened(t.latest_progress, TASK_TEXT_CHARS)
    t.compaction_summary = shortened(t.compaction_summary, TASK_TEXT_CHARS)
    for item in s.plan:
        item.subject = shortened(item.subject, ITEM_CHARS)
        item.description = shortened(item.description, ITEM_CHARS)
        item.active_form = shortened(item.active_form, ITEM_CHARS)
    for entry in [*s.files_touched, *s.workspace_changes]:
        entry.path = shortened(entry.path, ITEM_CHARS)
    for run in s.commands:
        run.command = shortened(run.command, ITEM_CHARS)
        run.error = shortened(run.error, ITEM_CHARS)
    for failure in [*s.failed_edits, *([s.last_failure] if s.last_failure else [])]:
        failure.command = shortened(failure.command, ITEM_CHARS)
        failure.path = shortened(failure.path, ITEM_CHARS)
        failure.error = shortened(failure.error, ITEM_CHARS)
    for sub in s.subagents:
        sub.task = shortened(sub.task, ITEM_CHARS)
    s.decisions = [shortened(text, ITEM_CHARS) for text in s.decisions]
    s.blockers = [shortened(text, ITEM_CHARS) for text in s.blockers]
    s.open_questions = [shortened(text, ITEM_CHARS) for text in s.open_questions]
    s.next_steps = [shortened(text, ITEM_CHARS) for text in s.next_steps]
    handoff.warnings = [shortened(w, ITEM_CHARS) for w in handoff.warnings]
    return handoff


@overload
def shortened(text: str, limit: int) -> str: ...
@overload
def shortened(text: None, limit: int) -> None: ...
@overload
def shortened(text: str | None, limit: int) -> str | None: ...
def shortened(text: str | None, limit: int) -> str | None:
    """`text` within `limit` characters: its beginning and end, the cut marked."""
    if text is None or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - head - tail} characters cut …]\n{text[-tail:]}"
