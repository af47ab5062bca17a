"""msgspec JSON decoders built when first used.

An export imports every agent's module to ask where its sessions live (a session of
another agent may explain a change in the workspace), but reads the sessions of one. A
decoder is built from its type (annotations resolved, the type walked) at its first
`decode`, so importing a module whose sessions are not read costs none of that; after
the first call `decode` is the built decoder's own method, as fast as calling it directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

import msgspec

T = TypeVar("T")
Buffer = Any  # what msgspec decodes: str, bytes or any object with the buffer protocol


class LazyDecoder(Generic[T]):
    """`msgspec.json.Decoder(type, strict=...)`, built on its first `decode`."""

    __slots__ = ("_built", "_strict", "_type", "decode")
    decode: Callable[[Buffer | str], T]

    @overload
    def __init__(self: LazyDecoder[T], type: type[T], *, strict: bool = ...) -> None: ...
    @overload
    def __init__(self: LazyDecoder[Any], type: Any = ..., *, strict: bool = ...) -> None: ...
    def __init__(self, type: Any = Any, *, strict: bool = True) -> None:
        self._type, self._strict = type, strict
        self._built: msgspec.json.Decoder[T] | None = None
        self.decode = self._first_decode

    def _first_decode(self, buf: Buffer | str) -> T:
        # also reached through a reference to `decode` taken before the first call
        if self._built is None:
            self._built = msgspec.json.Decoder(self._type, strict=self._strict)
            self.decode = self._built.decode
        return self._built.decode(buf)
