"""Incremental export: a checkpoint per session, so a hook that runs after every turn
reads only what the agent appended since the last export.

An export reads its session one way: in full, or from a checkpoint on. A checkpoint
(under the data folder, `checkpoints/`, 0600) records the byte offset read so far
(always the end of a complete line), the file's identity, fingerprints of the bytes
before that offset, the state of the file's chain digest (`passdown._digest`), and the
states of the agent's reader and of the extractor at that point. The next export
checks it, restores both states, reads the bytes from the offset on, and saves a new
checkpoint at the new last line end; a last line without its newline (a writer still
writing it, or killed) is read for the handoff but never checkpointed past.

What a checkpoint detects, each meaning a full read (which gives the same handoff):
a file shorter than the offset (truncated), another file at the same path (device and
inode differ: replaced, or rotated), a rewritten head (the sha256 of the first 64 KiB)
or a rewritten tail before the offset (the sha256 of the 64 KiB before it), other
export options, another passdown version, a checkpoint of another format version or
shape, or one that cannot be read. What it cannot detect: an edit that keeps the
file, its length and both fingerprinted spans, somewhere between them. That is
acceptable for the files it serves: only agents whose sessions are one append-only
JSON Lines file opt in (`Agent.supports_checkpoint`), and such an edit is no agent's
doing; `PASSDOWN_NO_CHECKPOINT=1` reads every session in full. Compressed (`.zst`)
files are always read in full.

A reader may plan the new bytes before reading them (`begin`): a tree reader (Claude
Code, Qwen Code, pi: `passdown.agents._tree_resume.TreeResumable`) walks them back from
their leaf and refuses when they do not continue the saved leaf (then the file is read
from its start), and says through a `None` state when its state must not be kept. A
reader that meets appended lines it cannot follow (Gemini: a rewind into messages it
handed on already) raises `CannotResume`: the checkpoint is dropped and the file read
in full.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, cast

import msgspec
from pydantic import ValidationError as PydanticValidationError

from passdown import __version__, _platform
from passdown._checkpoint_writes import CHECKPOINTS_DIR, PendingCheckpoint, change
from passdown._checkpoint_writes import STALE_AFTER_DAYS as STALE_AFTER_DAYS
from passdown._checkpoint_writes import deferred as deferred
from passdown._checkpoint_writes import prune_stale as prune_stale
from passdown._digest import BLOCK, ChainDigest, ChainState
from passdown._extract import (
    Extracted,
    ExtractorState,
    extractor_state,
    new_extractor,
    restore_extractor,
)
from passdown._fsio import read_nofollow
from passdown._jsonl import FdWindow, is_zstd, read_progress
from passdown._read_ahead import ReadAhead
from passdown.agents._tree_forward import BranchLeft
from passdown.agents.base import CannotResume
from passdown.errors import PassdownError, SessionReadError
from passdown.transcript import Diagnostics, SessionInfo, SessionRef, Transcript

if TYPE_CHECKING:
    from passdown._extract import _Extractor
    from passdown._seen import SeenEvents
    from passdown.agents.base import Agent, ResumableReader

# Bump whenever the shape or the meaning of a checkpoint changes: a checkpoint of
# another format is ignored (the session is read in full and a new one written).
CHECKPOINT_FORMAT = 7
DISABLE_ENV = "PASSDOWN_NO_CHECKPOINT"
FINGERPRINT_SPAN = 64 * 1024

How = Literal["full", "resumed", "refused", "off", "unsupported"]


class Reading(msgspec.Struct):
    """How an export read its session file: `offset` where it started, `bytes` how many
    it read from there. `how`: "resumed" (from a checkpoint), "full" (from the start;
    "refused" when a checkpoint was there and could not be used), "off"
    (`PASSDOWN_NO_CHECKPOINT`), "unsupported" (the agent or the file has none)."""

    how: How = "unsupported"
    offset: int = 0
    bytes: int = 0

    def read_whole(self, path: Path) -> None:
        """A read from the start of the session (of a folder's files, for agents that
        keep a folder): every byte of it."""
        self.offset = 0
        try:
            if path.is_dir():
                self.bytes = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            else:
                self.bytes = os.stat(path).st_size
        except OSError:
            self.bytes = 0

    def as_dict(self) -> dict[str, object]:
        return {"checkpoint": self.how, "offset": self.offset, "bytes": self.bytes}

    def line(self) -> str:
        return f"read {self.bytes:,} bytes from offset {self.offset:,} (checkpoint: {self.how})"


class _InfoState(msgspec.Struct):
    session_id: str
    cwd: str | None = None
    agent_version: str | None = None
    models: list[str] = []
    started_at: str | None = None
    updated_at: str | None = None
    git_branch: str | None = None
    title: str | None = None


class Checkpoint(msgspec.Struct):
    format: int
    passdown_version: str
    agent: str
    path: str
    offset: int
    file_id: tuple[int, int]  # (st_dev, st_ino): a file replaced by another is read anew
    head_sha256: str  # of the first FINGERPRINT_SPAN bytes before the offset
    tail_sha256: str  # of the last FINGERPRINT_SPAN bytes before the offset
    digest: ChainState  # the chain digest of the whole blocks before the offset
    info: _InfoState
    diagnostics: Diagnostics
    reader: msgspec.Raw  # the agent reader's own state (msgpack)
    extractor: ExtractorState
    events_seen: int
    commands: list[str]  # every distinct command line (for attributing git changes)
    resumed_from: int = 0  # where the export that wrote it started reading (0: a full read)


class _Format(msgspec.Struct):
    """The one field every checkpoint format has, read before the rest."""

    format: int = -1


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Checkpoint)
_FORMAT_DECODER = msgspec.msgpack.Decoder(_Format)


def disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip() not in ("", "0")


def read_with_checkpoint(
    agent: Agent,
    ref: SessionRef,
    seen: SeenEvents,
    reading: Reading,
    *,
    workspace: str,
    max_messages: int,
    max_chars: int,
) -> tuple[Transcript, Extracted] | None:
    """The session read and extracted through its checkpoint (and the checkpoint moved
    on), or None when this session cannot be read that way: the caller reads it in full
    the usual way. Events pass through `seen` exactly as in a full read; `reading` says
    how the file was read."""
    if disabled():
        reading.how = "off"
        return None
    if not agent.supports_checkpoint or is_zstd(ref.path):
        return None
    try:
        store = checkpoint_path(agent.name, ref.path)
        fd = os.open(ref.path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_BINARY)
    except (OSError, PassdownError):
        return None  # the full read reports an unreadable file properly
    try:
        try:
            return _Resumed(agent, ref, seen, store, fd, reading).run(
                workspace, max_messages, max_chars
            )
        except BranchLeft:
            # the forward pass met a rewind: read again with the tree's pass 1 (what it
            # handed on goes, and the checkpoint it may have planned with it)
            seen.count, seen.commands = 0, []
            change(PendingCheckpoint(store, None))
            again = _Resumed(agent, ref, seen, store, fd, reading, forward=False)
            return again.run(workspace, max_messages, max_chars)
    except CannotResume:
        # the appended lines change what the checkpoint handed on: the caller reads the
        # file in full (its next export starts a new checkpoint)
        seen.count, seen.commands = 0, []
        reading.how = "refused"
        change(PendingCheckpoint(store, None))
        return None
    finally:
        os.close(fd)


def checkpoint_path(agent: str, path: Path) -> Path:
    """Where the checkpoint of one session file lives. Nothing is created here: the
    folder comes with the first checkpoint written (`_Resumed._save`), so an export
    that fails (no session, an unreadable one) leaves no empty `checkpoints/` behind."""
    from passdown._paths import data_dir

    key = hashlib.sha256(f"{agent}\0{Path(path).absolute()}".encode("utf-8", "replace"))
    return data_dir().resolve() / CHECKPOINTS_DIR / f"{agent}-{key.hexdigest()[:32]}.msgpack"


class _Resumed(msgspec.Struct):
    agent: Agent
    ref: SessionRef
    seen: SeenEvents
    store: Path
    fd: int
    reading: Reading
    file_id: tuple[int, int] = (0, 0)
    resumed_from: int = 0
    forward: bool = True  # a tree reader's first read may take its forward pass

    def run(
        self, workspace: str, max_messages: int, max_chars: int
    ) -> tuple[Transcript, Extracted]:
        stat = os.fstat(self.fd)
        size = stat.st_size  # bytes appended while reading wait for the next export
        self.file_id = (stat.st_dev, stat.st_ino)
        saved = self._load(size, workspace, max_messages, max_chars)
        resumed = None
        if saved is not None:
            start = saved.offset
            end = _last_line_end(self.fd, start, size)
            info = self._new_info()
            resumed = self._restore(saved, info, (start, end, size))
            if resumed is None:
                self.reading.how = "refused"
                self._forget()  # it cannot serve the next export either
        if resumed is None:  # from the start of the file
            start = 0
            end = _last_line_end(self.fd, start, size)
            info = self._new_info()
            diagnostics = Diagnostics()
            extractor = new_extractor(
                workspace=workspace, max_messages=max_messages, max_chars=max_chars
            )
            reader = self.agent.resumable_reader(info, diagnostics, None, extractor.pending)
            if not self.forward and hasattr(reader, "forward"):
                reader.forward = False
            chain = ChainDigest()
            if self.reading.how != "refused":
                self.reading.how = "full"
        else:
            diagnostics, extractor, reader, chain = resumed
            self.resumed_from = start
            self.reading.how = "resumed"
        self.reading.offset, self.reading.bytes = start, size - start
        share_plan = getattr(reader, "share_plan", None)
        if share_plan is not None:  # the plan replayed once, by extraction
            share_plan(extractor.replay)
        # the complete lines: read and hashed on a thread while they are planned and parsed
        ahead = ReadAhead(self._read_at, start, end, chain, hash_from=chain.folded)
        try:
            if resumed is None:  # a restored reader planned its windows in `_restore`
                _begin(reader, self.fd, (start, end, size), self.ref.path)
            with _progress_from(start):
                extractor.feed_all(reader.events(cast(BinaryIO, ahead)), self.seen)
        finally:
            ahead.close()
        if ahead.failed:
            raise SessionReadError(f"cannot read {self.ref.path}: {ahead.failed[0]}")
        reader_state = reader.state() if end > start else None
        if reader_state is not None:  # None: this reader's state cannot be kept
            self._save(
                _Snapshot(
                    end,
                    chain.state(),
                    info,
                    diagnostics,
                    reader_state,
                    extractor_state(extractor),
                    self.seen,
                )
            )
        # a reader's state may hold views of its arrays (Gemini's live list): let them go
        # before the reader reads on and grows them
        del reader_state
        # a last line without its newline: part of this handoff, never of the checkpoint
        chain.update_from(self._read_at, end, size)
        with _progress_from(end):
            extractor.feed_all(
                reader.events(cast(BinaryIO, FdWindow(self.fd, end, size))), self.seen
            )
        extractor.feed_all(reader.close(), self.seen)
        transcript = Transcript(
            info=info, diagnostics=diagnostics, _events=iter(()), sha256=chain.hexdigest()
        )
        return transcript, extractor.finish()

    def _read_at(self, size: int, offset: int) -> bytes:
        return _platform.pread(self.fd, size, offset)

    def _new_info(self) -> SessionInfo:
        return SessionInfo(
            agent=self.agent.name,
            session_id=self.ref.session_id,
            path=self.ref.path,
            cwd=self.ref.cwd,
        )

    def _restore(
        self, saved: Checkpoint, info: SessionInfo, bounds: tuple[int, int, int]
    ) -> tuple[Diagnostics, _Extractor, ResumableReader, ChainDigest] | None:
        """The states a valid checkpoint holds, live again; None if any of them cannot
        be restored, or the reader cannot go on over the new bytes from its state (then
        the file is read from its start)."""
        _restore_info(info, saved.info)
        try:
            extractor = restore_extractor(saved.extractor)
            reader_state = msgspec.msgpack.decode(saved.reader)
            diagnostics = saved.diagnostics
            reader = self.agent.resumable_reader(info, diagnostics, reader_state, extractor.pending)
            chain = ChainDigest(saved.digest)
        except (
            msgspec.DecodeError,
            msgspec.ValidationError,
            PydanticValidationError,
            TypeError,
            ValueError,
            KeyError,
        ):
            return None
        if not _begin(reader, self.fd, bounds, self.ref.path):
            return None
        self.seen.count = saved.events_seen
        self.seen.commands = list(saved.commands)
        return diagnostics, extractor, reader, chain

    def _load(
        self, size: int, workspace: str, max_messages: int, max_chars: int
    ) -> Checkpoint | None:
        try:
            data = read_nofollow(self.store)
        except OSError:
            return None  # none yet (or unreadable: a new one replaces it)
        self.reading.how = "refused"  # until it proves usable
        try:
            if _FORMAT_DECODER.decode(data).format != CHECKPOINT_FORMAT:
                return None  # another format's fields may mean other things
            saved = _DECODER.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        state = saved.extractor
        if (
            saved.format != CHECKPOINT_FORMAT
            or saved.passdown_version != __version__
            or saved.agent != self.agent.name
            or saved.path != str(self.ref.path)
            or saved.file_id != self.file_id
            or (state.workspace, state.max_messages, state.max_chars)
            != (workspace, max_messages, max_chars)
            or not 0 < saved.offset <= size
            or not 0 <= saved.offset - saved.digest.folded < BLOCK
            or _fingerprint(self.fd, saved.offset) != (saved.head_sha256, saved.tail_sha256)
        ):
            return None
        return saved

    def _save(self, snapshot: _Snapshot) -> None:
        """Encoded now, before the torn tail is read (the states are live objects), and
        written when the export succeeds (`_checkpoint_writes`)."""

        head, tail = _fingerprint(self.fd, snapshot.offset)
        info = snapshot.info
        checkpoint = Checkpoint(
            format=CHECKPOINT_FORMAT,
            passdown_version=__version__,
            agent=self.agent.name,
            path=str(self.ref.path),
            offset=snapshot.offset,
            file_id=self.file_id,
            head_sha256=head,
            tail_sha256=tail,
            digest=snapshot.digest,
            info=_InfoState(
                session_id=info.session_id,
                cwd=info.cwd,
                agent_version=info.agent_version,
                models=list(info.models),
                started_at=info.started_at,
                updated_at=info.updated_at,
                git_branch=info.git_branch,
                title=info.title,
            ),
            diagnostics=snapshot.diagnostics,
            reader=msgspec.Raw(_ENCODER.encode(snapshot.reader)),
            extractor=snapshot.extractor,
            events_seen=snapshot.seen.count,
            commands=list(dict.fromkeys(snapshot.seen.commands)),
            resumed_from=self.resumed_from,
        )
        try:
            data = _ENCODER.encode(checkpoint)
        except TypeError:  # a reader state msgspec cannot encode: no checkpoint this time
            data = None
        change(PendingCheckpoint(self.store, data))

    def _forget(self) -> None:
        change(PendingCheckpoint(self.store, None))


def _begin(reader: ResumableReader, fd: int, bounds: tuple[int, int, int], path: Path) -> bool:
    """A reader that must see the new bytes before the windows (a tree reader finding
    its branch) plans them now; False: it cannot continue from its state."""
    begin = getattr(reader, "begin", None)
    if begin is None:
        return True
    try:
        return bool(begin(fd, *bounds))
    except OSError as exc:
        raise SessionReadError(f"cannot read {path}: {exc.strerror or exc}") from None


class _Snapshot(msgspec.Struct):
    offset: int
    digest: ChainState
    info: SessionInfo
    diagnostics: Diagnostics
    reader: object
    extractor: ExtractorState
    seen: SeenEvents


@contextmanager
def _progress_from(start: int) -> Iterator[None]:
    """A progress display (`jsonl.read_progress`) sees offsets in the file, not in the
    window being read."""
    hook = read_progress.get()
    if hook is None or start == 0:
        yield
        return
    token = read_progress.set(lambda path, done: hook(path, start + done))
    try:
        yield
    finally:
        read_progress.reset(token)


def _restore_info(info: SessionInfo, saved: _InfoState) -> None:
    info.session_id = saved.session_id
    info.cwd = saved.cwd
    info.agent_version = saved.agent_version
    info.models = list(saved.models)
    info.started_at = saved.started_at
    info.updated_at = saved.updated_at
    info.git_branch = saved.git_branch
    info.title = saved.title


def _fingerprint(fd: int, offset: int) -> tuple[str, str]:
    head = _platform.pread(fd, min(FINGERPRINT_SPAN, offset), 0)
    tail_start = max(0, offset - FINGERPRINT_SPAN)
    tail = _platform.pread(fd, offset - tail_start, tail_start)
    return hashlib.sha256(head).hexdigest(), hashlib.sha256(tail).hexdigest()


def _last_line_end(fd: int, start: int, size: int) -> int:
    """The offset just after the last newline in [start, size), or `start`."""
    pos = size
    while pos > start:
        begin = max(start, pos - FINGERPRINT_SPAN)
        chunk = _platform.pread(fd, pos - begin, begin)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return begin + newline + 1
        pos = begin
    return start
