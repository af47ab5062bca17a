"""The read-ahead (`passdown._read_ahead`): a window of the file read and hashed once on a
thread, handed to the parse as a stream. The parse sees every byte in order whatever
sizes it asks for, the digest covers the whole window however much the parse read, and
a read error reaches both without leaving the thread waiting."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passdown import _read_ahead
from passdown._digest import ChainDigest
from passdown._read_ahead import ReadAhead


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # small chunks: many of them per window, and more than DEPTH wait on the thread
    monkeypatch.setattr(_read_ahead, "CHUNK", 97)


def _data(size: int) -> bytes:
    return bytes((i * 31 + 7) % 256 for i in range(size))


def _reader(data: bytes) -> tuple[list[int], object]:
    offsets: list[int] = []

    def read_at(size: int, offset: int) -> bytes:
        offsets.append(offset)
        return data[offset : offset + size]

    return offsets, read_at


def _digest_of(data: bytes) -> str:
    chain = ChainDigest()
    chain.update(data)
    return chain.hexdigest()


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(0, 2000),
    bounds=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    sizes=st.lists(st.one_of(st.just(-1), st.integers(1, 300)), min_size=1, max_size=8),
)
def test_the_parse_gets_the_window_in_order_whatever_it_asks(
    size: int, bounds: tuple[float, float], sizes: list[int]
) -> None:
    data = _data(size)
    start, end = sorted(int(b * size) for b in bounds)
    _, read_at = _reader(data)
    chain = ChainDigest()
    got = bytearray()
    with ReadAhead(read_at, start, end, chain) as ahead:  # type: ignore[arg-type]
        turn = 0
        while piece := ahead.read(sizes[turn % len(sizes)]):
            assert sizes[turn % len(sizes)] < 0 or len(piece) <= sizes[turn % len(sizes)]
            got += piece
            turn += 1
        assert ahead.read(10) == b""  # and stays at the end
    assert bytes(got) == data[start:end]
    assert chain.hexdigest() == _digest_of(data[start:end])
    assert not ahead.failed


def test_bytes_before_the_window_are_hashed_not_handed_on() -> None:
    data = _data(97 * 12 + 40)
    offsets, read_at = _reader(data)
    chain = ChainDigest()
    with ReadAhead(read_at, 500, len(data), chain, hash_from=0) as ahead:  # type: ignore[arg-type]
        got = b"".join(iter(lambda: ahead.read(64), b""))
    assert got == data[500:]
    assert chain.hexdigest() == _digest_of(data)
    assert offsets == list(range(0, len(data), 97))  # each byte read once


def test_a_parse_that_stops_early_still_gets_the_whole_window_hashed() -> None:
    data = _data(97 * 40 + 5)  # far more chunks than wait for the parse
    offsets, read_at = _reader(data)
    chain = ChainDigest()
    with ReadAhead(read_at, 0, len(data), chain) as ahead:  # type: ignore[arg-type]
        assert ahead.read(10) == data[:10]
    assert chain.hexdigest() == _digest_of(data)
    assert offsets == list(range(0, len(data), 97))  # each byte read once


def test_a_parse_that_reads_nothing_leaves_no_thread_behind() -> None:
    data = _data(97 * 20)
    _, read_at = _reader(data)
    chain = ChainDigest()
    before = threading.active_count()
    ReadAhead(read_at, 0, len(data), chain).close()  # type: ignore[arg-type]
    assert threading.active_count() == before
    assert chain.hexdigest() == _digest_of(data)


def test_a_read_error_reaches_the_parse_and_the_caller() -> None:
    data = _data(97 * 10)

    def read_at(size: int, offset: int) -> bytes:
        if offset >= 97 * 3:
            raise OSError(5, "Input/output error")
        return data[offset : offset + size]

    chain = ChainDigest()
    got = bytearray()
    with ReadAhead(read_at, 0, len(data), chain) as ahead:
        with pytest.raises(OSError, match="Input/output error"):
            while piece := ahead.read(50):
                got += piece
        assert ahead.read(50) == b""
    assert bytes(got) == data[: 97 * 3]  # everything before the bad spot, in order
    assert [str(e) for e in ahead.failed] == ["[Errno 5] Input/output error"]


def test_a_read_error_nobody_reads_up_to_is_still_kept() -> None:
    def read_at(size: int, offset: int) -> bytes:
        if offset >= 97 * 8:
            raise OSError(5, "Input/output error")
        return b"x" * size

    with ReadAhead(read_at, 0, 97 * 30, ChainDigest()) as ahead:
        assert ahead.read(5) == b"xxxxx"
    assert len(ahead.failed) == 1


def test_a_file_that_ends_early_ends_the_stream() -> None:
    data = _data(500)  # the window claims more than the file holds (truncated meanwhile)
    _, read_at = _reader(data)
    with ReadAhead(read_at, 0, 2000, ChainDigest()) as ahead:  # type: ignore[arg-type]
        got = b"".join(iter(lambda: ahead.read(-1), b""))
    assert got == data
