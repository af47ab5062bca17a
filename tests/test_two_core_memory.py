"""What a two-core read (passdown._two_core) holds while the worker lives: every page the
process holds when it forks, and every page either side writes afterwards, may become a
second copy (the worker's own pages), so the buffers around the fork are bounded.

Structural checks only (sizes of reads, of the report, what the worker keeps): the
figures themselves are printed by benchmarks/bench_growth.py.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from passdown import _half_extract, _jsonl, _platform, _two_core
from passdown._pipeline import Selection, build_handoff
from passdown.agents import _split, get_agent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import growslice
import realshape

Calls = Callable[[bytes], tuple[list[bytes], list[bytes]]]


def _whole_window_cut(data: bytes, middle: int, end: int, calls: Calls) -> int | None:
    """The clean cut as it was found before the scan read in blocks: the whole window
    [middle - 2 MiB, middle + 8 MiB) read at once."""
    scan_from = max(0, middle - _split._SCAN_BYTES // 4)
    window = data[scan_from : min(end, middle + _split._SCAN_BYTES)]
    pos = window.find(b"\n") + 1
    if pos <= 0:
        return None
    open_calls: set[bytes] = set()
    fallback = None
    while (newline := window.find(b"\n", pos)) >= 0:
        opened, closed = calls(window[pos:newline])
        open_calls.update(opened)
        open_calls.difference_update(closed)
        pos = newline + 1
        offset = scan_from + pos
        if middle <= offset < end:
            if fallback is None:
                fallback = offset
            if not open_calls:
                return offset
    return fallback


@pytest.fixture(scope="module", params=["codex", "copilot"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixture = realshape.fixtures()[request.param]
    root = tmp_path_factory.mktemp("grown")
    path = realshape.install(fixture, root / request.param)
    realshape.Grower(fixture).write(path, 3 * 1024 * 1024)
    return path


def _calls(path: Path) -> Calls:
    return _split._copilot_calls if "copilot" in str(path) else _split._codex_calls


@pytest.mark.parametrize("block", [_split.SCAN_BLOCK, 4096, 97])
def test_the_clean_cut_is_found_in_bounded_reads_where_the_whole_window_found_it(
    session: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cut scan never reads more than a block at once (it used to read 10 MB into
    one buffer just before the fork), and finds the very cut the whole window gave, for
    lines that span blocks too."""
    data = session.read_bytes()
    assert len(data) > 2 * _split.SCAN_BLOCK  # the old scan read it all in one go
    monkeypatch.setattr(_split, "SCAN_BLOCK", block)
    reads: list[int] = []
    real_pread = _platform.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        reads.append(size)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(_platform, "pread", pread)
    calls = _calls(session)
    rng = random.Random(block)
    middles = [0, 1, len(data) // 2, len(data) - 1, *rng.sample(range(len(data)), 25)]
    fd = os.open(session, os.O_RDONLY)
    try:
        for middle in middles:
            assert _split.clean_cut(fd, middle, len(data), calls) == _whole_window_cut(
                data, middle, len(data), calls
            ), middle
    finally:
        os.close(fd)
    assert reads and max(reads) <= block


def test_scan_lines_gives_every_line_after_the_first_newline_with_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [b"x" * n for n in (0, 1, 5, 300, 2, 1000, 0, 7)]
    path = tmp_path / "lines"
    path.write_bytes(b"head" + b"".join(b"\n" + line for line in lines) + b"\ntorn")
    monkeypatch.setattr(_split, "SCAN_BLOCK", 16)
    fd = os.open(path, os.O_RDONLY)
    try:
        got = list(_split.scan_lines(fd, 2, path.stat().st_size))
        # a window that ends inside a line gives only the lines before it
        short = list(_split.scan_lines(fd, 0, 4 + 1 + 0 + 1 + 1 + 1 + 3))
    finally:
        os.close(fd)
    assert [line for line, _ in got] == lines
    data = path.read_bytes()
    assert all(data[end - 1 : end] == b"\n" for _, end in got)
    assert [data[end - len(line) - 1 : end - 1] for line, end in got] == lines
    assert [line for line, _ in short] == [b"", b"x"]


# the worker's report ---------------------------------------------------------------
def test_the_id_filter_sends_eight_bytes_an_id_until_a_bloom_filter_is_smaller() -> None:
    """A half with a few thousand calls sends their hashes (8 bytes an id), not a 1 MiB
    filter the worker wrote all over; past the filter's size it is the filter, and both
    forms, as received, know every id they were given."""
    few = [f"call_{n:08x}" for n in range(3000)]
    ids = _half_extract._IdFilter()
    ids.update(few)
    ids.update(few[:10])  # a call and its result in two batches: the hash twice
    assert len(ids.payload()) == 8 * 3010
    received = _half_extract._IdFilter(bytes(ids.payload()))
    assert all(call_id in received for call_id in few)
    assert sum(f"other_{n}" in received for n in range(20_000)) == 0
    many = [f"call_{n:08x}" for n in range(_half_extract._IdFilter.MAX_HASHES + 5000)]
    for start in range(0, len(many), 4096):  # as the worker adds them: a batch at a time
        ids.update(many[start : start + 4096])
    assert len(ids.payload()) == _half_extract._IdFilter.BITS >> 3
    received = _half_extract._IdFilter(bytes(ids.payload()))
    assert all(call_id in received for call_id in many[::97])
    assert sum(f"other_{n}" in received for n in range(20_000)) < 200  # rare false positives


def test_a_packed_hash_is_found_only_where_a_hash_starts() -> None:
    """A match of the 8 bytes across two hashes is not a hash of the filter."""
    h = hash("call_x")
    packed = _half_extract._HASH.pack(h)
    shifted = b"\0" * 3 + packed + b"\0" * 5  # the same bytes, not on an 8-byte boundary
    assert not _half_extract._holds_hash(shifted, h)
    assert _half_extract._holds_hash(shifted + packed, h)


@pytest.mark.fork_checkpoint
def test_a_worker_report_grows_with_its_calls_not_a_fixed_filter(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merged two-core export of a grown Codex or Copilot session: the worker's report
    (read back into one buffer, decoded, its ids asked) is tens of KB where it carried a
    1 MiB filter, and the handoff is the single-core one."""
    agent = "copilot" if "copilot" in str(session) else "codex"
    monkeypatch.setenv(
        realshape.fixtures()[agent].env_var,
        str(next(p for p in session.parents if p.name == agent)),
    )
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "one"))
    monkeypatch.setenv("PASSDOWN_SINGLE_CORE", "1")
    single = _handoff(agent, session, tmp_path)
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "two"))
    monkeypatch.delenv("PASSDOWN_SINGLE_CORE")
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    split = _handoff(agent, session, tmp_path)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert _two_core.LAST["report_bytes"] < 64 * 1024
    assert split == single


@pytest.mark.fork_checkpoint
def test_the_stats_count_this_process_while_the_worker_lived_and_stop_counting(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PASSDOWN_TWO_CORE_STATS (the benchmarks), the process's RSS is sampled while
    the worker lives (what both hold at once), and the sampling thread is gone after:
    the next export of this process may fork again."""
    agent = "copilot" if "copilot" in str(session) else "codex"
    monkeypatch.setenv(
        realshape.fixtures()[agent].env_var,
        str(next(p for p in session.parents if p.name == agent)),
    )
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "two"))
    monkeypatch.delenv("PASSDOWN_SINGLE_CORE", raising=False)
    monkeypatch.setenv(_two_core.STATS_ENV, "1")
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    _handoff(agent, session, tmp_path)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert _two_core.LAST["main_rss_with_worker_kb"] > 0
    assert _two_core.LAST["worker_private_kb"] > 0
    assert threading.active_count() == 1


@pytest.mark.fork_checkpoint
def test_the_process_reads_its_part_in_the_workers_chunks_and_restores_them(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the worker lives, the process reads its part in `SPLIT_CHUNK`s as the
    worker does (every page written after the fork may be a second copy); the export's
    other reads keep the usual 1 MiB."""
    agent = "copilot" if "copilot" in str(session) else "codex"
    root = next(p for p in session.parents if p.name == agent)
    monkeypatch.setenv(realshape.fixtures()[agent].env_var, str(root))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "two"))
    monkeypatch.delenv("PASSDOWN_SINGLE_CORE", raising=False)
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    usual = _jsonl.CHUNK
    assert usual > _two_core.SPLIT_CHUNK
    reads: list[tuple[int, int]] = []  # (the window's end, the size asked), this process
    real_read = _jsonl.FdWindow.read
    me = os.getpid()

    def read(window: _jsonl.FdWindow, size: int = -1) -> bytes:
        if os.getpid() == me:
            reads.append((window.end, size))
        return real_read(window, size)

    monkeypatch.setattr(_jsonl.FdWindow, "read", read)
    _handoff(agent, session, tmp_path)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    first_part = [size for end, size in reads if end == _two_core.LAST["cut"]]
    assert len(first_part) > 1
    assert set(first_part) == {_two_core.SPLIT_CHUNK}
    assert usual == _jsonl.CHUNK


@pytest.mark.fork_checkpoint
def test_the_workers_own_pages_are_counted_with_its_report_encoded(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's figure (PASSDOWN_TWO_CORE_STATS) is taken once its report is
    encoded, its largest moment, not before: the forked worker inherits these stand-ins,
    which count the encodings done when the pages are counted."""
    agent = "copilot" if "copilot" in str(session) else "codex"
    root = next(p for p in session.parents if p.name == agent)
    monkeypatch.setenv(realshape.fixtures()[agent].env_var, str(root))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "two"))
    monkeypatch.delenv("PASSDOWN_SINGLE_CORE", raising=False)
    monkeypatch.setenv(_two_core.STATS_ENV, "1")
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    encodings: list[int] = []
    real = _two_core._ENCODER

    class Counting:
        def encode(self, obj: object) -> bytes:
            encodings.append(1)
            return real.encode(obj)

    monkeypatch.setattr(_two_core, "_ENCODER", Counting())
    monkeypatch.setattr(_two_core, "_private_kb", lambda: 1000 + len(encodings))
    _handoff(agent, session, tmp_path)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert _two_core.LAST["worker_private_kb"] == 1001


@pytest.mark.fork_checkpoint
@pytest.mark.parametrize("agent", ["qwen", "claude"])
def test_a_tree_sessions_pass_one_walker_is_counted_too(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree session forks twice (the pass-1 walker, then the second half's reader):
    the stats count each worker with what the process held while it lived, and no
    sampling thread outlives its worker (the second fork needs a single thread)."""
    grown = growslice.grow(agent, "plan", 2 * 1024 * 1024, tmp_path / "store")
    monkeypatch.setenv(grown.env_var, str(grown.root))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "two"))
    monkeypatch.setenv("PASSDOWN_NO_FORWARD_PASS", "1")  # pass 1, walked in two
    monkeypatch.delenv("PASSDOWN_SINGLE_CORE", raising=False)
    monkeypatch.setenv(_two_core.STATS_ENV, "1")
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _handoff(agent, grown.session, workspace)
    assert _two_core.LAST["walk_joined"] is True
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    for worker in ("walk_", ""):
        assert _two_core.LAST[f"{worker}worker_private_kb"] > 0
        assert _two_core.LAST[f"{worker}main_rss_with_worker_kb"] > 0
    assert threading.active_count() == 1


def _handoff(name: str, session: Path, workspace: Path) -> dict[str, Any]:
    agent = get_agent(name)
    handoff = build_handoff(
        Selection(agent=agent, ref=agent.ref_for_path(session), workspace=workspace)
    )
    out: dict[str, Any] = json.loads(handoff.to_json())
    del out["id"], out["created_at"]
    return out
