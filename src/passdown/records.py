"""The canonical record: the one shape passdown stores, retrieves and exchanges.

A record follows SGM's record shape (`id`, `type`, `title`, `scope`, `content`,
`annotations`, `created_at`, `provenance`). Rules that make it portable:

- Lossless: unknown top-level fields, unknown annotation kinds, extra annotation and
  provenance fields are kept. `created_at` and `provenance` are kept exactly as
  written (`created_at` must parse as ISO 8601 but is stored as the original string).
- Canonical JSON (`canonical_json`) is how two records are compared: object keys
  sorted, list order kept (annotation order is meaningful), UTF-8 without escapes,
  no whitespace. Key order inside objects is therefore not significant; optional
  fields that are null (`scope.user`, `provenance.tool`, ...) are the same as absent.
- `scope` is the isolation key, so unlike the rest it rejects unknown fields: a scope
  field the store would not enforce must not look as if it were enforced.

The coordinator's handoff package (`{id, source_agent, target_agent, timestamp,
state, context, summary}`) converts to a record and back without loss
(`record_from_package` / `record_to_package`); `parse_record` accepts either shape.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from passdown._model_defaults import empty_list
from passdown.errors import RecordInvalid

RecordType = Literal["handoff", "status", "task"]
RECORD_TYPES: tuple[str, ...] = ("handoff", "status", "task")

# The six handoff sections SGM consumers should recognise; any other kind is kept too.
ANNOTATION_KINDS: tuple[str, ...] = (
    "what_i_did",
    "next",
    "blockers",
    "files_touched",
    "open_questions",
    "decisions",
)

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Keys and scope values are indexed as text; NUL is not storable in PostgreSQL text.
NonEmpty = Annotated[str, StringConstraints(min_length=1, pattern=r"^[^\x00]+$")]


class Scope(BaseModel):
    """Who may see a record. `project` is the hard isolation boundary; the others narrow it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    project: NonEmpty
    user: NonEmpty | None = None
    team: NonEmpty | None = None
    agent: NonEmpty | None = None


class Annotation(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    kind: NonEmpty = Field(description="A canonical handoff section or any other kind.")
    value: str


class Provenance(BaseModel):
    """Who wrote the record, kept exactly as written (never the reader's identity)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    agent: NonEmpty
    session: NonEmpty
    tool: str | None = None
    version: str | None = None


class Record(BaseModel):
    model_config = ConfigDict(extra="allow", title="Record", defer_build=True)

    id: NonEmpty
    type: RecordType
    title: str = ""
    scope: Scope
    content: str = ""
    annotations: list[Annotation] = Field(default_factory=empty_list)
    created_at: str = Field(description="ISO 8601, kept as written.")
    provenance: Provenance

    @field_validator("created_at")
    @classmethod
    def _created_at_is_iso(cls, value: str) -> str:
        parse_timestamp(value)  # raises ValueError, which pydantic reports on the field
        return value


# -- timestamps ---------------------------------------------------------------------


def parse_timestamp(value: str) -> datetime:
    """Parse ISO 8601 (with `Z` or an offset, or naive = UTC) into an aware datetime."""
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"  # Python 3.10's fromisoformat lacks `Z`
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def timestamp_us(value: str | datetime) -> int:
    """Microseconds since the epoch: the sortable form the stores index."""
    moment = parse_timestamp(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# -- validation and canonical form ---------------------------------------------------


def invalid_from(exc: ValidationError, what: str = "record") -> RecordInvalid:
    """A RecordInvalid whose message names each bad field (`annotations.2.kind: ...`)."""
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "(record)"
        problems.append(f"{where}: {err['msg']}")
    return RecordInvalid(f"invalid {what}: " + "; ".join(problems))


def validate_record(data: Mapping[str, Any] | Record) -> Record:
    """A validated Record, or RecordInvalid naming every problem (nothing half-accepted)."""
    if isinstance(data, Record):
        return data
    if not isinstance(data, Mapping):
        raise RecordInvalid(f"invalid record: expected a JSON object, got {type(data).__name__}")
    try:
        record = Record.model_validate(dict(data))
    except ValidationError as exc:
        raise invalid_from(exc) from exc
    _check_extras(record)
    return record


def _check_extras(record: Record) -> None:
    """Unknown fields must be plain JSON: pydantic would quietly turn NaN into null or a
    datetime into a string, and the record would no longer round-trip."""
    parts: list[tuple[str, BaseModel]] = [("", record), ("provenance.", record.provenance)]
    parts += [(f"annotations.{i}.", a) for i, a in enumerate(record.annotations)]
    for prefix, part in parts:
        for key, value in (part.model_extra or {}).items():
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise RecordInvalid(
                    f"invalid record: {prefix}{key}: not plain JSON ({exc})"
                ) from None


def record_to_dict(record: Record) -> dict[str, Any]:
    """The record as plain JSON data; null optional scope/provenance fields are omitted."""
    data = record.model_dump(mode="json")
    for section, optional in (
        ("scope", ("user", "team", "agent")),
        ("provenance", ("tool", "version")),
    ):
        for key in optional:
            if data[section].get(key) is None:
                data[section].pop(key, None)
    return data


def canonical_json(record: Record) -> str:
    """Sorted keys, list order kept, no whitespace, UTF-8 as is: equal records, equal text."""
    try:
        return json.dumps(
            record_to_dict(record),
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise RecordInvalid(f"invalid record: not representable as JSON: {exc}") from exc


def content_hash(record: Record) -> str:
    return hashlib.sha256(canonical_json(record).encode()).hexdigest()


# -- other input shapes ------------------------------------------------------------


def parse_record(data: Mapping[str, Any] | str | bytes, *, project: str | None = None) -> Record:
    """Accept an SGM record or a coordinator package (JSON text or parsed).

    `project` is the scope for inputs that carry none (packages); a record's own
    scope always wins.
    """
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise RecordInvalid(f"invalid record: not JSON: {exc}") from exc
    if isinstance(data, Mapping) and is_package(data):
        if not project:
            raise RecordInvalid("invalid record: a handoff package has no scope; give a project")
        return record_from_package(data, project=project)
    return validate_record(data)  # type: ignore[arg-type]


def is_package(data: Mapping[str, Any]) -> bool:
    return "source_agent" in data and "type" not in data and "scope" not in data


def record_from_package(package: Mapping[str, Any], *, project: str) -> Record:
    """A handoff record from a coordinator package.

    Everything the record has no slot for is kept verbatim under the extra field
    `package`, which `record_to_package` reads back, so the conversion is lossless;
    annotations are derived from `state` and `context` for SGM consumers.
    """
    for key in ("id", "source_agent", "timestamp"):
        if not isinstance(package.get(key), str):
            raise RecordInvalid(f"invalid package: {key}: a string is required")
    rest = {k: v for k, v in package.items() if k not in ("id", "source_agent", "timestamp")}
    summary = rest["summary"] if isinstance(rest.get("summary"), str) else ""
    data = {
        "id": package["id"],
        "type": "handoff",
        "title": _first_line(summary) or f"Handoff {package['id']}",
        "scope": {"project": project},
        "content": summary,
        "annotations": _package_annotations(rest.get("state"), rest.get("context")),
        "created_at": package["timestamp"],
        "provenance": {"agent": package["source_agent"], "session": _package_session(package)},
        "package": rest,
    }
    return validate_record(data)


def record_to_package(record: Record) -> dict[str, Any]:
    """The coordinator package for a record (the original one if it came from a package)."""
    head = {
        "id": record.id,
        "source_agent": record.provenance.agent,
        "timestamp": record.created_at,
    }
    kept = (record.model_extra or {}).get("package")
    if isinstance(kept, dict):
        return {**head, **kept}
    values = _values_by_kind(record)
    return {
        **head,
        "target_agent": None,
        "state": {
            "completed_features": values.get("what_i_did", []),
            "blockers": values.get("blockers", []),
            "next_steps": values.get("next", []),
        },
        "context": {"recent_files": values.get("files_touched", [])},
        "summary": record.content or record.title,
    }


_PACKAGE_SECTIONS = (
    ("state", "completed_features", "what_i_did"),
    ("state", "current_feature", "current_feature"),
    ("state", "next_steps", "next"),
    ("state", "blockers", "blockers"),
    ("context", "recent_files", "files_touched"),
)


def _package_annotations(state: Any, context: Any) -> list[dict[str, str]]:
    sections = {"state": state, "context": context}
    out: list[dict[str, str]] = []
    for section, key, kind in _PACKAGE_SECTIONS:
        source = sections[section]
        value = source.get(key) if isinstance(source, dict) else None
        items = value if isinstance(value, list) else [] if value is None else [value]
        out.extend({"kind": kind, "value": _as_text(item)} for item in items)
    return out


def _package_session(package: Mapping[str, Any]) -> str:
    context = package.get("context")
    number = context.get("session_number") if isinstance(context, dict) else None
    return str(number) if number not in (None, "") else str(package["id"])


def _values_by_kind(record: Record) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for note in record.annotations:
        values.setdefault(note.kind, []).append(note.value)
    return values


def _as_text(item: Any) -> str:
    return item if isinstance(item, str) else json.dumps(item, sort_keys=True, ensure_ascii=False)


def _first_line(text: str, limit: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- project default and schema ---------------------------------------------------------


def default_project(cwd: Path) -> str:
    """The project a command means when none is given: the repository's scope,
    `<name>~<id>` (`passdown._git.project_name`: the id names the git remote, else the
    root folder's path)."""
    from passdown._git import project_name

    return project_name(cwd)


def project_label(project: str) -> str:
    """The readable name of a project scope (`alpha` of `alpha~3f9c2a1b7d0e`)."""
    from passdown._git import project_label as label

    return label(project)


def record_json_schema() -> dict[str, Any]:
    """The JSON Schema of Record, as checked in at `schemas/record.schema.json`."""
    return {"$schema": SCHEMA_DIALECT, **Record.model_json_schema()}


def record_schema_text() -> str:
    return json.dumps(record_json_schema(), indent=2, ensure_ascii=False) + "\n"


def _main(argv: list[str]) -> int:
    if argv == ["--schema"]:
        sys.stdout.write(record_schema_text())
        return 0
    sys.stderr.write("usage: python -m passdown.records --schema\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
