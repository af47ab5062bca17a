"""A list kept as msgpack bytes: for a two-core read's worker (`passdown._two_core`),
whose record of what a later half did (plan changes, reduced by `passdown._plan_steps`)
can run to thousands of small items. As objects they cost a few hundred bytes each, in the worker and again in
the main process that merges them; packed, about sixty, and the main process decodes
one item at a time while it replays them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

import msgspec

T = TypeVar("T")
_ENCODER = msgspec.msgpack.Encoder()
_LENGTH = 4  # bytes of each item's length prefix (little-endian)


class Packed(Generic[T]):
    """Items appended as length-prefixed msgpack; `data` is what travels."""

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)
        self.count = 0

    def append(self, item: T) -> None:
        start = len(self.data)
        self.data += b"\0" * _LENGTH
        _ENCODER.encode_into(item, self.data, -1)
        self.data[start : start + _LENGTH] = (len(self.data) - start - _LENGTH).to_bytes(
            _LENGTH, "little"
        )
        self.count += 1

    def clear(self) -> None:
        self.data.clear()
        self.count = 0

    def __len__(self) -> int:
        return self.count


def unpacked(data: bytes, kind: type[T]) -> Iterator[T]:
    """The items of `Packed.data`, decoded one at a time."""
    decoder = msgspec.msgpack.Decoder(kind)
    view = memoryview(data)
    pos = 0
    while pos < len(view):
        size = int.from_bytes(view[pos : pos + _LENGTH], "little")
        pos += _LENGTH
        yield decoder.decode(view[pos : pos + size])
        pos += size
