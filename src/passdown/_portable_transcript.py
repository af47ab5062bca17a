"""The portable transcript: which messages of the conversation a handoff carries word for
word within its budget (the first request and the latest exchange always stay, older
messages go first, every cut is marked). Extraction (`passdown._extract`) keeps the
recent messages; this picks from them at the end."""

from __future__ import annotations

import msgspec

from passdown.handoff import TranscriptEntry
from passdown.transcript import Message


class Budget(msgspec.Struct):
    """How much of the conversation a handoff carries word for word."""

    max_messages: int
    max_chars: int


def budgeted(
    first: Message | None, recent: list[Message], total: int, budget: Budget
) -> tuple[list[TranscriptEntry], int]:
    """The portable transcript: the first request and the latest exchange always stay;
    older messages go first when over budget; every cut is marked."""
    msgs = list(recent)
    if first is not None:  # the transcript starts at the first request (by identity)
        pos = next((i for i, m in enumerate(msgs) if m is first), None)
        msgs = msgs[pos:] if pos is not None else [first, *msgs]
    msgs = _fit_count(msgs, first, budget.max_messages)
    keep = _latest_exchange_size(msgs) + (1 if first is not None else 0)
    while len(msgs) > keep and _chars(msgs) > budget.max_chars:
        del msgs[1 if first is not None else 0]  # the oldest after the request
    texts = _shrink_texts(msgs, budget.max_chars)
    entries: list[TranscriptEntry] = []
    previous_index = -1
    positions = _positions(first, recent, msgs, total)
    for msg, (text, truncated), position in zip(msgs, texts, positions, strict=True):
        gap = position - previous_index - 1
        if gap > 0:
            entries.append(TranscriptEntry(role="cut", text=f"[{gap} message(s) omitted]"))
        entries.append(
            TranscriptEntry(role=msg.role, text=text, timestamp=msg.timestamp, truncated=truncated)
        )
        previous_index = position
    return entries, max(total - len(msgs), 0)


def _positions(
    first: Message | None, recent: list[Message], kept: list[Message], total: int
) -> list[int]:
    """Each kept message's index in the whole conversation (for marking gaps)."""
    base = total - len(recent)
    index_of = {id(m): base + i for i, m in enumerate(recent)}
    if first is not None and id(first) not in index_of:
        index_of[id(first)] = 0
    return [index_of[id(m)] for m in kept]


def _fit_count(msgs: list[Message], first: Message | None, limit: int) -> list[Message]:
    limit = max(limit, 2)
    if len(msgs) <= limit:
        return msgs
    if first is not None and msgs[0] is first:
        return [first, *msgs[-(limit - 1) :]]
    return msgs[-limit:]


def _latest_exchange_size(msgs: list[Message]) -> int:
    """The last user message and everything after it."""
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].role == "user":
            return len(msgs) - i
    return min(len(msgs), 1)


def _chars(msgs: list[Message]) -> int:
    return sum(len(m.text) for m in msgs)


def _shrink_texts(msgs: list[Message], max_chars: int) -> list[tuple[str, bool]]:
    """If what must stay is still over budget, shorten the longest texts (head + tail)."""
    total = _chars(msgs)
    if total <= max_chars or not msgs:
        return [(m.text, False) for m in msgs]
    share = max(max_chars // len(msgs), 200)
    out = []
    for m in msgs:
        if len(m.text) <= share:
            out.append((m.text, False))
            continue
        head = share * 2 // 3
        tail = share - head
        cut = len(m.text) - head - tail
        out.append((f"{m.text[:head]}\n[… {cut} characters cut …]\n{m.text[-tail:]}", True))
    return out
