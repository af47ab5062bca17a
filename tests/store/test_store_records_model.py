"""The record model: validation, canonical JSON, conversions, and the checked-in schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from passdown.errors import RecordInvalid
from passdown.records import (
    ANNOTATION_KINDS,
    Record,
    canonical_json,
    default_project,
    parse_record,
    record_from_package,
    record_json_schema,
    record_schema_text,
    record_to_dict,
    record_to_package,
    timestamp_us,
    validate_record,
)

ROOT = Path(__file__).resolve().parents[2]

# The example record from SGM's handoff description (seed 004), verbatim.
SGM_EXAMPLE = {
    "id": "handoff-session-20261010",
    "type": "handoff",
    "title": "Web app + API session resume",
    "scope": {"project": "webapp"},
    "content": "Everything below is verified as of the handoff timestamp.",
    "annotations": [
        {"kind": "what_i_did", "value": "Shipped auth flow, email notifications, and admin panel."},
        {"kind": "next", "value": "Configure the mail provider secrets; verify live send."},
        {"kind": "blockers", "value": "None."},
        {"kind": "files_touched", "value": "src/auth.ts, src/mailer.ts, config/settings.yml"},
        {"kind": "open_questions", "value": "Docs framework: static site generator choice."},
    ],
    "created_at": "2026-10-10T19:00:00Z",
    "provenance": {"agent": "build-agent", "session": "20261010-104120"},
}

# The coordinator's handoff package (seed 000), verbatim.
PACKAGE = {
    "id": "handoff-20250115-103000",
    "source_agent": "coding-agent",
    "target_agent": "coding-agent",
    "timestamp": "2025-01-15T10:30:00",
    "state": {
        "current_feature": "auth-002",
        "completed_features": ["auth-001"],
        "blockers": [],
        "next_steps": ["Implement logout endpoint"],
    },
    "context": {"recent_files": ["src/auth/login.ts"], "git_hash": "abc1234", "session_number": 5},
    "summary": "Completed auth-001, starting auth-002",
}


def test_sgm_example_is_accepted_and_serialises_back_to_itself() -> None:
    record = parse_record(SGM_EXAMPLE)
    assert record_to_dict(record) == SGM_EXAMPLE
    assert json.loads(canonical_json(record)) == SGM_EXAMPLE


def test_canonical_json_sorts_keys_keeps_list_order_and_unicode() -> None:
    data = dict(reversed(list(SGM_EXAMPLE.items())))
    data["title"] = "Résumé – 日本語 🚀"
    text = canonical_json(parse_record(data))
    reparsed = json.loads(text)
    assert text == json.dumps(reparsed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert "Résumé – 日本語 🚀" in text  # not \\u-escaped
    assert [a["kind"] for a in reparsed["annotations"]] == [
        a["kind"] for a in SGM_EXAMPLE["annotations"]
    ]
    # key order of the input does not matter
    assert text == canonical_json(parse_record(SGM_EXAMPLE | {"title": data["title"]}))


def test_unknown_fields_and_kinds_are_kept() -> None:
    data = json.loads(json.dumps(SGM_EXAMPLE))
    data["labels"] = ["x", {"nested": [1, 2.5, None, True]}]
    data["annotations"].append({"kind": "mood", "value": "", "confidence": 0.4})
    data["provenance"] |= {"tool": "claude", "version": "1.2", "host": None, "pid": 42}
    again = json.loads(canonical_json(parse_record(data)))
    assert again == data


def test_created_at_and_provenance_are_kept_as_written() -> None:
    for stamp in ("2026-10-10T19:00:00Z", "2026-10-10T21:00:00+02:00", "2025-01-15T10:30:00",
                  "2026-10-10T19:00:00.123456Z", "2026-10-10"):  # fmt: skip
        record = parse_record(SGM_EXAMPLE | {"created_at": stamp})
        assert record.created_at == stamp
        assert json.loads(canonical_json(record))["created_at"] == stamp
    assert timestamp_us("2026-10-10T19:00:00Z") == timestamp_us("2026-10-10T21:00:00+02:00")
    assert timestamp_us("2025-01-15T10:30:00") == timestamp_us("2025-01-15T10:30:00Z")


def test_null_optional_fields_equal_absent_ones() -> None:
    explicit = SGM_EXAMPLE | {"scope": {"project": "webapp", "user": None}}
    explicit["provenance"] = SGM_EXAMPLE["provenance"] | {"tool": None}
    assert canonical_json(parse_record(explicit)) == canonical_json(parse_record(SGM_EXAMPLE))


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"type": "memo"}, "type", "'handoff', 'status' or 'task'"),
        ({"id": ""}, "id", "at least 1 character"),
        ({"scope": {}}, "scope.project", "Field required"),
        ({"scope": {"project": "a", "org": "b"}}, "scope.org", "Extra inputs"),
        ({"created_at": "last tuesday"}, "created_at", "not an ISO 8601 timestamp"),
        ({"provenance": {"agent": "a"}}, "provenance.session", "Field required"),
        ({"annotations": [{"kind": "next", "value": 3}]}, "annotations.0.value", "valid string"),
        ({"annotations": [{"kind": "", "value": ""}]}, "annotations.0.kind", "at least 1"),
        ({"scope": {"project": "a\x00b"}}, "scope.project", "pattern"),
    ],
)
def test_validation_errors_name_the_field_and_the_problem(
    change: dict[str, Any], field: str, problem: str
) -> None:
    with pytest.raises(RecordInvalid) as caught:
        parse_record(SGM_EXAMPLE | change)
    assert f"{field}: " in caught.value.message
    assert problem in caught.value.message


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(RecordInvalid) as caught:
        validate_record({"type": "x", "scope": {}})
    for field in ("id", "type", "scope.project", "created_at", "provenance"):
        assert f"{field}: " in caught.value.message


def test_non_json_extra_values_are_rejected() -> None:
    with pytest.raises(RecordInvalid, match="score: not plain JSON"):
        validate_record(SGM_EXAMPLE | {"score": float("nan")})
    with pytest.raises(RecordInvalid, match=r"provenance\.when: not plain JSON"):
        validate_record(SGM_EXAMPLE | {"provenance": {"agent": "a", "session": "s", "when": {1}}})
    with pytest.raises(RecordInvalid, match="not JSON"):
        parse_record("{not json")
    with pytest.raises(RecordInvalid, match="JSON object"):
        parse_record("[1, 2]")


def test_package_round_trips_losslessly() -> None:
    record = parse_record(PACKAGE, project="webapp")
    assert record_to_package(record) == PACKAGE
    # through canonical JSON too, as the store keeps it
    again = Record.model_validate_json(canonical_json(record))
    assert record_to_package(again) == PACKAGE


def test_package_becomes_a_handoff_with_canonical_sections() -> None:
    record = record_from_package(PACKAGE, project="webapp")
    assert (record.type, record.scope.project, record.id) == ("handoff", "webapp", PACKAGE["id"])
    assert record.created_at == "2025-01-15T10:30:00"
    assert (record.provenance.agent, record.provenance.session) == ("coding-agent", "5")
    assert record.content == PACKAGE["summary"]
    assert [(a.kind, a.value) for a in record.annotations] == [
        ("what_i_did", "auth-001"),
        ("current_feature", "auth-002"),
        ("next", "Implement logout endpoint"),
        ("files_touched", "src/auth/login.ts"),
    ]


def test_package_needs_a_project_and_its_keys() -> None:
    with pytest.raises(RecordInvalid, match="give a project"):
        parse_record(PACKAGE)
    with pytest.raises(RecordInvalid, match="timestamp"):
        parse_record({**PACKAGE, "timestamp": 5}, project="p")
    minimal = {"id": "h1", "source_agent": "a", "timestamp": "2025-01-15T10:30:00Z"}
    assert record_to_package(parse_record(minimal, project="p")) == minimal


def test_sgm_record_converts_to_a_package() -> None:
    package = record_to_package(parse_record(SGM_EXAMPLE))
    assert package["id"] == SGM_EXAMPLE["id"]
    assert package["source_agent"] == "build-agent"
    assert package["timestamp"] == "2026-10-10T19:00:00Z"
    assert package["state"]["next_steps"] == [
        "Configure the mail provider secrets; verify live send."
    ]
    assert package["state"]["blockers"] == ["None."]
    assert package["context"]["recent_files"] == ["src/auth.ts, src/mailer.ts, config/settings.yml"]


def test_canonical_kinds_are_the_six_sections() -> None:
    assert ANNOTATION_KINDS == (
        "what_i_did", "next", "blockers", "files_touched", "open_questions", "decisions",
    )  # fmt: skip


def test_checked_in_schema_matches_the_model() -> None:
    checked_in = (ROOT / "schemas" / "record.schema.json").read_text(encoding="utf-8")
    assert checked_in == record_schema_text(), "regenerate: python -m passdown.records --schema"


def test_schema_accepts_the_example_and_rejects_bad_records() -> None:
    schema = record_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(SGM_EXAMPLE))
    assert list(validator.iter_errors(SGM_EXAMPLE | {"type": "memo"}))
    assert list(validator.iter_errors(SGM_EXAMPLE | {"scope": {"org": "x"}}))


def test_default_project_is_the_git_roots_scope(tmp_path: Path) -> None:
    from passdown.records import project_label

    repo = tmp_path / "myrepo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert default_project(repo / "src" / "deep") == default_project(repo)
    assert project_label(default_project(repo)) == "myrepo"
    plain = tmp_path / "plain" / "sub"
    plain.mkdir(parents=True)
    assert project_label(default_project(plain)) == "sub"
    assert default_project(plain) != default_project(tmp_path / "other" / "sub")
