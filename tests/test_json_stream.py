"""One-document sessions read as a stream of their history's items (agents/_json_stream)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import ijson
import msgspec
import pytest

from passdown.agents._json_stream import DocumentStream, _Bounded
from passdown.transcript import Diagnostics

STR = msgspec.json.Decoder(str)
MB = 1024 * 1024


def _stream(path: Path, diag: Diagnostics, limit: int = 64 * MB) -> DocumentStream:
    return DocumentStream(
        path, "history.item", ("title", "after"), diag, limit=limit, shape="a test document"
    )


def _write(path: Path, items: list[object], **fields: object) -> bytes:
    data = json.dumps({"title": "T", "history": items, **fields}).encode()
    path.write_bytes(data)
    return data


def test_items_come_in_order_as_json_and_fields_before_and_after(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    _write(path, [{"n": 1, "x": 1.5}, "two", [3]], after={"k": "v"})
    diag = Diagnostics()
    stream = _stream(path, diag)
    assert [json.loads(raw) for raw in stream.items()] == [{"n": 1, "x": 1.5}, "two", [3]]
    assert stream.field("title", STR) == "T"
    assert stream.field("after", msgspec.json.Decoder(dict)) == {"k": "v"}
    assert stream.field("title", msgspec.json.Decoder(int)) is None  # another shape: none
    assert diag.warnings == []


def test_a_document_cut_while_written_gives_the_items_before_the_cut(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    data = _write(path, [{"n": n, "text": "y" * 100} for n in range(50)])
    path.write_bytes(data[: len(data) // 2])
    diag = Diagnostics()
    numbers = [json.loads(raw)["n"] for raw in _stream(path, diag).items()]
    assert numbers == list(range(len(numbers))) and 20 < len(numbers) < 30
    assert diag.warnings == ["s.json ends early (cut while being written?): read up to there"]


def test_bad_bytes_past_a_point_and_a_document_of_another_shape(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    data = _write(path, ["ok", "bad"])
    path.write_bytes(data.replace(b'"bad"', b'"\xff\xfe"'))
    diag = Diagnostics()
    assert [json.loads(raw) for raw in _stream(path, diag).items()] == ["ok"]
    assert diag.warnings == ["s.json is not valid JSON past a point: read up to there"]
    for text in (b"not json at all", b"[1, 2, 3]", b"", b'{"other": 1}'):
        path.write_bytes(text)
        diag = Diagnostics()
        assert list(_stream(path, diag).items()) == []
        assert diag.warnings == ["s.json is not a test document"], text


def test_missing_and_past_the_bound(tmp_path: Path) -> None:
    diag = Diagnostics()
    assert list(_stream(tmp_path / "gone.json", diag).items()) == []
    assert diag.warnings[0].startswith("gone.json could not be read")
    path = tmp_path / "s.json"
    _write(path, [{"n": n, "text": "z" * 1000} for n in range(100)])
    diag = Diagnostics()
    numbers = [json.loads(raw)["n"] for raw in _stream(path, diag, limit=20_000).items()]
    assert 10 < len(numbers) < 20
    assert diag.warnings == ["s.json is larger than 0 MB: read up to there"]


def test_memory_stays_flat_whatever_the_document_holds(tmp_path: Path) -> None:
    """A 24 MB history: the stream's traced peak stays near one item, where decoding the
    document whole held all of it (the bytes, then every item's slice)."""
    path = tmp_path / "s.json"
    item = {"role": "assistant", "text": "w" * 2000, "calls": [{"id": "c", "args": {"a": 1}}]}
    with path.open("w") as out:
        out.write('{"title": "T", "history": [')
        out.write(",".join(json.dumps({**item, "n": n}) for n in range(12_000)))
        out.write('], "after": 1}')
    assert path.stat().st_size > 24_000_000
    diag = Diagnostics()
    tracemalloc.start()
    count = sum(1 for _ in _stream(path, diag).items())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 12_000 and diag.warnings == []
    assert peak < 2 * MB, f"peak {peak / MB:.1f} MB"


def test_a_long_string_is_read_in_growing_pieces_so_its_cost_is_linear(tmp_path: Path) -> None:
    """yajl scans a token that spans pieces again from its start on every piece: an 8 MB
    string read in 64 KiB pieces cost its length squared (seconds per 50 MB). While a
    string stays open the pieces double, so it takes a handful of pieces, and the items
    around it (escaped quotes inside it included) come through whole."""
    path = tmp_path / "s.json"
    long_text = 'a \\" quote, [brackets] {and braces}, then ' + "y[" * (4 * MB)
    _write(path, ["first", {"x": long_text}, "last"])
    with path.open("rb") as handle:
        bounded = _Bounded(handle, 64 * MB)
        items = list(ijson.items(bounded, "history.item"))
    assert items == ["first", {"x": long_text}, "last"]
    assert bounded.pieces < 16, bounded.pieces  # in 64 KiB pieces: over 120
    diag = Diagnostics()
    assert [json.loads(raw) for raw in _stream(path, diag).items()][2] == "last"
    assert diag.warnings == []


def test_a_document_nested_past_the_depth_bound_is_read_up_to_there_quickly(
    tmp_path: Path,
) -> None:
    """A few hundred KB of `[[[...` (or `{"a":` again and again) cost ijson minutes
    and gigabytes (it spells out each value's prefix): the read stops at that piece."""
    path = tmp_path / "s.json"
    for deep in (b"[" * 300_000 + b"]" * 300_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
        head = b'{"title": "T", "history": ["first", "[[[[ in a string \\" [[[["'
        filler = b'"' + b"x" * 300_000 + b'"'  # the deep part starts in a later piece
        path.write_bytes(head + b", " + filler + b", " + deep + b', "last"]}')
        diag = Diagnostics()
        items = [json.loads(raw) for raw in _stream(path, diag).items()]
        # read by pieces: the filler, whose end shares a piece with the deep part, may go too
        assert items[:2] == ["first", '[[[[ in a string " [[[['] and len(items) <= 3
        assert diag.warnings == ["s.json nests deeper than 512 levels: read up to there"]


def test_brackets_in_strings_and_escapes_across_pieces_do_not_count_as_depth(
    tmp_path: Path,
) -> None:
    """Strings full of brackets, escaped quotes and backslashes, cut anywhere by the
    reader's pieces, are not nesting: every item comes through."""
    path = tmp_path / "s.json"
    texts = ["[" * 700 + '\\"' + "{" * 700, "a\\", '\\\\"[[[', "]" * 900]
    _write(path, [{"n": n, "text": texts[n % 4] * 50} for n in range(400)])
    diag = Diagnostics()
    numbers = [json.loads(raw)["n"] for raw in _stream(path, diag).items()]
    assert numbers == list(range(400)) and diag.warnings == []


def test_a_string_ending_in_an_escape_before_brackets_in_strings_is_not_depth(
    tmp_path: Path,
) -> None:
    """`"line\\n"` then `"[[[[..."`: the escape is cut out with its byte before the
    brackets are counted, so strings keep their quotes paired and none of their brackets
    counts as nesting (counting them read the document as 512 levels deep and stopped)."""
    path = tmp_path / "s.json"
    _write(path, [{"n": n, "t": "line\n", "u": "[" * 10} for n in range(3000)])
    diag = Diagnostics()
    numbers = [json.loads(raw)["n"] for raw in _stream(path, diag).items()]
    assert numbers == list(range(3000)) and diag.warnings == []


def _count_passes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The prefixes ijson was asked to parse the whole document for."""
    import ijson

    from passdown.agents import _json_stream

    passes: list[str] = []
    real = ijson.items

    def counted(source: object, prefix: str, **kwargs: object) -> object:
        passes.append(prefix)
        return real(source, prefix, **kwargs)

    monkeypatch.setattr(_json_stream.ijson, "items", counted)
    return passes


def test_fields_before_and_after_the_history_come_with_its_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `items()`, a field after the history (and one before it) is read from the
    document's head and tail, not by a pass over the whole document of its own."""
    path = tmp_path / "s.json"
    history = [{"n": n, "t": 'x\\"]}' + "w" * 300} for n in range(2000)]
    _write(path, history, after={"k": "v\n]"}, missing_not=1)
    passes = _count_passes(monkeypatch)
    diag = Diagnostics()
    stream = _stream(path, diag)
    assert sum(1 for _ in stream.items()) == 2000
    assert stream.field("after", msgspec.json.Decoder(dict)) == {"k": "v\n]"}
    assert stream.field("title", STR) == "T"
    assert passes == ["history.item"] and diag.warnings == []


def test_a_small_history_still_finds_its_fields_by_a_pass_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.json"
    _write(path, ["one"], after=[1, {"a": "]"}])
    passes = _count_passes(monkeypatch)
    stream = _stream(path, Diagnostics())
    assert [json.loads(raw) for raw in stream.items()] == ["one"]
    assert stream.field("after", msgspec.json.Decoder(list)) == [1, {"a": "]"}]
    assert passes == ["history.item", "after"]


def test_values_are_the_items_as_plain_data_null_included(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    _write(path, [{"n": 1, "x": [1.5, None]}, None, "three"], after=2)
    diag = Diagnostics()
    stream = _stream(path, diag)
    assert list(stream.values()) == [{"n": 1, "x": [1.5, None]}, None, "three"]
    assert diag.warnings == [] and diag.bad_lines == 0


def test_fields_around_the_history_match_a_whole_decode_whatever_the_strings_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Histories spanning pieces whose strings hold brackets, escaped quotes, trailing
    backslashes and escapes cut at a piece's edge, with fields of every kind before and
    after: each field is what a whole decode gives, and no field costs a pass of its own."""
    import random

    rnd = random.Random(20)
    texts = ["a\n", "[[{", '\\"]]}', "tail\\", "é\u1234", '"', "x" * 5000]
    passes = _count_passes(monkeypatch)
    names = ("before", "title", "after", "big", "root")
    for trial in range(25):
        history = [
            {"t": rnd.choice(texts) * rnd.randint(1, 40), "k": [[1]] * rnd.randint(0, 3)}
            for _ in range(rnd.randint(300, 1500))
        ]
        doc: dict[str, object] = {"title": "T"}
        if rnd.random() < 0.5:
            doc = {"before": {"m": "v\n[", "n": list(range(rnd.randint(0, 5000)))}, **doc}
        doc["history"] = history
        if rnd.random() < 0.7:
            doc["after"] = {"modelId": 'm\\"]', "pad": "y" * rnd.randint(0, 100_000)}
        if rnd.random() < 0.5:
            doc["big"] = [[{"z": "]]"}]] * rnd.randint(0, 3000)
        if rnd.random() < 0.7:
            doc["root"] = "r"
        path = tmp_path / "s.json"
        path.write_text(json.dumps(doc, indent=rnd.choice([None, 2])))
        stream = DocumentStream(
            path, "history.item", names, Diagnostics(), limit=64 * MB, shape="x"
        )
        passes.clear()
        assert sum(1 for _ in stream.items()) == len(history)
        got = {name: stream.field(name, msgspec.json.Decoder()) for name in names}
        assert got == {name: doc.get(name) for name in names}, trial
        assert passes == ["history.item"], trial
