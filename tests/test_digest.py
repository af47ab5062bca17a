"""The session digest (`passdown._digest`): a SHA-256 chain over 64 KiB blocks whose
state a checkpoint keeps, so a resumed read gives the digest a full read gives."""

from __future__ import annotations

import hashlib
import io

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from passdown._digest import BLOCK, ChainDigest, ChainState, file_digest


def _reference(data: bytes) -> str:
    """The chain written out the plain way."""
    link = hashlib.sha256(b"passdown chained sha256, 64 KiB blocks").digest()
    whole = len(data) - len(data) % BLOCK
    for start in range(0, whole, BLOCK):
        link = hashlib.sha256(link + data[start : start + BLOCK]).digest()
    return hashlib.sha256(link + data[whole:] + len(data).to_bytes(8, "big")).hexdigest()


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(0, 3 * BLOCK + 17),
    cuts=st.lists(st.floats(0, 1), max_size=4),
    piece=st.integers(1, 2 * BLOCK),
)
def test_a_resumed_chain_equals_one_pass(size: int, cuts: list[float], piece: int) -> None:
    data = bytes((i * 7 + 3) % 251 for i in range(size))
    expected = _reference(data)
    assert file_digest(io.BytesIO(data).read) == expected
    at = 0
    state = ChainState()
    for cut in [*sorted(int(c * size) for c in cuts), size]:
        chain = ChainDigest(msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=ChainState))
        for start in range(at, cut, piece):
            chain.update(data[start : min(cut, start + piece)])
        state, at = chain.state(), cut
    assert ChainDigest(state).hexdigest() == expected


def test_every_byte_and_the_length_count() -> None:
    data = b"x" * (BLOCK + 10)
    changed = b"y" + data[1:]
    assert _reference(data) != _reference(changed)
    assert file_digest(io.BytesIO(data).read) != file_digest(io.BytesIO(changed).read)
    assert file_digest(io.BytesIO(b"").read) != file_digest(io.BytesIO(b"\0").read)


def test_a_state_that_no_chain_could_have_is_refused() -> None:
    import pytest

    for bad in (
        ChainState(link=b"short"),
        ChainState(folded=BLOCK + 1),
        ChainState(rest=b"r" * BLOCK),
    ):
        with pytest.raises(ValueError):
            ChainDigest(bad)
