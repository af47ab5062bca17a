"""The Claude reader's and the extractor's shortcuts on a first read give what the long
way gives: the forward pass's skip of untitled `last-prompt`/`queue-operation` records,
the remembered failure facts and probes, and the extractor's own loop over the events
(`feed_all` with a `SeenEvents`) against `SeenEvents.watch` and `feed`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import new_extractor
from passdown._seen import SeenEvents
from passdown.transcript import Event, Message, ToolCall, ToolResult
from test_claude_messy import WS, Session
from test_incremental import READINGS, _export_and_compare


@pytest.fixture
def claude_dir(isolated_homes: Path) -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])


def _off_tree(session: Session, kind: str, **fields: Any) -> None:
    """A record outside the conversation tree (no uuid, no parent)."""
    session.records.append({"type": kind, "sessionId": session.session_id, **fields})


def _first_read(session: Session, claude_dir: Path, tmp_path: Path) -> dict[str, Any]:
    """The handoff of a first read through the checkpoint (the forward pass), checked
    equal to the one of a full read without it (the two passes)."""
    path = session.write(claude_dir)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    READINGS.clear()
    handoff = _export_and_compare(path, workspace, "claude")
    assert READINGS == {"full": 1}
    assert isinstance(handoff, dict)
    return handoff


def test_leaf_hints_and_queue_records_on_the_forward_pass(claude_dir: Path, tmp_path: Path) -> None:
    s = Session()
    s.user("Add a --verbose flag")
    _off_tree(s, "queue-operation", operation="enqueue", content="later")
    first = s.assistant("Looking at the CLI.")
    _off_tree(s, "last-prompt", leafUuid=first)  # names an older record: not the leaf
    s.tool("Bash", {"command": "pytest -q"}, "1 passed")
    _off_tree(s, "last-prompt")  # no leaf named
    s.assistant("Done: --verbose is in.")
    handoff = _first_read(s, claude_dir, tmp_path)
    assert handoff["task"]["original_request"] == "Add a --verbose flag"


def test_a_leaf_hint_naming_an_older_record_last_is_a_rewind(
    claude_dir: Path, tmp_path: Path
) -> None:
    """A leaf hint after the newest record naming another one sends the read to the two
    passes (the hint wins, as pass 1 takes it): both reads agree."""
    s = Session()
    s.user("Write a.txt")
    older = s.assistant("Writing a.txt.")
    s.assistant("Written.")
    _off_tree(s, "last-prompt", leafUuid=older)
    handoff = _first_read(s, claude_dir, tmp_path)
    assert handoff["task"]["original_request"] == "Write a.txt"


@pytest.mark.parametrize("field", ["customTitle", "aiTitle", "title"])
@pytest.mark.parametrize("kind", ["last-prompt", "queue-operation"])
def test_a_title_on_a_skipped_kind_of_record_is_still_noted(
    claude_dir: Path, tmp_path: Path, kind: str, field: str
) -> None:
    s = Session()
    s.user("Rename the module")
    _off_tree(s, kind, **{field: "Renaming the module"})
    s.assistant("Renamed.")
    handoff = _first_read(s, claude_dir, tmp_path)
    assert handoff["source"]["title"] == "Renaming the module"


def test_failures_read_again_give_the_same_facts(claude_dir: Path, tmp_path: Path) -> None:
    """The same failing output twice (a command rerun), a probe that answers "no" twice,
    and a long output past what is remembered: each read as the first time."""
    s = Session()
    s.user("Fix the failing test")
    long_output = "Error: exit code 3\n" + "x" * 9000
    for _ in range(2):
        s.tool("Bash", {"command": "pytest -q"}, "FAILED t.py::a - exit code 2", is_error=True)
        s.tool("Bash", {"command": "make"}, long_output, is_error=True)
        s.tool("Bash", {"command": "grep -rn TODO src"}, "Exit code 1", is_error=True)
    s.assistant("Still failing.")
    state = _first_read(s, claude_dir, tmp_path)["state"]
    codes = [(c["command"], c["exit_code"]) for c in state["commands"]]
    assert codes == [("pytest -q", 2), ("make", 3), ("grep -rn TODO src", 1)] * 2
    assert state["commands_failed"] == 6
    # a probe's "no" is not the failure to fix, the second time either
    assert state["last_failure"]["command"] == "make"


def _events() -> list[Event]:
    def call(n: int, command: str) -> ToolCall:
        return ToolCall(f"c{n}", "Bash", "command", command=command)

    return [
        Message("user", "Make the build pass", "2026-12-06T10:00:00Z"),
        call(1, "make"),
        ToolResult("c1", is_error=True, exit_code=2, error="make: *** [all] Error 2"),
        call(2, "rg TODO"),  # read-only: counted, not kept
        ToolResult("c2", exit_code=0),
        call(3, "make"),
        ToolResult("c3", exit_code=0),
        call(4, "sed -i s/a/b/ x.c"),
        Message("assistant", "The build passes.", "2026-12-06T10:05:00Z"),
    ]


def test_feed_all_with_seen_is_watch_then_feed() -> None:
    def extractor() -> Any:
        return new_extractor(workspace=WS, max_messages=8, max_chars=10_000)

    watched, one_loop = SeenEvents(), SeenEvents()
    slow, fast = extractor(), extractor()
    for event in watched.watch(iter(_events())):
        slow.feed(event)
    fast.feed_all(iter(_events()), one_loop)
    assert (one_loop.count, one_loop.commands) == (watched.count, watched.commands)
    assert one_loop.commands == ["make", "sed -i s/a/b/ x.c"]
    assert fast.finish() == slow.finish()


def test_feed_all_counts_the_events_before_a_failure() -> None:
    """An export that stops on an error mid-file has counted what went by, as watch does."""

    def broken() -> Any:
        yield from _events()[:3]
        raise OSError("the disk went away")

    seen = SeenEvents()
    with pytest.raises(OSError):
        new_extractor(workspace=WS, max_messages=8, max_chars=10_000).feed_all(broken(), seen)
    assert (seen.count, seen.commands) == (3, ["make"])
