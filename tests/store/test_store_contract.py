"""The store contract: one suite, run unchanged against every backend."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from passdown.errors import RecordConflict, RecordInvalid, RecordNotFound, UsageError
from passdown.records import canonical_json, parse_record
from passdown.store import Store, open_store

Make = Callable[..., dict[str, Any]]


def stored_equal(store: Store, data: dict[str, Any]) -> bool:
    record = parse_record(data)
    store.store(record)
    back = store.retrieve(record.scope.project, record.id)
    return canonical_json(back) == canonical_json(record)


def ids(page: Any) -> list[str]:
    return [r.id for r in page.records]


# -- lossless round trip -----------------------------------------------------------


def test_round_trip_keeps_annotation_order_and_duplicate_kinds(store: Store, make: Make) -> None:
    notes = [
        {"kind": "next", "value": "second step"},
        {"kind": "what_i_did", "value": "b"},
        {"kind": "next", "value": "first step"},
        {"kind": "next", "value": "first step"},
    ]
    assert stored_equal(store, make(annotations=notes))
    assert [a.value for a in store.retrieve("webapp", "rec-1").annotations] == [
        "second step", "b", "first step", "first step",
    ]  # fmt: skip


def test_round_trip_keeps_unicode_empty_values_unknown_kinds_and_extras(
    store: Store, make: Make
) -> None:
    data = make(
        title="Ünïcödé – 日本語 – emoji 🚀 – RTL עברית",
        content='line one\nline two\ttab \\ backslash "quotes" \u0000 nul \u2028 sep',
        annotations=[
            {"kind": "blockers", "value": ""},
            {"kind": "vibe_check", "value": "🙂", "confidence": 0.75},
            {"kind": "日本", "value": "kind in Japanese"},
        ],
        labels={"z": [1, 2.5, None, True, {"deep": "ok"}], "a": ""},
        provenance={"agent": "codex", "session": "s-1", "tool": "cli", "version": "0.9", "pid": 7},
    )
    assert stored_equal(store, data)
    assert json.loads(canonical_json(store.retrieve("webapp", "rec-1"))) == data


@pytest.mark.parametrize(
    "stamp",
    ["2026-10-10T19:00:00Z", "2026-10-10T21:00:00.5+02:00", "2025-01-15T10:30:00", "2026-10-10"],
)
def test_created_at_and_provenance_come_back_as_written(
    store: Store, make: Make, stamp: str
) -> None:
    data = make(created_at=stamp, provenance={"agent": "Build Agent", "session": "  x  "})
    assert stored_equal(store, data)
    back = store.retrieve("webapp", "rec-1")
    assert back.created_at == stamp
    assert back.provenance.model_dump(exclude_none=True) == {
        "agent": "Build Agent",
        "session": "  x  ",
    }


def test_store_metadata_stays_out_of_the_record(store: Store, make: Make) -> None:
    store.store(make())
    (meta,) = store.history("webapp", "rec-1")
    assert meta.version == 1 and meta.stored_at.endswith("Z") and len(meta.content_hash) == 64
    assert "stored_at" not in canonical_json(store.retrieve("webapp", "rec-1"))


def test_store_returns_the_id_and_accepts_plain_data(store: Store, make: Make) -> None:
    assert store.store(make(id="x-1")) == "x-1"
    assert store.retrieve({"project": "webapp"}, "x-1").id == "x-1"


def test_a_malformed_record_is_rejected_whole(store: Store, make: Make) -> None:
    with pytest.raises(RecordInvalid, match=r"annotations\.1\.value"):
        store.store_many(
            [make(id="ok"), make(id="bad", annotations=[{"kind": "a", "value": ""}, {"kind": "b"}])]
        )
    with pytest.raises(RecordNotFound):
        store.retrieve("webapp", "ok")


# -- conflicts and versions -------------------------------------------------------------


def test_same_id_same_content_is_idempotent(store: Store, make: Make) -> None:
    store.store(make())
    store.store(make())
    store.store(parse_record(make()), new_version=True)  # no change, so no new version
    assert [m.version for m in store.history("webapp", "rec-1")] == [1]
    assert ids(store.query("webapp")) == ["rec-1"]


def test_same_id_different_content_conflicts(store: Store, make: Make) -> None:
    store.store(make())
    with pytest.raises(RecordConflict, match="rec-1"):
        store.store(make(content="something else"))
    assert store.retrieve("webapp", "rec-1").content == make()["content"]


def test_new_version_keeps_history_and_retrieve_returns_the_latest(
    store: Store, make: Make
) -> None:
    store.store(make(content="v1"))
    store.store(make(content="v2", created_at="2026-10-11T00:00:00Z"), new_version=True)
    store.store(make(content="v3"), new_version=True)
    assert store.retrieve("webapp", "rec-1").content == "v3"
    assert store.retrieve("webapp", "rec-1", version=1).content == "v1"
    assert store.retrieve("webapp", "rec-1", version=2).content == "v2"
    assert store.retrieve("webapp", "rec-1", version=3).content == "v3"
    assert [m.version for m in store.history("webapp", "rec-1")] == [1, 2, 3]
    with pytest.raises(RecordNotFound):
        store.retrieve("webapp", "rec-1", version=4)
    assert ids(store.query("webapp")) == ["rec-1"]  # one record, not three
    assert ids(store.query("webapp", text="v3")) == ["rec-1"]
    assert ids(store.query("webapp", text="v1")) == []  # only the current version is searched


def test_a_conflict_in_a_batch_stores_nothing(store: Store, make: Make) -> None:
    store.store(make(id="a"))
    with pytest.raises(RecordConflict):
        store.store_many([make(id="b"), make(id="a", content="changed"), make(id="c")])
    assert ids(store.query("webapp")) == ["a"]
    assert store.check() == []


# -- isolation -------------------------------------------------------------------------


def test_projects_never_see_each_other(store: Store, make: Make) -> None:
    store.store(
        make(
            id="a-1",
            project="A",
            title="secret alpha plan",
            annotations=[{"kind": "next", "value": "x"}],
        )
    )
    store.store(
        make(
            id="b-1",
            project="B",
            title="secret alpha plan",
            annotations=[{"kind": "next", "value": "x"}],
        )
    )
    with pytest.raises(RecordNotFound):
        store.retrieve("A", "b-1")
    assert ids(store.query("A")) == ["a-1"]
    assert ids(store.query("A", text="secret alpha")) == ["a-1"]
    assert ids(store.query("A", kind="next", type="handoff")) == ["a-1"]
    assert ids(store.query("C")) == []
    assert ids(store.query("C", text="secret")) == []
    with pytest.raises(RecordNotFound):
        store.delete("A", "b-1")
    assert store.retrieve("B", "b-1").scope.project == "B"


def test_the_same_id_in_two_projects_is_two_records(store: Store, make: Make) -> None:
    store.store(make(id="shared", project="A", content="from A"))
    store.store(make(id="shared", project="B", content="from B"))  # no conflict across projects
    assert store.retrieve("A", "shared").content == "from A"
    assert store.retrieve("B", "shared").content == "from B"
    store.delete("A", "shared")
    assert store.retrieve("B", "shared").content == "from B"


def test_narrower_scopes_filter_within_a_project(store: Store, make: Make) -> None:
    store.store(make(id="mine", scope={"project": "P", "user": "ann", "agent": "claude"}))
    store.store(make(id="theirs", scope={"project": "P", "user": "bob"}))
    store.store(make(id="shared", scope={"project": "P"}))
    assert sorted(ids(store.query("P"))) == ["mine", "shared", "theirs"]
    assert ids(store.query({"project": "P", "user": "ann"})) == ["mine"]
    assert ids(store.query({"project": "P", "user": "ann", "agent": "codex"})) == []
    with pytest.raises(RecordNotFound):
        store.retrieve({"project": "P", "user": "ann"}, "theirs")
    with pytest.raises(RecordNotFound):
        store.delete({"project": "P", "user": "ann"}, "theirs")


def test_a_cursor_from_another_project_reveals_nothing(store: Store, make: Make) -> None:
    for i in range(3):
        store.store(make(id=f"a{i}", project="A", created_at=f"2026-01-0{i + 1}T00:00:00Z"))
        store.store(make(id=f"b{i}", project="B", created_at=f"2026-01-0{i + 1}T00:00:00Z"))
    cursor = store.query("B", limit=1).next_cursor
    assert set(ids(store.query("A", cursor=cursor))) <= {"a0", "a1", "a2"}


def test_invalid_scopes_are_rejected(store: Store) -> None:
    with pytest.raises(RecordInvalid, match="invalid scope: project: Field required"):
        store.query({"user": "ann"})
    with pytest.raises(RecordInvalid, match="invalid scope: org: Extra inputs"):
        store.retrieve({"project": "A", "org": "x"}, "id")


# -- queries ----------------------------------------------------------------------------


def test_newest_first_by_created_at_not_by_insertion(store: Store, make: Make) -> None:
    store.store(make(id="mid", created_at="2026-05-01T00:00:00Z"))
    store.store(make(id="old", created_at="2026-01-01T00:00:00+00:00"))
    store.store(make(id="new", created_at="2026-12-01T09:00:00+09:00"))
    store.store(make(id="naive", created_at="2026-06-01T00:00:00"))
    assert ids(store.query("webapp")) == ["new", "naive", "mid", "old"]


def test_filters_by_type_time_and_kind(store: Store, make: Make) -> None:
    store.store(
        make(
            id="h",
            created_at="2026-01-01T00:00:00Z",
            annotations=[{"kind": "blockers", "value": "x"}],
        )
    )
    store.store(make(id="s", type="status", created_at="2026-02-01T00:00:00Z", annotations=[]))
    store.store(make(id="t", type="task", created_at="2026-03-01T00:00:00Z",
                     annotations=[{"kind": "decisions", "value": "y"}, {"kind": "blockers", "value": "z"}]))  # fmt: skip
    assert ids(store.query("webapp", type="status")) == ["s"]
    assert ids(store.query("webapp", since="2026-02-01T00:00:00Z")) == ["t", "s"]
    assert ids(store.query("webapp", until="2026-02-01T00:00:00Z")) == ["h"]
    assert ids(store.query("webapp", kind="blockers")) == ["t", "h"]
    assert ids(store.query("webapp", kind="blockers", type="handoff")) == ["h"]
    assert ids(store.query("webapp", kind="open_questions")) == []
    with pytest.raises(UsageError, match="unknown record type"):
        store.query("webapp", type="memo")
    with pytest.raises(UsageError, match="since"):
        store.query("webapp", since="yesterday-ish")


def test_full_text_over_title_content_and_annotation_values(store: Store, make: Make) -> None:
    store.store(make(id="t", title="Mailer rewrite", content="", annotations=[]))
    store.store(make(id="c", title="", content="The mailer is flaky", annotations=[]))
    store.store(
        make(
            id="a",
            title="",
            content="",
            annotations=[{"kind": "blockers", "value": "MAILER secrets"}],
        )
    )
    store.store(
        make(id="k", title="", content="", annotations=[{"kind": "mailer", "value": "unrelated"}])
    )
    assert sorted(ids(store.query("webapp", text="mailer"))) == [
        "a",
        "c",
        "t",
    ]  # kinds are not text
    assert ids(store.query("webapp", text="mailer secrets")) == ["a"]  # every word must match
    assert sorted(ids(store.query("webapp", text="mail*"))) == ["a", "c", "t"]
    assert ids(store.query("webapp", text="mail")) == []
    assert ids(store.query("webapp", text="flaky", kind="blockers")) == []


def test_full_text_handles_unicode_and_punctuation(store: Store, make: Make) -> None:
    store.store(
        make(id="u", title="Straße café naïve 日本語", content="files_touched: src/auth.ts, x²y")
    )
    for query in (
        "STRASSE",
        "cafe",
        "Café",
        "naive",
        "日本語",
        "auth.ts",
        "src/auth",
        "files_touched",
        "x²y",
    ):
        assert ids(store.query("webapp", text=query)) == ["u"], query
    with pytest.raises(UsageError, match="nothing to search"):
        store.query("webapp", text="  ?! ")


def test_text_search_does_not_see_other_projects_words(store: Store, make: Make) -> None:
    store.store(make(id="b", project="B", title="zebra"))
    store.store(make(id="a", project="A", title="antelope"))
    assert ids(store.query("A", text="zebra")) == []
    assert ids(store.query("A", text="zeb*")) == []
    assert ids(store.query("B", text="zebra")) == ["b"]


def test_cursor_pages_through_everything_once(store: Store, make: Make) -> None:
    stamps = (
        ["2026-01-01T00:00:00Z"] * 5 + ["2026-01-02T00:00:00Z"] * 4 + ["2026-01-03T00:00:00Z"] * 3
    )
    store.store_many([make(id=f"r{i:02}", created_at=s) for i, s in enumerate(stamps)])
    store.store(make(id="other", project="other"))
    seen: list[str] = []
    cursor = None
    while True:
        page = store.query("webapp", limit=5, cursor=cursor)
        seen += ids(page)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == len(set(seen)) == 12
    assert seen == ids(store.query("webapp", limit=100))
    assert seen[:3] == ["r11", "r10", "r09"]  # newest day first, ties latest-stored first


def test_cursor_with_text_filter_and_page_boundaries(store: Store, make: Make) -> None:
    store.store_many(
        [make(id=f"r{i}", title="alpha" if i % 2 else "beta", created_at=f"2026-01-{i + 1:02}T00:00:00Z")
         for i in range(10)]
    )  # fmt: skip
    first = store.query("webapp", text="alpha", limit=2)
    assert ids(first) == ["r9", "r7"]
    second = store.query("webapp", text="alpha", limit=3, cursor=first.next_cursor)
    assert ids(second) == ["r5", "r3", "r1"]
    assert second.next_cursor is None
    exact = store.query("webapp", text="alpha", limit=5)
    assert len(exact.records) == 5 and exact.next_cursor is None


def _paged(store: Store, scope: Any, **filters: Any) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = store.query(scope, limit=3, cursor=cursor, **filters)
        seen += ids(page)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_count_is_how_many_records_query_pages_through(store: Store, make: Make) -> None:
    note = [{"kind": "blockers", "value": "the mail provider"}]
    store.store_many(
        [make(id=f"h{i}", created_at=f"2026-01-{i + 1:02}T00:00:00Z",
              title="alpha" if i % 3 else "beta", annotations=note if i % 2 else [])
         for i in range(10)]
        + [make(id=f"d{i}", type="task", created_at=f"2026-02-{i + 1:02}T00:00:00Z")
           for i in range(4)]
        + [make(id=f"u{i}", scope={"project": "webapp", "user": "ann"}) for i in range(2)]
        + [make(id="elsewhere", project="other")]
    )  # fmt: skip
    cases: list[tuple[Any, dict[str, Any]]] = [
        ("webapp", {}),
        ("webapp", {"type": "handoff"}),
        ("webapp", {"type": "task"}),
        ("webapp", {"kind": "blockers"}),
        ("webapp", {"text": "alpha"}),
        ("webapp", {"since": "2026-01-04T00:00:00Z", "until": "2026-02-02T00:00:00Z"}),
        ({"project": "webapp", "user": "ann"}, {}),
        ("other", {}),
        ("nobody", {"type": "handoff"}),
    ]
    counts = [store.count(scope, **filters) for scope, filters in cases]
    assert counts == [len(_paged(store, scope, **filters)) for scope, filters in cases]
    assert counts == [16, 12, 4, 5, 6, 8, 2, 1, 0]


def test_count_is_validated_like_query(store: Store) -> None:
    with pytest.raises(UsageError, match="unknown record type"):
        store.count("webapp", type="nonsense")
    with pytest.raises(UsageError, match="since"):
        store.count("webapp", since="not a time")


def test_limits_and_cursors_are_validated(store: Store) -> None:
    with pytest.raises(UsageError, match="limit"):
        store.query("webapp", limit=0)
    with pytest.raises(UsageError, match="limit"):
        store.query("webapp", limit=1001)
    with pytest.raises(UsageError, match="cursor"):
        store.query("webapp", cursor="not-a-cursor")


# -- delete -------------------------------------------------------------------------------


def test_delete_removes_the_record_and_its_versions(store: Store, make: Make) -> None:
    store.store(make(title="findme"))
    store.store(make(title="findme again"), new_version=True)
    store.delete("webapp", "rec-1")
    with pytest.raises(RecordNotFound):
        store.retrieve("webapp", "rec-1")
    with pytest.raises(RecordNotFound):
        store.history("webapp", "rec-1")
    assert ids(store.query("webapp", text="findme")) == []
    with pytest.raises(RecordNotFound):
        store.delete("webapp", "rec-1")
    store.store(make(content="fresh"))  # the id is free again, no conflict with the old one
    assert [m.version for m in store.history("webapp", "rec-1")] == [1]
    assert store.check() == []


# -- pointers -------------------------------------------------------------------------------


def test_pointer_compare_and_swap(store: Store) -> None:
    assert store.get_pointer("P", "active") is None
    assert store.set_pointer("P", "active", None, "h1")
    assert not store.set_pointer("P", "active", None, "h2")  # already set
    assert not store.set_pointer("P", "active", "wrong", "h2")
    assert store.set_pointer("P", "active", "h1", "h2")
    assert store.get_pointer("P", "active") == "h2"
    assert not store.set_pointer("P", "active", "h1", None)
    assert store.set_pointer("P", "active", "h2", None)
    assert store.get_pointer("P", "active") is None
    assert store.set_pointer("P", "active", None, None)  # unset stays unset
    assert store.set_pointer("P", "active", None, "h3")
    assert not store.set_pointer("P", "active", None, None)  # it is set: no swap
    assert store.get_pointer("P", "active") == "h3"


def test_pointers_are_per_exact_scope(store: Store) -> None:
    assert store.set_pointer("P", "claim:h1", None, "claude")
    assert store.get_pointer("Q", "claim:h1") is None
    assert store.get_pointer({"project": "P", "agent": "codex"}, "claim:h1") is None
    assert store.set_pointer({"project": "P", "agent": "codex"}, "claim:h1", None, "mine")
    assert store.get_pointer("P", "claim:h1") == "claude"


# -- lifecycle ------------------------------------------------------------------------------


def test_reopening_keeps_data_and_the_schema_version(store_url: str, make: Make) -> None:
    with open_store(store_url) as first:
        first.store(make())
        version = first.schema_version()  # type: ignore[attr-defined]
    with open_store(store_url) as second:
        assert second.schema_version() == version >= 2  # type: ignore[attr-defined]
        assert second.retrieve("webapp", "rec-1").id == "rec-1"
        assert second.check() == []


def test_a_healthy_store_has_no_problems(store: Store, make: Make) -> None:
    store.store_many([make(id=f"r{i}") for i in range(20)])
    store.store(make(id="r3", content="changed"), new_version=True)
    assert store.check() == []
