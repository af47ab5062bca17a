"""What a two-core read (passdown._two_core) holds while the worker lives: every page the
process holds when it forks, and every page either side writes afterwards, may become a
second copy (the worker's own pages), so the buffers around the fork are bounded.

Structural checks only (sizes of reads, of the report, what the worker keeps): the
figures themselves are printed by benchmarks/bench_growth.py.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from passdown import _platform
from passdown.agents import _split

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
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
