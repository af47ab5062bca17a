"""`agents._record_fields.RecordScan`: the top-level string fields of JSON Lines records,
found in pieces without holding a record (how discovery places a session whose first
records are larger than the head it reads)."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

from passdown.agents._record_fields import RecordScan, _Walker

WANTED = ("cwd", "timestamp")


def _value(rng: random.Random, depth: int) -> Any:
    pick = rng.random()
    if depth > 3 or pick < 0.3:
        return rng.choice(["s" * rng.randint(0, 5), 'q"\\\u00e9\n' * rng.randint(0, 3), 1, None])
    if pick < 0.6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["cwd", "timestamp", "a", "b"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_the_fields_are_the_records_own_top_level_strings_however_the_bytes_are_cut() -> None:
    """Random records (nested `cwd` keys, escaped quotes, non-string values) fed in pieces
    of 1 to 7 bytes give exactly the top-level string fields json.loads sees."""
    for seed in range(300):
        rng = random.Random(seed)
        lines, expected = [], []
        for _ in range(rng.randint(1, 5)):
            keys = ["cwd", "timestamp", "a", "bb"]
            record = {rng.choice(keys): _value(rng, 1) for _ in range(rng.randint(0, 5))}
            separators = (rng.choice([",", ", "]), rng.choice([":", " : "]))
            lines.append(json.dumps(record, separators=separators).encode() + b"\n")
            wanted = {k: v for k, v in record.items() if k in WANTED and isinstance(v, str)}
            if wanted:
                expected.append(wanted)
        data = b"".join(lines)
        walker = _Walker(frozenset(name.encode() for name in WANTED))
        got: list[dict[str, str]] = []
        start = 0
        while start < len(data):
            end = start + rng.randint(1, 7)
            got += walker.feed(data[start:end])
            start = end
        last = walker.end_record()
        got += [last] if last else []
        assert got == expected, (seed, data)


def test_a_record_of_tens_of_mb_is_read_in_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    prompt = "line of a pasted log\\n" * (32 * 1024 * 1024 // 22)
    head = b'{"type":"queue-operation","timestamp":"t0","content":"' + prompt.encode() + b'"}\n'
    path.write_bytes(head + b'{"type":"user","cwd":"/w","message":{}}\n')
    tracemalloc.start()
    try:
        scan = RecordScan(path, WANTED)
        records = list(scan.records())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert records == [{"timestamp": "t0"}, {"cwd": "/w"}] and not scan.cut
    assert peak < 8 * 1024 * 1024, peak  # a few pieces of 1 MB, not the 32 MB record


def test_a_scan_stops_at_its_limit_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"content":"' + b"x" * 300_000 + b'","cwd":"/w"}\n')
    scan = RecordScan(path, WANTED, limit=100_000)
    assert list(scan.records()) == [] and scan.cut
    assert scan.unplaced() == "nothing in its first 97 KB names its working directory"
    size = path.stat().st_size
    whole = RecordScan(path, WANTED, limit=size)
    assert list(whole.records()) == [{"cwd": "/w"}] and not whole.cut
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # a last record without its newline
    assert list(RecordScan(path, WANTED, limit=size - 1).records()) == [{"cwd": "/w"}]
