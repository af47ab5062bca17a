"""The session file's digest (`Source.transcript_sha256`): a chain of SHA-256 over its
64 KiB blocks, which a checkpoint can save and continue.

hashlib's SHA-256 state cannot be saved, so a digest of the whole file would mean
reading the whole file on every export. The chain can: each complete block is folded
into a 32-byte link (`link = sha256(link || block)`), and the state is the link, the
number of bytes folded and the bytes of the block not yet complete (under 64 KiB). The
digest is `sha256(link || rest || length)`: it changes with any byte of the file and
with its length, and a full read and a resumed one give the same value. It is not the
`sha256sum` of the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import msgspec

BLOCK = 64 * 1024
_SEED = hashlib.sha256(b"passdown chained sha256, 64 KiB blocks").digest()


class ChainState(msgspec.Struct, frozen=True):
    """Where a chain stands: `folded` bytes went into `link`; `rest` waits for its
    block to complete."""

    link: bytes = _SEED
    folded: int = 0
    rest: bytes = b""


class ChainDigest:
    """The running chain over the bytes given to `update`, in order."""

    __slots__ = ("_folded", "_link", "_rest")

    def __init__(self, state: ChainState | None = None) -> None:
        state = state or ChainState()
        if len(state.link) != 32 or len(state.rest) >= BLOCK or state.folded % BLOCK:
            raise ValueError("not a digest chain's state")
        self._link, self._folded, self._rest = state.link, state.folded, bytearray(state.rest)

    def update(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        if self._rest:
            need = BLOCK - len(self._rest)
            self._rest += view[:need]
            view = view[need:]
            if len(self._rest) < BLOCK:
                return
            self._fold(self._rest)
            self._rest = bytearray()
        whole = len(view) - len(view) % BLOCK
        for start in range(0, whole, BLOCK):
            self._fold(view[start : start + BLOCK])
        self._rest += view[whole:]

    def _fold(self, block: bytes | bytearray | memoryview) -> None:
        link = hashlib.sha256(self._link)
        link.update(block)  # hashlib lets the GIL go for a block this size
        self._link = link.digest()
        self._folded += BLOCK

    def state(self) -> ChainState:
        return ChainState(self._link, self._folded, bytes(self._rest))

    def hexdigest(self) -> str:
        length = self._folded + len(self._rest)
        last = hashlib.sha256(self._link)
        last.update(self._rest)
        last.update(length.to_bytes(8, "big"))
        return last.hexdigest()

    def update_from(
        self,
        read_at: Callable[[int, int], bytes],
        start: int,
        end: int,
        failed: list[OSError] | None = None,
        chunk: int = 1 << 20,
    ) -> None:
        """Fold bytes [start, end) read with `read_at(size, offset)`; on a thread, a read
        error goes to `failed` instead of being raised."""
        pos = start
        try:
            while pos < end:
                data = read_at(min(chunk, end - pos), pos)
                if not data:
                    break
                self.update(data)
                pos += len(data)
        except OSError as exc:
            if failed is None:
                raise
            failed.append(exc)


def file_digest(read: Callable[[int], bytes]) -> str:
    """The chain digest of a whole stream read with `read(size)` to its end."""
    chain = ChainDigest()
    while data := read(1 << 20):
        chain.update(data)
    return chain.hexdigest()
