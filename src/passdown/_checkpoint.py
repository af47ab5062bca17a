"""Incremental export: a checkpoint per session, so a hook that runs after every turn
reads only what the agent appended since the last export.

A checkpoint (under the data folder, `checkpoints/`, 0600) records the byte offset read
so far (always the end of a complete line), a fingerprint of the bytes before it (the
first and the last 64 KiB), the running sha256 of the file up to it, and the state of
the agent's reader and of the extractor at that point. The next export checks the
fingerprint, restores both states, reads the bytes from the offset on, and saves a new
checkpoint at the new last line end; a last line without its newline (a writer still
writing it, or killed) is read for the handoff but never checkpointed past.

Anything that does not match (a shorter file, another file at the same path, changed
bytes in the fingerprinted parts, other export options, another passdown version, an
unreadable checkpoint) means a full read, which gives the same handoff. A change in the
middle of the prefix that keeps the file, its size and both fingerprinted ends is not
seen: the agents that opt in only ever append to their logs. `PASSDOWN_NO_CHECKPOINT=1` turns all of this off.
Only agents whose sessions are one append-only JSON Lines file implement it
(`Agent.supports_checkpoint`); compressed (`.zst`) files are always read in full. A
reader may also plan the new bytes before reading them (`begin`): a tree reader
(Claude Code, Qwen Code, pi: `passdown.agents._tree.TreeResumable`) walks them back from
their leaf and refuses when they do not continue the saved leaf (then the file is read
from its start), and says through a `None` state when its state must not be kept. A
reader that meets appended lines it cannot follow (Gemini: a rewind into messages it
handed on already) raises `CannotResume`: the checkpoint is dropped and the file read in
full.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

import msgspec
from pydantic import ValidationError as PydanticValidationError

from passdown import _platform, _two_core
from passdown._checkpoint_writes import CHECKPOINTS_DIR, PendingCheckpoint, change
from passdown._checkpoint_writes import STALE_AFTER_DAYS as STALE_AFTER_DAYS
from passdown._checkpoint_writes import deferred as deferred
from passdown._checkpoint_writes import prune_stale as prune_stale
from passdown._extract import (
    Extracted,
    ExtractorState,
    extractor_state,
    new_extractor,
    restore_extractor,
)
from passdown._fsio import read_nofollow
from passdown._jsonl import CHUNK, FdWindow, is_zstd, read_progress
from passdown.agents._tree_forward import BranchLeft
from passdown.agents.base import CannotResume
from passdown.errors import PassdownError, SessionReadError
from passdown.transcript import Diagnostics, SessionInfo, SessionRef, Transcript

if TYPE_CHECKING:
    from passdown._extract import _Extractor
    from passdown._seen import SeenEvents
    from passdown.agents.base import Agent, ResumableReader

# Bump whenever the shape or the meaning of a checkpoint changes.
# 2: failures and commands kept as records, not models; 3: tree readers (Claude, Qwen,
# pi) keep their leaf and decoder state; 4: Gemini keeps only its last messages' ids (older
# ones in a filter)
CHECKPOINT_FORMAT = 5
DISABLE_ENV = "PASSDOWN_NO_CHECKPOINT"
FINGERPRINT_SPAN = 64 * 1024
_SHA256_CTX_BYTES = 256  # OpenSSL's SHA256_CTX is 112 bytes; room to spare


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
    file_sha256_state: bytes  # the running sha256 of bytes [0, offset)
    info: _InfoState
    diagnostics: Diagnostics
    reader: msgspec.Raw  # the agent reader's own state (msgpack)
    extractor: ExtractorState
    events_seen: int
    commands: list[str]  # every distinct command line (for attributing git changes)
    resumed_from: int = 0  # where the export that wrote it started reading (0: a full read)


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Checkpoint)


def disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip() not in ("", "0")


def read_with_checkpoint(
    agent: Agent,
    ref: SessionRef,
    seen: SeenEvents,
    *,
    workspace: str,
    max_messages: int,
    max_chars: int,
) -> tuple[Transcript, Extracted] | None:
    """The session read and extracted through its checkpoint (and the checkpoint moved
    on), or None when this session cannot be read that way: the caller reads it in full
    the usual way. Events pass through `seen` exactly as in a full read."""
    if disabled() or not agent.supports_checkpoint or is_zstd(ref.path):
        return None
    # the hashing thread and the reader share one descriptor: only native pread keeps
    # their offsets apart (the seam's seek+read fallback does not, against a reader)
    if _Sha256.library() is None or not _platform.native_pread():
        return None
    try:
        store = checkpoint_path(agent.name, ref.path)
        fd = os.open(ref.path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_BINARY)
    except (OSError, PassdownError):
        return None  # the full read reports an unreadable file properly
    try:
        try:
            return _Resumed(agent, ref, seen, store, fd).run(workspace, max_messages, max_chars)
        except BranchLeft:
            # the forward pass met a rewind: read again with the tree's pass 1 (what it
            # handed on goes, and the checkpoint it may have planned with it)
            seen.count, seen.commands = 0, []
            change(PendingCheckpoint(store, None))
            READS["full"] -= 1
            READS["forward_left"] += 1
            again = _Resumed(agent, ref, seen, store, fd, forward=False)
            return again.run(workspace, max_messages, max_chars)
    except CannotResume:
        # the appended lines change what the checkpoint handed on: the caller reads the
        # file in full (its next export starts a new checkpoint)
        seen.count, seen.commands = 0, []
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


@dataclass
class _Resumed:
    agent: Agent
    ref: SessionRef
    seen: SeenEvents
    store: Path
    fd: int
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
                READS["refused"] += 1
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
            _two_core.split_first_walk(reader, self.fd, end)  # a tree's pass 1, large
            file_hash = _Sha256()
            hashed = _begin_hashing(reader, file_hash, self.fd, (start, end, size), self.ref.path)
            READS["full"] += 1
        else:
            diagnostics, extractor, reader, file_hash = resumed
            hashed = False
            self.resumed_from = start
            READS["resumed"] += 1
        # a large file read from its start: its second half on a forked worker (before
        # the hashing thread starts: only a single-threaded process forks)
        split = (
            _two_core.start(self.agent, self.fd, start, end, info, extractor, reader=reader)
            if start == 0
            else None
        )
        share_plan = getattr(reader, "share_plan", None)
        if split is None and share_plan is not None:  # one core: the plan replayed once
            share_plan(extractor.replay)
        # the complete lines: hashed on a thread while they are parsed (unless a tree
        # reader's pass 1 left the time for it)
        failed: list[OSError] = []
        hashing = threading.Thread(
            target=file_hash.update_from,
            args=(self.fd, start, start if hashed else end, failed),
            daemon=True,
        )
        hashing.start()
        try:
            with _progress_from(start):
                if split is not None:
                    split.run(
                        reader, extractor, info, diagnostics, self.seen.watch, self._seen_half
                    )
                else:
                    for event in self.seen.watch(
                        reader.events(cast(BinaryIO, FdWindow(self.fd, start, end)))
                    ):
                        extractor.feed(event)
        finally:
            hashing.join()
        if failed:
            raise SessionReadError(f"cannot read {self.ref.path}: {failed[0]}")
        reader_state = reader.state() if end > start else None
        if reader_state is not None:  # None: this reader's state cannot be kept
            self._save(
                _Snapshot(
                    end,
                    file_hash.state(),
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
        file_hash.update_from(self.fd, end, size)
        with _progress_from(end):
            for event in self.seen.watch(
                reader.events(cast(BinaryIO, FdWindow(self.fd, end, size)))
            ):
                extractor.feed(event)
        for event in self.seen.watch(reader.close()):
            extractor.feed(event)
        transcript = Transcript(
            info=info, diagnostics=diagnostics, _events=iter(()), sha256=file_hash.hexdigest()
        )
        return transcript, extractor.finish()

    def _new_info(self) -> SessionInfo:
        return SessionInfo(
            agent=self.agent.name,
            session_id=self.ref.session_id,
            path=self.ref.path,
            cwd=self.ref.cwd,
        )

    def _seen_half(self, events: int, commands: list[str]) -> None:
        """What a two-core read's worker saw go by (see `SeenEvents`)."""
        self.seen.count += events
        self.seen.keep_commands(commands)

    def _restore(
        self, saved: Checkpoint, info: SessionInfo, bounds: tuple[int, int, int]
    ) -> tuple[Diagnostics, _Extractor, ResumableReader, _Sha256] | None:
        """The states a valid checkpoint holds, live again; None if any of them cannot
        be restored, or the reader cannot go on over the new bytes from its state (then
        the file is read from its start)."""
        _restore_info(info, saved.info)
        try:
            extractor = restore_extractor(saved.extractor)
            reader_state = msgspec.msgpack.decode(saved.reader)
            diagnostics = saved.diagnostics
            reader = self.agent.resumable_reader(info, diagnostics, reader_state, extractor.pending)
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
        return diagnostics, extractor, reader, _Sha256(saved.file_sha256_state)

    def _load(
        self, size: int, workspace: str, max_messages: int, max_chars: int
    ) -> Checkpoint | None:
        try:
            saved = _DECODER.decode(read_nofollow(self.store))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        state = saved.extractor
        if (
            saved.format != CHECKPOINT_FORMAT
            or saved.passdown_version != _passdown_version()
            or saved.agent != self.agent.name
            or saved.path != str(self.ref.path)
            or saved.file_id != self.file_id
            or (state.workspace, state.max_messages, state.max_chars)
            != (workspace, max_messages, max_chars)
            or not 0 < saved.offset <= size
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
            passdown_version=_passdown_version(),
            agent=self.agent.name,
            path=str(self.ref.path),
            offset=snapshot.offset,
            file_id=self.file_id,
            head_sha256=head,
            tail_sha256=tail,
            file_sha256_state=snapshot.hash_state,
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


# How each checkpointed export went: "full" (read from the start), "resumed" (only the
# appended bytes), "refused" (a checkpoint was there but could not be used, so "full").
READS: Counter[str] = Counter()


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


def _begin_hashing(
    reader: ResumableReader, file_hash: _Sha256, fd: int, bounds: tuple[int, int, int], path: Path
) -> bool:
    """`_begin` for a first read; a reader that plans the bytes first (a tree reader's
    pass 1 walks them all) gets the complete lines hashed on a thread meanwhile, which
    leaves the second core to a two-core read's worker afterwards. The thread is done
    when this returns (a process forks only while it runs no other thread). True: the
    complete lines are hashed."""
    walks_first = getattr(reader, "walks_first", None)
    if getattr(reader, "begin", None) is None or (walks_first is not None and not walks_first()):
        # nothing to hash beside: the complete lines are hashed while they are parsed
        _begin(reader, fd, bounds, path)
        return False
    start, end, _ = bounds
    failed: list[OSError] = []
    # in 1 MiB reads: pass 1's own buffers are in memory at the same time
    hashing = threading.Thread(
        target=file_hash.update_from, args=(fd, start, end, failed, 1 << 20), daemon=True
    )
    hashing.start()
    try:
        _begin(reader, fd, bounds, path)
    finally:
        hashing.join()
    if failed:
        raise SessionReadError(f"cannot read {path}: {failed[0]}")
    return True


@dataclass(slots=True)
class _Snapshot:
    offset: int
    hash_state: bytes
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


@cache
def _passdown_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("passdown")
    except PackageNotFoundError:
        return "unknown"


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


class _Sha256:
    """SHA-256 whose state can be saved and resumed (hashlib's cannot be serialized):
    OpenSSL's SHA256_* functions on a context buffer we own. ctypes drops the GIL
    during the calls, so hashing runs beside the parser."""

    def __init__(self, state: bytes | None = None) -> None:
        lib = self.library()
        assert lib is not None
        self._lib = lib
        self._ctx = ctypes.create_string_buffer(_SHA256_CTX_BYTES)
        if state is None:
            lib.SHA256_Init(self._ctx)
        else:
            ctypes.memmove(self._ctx, state, min(len(state), _SHA256_CTX_BYTES))

    @staticmethod
    @cache
    def library() -> ctypes.CDLL | None:
        """The OpenSSL that Python's own hashlib uses, else the system's libcrypto
        (`_platform.openssl_candidates`); None turns checkpoints off."""
        for name in _platform.openssl_candidates():
            lib = _Sha256._probe(name) if name else None
            if lib is not None:
                return lib
        return None

    @staticmethod
    def _probe(name: str) -> ctypes.CDLL | None:
        try:
            lib = ctypes.CDLL(name)
            for fn in (lib.SHA256_Init, lib.SHA256_Update, lib.SHA256_Final):
                fn.restype = ctypes.c_int
            lib.SHA256_Update.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
            probe = _Sha256.__new__(_Sha256)
            probe._lib = lib
            probe._ctx = ctypes.create_string_buffer(_SHA256_CTX_BYTES)
            lib.SHA256_Init(probe._ctx)
            probe.update(b"passdown")
            if probe.hexdigest() != hashlib.sha256(b"passdown").hexdigest():
                return None
        except (OSError, AttributeError):
            return None
        return lib

    def update(self, data: bytes) -> None:
        self._lib.SHA256_Update(self._ctx, data, len(data))

    def update_from(
        self,
        fd: int,
        start: int,
        end: int,
        failed: list[OSError] | None = None,
        chunk: int = CHUNK,
    ) -> None:
        """Hash bytes [start, end) of `fd`; on a thread, a read error goes to `failed`."""
        pos = start
        try:
            while pos < end:
                data = _platform.pread(fd, min(chunk, end - pos), pos)
                if not data:
                    break
                self.update(data)
                pos += len(data)
        except OSError as exc:
            if failed is None:
                raise
            failed.append(exc)

    def state(self) -> bytes:
        return self._ctx.raw

    def hexdigest(self) -> str:
        ctx = ctypes.create_string_buffer(self._ctx.raw, _SHA256_CTX_BYTES)  # Final wipes it
        out = ctypes.create_string_buffer(32)
        self._lib.SHA256_Final(out, ctx)
        return out.raw.hex()
