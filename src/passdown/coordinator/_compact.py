"""The context compactor: one budgeted pass over a handoff before it is handed over.

The budget is the core's `--max-chars` (`ExportOptions.max_chars`, which the extraction
already applied to the transcript alone); here it covers all the portable text the
next agent reads: the transcript plus the notes and the caller's values.

- Always kept: the original request, the latest request and progress, the current
  feature, blockers, next steps, decisions, the files touched (the last changes) and
  the last failure.
- Summarised: the recent-commands list shrinks to its failures plus the last few
  (the totals stay); long caller-supplied notes are shortened, never dropped.
- Dropped: transcript messages, oldest first, except the first request and the latest
  exchange; each cut is marked in the transcript, as the extraction does.
"""

from __future__ import annotations

from passdown._handoff_package import Compaction
from passdown.handoff import Handoff, TranscriptEntry

CHARS_PER_TOKEN = 4  # the usual rough rate; only used when a budget is given in tokens
KEEP_COMMANDS = 5
MAX_NOTE_CHARS = 2000
ALWAYS_KEPT = (
    "original request", "latest request", "latest progress", "current feature",
    "blockers", "next steps", "decisions", "files touched", "last failure",
)  # fmt: skip


def budget_chars(max_chars: int, max_tokens: int | None = None) -> int:
    """The character budget: `max_chars`, or tighter when a token budget is given."""
    if max_tokens is None:
        return max_chars
    return min(max_chars, max_tokens * CHARS_PER_TOKEN)


def portable_chars(h: Handoff, extra: list[str] | None = None) -> int:
    s, t = h.state, h.task
    texts = [t.original_request, t.latest_user_message, t.latest_progress, t.compaction_summary]
    texts += [e.text for e in t.transcript]
    texts += s.next_steps + s.blockers + s.decisions + s.open_questions
    texts += [c.command + (c.error or "") for c in s.commands]
    texts += [f.path for f in s.files_touched]
    texts += extra or []
    return sum(len(x) for x in texts if x)


def compact(
    h: Handoff, budget: int, *, extra: list[str] | None = None
) -> tuple[Handoff, Compaction]:
    """A copy of `h` whose portable text fits `budget` characters where it can."""
    h = h.model_copy(deep=True)
    summarised: list[str] = []
    dropped: list[str] = []
    _shorten_notes(h, summarised)
    if portable_chars(h, extra) > budget:
        _summarise_commands(h, summarised)
    _drop_transcript(h, budget, extra, dropped)
    report = Compaction(
        budget_chars=budget,
        used_chars=portable_chars(h, extra),
        kept=list(ALWAYS_KEPT),
        summarised=summarised,
        dropped=dropped,
    )
    return h, report


def _shorten_notes(h: Handoff, summarised: list[str]) -> None:
    s = h.state
    for name in ("next_steps", "blockers", "decisions", "open_questions"):
        items: list[str] = getattr(s, name)
        long = [i for i, item in enumerate(items) if len(item) > MAX_NOTE_CHARS]
        for i in long:
            items[i] = items[i][: MAX_NOTE_CHARS - 1] + "…"
        if long:
            summarised.append(f"{len(long)} long {name.replace('_', ' ')} shortened")


def _summarise_commands(h: Handoff, summarised: list[str]) -> None:
    commands = h.state.commands
    if len(commands) <= KEEP_COMMANDS:
        return
    tail = commands[-KEEP_COMMANDS:]
    failed = [c for c in commands[:-KEEP_COMMANDS] if c.ok is False]
    h.state.commands = failed + tail
    h.state.omitted.commands += len(commands) - len(h.state.commands)
    summarised.append(
        f"recent commands: kept {len(h.state.commands)} of {len(commands)} "
        f"(failures and the last {KEEP_COMMANDS}; totals unchanged)"
    )


def _drop_transcript(h: Handoff, budget: int, extra: list[str] | None, dropped: list[str]) -> None:
    entries = h.task.transcript
    real = [i for i, e in enumerate(entries) if e.role != "cut"]
    if len(real) <= 3:
        return
    first = real[0]
    protected = {first, *real[-2:]}  # the request and the latest exchange
    removed = 0
    for i in real[1:-2]:
        if portable_chars(h, extra) <= budget:
            break
        entries[i] = TranscriptEntry(role="cut", text="")
        removed += 1
        protected.discard(i)
    if not removed:
        return
    h.task.transcript = _merge_cuts(entries)
    h.task.messages_omitted += removed
    dropped.append(f"{removed} older transcript message(s)")


def _merge_cuts(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """Consecutive cut markers become one, with the total count."""
    out: list[TranscriptEntry] = []
    pending = 0
    for e in entries:
        if e.role == "cut":
            pending += _cut_count(e)
            continue
        if pending:
            out.append(TranscriptEntry(role="cut", text=f"[{pending} message(s) omitted]"))
            pending = 0
        out.append(e)
    if pending:
        out.append(TranscriptEntry(role="cut", text=f"[{pending} message(s) omitted]"))
    return out


def _cut_count(e: TranscriptEntry) -> int:
    digits = e.text[1:].split(" ", 1)[0] if e.text.startswith("[") else ""
    return int(digits) if digits.isdigit() else 1
