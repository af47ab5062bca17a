"""VS Code's chat session files: the older `.json` document, read as a stream
(`SessionDocument`: its requests one at a time, then its few fields, memory flat whatever
its size), or the newer `.jsonl` replay log (`ChatSessionOperationLog`, an
`ObjectMutationLog`), replayed into one object.

From github.com/microsoft/vscode `src/vs/workbench/contrib/chat/common/model/
objectMutationLog.ts`: line 1 is `{"kind":0,"v":<the whole ISerializableChatData>}`; each
later line changes it at a path `k` (keys and array indexes from the root): kind 1 sets
`v` there, kind 2 truncates the array there to `i` (when given) and pushes the items of
`v`, kind 3 deletes the property. A later kind 0 (the editor compacts the log) starts
over. The lines are applied in order while the file streams; each costs its own size plus
the path's length, so a log of 100,000 mutations is read in linear time (a truncation
removes only what earlier pushes added).

A mutation whose path does not lead anywhere (a torn or foreign log) is skipped and
counted, as VS Code would fail on it; the state read so far still stands.
"""

from __future__ import annotations

import contextlib
import tempfile
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import msgspec

from passdown._jsonl import LineReader
from passdown._lazy_json import LazyDecoder
from passdown.agents._common import DECODE_ERRORS
from passdown.transcript import Diagnostics

_Path = list[str | int]


class _Entry(msgspec.Struct):
    kind: int
    k: _Path = []
    v: Any = None
    i: int | None = None


_ENTRY = LazyDecoder(_Entry)
_ENCODE = msgspec.json.Encoder().encode
_ANY = LazyDecoder()


class _Spilled:
    """What the request list holds where a request was spilled (one shared mark: where
    it lies is kept by index, in an array of ints, 8 bytes a request)."""


_SPILLED = _Spilled()


class ChatLogReplay:
    """Applies one log line at a time to the session object being rebuilt.

    Every request but the last is packed once a later one is pushed: its JSON bytes go to
    a private temporary file (deleted when closed), the list keeps a mark and an array
    where: a long chat holds 16 bytes a request in memory, not the chat. A request list
    only grows at its end, is cut at its end or has items set: a mark stays at the index
    it was put at. A mutation
    that reaches into a packed request unpacks it for good (each at most once), and
    `requests()` reads the packed ones back one at a time."""

    def __init__(self, diag: Diagnostics) -> None:
        self.diag = diag
        self.state: Any = None
        self.skipped = 0  # mutations whose path led nowhere
        self._packed = 0  # requests before this index were packed already
        self._spill: BinaryIO | None = None
        self._spill_end = 0
        self._where = array("Q")  # by request index: offset << 32 | length, where spilled

    def requests(self) -> Iterator[object]:
        """The session's requests, in order, each decoded (None for one that cannot be);
        the spill file is closed at the end."""
        requests = self.state.get("requests") if isinstance(self.state, dict) else None
        try:
            for n, request in enumerate(requests if isinstance(requests, list) else []):
                yield self._unpack(request, n)
        finally:
            self.close()

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def apply_line(self, line: bytes) -> None:
        try:
            entry = _ENTRY.decode(line)
        except DECODE_ERRORS:
            self.diag.bad_lines += 1
            return
        if entry.kind == 0:
            self.state, self._packed = entry.v, 0
        elif self.state is None or entry.kind not in (1, 2, 3) or not self._apply(entry):
            self.skipped += 1
        self._pack()

    def _apply(self, entry: _Entry) -> bool:
        if entry.kind == 1 and len(entry.k) < 2:  # the root or the request list replaced
            self._packed = 0
        if not entry.k:
            if entry.kind == 1:  # the root replaced
                self.state = entry.v
                return True
            return False
        parent = self._walk(self.state, entry.k[:-1])
        last = entry.k[-1]
        if entry.kind == 1:
            return _assign(parent, last, entry.v)
        if entry.kind == 3:
            return _remove(parent, last)
        target = self._child(parent, last)  # a packed request's list unpacked first
        return _push(parent, last, target, entry.v, entry.i)

    def _pack(self) -> None:
        requests = self.state.get("requests") if isinstance(self.state, dict) else None
        if not isinstance(requests, list):
            return
        done = len(requests) - 1  # the last request is still being written
        for n in range(min(self._packed, max(done, 0)), done):
            if isinstance(requests[n], dict):
                with contextlib.suppress(msgspec.EncodeError, RecursionError):  # kept as is
                    requests[n] = self._spilled(_ENCODE(requests[n]), n)
        self._packed = max(done, 0)

    def _spilled(self, data: bytes, n: int) -> object:
        """Where `data` was written in the spill file; the bytes themselves (in memory)
        when it cannot be written or is too long to say where."""
        if len(data) >= 1 << 32:
            return msgspec.Raw(data)
        try:
            spill = self._spill
            if spill is None:  # open while the replay is (a wrapper object on Windows)
                spill = self._spill = cast(BinaryIO, tempfile.TemporaryFile())  # noqa: SIM115
            spill.seek(self._spill_end)
            spill.write(data)
        except OSError:
            return msgspec.Raw(data)
        if len(self._where) <= n:
            self._where.frombytes(bytes(8 * (n + 1 - len(self._where))))
        self._where[n] = self._spill_end << 32 | len(data)
        self._spill_end += len(data)
        return _SPILLED

    def _unpack(self, request: object, n: int) -> object:
        if request is _SPILLED:
            if self._spill is None:
                return None
            where = self._where[n]
            self._spill.seek(where >> 32)
            request = msgspec.Raw(self._spill.read(where & 0xFFFFFFFF))
        return decode_request(request)

    def _child(self, node: Any, step: str | int) -> Any:
        """node[step] when there is one (a packed request unpacked in place), else None."""
        if isinstance(node, dict) and isinstance(step, str):
            child = node.get(step)
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            child = node[step]
        else:
            return None
        if child is _SPILLED or isinstance(child, msgspec.Raw):
            child = node[step] = self._unpack(child, step if isinstance(step, int) else 0)
        return child

    def _walk(self, node: Any, path: _Path) -> Any:
        for step in path:
            node = self._child(node, step)
            if node is None:
                return None
        return node


def _assign(parent: Any, key: str | int, value: Any) -> bool:
    if isinstance(parent, dict) and isinstance(key, str):
        parent[key] = value
        return True
    if isinstance(parent, list) and isinstance(key, int) and 0 <= key <= len(parent):
        if key == len(parent):
            parent.append(value)
        else:
            parent[key] = value
        return True
    return False


def _remove(parent: Any, key: str | int) -> bool:
    if isinstance(parent, dict) and isinstance(key, str):
        parent.pop(key, None)
        return True
    return False


def _push(parent: Any, key: str | int, target: Any, values: Any, truncate_at: int | None) -> bool:
    if not isinstance(target, list):
        if not isinstance(parent, dict) or not isinstance(key, str):
            return False
        target = parent[key] = []
    if truncate_at is not None and truncate_at >= 0:
        del target[truncate_at:]
    if isinstance(values, list):
        target.extend(values)
    return True


class SessionDocument:
    """A `.json` session (`ISerializableChatData`) read as a stream: `requests()` gives its
    requests one at a time, decoded; `field(name)` its `creationDate` or `customTitle`
    (after the requests in the file: taken in the same pass once they are read). A file
    cut short or not JSON past a point gives the requests before it, and a warning; one
    cut inside a request gives that request too, as far as it was written (`chatModel.ts`
    `toExport` writes a request's `message` before its `response`), and `cut` says so."""

    def __init__(self, path: Path, diag: Diagnostics) -> None:
        from passdown.agents._json_stream import NO_LIMIT, DocumentStream  # to read, not to list

        self.diag = diag
        self.stream = DocumentStream(
            path,
            "requests.item",
            _FIELDS,
            diag,
            limit=NO_LIMIT,
            shape="a chat session",
            unfinished=True,
        )

    @property
    def cut(self) -> bool:
        """Whether the last request given was cut short (read once `requests()` ran)."""
        return self.stream.cut_item

    def requests(self) -> Iterator[object]:
        for request in self.stream.values():
            self.diag.lines += 1
            yield request

    def field(self, name: str) -> object:
        return self.stream.field(name, _ANY)


_FIELDS = ("creationDate", "customTitle")


def replay_log(path: Path, diag: Diagnostics) -> ChatLogReplay | None:
    """The replay of a `.jsonl` log (`state` the chat session object it rebuilt,
    `requests()` its requests), or None (with a warning) when it holds no session."""
    replay = ChatLogReplay(diag)
    for _offset, line in LineReader(path, diag).forward():
        replay.apply_line(line)
    if replay.skipped:
        diag.warnings.append(
            f"{replay.skipped} change(s) in {path.name} did not apply to the chat and were skipped"
        )
    if not isinstance(replay.state, dict):
        diag.warnings.append(f"{path.name} holds no chat session")
        replay.close()
        return None
    return replay


def decode_request(request: object) -> object:
    """One request of a session: a raw slice of a `.json` file is decoded here; the
    requests of a replayed `.jsonl` log are plain data already."""
    if not isinstance(request, msgspec.Raw):
        return request
    try:
        return _ANY.decode(request)
    except DECODE_ERRORS:
        return None
