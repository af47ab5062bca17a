"""Progress for long work (reading a large session, a `find`, an `install`), shown to a
person at a terminal and to no one else.

Progress goes to stderr, and only when stderr is a terminal and the command was not
asked for `--json` or `--quiet`: a pipe, a file, a hook or a script sees nothing extra.
The bars are transient (rich clears them when the work ends), so a fast command leaves
no trace. rich loads only when a bar is shown, which keeps `passdown --help` fast.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

# Smaller session files read in well under a second: a bar would only flicker.
MIN_SESSION_BYTES = 1024 * 1024
_REDRAW_SECONDS = 0.1

Step = Callable[[int], None]


def wanted(*, as_json: bool = False, quiet: bool = False) -> bool:
    """Whether to show progress: a terminal on stderr, and no machine-readable output."""
    if as_json or quiet:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


@contextmanager
def _bars(*, with_bytes: bool, refresh_thread: bool = True) -> Iterator[Progress]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    counter = DownloadColumn() if with_bytes else MofNCompleteColumn()
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        counter,
        TimeElapsedColumn(),
    )
    console = Console(stderr=True)
    with Progress(
        *columns, console=console, transient=True, auto_refresh=refresh_thread
    ) as progress:
        yield progress


@contextmanager
def session_reading(enabled: bool) -> Iterator[None]:
    """While the block runs, a bar per large session file: bytes read of it (a
    reader that makes two passes, such as Claude's branch finder, fills it twice).

    The bars are redrawn as the reading advances, not by rich's refresh thread: a bar
    changes only when bytes were read, so a thread would only redraw it unchanged."""
    if not enabled:
        yield
        return
    from passdown._jsonl import read_progress
    from passdown._text import shown

    with _bars(with_bytes=True, refresh_thread=False) as progress:
        tasks: dict[Path, TaskID | None] = {}
        drawn = 0.0

        def advanced(path: Path, done: int) -> None:
            nonlocal drawn
            if path not in tasks:
                tasks[path] = _session_task(progress, path, shown(path.name))
            task = tasks[path]
            if task is not None:
                progress.update(task, completed=done)
                now = time.monotonic()
                if now - drawn >= _REDRAW_SECONDS:
                    drawn = now
                    progress.refresh()

        token = read_progress.set(advanced)
        try:
            yield
        finally:
            read_progress.reset(token)


def _session_task(progress: Progress, path: Path, name: str) -> TaskID | None:
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size < MIN_SESSION_BYTES:
        return None
    # a compressed file's decompressed length is unknown: a pulsing bar and a byte count
    total = None if path.name.endswith(".zst") else size
    return progress.add_task(f"reading {name}", total=total)


@contextmanager
def _spinner(description: str) -> Iterator[tuple[Progress, TaskID]]:
    from passdown._text import shown

    with _bars(with_bytes=False) as progress:
        yield progress, progress.add_task(shown(description), total=None)


@contextmanager
def counting(enabled: bool, description: str) -> Iterator[Step]:
    """A spinner with a count for work of unknown length (records looked at); the
    spinner keeps turning while a single long database query runs."""
    if not enabled:
        yield lambda _n: None
        return
    with _spinner(description) as (progress, task):
        yield lambda n: progress.advance(task, n)


@contextmanager
def stages(enabled: bool, verb: str) -> Iterator[Callable[[str], None]]:
    """A spinner naming the stage under way (`installing claude`) with the count of
    stages done; each call starts the next stage."""
    if not enabled:
        yield lambda _name: None
        return
    from passdown._text import shown

    with _spinner(verb) as (progress, task):
        done = -1

        def stage(name: str) -> None:
            nonlocal done
            done += 1
            progress.update(task, completed=done, description=f"{shown(verb)} {shown(name)}")

        yield stage
