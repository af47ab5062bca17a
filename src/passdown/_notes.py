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
# "Next:" inside a sentence ("Fixed it. Next: run the suite"): the step is what follows
_NEXT_LABEL = re.compile(
    r"(?:\*\*)?\bnext(?: steps?| up)?(?:\*\*)?\s*:\s*(?:\*\*)?\s*", re.IGNORECASE
)
# "Open question: ...", "Question: ...", "Q: ..." (that one only starting a line): a
# question the agent asked, with or without its "?"
_QUESTION_LABEL = re.compile(
    r"(?:^\s*(?:[-*•]\s+|\d+[.)]\s+)?(?:\*\*|__)?q|(?:^|(?<=[\s*_(>]))(?:\*\*|__)?"
    r"(?:open questions?|questions?))(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*)$",
    re.IGNORECASE,
)
_QUESTION_END = re.compile(r"\?|(?<=[.!])\s")


def derive_notes(state: State, latest: Message | None, recent: list[Message]) -> None:
    """Fill next steps, blockers, decisions and open questions into `state`: the plan's
    open items and the open failure first, then what the latest messages say."""
    plan_next = [p.subject for p in state.plan if p.status == "in_progress"]
    plan_next += [p.subject for p in state.plan if p.status in ("pending", "blocked")]
    prose_next = _next_from_prose(latest.text) if latest else []
    state.next_steps = _distinct(plan_next + prose_next)
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
    state.open_questions = _questions(latest.text if latest else "", assistant_texts)


_NOT_WORDS = re.compile(r"[\W_]+")


def _distinct(steps: list[str]) -> list[str]:
    """Each step once: the plan's "Add a test for shout()" and the prose's "add a test
    for shout()." are one step (compared without case, punctuation or spacing); the
    first one said is kept."""
    seen: set[str] = set()
    kept: list[str] = []
    for step in steps:
        key = _NOT_WORDS.sub(" ", step).strip().casefold()
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(step)
    return kept


def _open_blockers(item: PlanEntry, done: set[str]) -> bool:
    return item.status != "completed" and any(b not in done for b in item.blocked_by)


def _next_from_prose(text: str) -> list[str]:
    """Next steps the agent stated in its latest message: a "Next steps:" list, or a
    sentence that names the next step (without its "Next:" label)."""
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
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if _NEXT_SENTENCE.search(s)]
    return [_without_next_label(s) for s in sentences][:MAX_NOTES]


def _without_next_label(sentence: str) -> str:
    label = _NEXT_LABEL.search(sentence)
    rest = sentence[label.end() :].strip() if label else ""
    return rest or sentence


def _matching_lines(texts: list[str], pattern: re.Pattern[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        for line in text.splitlines():
            if pattern.search(line):
                cleaned = _BULLET.sub(r"\1", line).strip().strip("*").strip()
                if cleaned and cleaned not in found and len(cleaned) <= 400:
                    found.append(cleaned)
    return found[-MAX_NOTES:]


def _questions(latest: str, recent: list[str]) -> list[str]:
    """Open questions: what the agent labelled one ("Open question: ...", "Question:",
    "Q:", or the items under an "Open questions:" header) in its recent messages, and
    the lines of its latest message that end with "?"."""
    found: list[str] = []
    for text in recent:
        for question in _labelled_questions(text):
            if question in found:
                found.remove(question)  # asked again: it counts where it was asked last
            found.append(question)
    for line in latest.splitlines():
        stripped = _BULLET.sub(r"\1", line).strip()
        asked = stripped.endswith("?") and 8 <= len(stripped) <= 400
        if asked and stripped not in found and not _QUESTION_LABEL.search(stripped):
            found.append(stripped)
    return found[-MAX_NOTES:]


def _labelled_questions(text: str) -> list[str]:
    found: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        label = _QUESTION_LABEL.search(line)
        if label is None:
            continue
        rest = label.group(1).strip().strip("*_").strip()
        if not rest:  # a header: its bullets are the questions
            found += _bullets_after(lines, i)
            continue
        end = _QUESTION_END.search(rest)
        question = rest[: end.end()].strip() if end else rest
        if 3 <= len(question) <= 400:
            found.append(question)
    return found


def _bullets_after(lines: list[str], header: int) -> list[str]:
    found: list[str] = []
    for follow in lines[header + 1 :]:
        bullet = _BULLET.match(follow)
        if bullet:
            found.append(bullet.group(1).strip())
        elif follow.strip():
            break
    return found
