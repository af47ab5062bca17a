"""The handoff model: its published schema, and its conversion to a store record."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from passdown._handoff_record import handoff_from_record, handoff_to_record
from passdown._pipeline import Selection, build_handoff
from passdown.agents import get_agent
from passdown.handoff import Handoff, handoff_schema_text
from passdown.records import ANNOTATION_KINDS, canonical_json, validate_record
from recorded import Recorded, params

SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "handoff.schema.json"


def test_checked_in_schema_matches_the_model() -> None:
    assert SCHEMA_PATH.read_text() == handoff_schema_text(), (
        "regenerate with: python -m passdown.handoff > schemas/handoff.schema.json"
    )


def _handoff(rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Handoff:
    path = rec.install(tmp_path / "store", monkeypatch)
    agent = get_agent(rec.agent)
    return build_handoff(Selection(agent=agent, ref=agent.ref_for_path(path), workspace=tmp_path))


@pytest.mark.parametrize("rec", params())
def test_handoff_json_validates_against_the_schema(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.loads(_handoff(rec, tmp_path, monkeypatch).to_json())
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    data["state"]["plan"] = [{"id": "1", "subject": "x", "status": "bogus"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.parametrize("rec", params())
def test_handoff_converts_to_a_record_and_back_without_loss(
    rec: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handoff = _handoff(rec, tmp_path, monkeypatch)
    record = handoff_to_record(handoff, project="demo")
    assert record.type == "handoff"
    assert [a.kind for a in record.annotations] == list(ANNOTATION_KINDS)
    assert record.provenance.agent == rec.agent
    assert record.provenance.session == rec.expected["session_id"]
    assert record.created_at == handoff.created_at
    files = next(a.value for a in record.annotations if a.kind == "files_touched")
    for path in rec.expected["files_written"] + rec.expected["files_edited"]:
        assert path in files
    # through canonical JSON (what a store keeps) and back
    again = validate_record(json.loads(canonical_json(record)))
    back = handoff_from_record(again)
    assert back is not None
    assert back.to_json() == handoff.to_json()
