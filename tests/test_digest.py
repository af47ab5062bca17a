"""The session digest (`passdown._digest`): a SHA-256 chain over 2 MiB blocks whose
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
    link = hashlib.sha256(b"passdown chained sha256, 2 MiB blocks").digest()
    whole = len(data) - len(data) % BLOCK
    for start in range(0, whole, BLOCK):
        link = hashlib.sha256(link + data[start : start + BLOCK]).digest()
    return hashlib.sha256(link + data[whole:] + len(data).to_bytes(8, "big")).hexdigest()


@settings(max_examples=30, deadline=None)
@given(
    size=st.integers(0, 3 * BLOCK + 17),
    cuts=st.lists(st.floats(0, 1), max_size=4),
    piece=st.integers(1, 2 * BLOCK),
)
def test_a_resumed_chain_equals_one_pass(size: int, cuts: list[float], piece: int) -> None:
    data = (bytes(range(3, 254)) * (size // 251 + 1))[:size]  # blocks differ: 251 is prime
    expected = _reference(data)
    assert file_digest(io.BytesIO(data).read) == expected
    state = ChainState()
    for cut in [*sorted(int(c * size) for c in cuts), size]:
        chain = ChainDigest(msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=ChainState))
        assert chain.folded == state.folded <= cut
        # a chain continued from a state is given the file again from `folded` on
        for start in range(state.folded, cut, piece):
            chain.update(data[start : min(cut, start + piece)])
        state = chain.state()
        assert 0 <= cut - state.folded < BLOCK
        last = chain
    assert last.hexdigest() == expected


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
        ChainState(folded=-BLOCK),
    ):
        with pytest.raises(ValueError):
            ChainDigest(bad)
