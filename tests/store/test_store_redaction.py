"""Whatever door stores a record, the store keeps it redacted: `find`, `retrieve` and the
pages print what the store holds."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from passdown.store import Store

AWS_KEY = "AKIA" + "QWERTYUIOPASDFGH"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
Make = Callable[..., dict[str, Any]]


def test_a_secret_in_any_free_text_field_is_stored_redacted(
    store: Store, record_data: Make
) -> None:
    record = record_data(
        "rec-secret",
        title=f"deploy with {AWS_KEY}",
        content=f"export GITHUB_TOKEN={GITHUB_TOKEN}",
        annotations=[{"kind": "next", "value": f"rotate {AWS_KEY}"}],
        extra_notes=f"token {GITHUB_TOKEN}",  # records allow extra fields
    )
    store.store(record)
    got = store.retrieve({"project": "webapp"}, "rec-secret").model_dump(mode="json")
    text = json.dumps(got)
    assert AWS_KEY not in text and GITHUB_TOKEN not in text
    assert "[REDACTED" in got["title"] and "[REDACTED" in got["content"]
    assert "[REDACTED" in got["annotations"][0]["value"] and "[REDACTED" in got["extra_notes"]
    # what is not free text is kept as given: queries match it
    assert got["id"] == "rec-secret" and got["scope"]["project"] == "webapp"
    found = store.query({"project": "webapp"}, text="rotate").records
    assert [r.id for r in found] == ["rec-secret"]


def test_a_clean_record_is_stored_byte_for_byte(store: Store, record_data: Make) -> None:
    record = record_data("rec-clean")
    store.store(record)
    got = store.retrieve({"project": "webapp"}, "rec-clean")
    assert {k: v for k, v in got.model_dump(mode="json", exclude_none=True).items()} == record


def test_the_database_file_never_holds_the_secret(tmp_path: Path, record_data: Make) -> None:
    from passdown.store import open_store

    db = tmp_path / "store.db"
    with open_store(f"sqlite:///{db}") as opened:
        opened.store(record_data("rec-1", content=f"key {AWS_KEY}"))
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    for path in tmp_path.iterdir():
        assert AWS_KEY.encode() not in path.read_bytes(), path
