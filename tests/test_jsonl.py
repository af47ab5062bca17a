"""The line reader: forwards and backwards agree, offsets are exact, torn tails and
oversized lines are reported."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import zstandard

import passdown._jsonl as jsonl
from passdown.transcript import Diagnostics


def _expected(data: bytes, limit: int) -> list[tuple[int, bytes]]:
    out = []
    offset = 0
    for line in data.split(b"\n"):
        if line and len(line) <= limit:
            out.append((offset, line))
        offset += len(line) + 1
    return out


@pytest.mark.parametrize("seed", range(40))
def test_forward_and_backward_agree(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(jsonl, "CHUNK", rng.choice([3, 7, 16, 64]))
    limit = rng.choice([5, 12, 1000])
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", limit)
    lines = [
        bytes(rng.choice(b'abc{}\\"') for _ in range(rng.randint(0, 30)))
        for _ in range(rng.randint(0, 15))
    ]
    data = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    fwd_reader = jsonl.LineReader(path, Diagnostics())
    back_reader = jsonl.LineReader(path, Diagnostics())
    forward = list(fwd_reader.forward())
    backward = list(back_reader.backward())
    assert forward == _expected(data, limit)
    assert backward[::-1] == forward
    oversized = sum(1 for line in data.split(b"\n") if len(line) > limit)
    assert fwd_reader.diagnostics.oversized_lines == oversized
    assert back_reader.diagnostics.oversized_lines == oversized
    tail = data.rsplit(b"\n", 1)[-1]
    want_tail = len(data) - len(tail) if tail and len(tail) <= limit else -1
    assert fwd_reader.tail_offset == want_tail
    assert back_reader.tail_offset == want_tail


def test_zstd_reads_forward_and_backward(tmp_path: Path) -> None:
    data = b"".join(b'{"n": %d}\n' % i for i in range(1000))
    path = tmp_path / "s.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    forward = list(jsonl.LineReader(path, Diagnostics()).forward())
    backward = list(jsonl.LineReader(path, Diagnostics()).backward())
    assert forward == _expected(data, 10**9)
    assert backward[::-1] == forward


def test_fingerprint_is_the_chain_digest_of_the_file(tmp_path: Path) -> None:
    """The digest a checkpointed read gives (`passdown._digest`), so a full read and a
    resumed one name the file alike."""
    import io

    from passdown._digest import file_digest

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"x" * 100_000)
    expected = file_digest(io.BytesIO(b"x" * 100_000).read)
    assert jsonl.start_fingerprint(path).result() == expected
