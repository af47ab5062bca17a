"""agents/_document: one JSON document read whole, bounded, and decoded, with a warning
for each way that fails (`decode_document`) or quietly (`decode_side_file`): what every
one-document reader (Auggie, Continue, Cline, Vibe's chunks, the editors' histories)
relies on."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from passdown.agents._document import decode_document, decode_side_file, read_document
from passdown.transcript import Diagnostics


class _Doc(msgspec.Struct):
    history: list[msgspec.Raw] = []


_DOC = msgspec.json.Decoder(_Doc)
_MIB = 1024 * 1024


def _decode(path: Path, limit: int = _MIB) -> tuple[_Doc | None, list[str]]:
    diag = Diagnostics()
    doc = decode_document(path, _DOC, limit, diag, shape="a test document", what="part ")
    return doc, diag.warnings


def test_a_document_decodes_with_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"history": [{"a": 1}, [2]]}')
    doc, warnings = _decode(path)
    assert doc is not None
    assert [bytes(raw) for raw in doc.history] == [b'{"a": 1}', b"[2]"]
    assert warnings == []
    assert decode_side_file(path, _DOC) == doc


@pytest.mark.parametrize(
    ("content", "limit"),
    [(None, _MIB), ("folder", _MIB), ('{"history": []}' + " " * (2 * _MIB), 2 * _MIB)],
    ids=["missing", "not a file", "larger than the bound"],
)
def test_a_document_that_cannot_be_read_is_one_warning_naming_the_bound(
    tmp_path: Path, content: str | None, limit: int
) -> None:
    path = tmp_path / "s.json"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    doc, warnings = _decode(path, limit)
    assert doc is None
    assert warnings == [
        f"could not read part s.json (missing, unreadable or larger than {limit // _MIB} MB)"
    ]
    assert decode_side_file(path, _DOC, limit) is None
    diag = Diagnostics()
    assert read_document(path, limit, diag) is None
    assert diag.warnings == [warnings[0].replace("part ", "")]


@pytest.mark.parametrize(
    "content",
    ['{"history": [', '{"history": 3}', "[]", "\xff\xfe", '{"history": [' * 5000],
    ids=["torn", "wrong field type", "wrong shape", "not UTF-8", "nested too deep"],
)
def test_a_document_of_another_shape_is_one_warning_saying_what_it_is_not(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(content.encode("latin-1"))
    doc, warnings = _decode(path)
    assert doc is None
    assert warnings == ["part s.json is not a test document"]
    assert decode_side_file(path, _DOC) is None


@pytest.mark.skipif(os.name != "posix", reason="a FIFO is a POSIX file")
def test_a_fifo_is_not_read_and_does_not_block(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    os.mkfifo(path)
    doc, warnings = _decode(path)
    assert doc is None
    assert len(warnings) == 1 and warnings[0].startswith("could not read part s.json")
