"""Two cores for one large session: the second half of the file is read by a forked
worker while this process reads the first half, and the worker's result is merged.

Extraction is order-dependent, so the worker cannot just extract its half: it extracts
from an empty state and reports what that start hides (`passdown._half_extract`), and
this process merges the report onto the first half's extractor.

What a second half cannot know exactly, it does not guess: it reports it, and the main
process reads the second half itself when the guess would have mattered (a tool call
id used on both sides of the cut, a user prompt the reader would have dropped as a
repeat). A worker that fails in any way costs that same re-read, never a wrong handoff.

A tree-shaped session (Claude Code, Qwen Code, pi) is split once its reader has found
the active branch (pass 1): the splitter is made for that reader, cuts in the middle of
the branch's bytes, and the worker decodes the branch's lines after the cut
(`passdown.agents._split`).

Only where it pays: a session file (for a tree, its branch) of at least `MIN_BYTES` on
a machine with two CPUs for this process, read from its start (a checkpointed export
reading an appended tail stays single-core), and only while this process runs no other
thread (forking a threaded server is unsafe). `PASSDOWN_SINGLE_CORE=1` turns it off.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn, Protocol, cast

import msgspec

from passdown import _jsonl as jsonl
from passdown import _platform
from passdown._extract import _Extractor
from passdown._half_extract import (
    Partial,
    _IdFilter,
    conflicting_ids,
    half_extractor,
    merge,
    over_what_extraction_keeps,
    plan_unmergeable,
)
from passdown._jsonl import FdWindow
from passdown._seen import SeenEvents
from passdown.transcript import (
    Diagnostics,
    Event,
    SessionInfo,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from passdown.agents.base import Agent, ResumableReader

DISABLE_ENV = "PASSDOWN_SINGLE_CORE"
MIN_BYTES = 64 * 1024 * 1024
STATS_ENV = "PASSDOWN_TWO_CORE_STATS"  # print what the split did to stderr (benchmarks)
# which events name a tool call id (the worker reports them, `_IdFilter`), in batches
_NAMED_BY_ID = (ToolCall, ToolResult)
_ID_BATCH = 4096
# Both processes read their part in chunks of this size (the export's other reads: 1 MiB).
# A chunk and its lines are alive together, and a page either process writes after the
# fork may become a second copy: at 1 MiB in the process too, a Codex 64 MB export held
# ~4 MB more in the process and ~1-2 MB more in the worker, and read no faster.
SPLIT_CHUNK = 1 << 18
# what the last split read of this process did: cut, merged or why not, peak RSS (tests)
LAST: dict[str, Any] = {}
# with STATS_ENV: (this process's peak RSS while a worker lived, the worker's own pages)
# of each worker since the last split read began, a tree's pass-1 walker included
WORKER_FIGURES: list[tuple[int, int]] = []
_FIGURE = struct.Struct("=q")  # the worker's own pages in KB, sent after its result


# the reader's half -----------------------------------------------------------------
class HalfReader(Protocol):
    """An agent reader started at a line in the middle of the file, with what its empty
    start assumed (so the main process can check the assumption)."""

    def events(self, stream: BinaryIO) -> Iterator[Event]: ...

    def report(self) -> dict[str, Any]: ...


class Splitter(Protocol):
    """What one agent needs for a split read (see `passdown.agents._split`), made for
    the reader that will read the first part (a tree reader knows its branch by then)."""

    def work_bytes(self, start: int, end: int) -> int:
        """How many bytes of [start, end) the reading decodes (a tree: its branch's)."""
        ...

    def cut(self, fd: int, start: int, end: int) -> int | None:
        """Where the worker starts in the window [start, end) (each splitter gives the
        process the share it can read in the worker's time), or None: one core."""
        ...

    def split(self, cut: int) -> None:
        """The worker runs from `cut` on: the reader plans its windows accordingly."""
        ...

    def half_reader(self, info: SessionInfo, diagnostics: Diagnostics, cut: int) -> HalfReader: ...

    def conflict(
        self, reader: ResumableReader, report: dict[str, Any], ids: Container[str]
    ) -> str | None: ...

    def before_merge(self, reader: ResumableReader, report: dict[str, Any]) -> Iterator[Event]: ...

    def merge_reader(
        self,
        reader: ResumableReader,
        info: SessionInfo,
        report: dict[str, Any],
        pending: dict[str, ToolCall],
        partial: Partial,
    ) -> None:
        """The reader's state as if it had read on (`partial.steps()`: the half's plan
        changes, for a reader that replays the plan itself)."""
        ...


def splitter_for(agent: Agent, reader: ResumableReader | None) -> Splitter | None:
    from passdown.agents._split import SPLITTERS

    factory = SPLITTERS.get(agent.name)
    return cast("Splitter | None", factory(reader)) if factory is not None else None


class WorkerReport(msgspec.Struct):
    error: str | None = None
    partial: Partial | None = None
    ids: bytes = b""
    reader: dict[str, Any] = {}
    diagnostics: Diagnostics | None = None
    events: int = 0
    commands: list[str] = []
    peak_rss_kb: int = 0
    seconds: float = 0.0  # the worker's wall time, fork to report
    cpu_seconds: float = 0.0


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(WorkerReport)


def _stats_on() -> bool:
    return bool(os.environ.get(STATS_ENV))


def disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip() not in ("", "0")


def _cpus() -> int:
    return _platform.cpu_count()


def worth_splitting(size: int, min_bytes: int) -> bool:
    return (
        size >= min_bytes
        and not disabled()
        and _cpus() >= 2
        and _platform.fork_allowed()  # Linux only: macOS and Windows read on one core
        and threading.active_count() == 1
    )


@dataclass
class SplitRead:
    """One file window [start, end) read on two cores: `start` forks the worker on the
    second part; `run` reads the first part here, then merges or reads on."""

    splitter: Splitter
    fd: int
    start: int
    cut: int
    end: int
    worker: Forked
    stats: dict[str, Any] = field(default_factory=dict)

    def run(
        self,
        reader: ResumableReader,
        extractor: _Extractor,
        info: SessionInfo,
        diagnostics: Diagnostics,
        watch: Callable[[Iterator[Event]], Iterator[Event]],
        seen_merge: Callable[[int, list[str]], None],
    ) -> None:
        began, began_cpu = time.perf_counter(), time.thread_time()
        chunk, jsonl.CHUNK = jsonl.CHUNK, SPLIT_CHUNK
        try:
            feed = extractor.feed
            for event in watch(
                reader.events(cast(BinaryIO, FdWindow(self.fd, self.start, self.cut)))
            ):
                feed(event)
            halfway, halfway_cpu = time.perf_counter(), time.thread_time()
            report = self._collect()
        except BaseException:
            self.worker.cancel()
            raise
        finally:
            jsonl.CHUNK = chunk
        reason = self._refusal(report, reader, extractor)
        self.stats.update(
            cut=self.cut,
            end=self.end,
            worker_rss_kb=report.peak_rss_kb,
            first_half_s=round(halfway - began, 3),
            first_half_cpu_s=round(halfway_cpu - began_cpu, 3),
            waited_s=round(time.perf_counter() - halfway, 3),
            worker_s=report.seconds,
            worker_cpu_s=report.cpu_seconds,
        )
        if reason is None:
            assert report.partial is not None and report.diagnostics is not None
            for event in watch(self.splitter.before_merge(reader, report.reader)):
                feed(event)
            merge(extractor, report.partial)
            self.splitter.merge_reader(
                reader, info, report.reader, extractor.pending, report.partial
            )
            diagnostics.add(report.diagnostics)
            seen_merge(report.events, report.commands)
            self.stats["merged"] = True
        else:  # exact anyway: this process reads the second part itself
            self.stats.update(merged=False, reason=reason)
            window = FdWindow(self.fd, self.cut, self.end)
            for event in watch(reader.events(cast(BinaryIO, window))):
                feed(event)
        self.stats["main_rss_kb"] = _platform.peak_rss_kb()
        LAST.update(self.stats)
        if os.environ.get(STATS_ENV):
            print(f"passdown two-core: {self.stats}", file=sys.stderr)

    def _refusal(
        self, report: WorkerReport, reader: ResumableReader, extractor: _Extractor
    ) -> str | None:
        if report.error is not None or report.partial is None or report.diagnostics is None:
            return f"worker: {report.error or 'no result'}"
        ids = _IdFilter(report.ids)
        if conflicting_ids(extractor.pending, ids):
            return "a tool call pending at the cut is named after it"
        if over_what_extraction_keeps(extractor, report.partial.state):
            return "the halves' files or waiting calls reach what extraction keeps"
        if plan_unmergeable(extractor, report.partial, self.splitter, reader):
            return "the halves' plan changes reach what a plan replay keeps"
        return self.splitter.conflict(reader, report.reader, ids)

    def _collect(self) -> WorkerReport:
        received = self.worker.result()
        if self.worker.figures is not None:
            main_kb, worker_kb = self.worker.figures
            self.stats.update(main_rss_with_worker_kb=main_kb, worker_private_kb=worker_kb)
        self.stats["report_bytes"] = len(received)
        try:
            return _DECODER.decode(received)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return WorkerReport(error=f"unreadable report ({exc})")


@dataclass
class Forked:
    """A forked worker and the pipe its result comes through."""

    pid: int
    pipe: int
    pipe_closed: bool = False
    reaped: bool = False
    # with STATS_ENV (benchmarks): this process's RSS sampled while the worker lives, and
    # then (its peak then, the worker's own pages at its end)
    watch: _RssWatch | None = None
    figures: tuple[int, int] | None = None

    def result(self) -> bytearray:
        """Everything the worker wrote (empty if it failed before writing)."""
        received = bytearray()  # one buffer, not chunks joined into a second copy
        try:
            while data := os.read(self.pipe, 1 << 20):
                received += data
        finally:
            self._end(kill=False)  # EOF: the worker has written its result and is exiting
        if self.watch is not None:
            main_kb = self.watch.stop()
            if len(received) >= _FIGURE.size:  # the worker's figure, after its result
                (worker_kb,) = _FIGURE.unpack(received[-_FIGURE.size :])
                del received[-_FIGURE.size :]
                self.figures = (main_kb, worker_kb)
                WORKER_FIGURES.append(self.figures)
                del WORKER_FIGURES[:-4]  # bounded in a long-lived process too
        return received

    def cancel(self) -> None:
        self._end(kill=True)
        if self.watch is not None:
            self.watch.stop()

    def _end(self, *, kill: bool) -> None:
        """Close the pipe and reap the worker, each once: a reaped pid or a closed
        descriptor number may already belong to something else. Until it is reaped the
        pid is still the worker's (a zombie at worst), so killing it is safe."""
        if not self.pipe_closed:
            self.pipe_closed = True
            with contextlib.suppress(OSError):
                os.close(self.pipe)
        if not self.reaped:
            if kill:
                with contextlib.suppress(OSError):
                    _platform.kill_hard(self.pid)
            _platform.reap(self.pid)
            self.reaped = True


def fork_worker(
    work: Callable[[], bytes], failed: Callable[[BaseException], bytes] = lambda exc: b""
) -> Forked | None:
    """Run `work` on a forked worker that dies with this process and writes what `work`
    returns (or `failed` makes of its exception) to a pipe; None when no process can be
    forked. The caller must be single-threaded (`worth_splitting`)."""
    death_signal = (
        _platform.parent_death_signal()
    )  # looked up before the fork: the worker's unguarded moment stays short
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    # the worker's garbage collections leave the objects it inherits alone: touching
    # their headers would copy every page of the parent's heap into the worker's own
    gc.freeze()
    try:
        pid = _platform.fork()
    except OSError:  # no process to spare: one core it is
        gc.unfreeze()
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the worker: never returns
        os.close(read_end)
        _serve(work, failed, write_end, death_signal)
    gc.unfreeze()
    os.close(write_end)
    # the watch starts after the fork: only a single-threaded process forks
    return Forked(pid, read_end, watch=_RssWatch() if _stats_on() else None)


def split_first_walk(reader: ResumableReader, fd: int, end: int) -> None:
    """Pass 1 of a large tree session on two cores: a forked worker walks the second
    half of [0, end) while the reader walks the first itself, in `begin` (which joins
    the two walks, or walks it all when they do not join exactly). Called before the
    hashing thread starts: only a single-threaded process forks."""
    plan = getattr(reader, "walk_in_two", None)
    if plan is not None and worth_splitting(end, MIN_BYTES):
        plan(fd, end, fork_worker)


def start(
    agent: Agent,
    fd: int,
    start: int,
    end: int,
    info: SessionInfo,
    extractor: _Extractor,
    *,
    reader: ResumableReader | None = None,
    min_bytes: int | None = None,
) -> SplitRead | None:
    """Fork a worker on the second part of [start, end) when that pays; None otherwise
    (the caller reads the window the usual way). `reader` is the one that reads the
    first part, its windows planned (`begin`) already."""
    LAST.clear()
    LAST.update(getattr(reader, "walk_report", None) or {})  # pass 1 on two cores
    if WORKER_FIGURES:  # the pass-1 walker's (benchmarks)
        main_kb, worker_kb = max(WORKER_FIGURES, key=sum)
        LAST.update(walk_main_rss_with_worker_kb=main_kb, walk_worker_private_kb=worker_kb)
        WORKER_FIGURES.clear()
    threshold = MIN_BYTES if min_bytes is None else min_bytes
    if not worth_splitting(end - start, threshold):
        return None
    splitter = splitter_for(agent, reader)
    if splitter is None or splitter.work_bytes(start, end) < threshold:
        return None
    try:
        cut = splitter.cut(fd, start, end)
    except OSError:  # the caller's one-core read reports an unreadable file
        return None
    if cut is None or not start < cut < end:
        return None
    budget = extractor.budget
    began = time.perf_counter()

    def work() -> bytes:
        report = _read_half(splitter, fd, cut, end, info, extractor.workspace, budget)
        report.seconds = round(time.perf_counter() - began, 3)
        report.cpu_seconds = round(time.process_time(), 3)
        return _ENCODER.encode(report)

    worker = fork_worker(work, _failed_report)
    if worker is None:
        return None
    splitter.split(cut)
    return SplitRead(splitter, fd, start, cut, end, worker, stats=dict(LAST))


def _failed_report(exc: BaseException) -> bytes:
    return _ENCODER.encode(WorkerReport(error=f"{type(exc).__name__}: {exc}"))


def _serve(
    work: Callable[[], bytes],
    failed: Callable[[BaseException], bytes],
    out: int,
    death_signal: Callable[..., int] | None,
) -> NoReturn:
    code = 0
    try:
        _platform.die_with_parent(death_signal)
        # its own session: no terminal's Ctrl-C or job control reaches it (the parent
        # stops it), and where the scheduler shares CPU per session (Linux autogroup) it
        # does not halve the share of the process it works for
        _platform.new_session()
        _detach_stdio()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        jsonl.CHUNK = SPLIT_CHUNK  # this process only (1 MiB chunks: ~3 MB more of its own)
        data = work()
    except BaseException as exc:
        data = failed(exc)
        code = 1
    try:
        # the benchmarks: this worker's own pages now, its result made (its peak), after it
        figure = _FIGURE.pack(_private_kb()) if _stats_on() else b""
        for part in (data, figure):
            view = memoryview(part)
            while view:
                written = os.write(out, view)
                view = view[written:]
    except OSError:
        code = 1
    finally:
        os._exit(code)


def _read_half(
    splitter: Splitter,
    fd: int,
    cut: int,
    end: int,
    info: SessionInfo,
    workspace: str | None,
    budget: Any,
) -> WorkerReport:
    half_info = SessionInfo(agent=info.agent, session_id="", path=info.path)
    diagnostics = Diagnostics()
    reader = splitter.half_reader(half_info, diagnostics, cut)
    half = half_extractor(
        workspace=workspace, max_messages=budget.max_messages, max_chars=budget.max_chars
    )
    ids = _IdFilter()
    # a call and its result name the same id: gathered in a set (C speed, each id once)
    # that goes into the filter a batch at a time, so it stays small
    batch: set[str] = set()
    add_id = batch.add
    seen = SeenEvents()  # counts and keeps commands as the main process does: bounded
    feed = half.feed
    for event in seen.watch(reader.events(cast(BinaryIO, FdWindow(fd, cut, end)))):
        if type(event) in _NAMED_BY_ID:
            add_id(event.call_id)  # type: ignore[union-attr]
            if len(batch) >= _ID_BATCH:
                ids.update(batch)
                batch.clear()
        feed(event)
    ids.update(batch)
    state = reader.report()
    ids.update(state.pop("unmatched_ids", ()))
    state["info"] = _info_fields(half_info)
    return WorkerReport(
        partial=half.partial(),
        ids=ids.payload(),  # encoded without a copy first
        reader=state,
        diagnostics=diagnostics,
        events=seen.count,
        commands=seen.commands,
        peak_rss_kb=_platform.peak_rss_kb(),
    )


def _private_kb() -> int:
    """This process's memory not shared with its parent (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/smaps_rollup", "rb") as handle:
            rollup = handle.read().decode("ascii", "replace")
    except OSError:
        return 0
    return sum(
        int(line.split()[1])
        for line in rollup.splitlines()
        if line.startswith(("Private_Clean:", "Private_Dirty:"))
    )


class _RssWatch:
    """This process's resident memory sampled every few ms while a worker lives
    (`STATS_ENV` only): its peak plus the worker's own pages bounds what both hold at
    once, where the process's lifetime peak (`ru_maxrss`) may come from before the fork
    or after the worker ended (a tree's pass 1, Gemini's replay, the render)."""

    INTERVAL = 0.005

    def __init__(self) -> None:
        self.peak = _rss_kb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self.peak = max(self.peak, _rss_kb())

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_kb())
        return self.peak


def _rss_kb() -> int:
    """This process's resident memory now, in KB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * (mmap.PAGESIZE // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def _info_fields(info: SessionInfo) -> dict[str, Any]:
    return {
        "session_id": info.session_id,
        "cwd": info.cwd,
        "agent_version": info.agent_version,
        "models": list(info.models),
        "started_at": info.started_at,
        "updated_at": info.updated_at,
        "git_branch": info.git_branch,
        "title": info.title,
    }


def _detach_stdio() -> None:
    """Nothing the worker might print reaches the parent's streams (a hook's output, an
    MCP server's JSON-RPC on stdout), and it holds none of their pipes open."""
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    os.close(null)


__all__ = ["Forked", "SplitRead", "start"]
