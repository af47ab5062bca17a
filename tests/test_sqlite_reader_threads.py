"""A SQLite reader left unfinished is closed on whichever thread drops it.

Every SQLite reader holds its read-only connection in a generator (the transcript's
events) and closes it in that generator's `finally`. A transcript whose events were not
read to the end is cyclic garbage (the transcript holds the generator, whose frame holds
the transcript), so the garbage collector closes it on whatever thread it runs: a
connection that may only be used on the thread that opened it then raises
sqlite3.ProgrammingError there (an "unraisable" exception, which pytest shows as
PytestUnraisableExceptionWarning) and is left open. Each test drops a started reader on
another thread and collects it there, deterministically.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cursor_ide_home import CursorHome, full_chat
from passdown.agents import get_agent
from passdown.transcript import Transcript
from recorded import FIXTURES

pytestmark = pytest.mark.filterwarnings("error")


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


def _started(transcript: Transcript) -> Transcript:
    """The reader has its connection open: one event read, the rest left unread."""
    next(iter(transcript.events()))
    return transcript


# -- every SQLite reader ----------------------------------------------------------------
def _recorded(agent_name: str, home: Path) -> Transcript:
    expected = FIXTURES / agent_name / "full"
    shutil.copytree(expected, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.json"))
    agent = get_agent(agent_name)
    workspace = json.loads((expected / "expected.json").read_text())["workspace"]
    [ref] = agent.sessions(Path(workspace))
    return agent.read(ref)


def _cursor_ide(home: Path) -> Transcript:
    project = home / "proj"
    project.mkdir()
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    cursor.add("a1b2c3", full_chat(str(project)))
    agent = get_agent("cursor-ide")
    [ref] = agent.sessions(project)
    return agent.read(ref)


READERS: dict[str, Callable[[Path], Transcript]] = {
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
    holder: list[Any] = [_started(READERS[reader](home))]
    assert _on_another_thread(_drop_and_collect(holder)) == []
    assert unraisable == []


@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_unfinished_reader_closed_on_another_thread_raises_nothing(
    reader: str, home: Path
) -> None:
    events = _started(READERS[reader](home)).events()
    assert isinstance(events, Iterator)
    close = getattr(events, "close")  # noqa: B009 - a generator's, not the Iterator's
    assert _on_another_thread(close) == []
