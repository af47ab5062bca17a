"""Notes taken from the agent's prose: decisions, open questions, next steps, blockers.

Structured state (plan, commands, failures) comes from tool calls; these notes fill in
what only the agent's own words say, and the plan's open items come first.
"""

from __future__ import annotations

import re

from passdown.handoff import PlanEntry, State
from passdown.transcript import Message

MAX_NOTES = 8  # decisions / open questions / next steps taken from prose

_DECISION = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:\*\*)?(?:decision|decided|we decided|i decided|chose|choosing|going with|"
    r"opted|we'll use|i'll use|we will use|i will use|switched to|instead of)\b",
    re.IGNORECASE,
)
# "Next steps:", "**Next:** ...", "## Next", "Remaining:": a header, its rest and its bullets.
# A bare "next" must carry its colon ("Next: run the suite"), or any sentence starting
# with "Next" would be a header.
_NEXT_HEADER = re.compile(
    r"^\s*(?:#+\s*)?(?:[-*•]\s+)?(?:\*\*)?(?:(?:next steps?|next up|todo|remaining|still to do|"
    r"what's left)(?:\*\*)?\s*:?|next(?:\*\*)?\s*:)\s*(?:\*\*)?\s*(.*)$",
    re.IGNORECASE,
)
_NEXT_HEADING = re.compile(r"^\s*#+\s*(?:\*\*)?next(?:\*\*)?\s*:?\s*()$", re.IGNORECASE)
_NEXT_SENTENCE = re.compile(
    r"\b(?:next steps?\b|next up\b|next:|next,? i(?:'ll| will)|i(?:'ll| will) next|"
    r"then i(?:'ll| will)|remaining:|still (?:need|to do))",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_BLOCKER = re.compile(
    r"\b(?:blocked (?:on|by)|blocker|cannot proceed|can't proceed|waiting (?:on|for))\b",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")


def derive_notes(state: State, latest: Message | None, recent: list[Message]) -> None:
    """Fill next steps, blockers, decisions and open questions into `state`: the plan's
    open items and the open failure first, then what the latest messages say."""
    plan_next = [p.subject for p in state.plan if p.status == "in_progress"]
    plan_next += [p.subject for p in state.plan if p.status in ("pending", "blocked")]
    prose_next = _next_from_prose(latest.text) if latest else []
    state.next_steps = plan_next + [step for step in prose_next if step not in plan_next]
    done = {p.id for p in state.plan if p.status == "completed"}
    blocked = [p for p in state.plan if p.status == "blocked" or _open_blockers(p, done)]
    state.blockers = [
        f"{p.subject} (blocked by {', '.join(p.blocked_by)})"
        if p.blocked_by
        else f"{p.subject} (blocked)"
        for p in blocked
    ]
    if state.last_failure and not state.last_failure.resolved_later:
        fail = state.last_failure
        state.blockers.append(
            f"last command failed (exit {fail.exit_code}): {fail.command}"
            + (f" — {fail.error}" if fail.error else "")
        )
    assistant_texts = [m.text for m in recent if m.role == "assistant"]
    state.decisions = _matching_lines(assistant_texts, _DECISION)
    state.blockers += [
        b for b in _matching_lines(assistant_texts[-2:], _BLOCKER) if b not in state.blockers
    ]
    state.open_questions = _questions(latest.text) if latest else []


def _open_blockers(item: PlanEntry, done: set[str]) -> bool:
    return item.status != "completed" and any(b not in done for b in item.blocked_by)


def _next_from_prose(text: str) -> list[str]:
    """Next steps the agent stated in its latest message: a "Next steps:" list, or a
    sentence that names the next step."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _NEXT_HEADER.match(line) or _NEXT_HEADING.match(line)
        if not match:
            continue
        found = [match.group(1).strip()] if match.group(1).strip() else []
        for follow in lines[i + 1 :]:
            bullet = _BULLET.match(follow)
            if bullet:
                found.append(bullet.group(1))
            elif follow.strip() and found:
                break
        return [f for f in found if f][:MAX_NOTES]
    sentences = _SENTENCE_END.split(text)
    return [s.strip() for s in sentences if _NEXT_SENTENCE.search(s)][:MAX_NOTES]


def _matching_lines(texts: list[str], pattern: re.Pattern[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        for line in text.splitlines():
            if pattern.search(line):
                cleaned = _BULLET.sub(r"\1", line).strip().strip("*").strip()
                if cleaned and cleaned not in found and len(cleaned) <= 400:
                    found.append(cleaned)
    return found[-MAX_NOTES:]


def _questions(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        stripped = _BULLET.sub(r"\1", line).strip()
        if stripped.endswith("?") and 8 <= len(stripped) <= 400:
            found.append(stripped)
    return found[:MAX_NOTES]
