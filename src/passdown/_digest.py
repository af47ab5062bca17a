"""The session file's digest (`Source.transcript_sha256`): a chain of SHA-256 over its
2 MiB blocks, which a checkpoint can save and continue.

hashlib's SHA-256 state cannot be saved, so a digest of the whole file would mean
reading the whole file on every export. The chain can: each complete block is folded
into a 32-byte link (`link = sha256(link || block)`), and the state is the link and the
number of bytes folded. The digest is `sha256(link || rest || length)`, `rest` being the
bytes after the last whole block: it changes with any byte of the file and with its
length, and a full read and a resumed one give the same value. It is not the
`sha256sum` of the file.

A saved state holds no file bytes: a chain continued from it is given the file again
from `folded` on (under one block), which keeps a checkpoint small. Blocks are large so
that the thread folding them beside the parse (`passdown._read_ahead`) needs the GIL
seldom: the hashing itself lets it go, and each time the thread takes the GIL back it
may wait for the interpreter's switch interval (5 ms).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import msgspec

BLOCK = 2 * 1024 * 1024
_SEED = hashlib.sha256(b"passdown chained sha256, 2 MiB blocks").digest()


class ChainState(msgspec.Struct, frozen=True):
    """Where a chain stands: the first `folded` bytes (whole blocks) went into `link`."""

    link: bytes = _SEED
    folded: int = 0


class ChainDigest:
    """The running chain over the bytes given to `update`, in order (from `folded` on,
    for a chain continued from a state). The block being filled is hashed as its bytes
    come (`sha256(link || ...)` so far): no byte of it is kept."""

    __slots__ = ("_filled", "_folded", "_link", "_open")

    def __init__(self, state: ChainState | None = None) -> None:
        state = state or ChainState()
        if len(state.link) != 32 or state.folded % BLOCK or state.folded < 0:
            raise ValueError("not a digest chain's state")
        self._link, self._folded = state.link, state.folded
        self._open = hashlib.sha256(self._link)  # the block being filled
        self._filled = 0  # its bytes so far

    @property
    def folded(self) -> int:
        """The bytes folded into the link: a chain continued from `state()` is given the
        bytes from here on again."""
        return self._folded

    def update(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            piece = view[: BLOCK - self._filled]
            self._open.update(piece)  # hashlib lets the GIL go while it hashes a large piece
            self._filled += len(piece)
            view = view[len(piece) :]
            if self._filled == BLOCK:  # the block is whole: fold it into the link
                self._link = self._open.digest()
                self._folded += BLOCK
                self._open = hashlib.sha256(self._link)
                self._filled = 0

    def state(self) -> ChainState:
        """The chain up to its last whole block (`folded`); the bytes after it are not
        kept."""
        return ChainState(self._link, self._folded)

    def hexdigest(self) -> str:
        last = self._open.copy()  # sha256(link || the bytes after the last whole block)
        last.update((self._folded + self._filled).to_bytes(8, "big"))
        return last.hexdigest()

    def update_from(
        self, read_at: Callable[[int, int], bytes], start: int, end: int, chunk: int = BLOCK
    ) -> None:
        """Fold bytes [start, end) read with `read_at(size, offset)`."""
        pos = start
        while pos < end:
            data = read_at(min(chunk, end - pos), pos)
            if not data:
                break
            self.update(data)
            pos += len(data)


def file_digest(read: Callable[[int], bytes]) -> str:
    """The chain digest of a whole stream read with `read(size)` to its end."""
    chain = ChainDigest()
    while data := read(1 << 20):
        chain.update(data)
    return chain.hexdigest()
