"""A handoff as an SGM record and back, without loss.

The record's canonical annotations carry the handoff's state in the portable shape
other implementations read (`what_i_did`, `next`, `blockers`, `files_touched`,
`open_questions`, `decisions`); `content` is HANDOFF.md; the complete handoff rides
along as the extra field `passdown_handoff`, so converting back is exact.
"""

from __future__ import annotations

from typing import Any

from passdown.handoff import Handoff
from passdown.records import Record, validate_record

EXTRA_FIELD = "passdown_handoff"


def handoff_annotations(h: Handoff) -> list[dict[str, str]]:
    s = h.state
    done = [p.subject for p in s.plan if p.status == "completed"]
    did = [f"Completed: {item}" for item in done]
    if h.task.latest_progress:
        did.append(f"Latest progress: {h.task.latest_progress}")
    touched = [f.path for f in s.files_touched]
    blockers = list(s.blockers)
    return [
        {"kind": "what_i_did", "value": "\n".join(did)},
        {"kind": "next", "value": "\n".join(s.next_steps)},
        {"kind": "blockers", "value": "\n".join(blockers) or "None."},
        {"kind": "files_touched", "value": ", ".join(touched)},
        {"kind": "open_questions", "value": "\n".join(s.open_questions)},
        {"kind": "decisions", "value": "\n".join(s.decisions)},
    ]


def handoff_to_record(h: Handoff, *, project: str) -> Record:
    from passdown.render import render_markdown

    request = " ".join((h.task.original_request or "").split())
    title = f"Handoff from {h.source.agent}: {request[:100]}" if request else f"Handoff from {h.source.agent}"
    data: dict[str, Any] = {
        "id": h.id,
        "type": "handoff",
        "title": title,
        "scope": {"project": project},
        "content": render_markdown(h),
        "annotations": handoff_annotations(h),
        "created_at": h.created_at,
        "provenance": {
            "agent": h.source.agent,
            "session": h.source.session_id,
            "tool": "passdown",
            "version": h.source.agent_version,
        },
        EXTRA_FIELD: h.model_dump(by_alias=True, mode="json"),
    }
    return validate_record(data)


def handoff_from_record(record: Record) -> Handoff | None:
    """The exact handoff a record was made from, or None for a record passdown did not write."""
    extra = (record.model_extra or {}).get(EXTRA_FIELD)
    if not isinstance(extra, dict):
        return None
    return Handoff.model_validate(extra)
