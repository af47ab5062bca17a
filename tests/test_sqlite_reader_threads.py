"""A SQLite reader left unfinished is closed on whichever thread drops it.

Every SQLite reader holds its read-only connection in a generator (the transcript's
events) and closes it in that generator's `finally`. A transcript whose events were not
read to the end is cyclic garbage (the transcript holds the generator, whose frame holds
the transcript), so the garbage collector closes it on whatever thread it runs: a
connection that may only be used on the thread that opened it then raises
sqlite3.ProgrammingError there (an "unraisable" exception, which pytest shows as
PytestUnraisableExceptionWarning) and is left open. The tests drop a started reader on
another thread and collect it there, or close it there, deterministically; and a reader
handed to another thread halfway reads on there to the same events.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cursor_ide_home import CursorHome, full_chat
from passdown.agents import get_agent
from passdown.agents.base import Agent
from passdown.transcript import SessionRef, Transcript
from recorded import FIXTURES

pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture(autouse=True)
def _only_this_tests_garbage() -> None:
    """What earlier tests left for the collector (in a random order, any of them) is
    collected before this test starts: the collections the test makes must meet only
    the readers it made."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[BaseException | None]:
    """What reaches sys.unraisablehook during the test (a finalizer that raised)."""
    caught: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: caught.append(u.exc_value))
    return caught


def _on_another_thread(action: Callable[[], None]) -> list[BaseException]:
    """Run `action` on a new thread; what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except Exception as exc:  # handed back to the test
            raised.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return raised


def _drop_and_collect(holder: list[Any]) -> Callable[[], None]:
    """The last references go, then the collector runs: both on the calling thread."""

    def drop() -> None:
        holder.clear()
        gc.collect()

    return drop


def _started(agent: Agent, ref: SessionRef) -> Transcript:
    """The reader has its connection open: one event read, the rest left unread."""
    transcript = agent.read(ref)
    next(iter(transcript.events()))
    return transcript


# -- every SQLite reader ----------------------------------------------------------------
def _recorded(agent_name: str, home: Path) -> tuple[Agent, SessionRef]:
    expected = FIXTURES / agent_name / "full"
    shutil.copytree(expected, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.json"))
    agent = get_agent(agent_name)
    workspace = json.loads((expected / "expected.json").read_text())["workspace"]
    [ref] = agent.sessions(Path(workspace))
    return agent, ref


def _cursor_ide(home: Path) -> tuple[Agent, SessionRef]:
    project = home / "proj"
    project.mkdir()
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    cursor.add("a1b2c3", full_chat(str(project)))
    agent = get_agent("cursor-ide")
    [ref] = agent.sessions(project)
    return agent, ref


READERS: dict[str, Callable[[Path], tuple[Agent, SessionRef]]] = {
    "opencode": lambda home: _recorded("opencode", home),
    "kilo": lambda home: _recorded("kilo", home),
    "hermes": lambda home: _recorded("hermes", home),
    "cursor-ide": _cursor_ide,
}


@pytest.fixture
def home(isolated_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("XDG_DATA_HOME", "OPENCODE_DB", "KILO_DB", "HERMES_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PASSDOWN_EDITOR_USER_DIRS", raising=False)
    return isolated_homes


@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_unfinished_reader_collected_on_another_thread_closes_cleanly(
    reader: str, home: Path, unraisable: list[BaseException | None]
) -> None:
    # what earlier tests left for the collector is theirs, not this reader's
    gc.collect()
    unraisable.clear()
    holder: list[Any] = [_started(*READERS[reader](home))]
    assert _on_another_thread(_drop_and_collect(holder)) == []
    assert unraisable == []


@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_unfinished_reader_closed_on_another_thread_raises_nothing(
    reader: str, home: Path
) -> None:
    events = _started(*READERS[reader](home)).events()
    assert isinstance(events, Iterator)
    close = getattr(events, "close")  # noqa: B009 - a generator's, not the Iterator's
    assert _on_another_thread(close) == []


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_reader_started_on_one_thread_finishes_on_another_with_the_same_events(
    reader: str, home: Path
) -> None:
    """A consumer may hand a started transcript to another thread (one at a time): the
    rest is read there, and the whole equals a read on one thread."""
    agent, ref = READERS[reader](home)
    whole = list(agent.read(ref).events())
    events = iter(agent.read(ref).events())
    first = [next(events)]
    rest: list[object] = []
    assert _on_another_thread(lambda: rest.extend(events)) == []
    assert len(whole) > 1
    assert first + rest == whole
