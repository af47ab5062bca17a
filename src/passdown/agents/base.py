"""The interface every agent module implements."""

from __future__ import annotations

import functools
import os
import shutil
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO, ClassVar, Protocol

import msgspec

from passdown import _platform
from passdown.errors import AmbiguousSession, SessionNotFound, SessionReadError, UsageError
from passdown.transcript import Diagnostics, Event, SessionInfo, SessionRef, ToolCall, Transcript

# Reads one session's events, filling in the facts and diagnostics as it goes.
EventProducer = Callable[[SessionInfo, Diagnostics], Iterator[Event]]


class LaunchSpec(msgspec.Struct):
    """How to start an agent: an argv list (never a shell string) and extra env."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = msgspec.field(default_factory=dict)


class SkippedSession(msgspec.Struct, frozen=True):
    """A session file discovery found but could not open (chmod 000, an unreadable
    mount): it cannot say which workspace it ran in, so it is reported, not listed."""

    path: Path
    reason: str  # the OS's words: "Permission denied"
    updated_at: float  # its mtime: a stat works where an open does not

    def describe(self) -> str:
        return f"{self.path} ({self.reason})"


class Discovered(msgspec.Struct):
    """The sessions one discovery found, newest first, and the session files it had to
    skip because they could not be opened (newest first too)."""

    refs: list[SessionRef]
    skipped: list[SkippedSession]

    @property
    def newest(self) -> SessionRef | None:
        return self.refs[0] if self.refs else None


# Set while `Agent.discover_all` runs: where the guarded `ref_for_path` reports session
# files it could not open (a ContextVar, so concurrent discoveries stay apart).
_skipped_sink: ContextVar[list[SkippedSession] | None] = ContextVar(
    "passdown_skipped_sessions", default=None
)


class CannotResume(Exception):
    """Raised by a `ResumableReader` when the appended lines change what it handed on
    already (a rewind into it, a rewritten history): the export reads the file anew."""


class ResumableReader(Protocol):
    """A session reader that can stop between two lines and continue later from its
    state (incremental export: `passdown._checkpoint`). It is fed the session's bytes in
    windows that always start at a line start; its state is plain data (dicts, lists,
    strings, numbers) that msgspec can encode; a `None` state is never saved.

    A reader may also define `begin(fd, start, end, size) -> bool`, called once before
    the windows [start, end) and [end, size) are read: it sees the new bytes first and
    returns False when its saved state cannot go on over them (a tree session that
    rewound), which makes the export read the file from its start."""

    def events(self, stream: BinaryIO) -> Iterator[Event]:
        """The events of the lines in `stream` (one window of the file)."""

    def close(self) -> Iterator[Event]:
        """The events due at the end of the file (a reply still buffered, a plan kept
        beside the log); called once, after the last window."""

    def state(self) -> object:
        """What the reader remembers between lines, as plain data."""


def cwd_in_workspace(cwd: str | None, workspace: Path | None) -> bool:
    """A session belongs to a workspace when it ran in it or in a folder below it."""
    if workspace is None:
        return True
    if not cwd:
        return False
    # as paths: a Windows drive's case and separators, macOS's /private aliases
    return _platform.inside(cwd, str(workspace))


def candidate_of(ref: SessionRef, workspace: Path | None) -> bool:
    """Whether discovery lists `ref`, found where `workspace`'s sessions are kept (a
    store folder named for it): when its cwd is in the workspace, or when it could not
    be placed at all (`SessionRef.unplaced`): such a session is listed with its
    workspace unknown, never hidden."""
    return cwd_in_workspace(ref.cwd, workspace) or (ref.cwd is None and ref.unplaced is not None)


class Agent(ABC):
    """One coding agent: where its sessions are, how to read them, how to launch it."""

    name: str  # short id used on the command line: "claude"
    display_name: str  # "Claude Code"
    program: str  # the executable: "claude"
    # Files the agent keeps in the workspace for itself (patterns, relative to it): git
    # shows them changed, but they are not the task's work.
    own_files: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        # Every agent's discovery and reading goes through one guard, so an OS error
        # no module anticipated (a store folder or session file the user cannot read)
        # is the documented "cannot be read" (exit 5) naming the path, never a crash.
        super().__init_subclass__(**kwargs)
        if "discover" in cls.__dict__:
            setattr(cls, "discover", _guard_discover(cls.__dict__["discover"]))  # noqa: B010
        if "read" in cls.__dict__:
            setattr(cls, "read", _guard_read(cls.__dict__["read"]))  # noqa: B010
        if "ref_for_path" in cls.__dict__:
            guarded = _guard_ref_for_path(cls.__dict__["ref_for_path"])
            setattr(cls, "ref_for_path", guarded)  # noqa: B010

    # The environment variables that point this agent (and so passdown) at another
    # session store, for the hint of a --session path outside it.
    store_env: ClassVar[tuple[str, ...]] = ()

    # -- sessions -----------------------------------------------------------------
    @abstractmethod
    def store_roots(self) -> list[Path]:
        """Folders that hold this agent's session files (honouring its env vars)."""

    def store_hint(self) -> str:
        """Where this agent's session files live, and how to point passdown elsewhere
        (a --session path outside the store is refused on purpose)."""
        where = ", ".join(str(r) for r in self.store_roots()) or "(none)"
        hint = f"{self.display_name}'s session files live under {where}"
        if self.store_env:
            names = " or ".join(f"${v}" for v in self.store_env)
            hint += f"; to read a store elsewhere, set {names} to it"
        return hint

    @abstractmethod
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        """Sessions that ran in `workspace` (all sessions when None), in any order."""

    @abstractmethod
    def read(self, ref: SessionRef) -> Transcript:
        """Open a session for streaming; never loads the whole file."""

    # Whether `resumable_reader` is implemented: only for sessions that are one file
    # that only ever grows at its end (forward-only JSON Lines).
    supports_checkpoint: ClassVar[bool] = False

    def resumable_reader(
        self,
        info: SessionInfo,
        diagnostics: Diagnostics,
        state: object | None,
        pending: dict[str, ToolCall],
    ) -> ResumableReader:
        """A reader that continues from `state` (None: from the start of the file).
        Reading through it window by window, then `close`, gives the events `read`
        gives. `pending` holds the restored tool calls extraction still waits a result
        for: a reader that completes a call it emitted earlier (adds the paths its
        result names) must complete these very objects."""
        raise NotImplementedError(f"{self.display_name} sessions cannot be read incrementally")

    def stream(self, ref: SessionRef, produce: EventProducer) -> Transcript:
        """A transcript whose events come from `produce`, with the file's sha256 taken
        on a thread while it runs: the common body of every agent's `read`."""
        from passdown._jsonl import start_fingerprint

        info = SessionInfo(agent=self.name, session_id=ref.session_id, path=ref.path, cwd=ref.cwd)
        transcript = Transcript(info=info, diagnostics=Diagnostics(), _events=iter(()))

        def events() -> Iterator[Event]:
            fingerprint = start_fingerprint(ref.path)
            yield from produce(info, transcript.diagnostics)
            try:
                transcript.sha256 = fingerprint.result()
            except OSError as exc:
                transcript.diagnostics.warnings.append(
                    f"could not fingerprint the transcript: {exc}"
                )

        transcript._events = events()
        return transcript

    def touched_paths(self, ref: SessionRef) -> set[str]:
        """The paths this session's edit/write/delete tool calls named, as written in the
        session: how a concurrent session's work is told apart from another's. Reads the
        session through `read`; an agent may override it with something cheaper."""
        from passdown.transcript import ToolCall

        paths: set[str] = set()
        for event in self.read(ref).events():
            if isinstance(event, ToolCall) and event.action in ("edit", "write", "delete"):
                paths.update(event.paths)
        return paths

    @abstractmethod
    def ref_for_path(self, path: Path) -> SessionRef:
        """Describe one session file (used for `--session PATH`)."""

    # -- launching ----------------------------------------------------------------
    @abstractmethod
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        """The argv that starts this agent on `prompt` in `workspace`."""

    def executable(self) -> str | None:
        return shutil.which(self.program)

    def is_installed(self) -> bool:
        return self.executable() is not None

    # -- selection (shared by every agent) ------------------------------------------
    def sessions(self, workspace: Path | None) -> list[SessionRef]:
        """Sessions for `workspace`, newest first."""
        return self.discover_all(workspace).refs

    def discover_all(self, workspace: Path | None) -> Discovered:
        """Sessions for `workspace`, newest first, with the session files discovery
        could not open. An unreadable file tells no workspace, so it is reported
        wherever it was a candidate (Claude, Qwen and pi: its folder's name matched the
        workspace; Codex: every rollout), never silently dropped."""
        sink: list[SkippedSession] = []
        token = _skipped_sink.set(sink)
        try:
            refs = sorted(self.discover(workspace), key=lambda r: r.updated_at, reverse=True)
        finally:
            _skipped_sink.reset(token)
        listed = {ref.path for ref in refs}  # an agent that lists it anyway reads it (exit 5)
        skipped = sorted(
            (s for s in sink if s.path not in listed), key=lambda s: s.updated_at, reverse=True
        )
        return Discovered(refs=refs, skipped=skipped)

    def discover_latest(self, workspace: Path | None) -> Discovered:
        """What choosing the session to hand off needs: at least the newest session for
        `workspace` and the files skipped (every session, unless an agent whose store
        holds very many, like Aider's runs, finds its newest alone)."""
        return self.discover_all(workspace)

    def unplaced_newest(self, ref: SessionRef, workspace: Path) -> SessionNotFound:
        """The exit-3 error when the newest session found for `workspace` could not be
        placed: handing off an older one instead would hand off the wrong session."""
        return SessionNotFound(
            f"cannot tell whether the newest {self.display_name} session, {ref.path}, ran "
            f"in {workspace}: {ref.unplaced}",
            hint=f"to hand it off, pass --session {ref.path}; to hand off another, pass "
            "--session with its id",
        )

    def newest(self, workspace: Path | None) -> SessionRef | None:
        """The newest readable session for `workspace`. When session files were found
        but none can be opened, the "cannot be read" error (exit 5) naming the newest:
        the user has a session here, passdown just cannot open it."""
        found = self.discover_all(workspace)
        if found.newest is None and found.skipped:
            raise unreadable_sessions(found.skipped)
        return found.newest

    def resolve(self, spec: str, workspace: Path | None) -> SessionRef:
        """A session from an id, an id prefix, or a path inside this agent's store."""
        if not spec or "\x00" in spec:
            raise UsageError("empty or invalid session id")
        if _looks_like_path(spec):
            return self._resolve_path(Path(spec))
        matches = _match_id(spec, self.discover(None))
        if not matches:
            raise SessionNotFound(f"no {self.display_name} session with id {spec!r}")
        if len(matches) > 1:
            from passdown._text import listed

            ids = listed(sorted(m.session_id for m in matches))
            raise AmbiguousSession(
                f"session id prefix {spec!r} matches {len(matches)} {self.display_name} sessions",
                hint=f"use more characters of the id ({ids})",
            )
        return matches[0]

    def _resolve_path(self, path: Path) -> SessionRef:
        # Containment first, on the fully resolved path (symlinks and ".." collapsed),
        # so a hostile path is refused whether or not it exists.
        try:
            real = path.expanduser().resolve(strict=False)
        except (OSError, RuntimeError):
            raise UsageError(f"invalid session path: {path}") from None
        roots = [r.resolve() for r in self.store_roots()]
        if not any(real.is_relative_to(root) for root in roots):
            raise UsageError(
                f"{path} is outside {self.display_name}'s session store",
                hint=self.store_hint(),
            )
        try:
            mode = real.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            raise SessionNotFound(f"session file not found: {path}") from None
        except OSError as exc:
            raise unreadable(exc, real) from None
        if not stat.S_ISREG(mode):
            # there, but no regular file (a folder, a FIFO, a device): it cannot be read
            raise SessionReadError(f"cannot read {path}: not a regular file")
        try:
            return self.ref_for_path(real)
        except OSError as exc:
            raise unreadable(exc, real) from None


def unreadable_sessions(skipped: list[SkippedSession]) -> SessionReadError:
    """The exit-5 error when the only session files found cannot be opened (newest
    first in `skipped`)."""
    first, more = skipped[0], len(skipped) - 1
    also = f" (and {more} more unreadable session file{'s' * (more > 1)})" if more else ""
    return SessionReadError(
        f"cannot read {first.path}: {first.reason}{also}",
        # unread, it names no workspace: for Codex it may be any workspace's rollout
        hint="it may be this workspace's newest session file; fix its permissions, "
        "or pass --session with another session",
    )


def unreadable(exc: OSError, fallback: Path | None = None) -> SessionReadError:
    """The exit-5 error for an OS error met while finding or reading a session."""
    where = exc.filename if exc.filename is not None else fallback
    reason = exc.strerror or str(exc)
    return SessionReadError(f"cannot read {where}: {reason}" if where else f"cannot read: {reason}")


def _guard_discover(
    discover: Callable[[Agent, Path | None], Iterator[SessionRef]],
) -> Callable[[Agent, Path | None], Iterator[SessionRef]]:
    @functools.wraps(discover)
    def guarded(self: Agent, workspace: Path | None) -> Iterator[SessionRef]:
        try:
            yield from discover(self, workspace)
        except OSError as exc:
            raise unreadable(exc) from None

    return guarded


def _guard_ref_for_path(
    ref_for_path: Callable[[Agent, Path], SessionRef],
) -> Callable[[Agent, Path], SessionRef]:
    """During `discover_all`, a session file whose reference names no cwd may be one
    the agent's head reader could not open (those say nothing then): probe it and report
    it, so an unreadable newest session is never silently skipped."""

    @functools.wraps(ref_for_path)
    def guarded(self: Agent, path: Path) -> SessionRef:
        ref = ref_for_path(self, path)
        sink = _skipped_sink.get()
        if sink is not None and ref.cwd is None:
            reason = _cannot_open(path)
            if reason is not None:
                sink.append(SkippedSession(path=path, reason=reason, updated_at=ref.updated_at))
        return ref

    return guarded


def _cannot_open(path: Path) -> str | None:
    """Why a regular file cannot be opened for reading, or None when it can (or when it
    is no regular file, or gone: those are no session files, as before)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        # O_NONBLOCK: a FIFO swapped in after the stat must not block the open
        fd = _platform.open_nonblocking(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    return None


def _guard_read(
    read: Callable[[Agent, SessionRef], Transcript],
) -> Callable[[Agent, SessionRef], Transcript]:
    @functools.wraps(read)
    def guarded(self: Agent, ref: SessionRef) -> Transcript:
        try:
            transcript = read(self, ref)
        except OSError as exc:
            raise unreadable(exc, ref.path) from None
        transcript._events = _guard_events(transcript._events, ref.path)
        return transcript

    return guarded


def _guard_events(events: Iterator[Event], path: Path) -> Iterator[Event]:
    try:
        yield from events
    except OSError as exc:
        raise unreadable(exc, path) from None


def _looks_like_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.startswith(".") or spec.endswith((".jsonl", ".zst"))


def _match_id(spec: str, refs: Iterable[SessionRef]) -> list[SessionRef]:
    exact: list[SessionRef] = []
    prefix: list[SessionRef] = []
    seen: set[str] = set()
    for ref in refs:
        if ref.session_id in seen:
            continue
        if ref.session_id == spec:
            exact.append(ref)
            seen.add(ref.session_id)
        elif ref.session_id.startswith(spec):
            prefix.append(ref)
            seen.add(ref.session_id)
    return exact or prefix
