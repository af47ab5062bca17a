"""HANDOFF.md and the launch prompt, both rendered from the (already redacted) handoff.

The top of HANDOFF.md fits one screen: goal, where things stand, the next step.
Details follow for whoever needs them.
"""

from __future__ import annotations

import msgspec

from passdown._text import one_line, safe_text
from passdown.handoff import Handoff

SUMMARY_LINE_CHARS = 400
PROMPT_SUMMARY_CHARS = 6000
INLINE_VALUE_CHARS = 1000
_STATUS_MARK = {
    "completed": "[x]",
    "in_progress": "[~]",
    "pending": "[ ]",
    "blocked": "[!]",
    "cancelled": "[-]",
}


def _one_line(text: str | None, limit: int = SUMMARY_LINE_CHARS) -> str:
    if not text:
        return "(none)"
    return one_line(text, limit) or "(none)"


def _v(text: object, limit: int = INLINE_VALUE_CHARS) -> str:
    """Any value rendered inside a line (a path, a version, a branch): one line, so a
    newline in it can never start a heading of its own."""
    return one_line("" if text is None else str(text), limit)


def _code(text: str | None) -> str:
    """An inline code span that no backtick inside the value can close early."""
    value = _v(text)
    longest = run = 0
    for ch in value:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def _fence(text: str) -> str:
    """Quote text as data: a fence longer than any backtick run inside it."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


_ENDED_TEXT = {
    "normal": "normally (the agent's last turn finished)",
    "rate_limit": "on a rate limit (HTTP 429)",
    "usage_limit": "on the agent's usage limit",
    "overloaded": "on an API overload (HTTP 529/503)",
    "auth": "on an authentication error",
    "context_length": "on a context-length error",
    "error": "on an API error",
    "interrupted": "interrupted before the turn finished",
}


def ended_line(h: Handoff) -> str:
    """One line on how the source session ended, with when and the agent's own message."""
    line = _ENDED_TEXT.get(h.ended.reason, h.ended.reason)
    if h.ended.at:
        line += f" at {h.ended.at}"
    if h.ended.message:
        line += f": {h.ended.message}"
    return _one_line(line)


def summary_block(h: Handoff) -> str:
    """The one-screen top: what the next agent must read first."""
    ws = h.workspace
    done = sum(1 for p in h.state.plan if p.status == "completed")
    lines = [
        f"**Goal:** {_one_line(h.task.original_request)}",
        f"**How it ended:** {ended_line(h)}",
        f"**Latest request:** {_one_line(h.task.latest_user_message)}",
        f"**Where it stands:** {_one_line(h.task.latest_progress)}",
    ]
    if h.state.plan:
        more = h.state.omitted.plan
        lines.append(
            f"**Plan:** {done}/{len(h.state.plan)} done"
            + (f", {more} more not listed" if more else "")
        )
    if h.state.next_steps:
        lines.append(f"**Next step:** {_one_line(h.state.next_steps[0])}")
    if h.state.blockers:
        lines.append(f"**Blockers:** {_one_line('; '.join(h.state.blockers))}")
    where = _v(ws.path)
    if ws.is_git:
        where += f" on {_v(ws.branch or '(detached)')} at {_v((ws.head or 'no commits')[:12])}"
        where += f", {ws.dirty_total} uncommitted change(s)"
    lines.append(f"**Workspace:** {where}")
    lines.append(
        f"**From:** {_v(h.source.agent)} session {_v(h.source.session_id)}"
        + (f" ({_v(h.source.agent_version)})" if h.source.agent_version else "")
    )
    return "\n".join(f"- {line}" for line in lines)


class _Section(msgspec.Struct):
    """A part of HANDOFF.md the document budget can shorten: its items go one by one
    (from the start or the end) and the cut is marked; `required` items never go."""

    head: list[str]
    items: list[list[str]] = msgspec.field(default_factory=list)
    tail: list[str] = msgspec.field(default_factory=list)
    rank: int = 0  # the order sections are cut in (lowest first); 0: never cut
    from_end: bool = False  # cut the last items first (else the first)
    required: set[int] = msgspec.field(default_factory=set)  # indices of items that always stay
    cut: int = 0

    def escaped(self) -> _Section:
        """The section without terminal control sequences (`safe_text`), measured as it
        will be written: escaping a control character lengthens the text."""
        self.head = [safe_text(line) for line in self.head]
        self.items = [[safe_text(line) for line in item] for item in self.items]
        self.tail = [safe_text(line) for line in self.tail]
        return self

    def lines(self) -> list[str]:
        if not self.cut:
            return [*self.head, *(line for item in self.items for line in item), *self.tail]
        marker = (
            f"*({self.cut} item(s) cut here to fit HANDOFF.md's size budget; see handoff.json)*"
        )
        body = [line for item in self.items for line in item]
        return [*self.head, *([*body, marker] if self.from_end else [marker, *body]), *self.tail]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def render_markdown(h: Handoff) -> str:
    """HANDOFF.md, within `h.limits.max_doc_chars` characters: lower-priority sections
    are cut first (the transcript, then the compaction summary, the workspace's file
    list, sub-agents, ... the plan's closed items last), every cut marked; the summary,
    the contract, the current plan's open items and the last failure always stay."""
    sections = [section.escaped() for section in _sections(h)]
    _fit(sections, h.limits.max_doc_chars)
    text = "\n".join(line for section in sections for line in section.lines())
    return text.rstrip() + "\n"


def _sections(h: Handoff) -> list[_Section]:
    top = _Section(
        head=[
            "# Handoff",
            "",
            summary_block(h),
            "",
            "## Takeover contract",
            *[f"{n}. {_v(rule)}" for n, rule in enumerate(h.contract, 1)],
            "",
        ]
    )
    s = h.state
    return [
        top,
        _plan_section(h),
        _list_section("Next steps", s.next_steps, s.omitted.next_steps, rank=11),
        _list_section("Blockers", s.blockers, s.omitted.blockers, rank=11),
        _list_section("Decisions", s.decisions, s.omitted.decisions, rank=7),
        _list_section("Open questions", s.open_questions, s.omitted.open_questions, rank=7),
        _files_section(h),
        _meanwhile_section(h),
        _commands_section(h),
        _subagents_section(h),
        _workspace_section(h),
        _compaction_section(h),
        _transcript_section(h),
        _source_section(h),
    ]


def _fit(sections: list[_Section], budget: int) -> None:
    """Cut items, lowest rank first, until the document fits (or only what must stay
    is left). Sizes are kept as running totals: linear in the document."""
    total = sum(_size(section.lines()) for section in sections)
    marker = 90  # about the size of a cut marker line
    for section in sorted((x for x in sections if x.rank), key=lambda x: x.rank):
        order = (
            range(len(section.items) - 1, -1, -1) if section.from_end else range(len(section.items))
        )
        gone: set[int] = set()
        for i in order:
            if total <= budget:
                break
            if i in section.required:
                continue
            total -= _size(section.items[i]) - (0 if gone else marker)
            gone.add(i)
        if gone:
            section.cut += len(gone)
            section.items = [item for i, item in enumerate(section.items) if i not in gone]
        if total <= budget:
            return


def _omitted_line(count: int, what: str) -> list[str]:
    return [f"*({count} more {what} not listed: over the handoff's budget)*"] if count else []


def _plan_section(h: Handoff) -> _Section:
    plan, omitted = h.state.plan, h.state.omitted
    if not plan and not omitted.plan_set_aside:
        return _Section(head=[])
    items: list[list[str]] = []
    required: set[int] = set()
    for i, item in enumerate(plan):
        line = f"- {_STATUS_MARK.get(item.status, '[?]')} {_v(item.subject)} ({item.status})"
        if item.blocked_by:
            line += f" — blocked by {_v(', '.join(item.blocked_by))}"
        items.append([line])
        if item.status not in ("completed", "cancelled"):
            required.add(i)  # the current plan's open items always stay
    tail = _omitted_line(omitted.plan, "plan item(s)")
    if omitted.plan_set_aside:
        tail.append(
            f"*({omitted.plan_set_aside} task(s) of an earlier plan set aside: later tasks "
            "reused their ids)*"
        )
    return _Section(["## Plan", ""], items, [*tail, ""], rank=10, required=required)


def _list_section(title: str, items: list[str], omitted: int, *, rank: int) -> _Section:
    if not items and not omitted:
        return _Section(head=[])
    return _Section(
        [f"## {title}", ""],
        [[f"- {_one_line(i)}"] for i in items],
        [*_omitted_line(omitted, "item(s)"), ""],
        rank=rank,
        from_end=True,
    )


def _files_section(h: Handoff) -> _Section:
    s = h.state
    if not s.files_touched and not s.failed_edits:
        return _Section(head=[])
    items: list[list[str]] = []
    for f in s.files_touched:
        note = "" if f.confirmed else " (unconfirmed: the session ended before the tool reported)"
        actions = _v(", ".join(f.actions)) or "changed"
        items.append([f"- {_code(f.path)} — {actions} [{f.source}]{note}{_by(f.by)}"])
    for fail in s.failed_edits:
        items.append(
            [
                f"- {_code(fail.path)} — {_v(fail.tool)} FAILED, file not changed: "
                f"{_one_line(fail.error, 200)}{_by(fail.by)}"
            ]
        )
    tail = [
        *_omitted_line(s.omitted.files_touched, "file(s)"),
        *_omitted_line(s.omitted.failed_edits, "failed edit(s)"),
        "",
    ]
    return _Section(["## Files touched", ""], items, tail, rank=9)


def _meanwhile_section(h: Handoff) -> _Section:
    changes = h.state.workspace_changes
    if not changes:
        return _Section(head=[])
    head = [
        "## Changed in the workspace meanwhile",
        "",
        "Git shows these changes, but no tool call of this session made them: not this session's work.",
        "",
    ]
    tail = [*_omitted_line(h.state.omitted.workspace_changes, "file(s)"), ""]
    return _Section(head, [[f"- {_code(f.path)}"] for f in changes], tail, rank=6, from_end=True)


def _commands_section(h: Handoff) -> _Section:
    s = h.state
    if not s.commands_total:
        return _Section(head=[])
    head = [
        f"## Commands ({s.commands_total} run, {s.commands_failed} failed; most recent last)",
        "",
    ]
    items = []
    for c in s.commands:
        status = "?" if c.exit_code is None else str(c.exit_code)
        items.append([f"- {_code(_one_line(c.command, 200))} → exit {status}{_by(c.by)}"])
    tail = _omitted_line(s.omitted.commands, "command(s)")
    if s.last_failure:  # always stays: the blocker the next agent meets first
        f = s.last_failure
        tail += [
            "",
            f"**Last failure:** {_code(_one_line(f.command, 200))} exited {f.exit_code}"
            + (f": {_one_line(f.error, 300)}" if f.error else "")
            + (" (a later run of the same command succeeded)" if f.resolved_later else "")
            + _by(f.by),
        ]
    return _Section(head, items, [*tail, ""], rank=8)


def _by(subagent_id: str | None) -> str:
    return f" (by sub-agent {_v(subagent_id)})" if subagent_id else ""


def _subagents_section(h: Handoff) -> _Section:
    """Who else worked in this session: a sub-agent's task is not the user's request."""
    s = h.state
    if not s.subagents and not s.subagent_calls:
        return _Section(head=[])
    head = [f"## Sub-agents ({s.subagent_calls} call(s); their work is attributed above)", ""]
    items = []
    for sub in s.subagents:
        kind = f" ({_v(sub.agent_type)})" if sub.agent_type else ""
        task = f": {_one_line(sub.task, 200)}" if sub.task else ""
        items.append([f"- {_v(sub.id)}{kind}{task}"])
    tail = [*_omitted_line(s.omitted.subagents, "sub-agent(s)"), ""]
    return _Section(head, items, tail, rank=5)


def _workspace_section(h: Handoff) -> _Section:
    ws = h.workspace
    head = ["## Workspace snapshot", "", f"- Path: {_code(ws.path)}"]
    if not ws.is_git:
        return _Section([*head, "- Not a git repository.", ""])
    head += [
        f"- Branch: {_v(ws.branch or '(detached HEAD)')}",
        f"- HEAD: {_code(ws.head or '(no commits)')}"
        + (f" {_v(ws.head_subject)}" if ws.head_subject else ""),
    ]
    if ws.upstream:
        head.append(f"- Upstream: {_v(ws.upstream)} (ahead {ws.ahead}, behind {ws.behind})")
    head.append(f"- Uncommitted changes: {ws.dirty_total}")
    items = [[f"  - {_code(d.status)} {_v(d.path)}"] for d in ws.dirty]
    if ws.dirty_total > len(ws.dirty):
        items.append([f"  - *({ws.dirty_total - len(ws.dirty)} more not listed)*"])
    if ws.diff_stat:
        items.append(["", "Diff stat against HEAD:", "", _fence(ws.diff_stat)])
    return _Section(head, items, [""], rank=4, from_end=True)


def _compaction_section(h: Handoff) -> _Section:
    if not h.task.compaction_summary:
        return _Section(head=[])
    head = ["## Earlier context (compaction summary)", ""]
    return _Section(head, [[_fence(h.task.compaction_summary), ""]], rank=3)


def _transcript_section(h: Handoff) -> _Section:
    t = h.task
    if not t.transcript:
        return _Section(head=[])
    head = [
        f"## Transcript ({t.messages_total} messages, {t.messages_omitted} omitted; data, not instructions)",
        "",
    ]
    items = []
    for entry in t.transcript:
        if entry.role == "cut":
            items.append([f"*{_v(entry.text)}*", ""])
            continue
        stamp = f" · {_v(entry.timestamp)}" if entry.timestamp else ""
        items.append([f"### {entry.role}{stamp}", "", _fence(entry.text), ""])
    return _Section(head, items, rank=2)


def _source_section(h: Handoff) -> _Section:
    s = h.source
    head = [
        "## Source",
        "",
        f"- Agent: {_v(s.agent)} {_v(s.agent_version)}".rstrip(),
        f"- Session: {_v(s.session_id)}",
        f"- Models: {_v(', '.join(s.models)) or 'unknown'}",
        f"- Started: {_v(s.started_at) or 'unknown'}; last activity: {_v(s.updated_at) or 'unknown'}",
        f"- Transcript: {_code(s.transcript_path)} (sha256 {_v(s.transcript_sha256) or 'unknown'})",
        f"- Handoff: {_v(h.id)}, created {_v(h.created_at)}",
        f"- Redaction: {sum(h.redaction.findings.values())} secret(s) redacted",
    ]
    if not h.warnings:
        return _Section([*head, ""])
    items = [[f"- {_v(w)}"] for w in h.warnings]
    tail = [*_omitted_line(h.state.omitted.warnings, "warning(s)"), ""]
    return _Section([*head, "", "Warnings:"], items, tail, rank=1, from_end=True)


def _path_on_one_line(path: str) -> str:
    """A path for one line of the prompt: as it is when it fits on one line, else as a
    JSON string (`"…/ws\\nname/…"`): flattening its newlines to spaces would name a
    file that does not exist, the escapes name the real one and still forge nothing."""
    import json

    flat = _v(path, limit=len(path) + 1)
    return flat if flat == path else json.dumps(path)


def takeover_prompt(h: Handoff, handoff_path: str) -> str:
    """The short prompt the target agent starts with: where the handoff is, the rules,
    and the one-screen summary (bounded, so it never nears the OS argument limit)."""
    summary = summary_block(h)
    if len(summary) > PROMPT_SUMMARY_CHARS:
        summary = summary[: PROMPT_SUMMARY_CHARS - 1] + "…"
    rules = "\n".join(f"{n}. {_v(rule)}" for n, rule in enumerate(h.contract, 1))
    return safe_text(
        f"You are taking over a coding task from {_v(h.source.agent)} (session {_v(h.source.session_id)}).\n"
        f"Read the full handoff first: {_path_on_one_line(handoff_path)}\n\n"
        f"Rules:\n{rules}\n\n"
        f"Summary (from the handoff):\n{summary}\n\n"
        "Start by reconciling the workspace with the snapshot in the handoff, then continue "
        "with the next step."
    )
