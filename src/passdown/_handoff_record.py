"""The one converter between handoffs, coordinator packages and SGM records, without loss.

The record's canonical annotations carry the handoff's state in the portable shape
other implementations read (`what_i_did`, `next`, `blockers`, `files_touched`,
`open_questions`, `decisions`); `content` is HANDOFF.md; the complete handoff rides
along as the extra field `passdown_handoff`, so converting back is exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from passdown.errors import RecordInvalid, UsageError
from passdown.handoff import Handoff
from passdown.records import Record, validate_record

if TYPE_CHECKING:
    from passdown._handoff_package import HandoffPackage

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
    from passdown._render import render_markdown
    from passdown._text import cut

    request = " ".join((h.task.original_request or "").split())
    title = (
        f"Handoff from {h.source.agent}: {cut(request, 101)}"
        if request
        else f"Handoff from {h.source.agent}"
    )
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


# -- coordinator packages -------------------------------------------------------------

PACKAGE_FIELD = "package"  # the extra field `records.record_from_package` also uses
_PACKAGE_HEAD = ("id", "source_agent", "timestamp")


def package_to_record(package: HandoffPackage, *, project: str | None = None) -> Record:
    """A coordinator package as one handoff record, without loss (`package_from_record`
    reads it back).

    With its full handoff, the record is the handoff's own record (HANDOFF.md as content,
    the canonical annotations, `passdown_handoff`) plus the package's fields under
    `package`. Without one, it is `records.record_from_package`. The record's scope is
    `project`, else the package's own project (UsageError when it has none).
    """
    where = project or package.project
    if not where:
        raise UsageError("a package without a project needs project=")
    data = package.model_dump(mode="json", exclude={"handoff", "status"})
    return _package_data_to_record(data, package.handoff, project=where)


def package_from_record(record: Record) -> HandoffPackage:
    """The package a record holds, with its full handoff when the record carries one;
    RecordInvalid when the record holds no valid package."""
    from pydantic import ValidationError

    from passdown._handoff_package import HandoffPackage
    from passdown.records import record_to_package

    try:
        data = record_to_package(record)
        handoff = handoff_from_record(record)
        data.setdefault("project", record.scope.project)
        if handoff is not None:
            data["handoff"] = handoff
        return HandoffPackage.model_validate(data)
    except ValidationError as exc:
        raise RecordInvalid(
            f"invalid package in record {record.id}: {exc.error_count()} error(s)"
        ) from exc


def _package_data_to_record(
    package: dict[str, Any], handoff: Handoff | None, *, project: str
) -> Record:
    from passdown.records import record_from_package, record_to_dict

    if handoff is None:
        return record_from_package(package, project=project)
    expected = {
        "id": handoff.id,
        "source_agent": handoff.source.agent,
        "timestamp": handoff.created_at,
    }
    for key, value in expected.items():
        if package.get(key) != value:
            raise RecordInvalid(
                f"invalid package: {key}: {package.get(key)!r} differs from its handoff's {value!r}"
            )
    data = record_to_dict(handoff_to_record(handoff, project=project))
    current = (package.get("state") or {}).get("current_feature")
    if isinstance(current, str):
        data["annotations"].append({"kind": "current_feature", "value": current})
    data[PACKAGE_FIELD] = {k: v for k, v in package.items() if k not in _PACKAGE_HEAD}
    return validate_record(data)
