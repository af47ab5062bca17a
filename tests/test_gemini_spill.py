"""Gemini CLI's replay keeps only its last live messages in memory (passdown.agents.
gemini._live.Spill): older ones are spilled (their ids into a filter, their lines'
offsets into a temporary file), so memory stays flat however long the session. What it
hands on must be exactly what the replay that keeps everything hands on, on any log:
a line that changes a spilled message (an update of it, a rewind into it, a history
`$set`) makes the full read replay the file again keeping everything, and the
incremental export read the file in full.

The spill limits are made tiny here (a few messages) so that short logs spill often.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from passdown.agents.gemini import _live, _replay
from passdown.agents.gemini._emitter import Emitter
from passdown.agents.gemini._live import Spill
from passdown.agents.gemini._replay import Replay
from passdown.transcript import Diagnostics, Event, SessionInfo
from test_gemini_replay import _record as any_record
from test_gemini_replay import _write
from test_incremental_gemini import (
    HEADER,
    GeminiTurns,
    _appended_in_chunks,
    _export_and_compare,
    _layout,
    _saved,
)


@pytest.fixture
def tiny_spill(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep 4 messages, spill 3 at a time."""
    monkeypatch.setattr(_live, "KEEP", 4)
    monkeypatch.setattr(_live, "SPILL_CHUNK", 3)


def _read(path: Path, *, spill: bool) -> tuple[list[Event], Diagnostics, Replay]:
    diag = Diagnostics()
    info = SessionInfo(agent="gemini", session_id="s", path=path)
    replay = Replay(path, info, diag)
    if spill:
        replay.spill()
    replay.run()
    events = list(replay.messages(Emitter(info, diag)))
    return events, diag, replay


def _replays(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each full replay of the file, True when it spilled (a replay again keeping
    everything follows a line it could not follow)."""
    runs: list[bool] = []
    run = _replay.Replay._run

    def spy(self: Replay, stream: Any, base: int) -> None:
        runs.append(self.live.spill is not None)
        run(self, stream, base)

    monkeypatch.setattr(_replay.Replay, "_run", spy)
    return runs


# -- any log: the spilling replay hands on what the replay keeping everything does ------
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(any_record, max_size=60))
@example(  # a compaction whose appending spills <id>, then lists <id>_response: a message
    records=[  # (no record of <id> holds its tool results), not a copy
        {"id": "m0", "type": "gemini", "content": "answer"},
        {"sessionId": "s", "projectHash": "h", "messages": [{"id": "m2", "type": "user", "content": "text"}]},
        {"$set": {"messages": [
            {"id": "m1", "type": "user", "content": "text"},
            {"id": "m5", "type": "user", "content": "text"},
            {"id": "m6", "type": "user", "content": "text"},
            {"id": "m3", "type": "user", "content": "<state_snapshot>summary"},
            {"id": "m4", "type": "user", "content": "<state_snapshot>summary"},
            {"id": "m1_response", "type": "user", "content": "text"},
        ]}},
    ]
)  # fmt: skip
def test_spilling_replay_hands_on_what_keeping_everything_does(
    tmp_path: Path, tiny_spill: None, records: list[Any]
) -> None:
    path, _ = _write(tmp_path, records)
    kept, kept_diag, _ = _read(path, spill=False)
    spilled, spilled_diag, _ = _read(path, spill=True)
    assert spilled == kept
    assert spilled_diag == kept_diag


_many_ids = st.integers(0, 24)
_written_again = st.one_of(
    st.builds(lambda n: {"id": f"m{n}", "type": "gemini", "content": f"c{n}"}, _many_ids),
    st.builds(lambda n: {"id": f"m{n}", "type": "user", "content": f"u{n}"}, _many_ids),
    st.builds(lambda n: {"$rewindTo": f"m{n}"}, _many_ids),
    st.just({"$set": {"lastUpdated": "2026-11-30T00:00:00Z"}}),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(_written_again, max_size=80))
@example(  # the third message written again after the first ones spilled
    records=[{"id": f"m{n}", "type": "gemini", "content": f"c{n}"} for n in [*range(9), 2]]
)
@example(
    records=[
        *({"id": f"m{n}", "type": "user", "content": "u"} for n in range(9)),
        {"$rewindTo": "m1"},
    ]
)
def test_ids_written_again_after_they_spilled(
    tmp_path: Path, tiny_spill: None, records: list[Any]
) -> None:
    """Records of 25 ids and rewinds to them: ids come back after their message was
    spilled (an update of it), rewinds reach into spilled messages; the handoff's
    events are those of the replay keeping everything."""
    path, _ = _write(tmp_path, records)
    kept, kept_diag, _ = _read(path, spill=False)
    spilled, spilled_diag, _ = _read(path, spill=True)
    assert spilled == kept
    assert spilled_diag == kept_diag


_fresh_record = st.one_of(
    st.just("prompt"), st.just("reply"), st.just("update"), st.just("touch"), st.just("rewind")
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(_fresh_record, min_size=1, max_size=80))
def test_the_logs_the_cli_writes_are_followed_while_spilling(
    tmp_path: Path, tiny_spill: None, steps: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh ids, updates of the message being written, `lastUpdated` patches and
    rewinds a turn back (within the messages kept): one replay, spilling all along,
    and what it hands on is what keeping everything hands on."""
    lines, ids = [], []
    kept = 0  # messages in memory: a rewind or an update reaches back only into them
    for n, step in enumerate(steps):
        if step == "update" and kept:
            lines.append({"id": ids[-1], "type": "gemini", "content": f"updated {n}"})
        elif step == "rewind" and kept >= 2:
            lines.append({"$rewindTo": ids[-2]})
            del ids[-2:]
            kept -= 2
        elif step == "touch":
            lines.append({"$set": {"lastUpdated": f"2026-11-30T10:00:{n % 60:02d}Z"}})
        else:
            kind = "user" if step == "prompt" else "gemini"
            ids.append(f"m{n}")
            lines.append({"id": f"m{n}", "type": kind, "content": f"{kind} {n}"})
            kept += 1
            if kept >= _live.KEEP + _live.SPILL_CHUNK:
                kept -= _live.SPILL_CHUNK
    path, _ = _write(tmp_path, lines)
    kept, kept_diag, _ = _read(path, spill=False)
    runs = _replays(monkeypatch)
    spilled, spilled_diag, replay = _read(path, spill=True)
    assert runs == [True]  # never replayed again
    assert spilled == kept and spilled_diag == kept_diag
    assert len(replay.live) <= _live.KEEP + _live.SPILL_CHUNK
    assert replay.live.spilled + len(replay.live) == len(ids)


# -- the situations that touch spilled messages, with the handoff of the full read -----
def _long_session(tmp_path: Path) -> tuple[Path, Path, GeminiTurns]:
    path, workspace = _layout(tmp_path)
    maker = GeminiTurns()
    body = b"".join(maker.real_turn(which) for which in range(12))
    path.write_bytes(HEADER + body)
    return path, workspace, maker


def _handoff_facts(handoff: dict[str, Any] | str) -> dict[str, Any]:
    assert isinstance(handoff, dict)
    task, state = handoff["task"], handoff["state"]
    return {
        "request": (task["original_request"] or "")[:40],
        "latest": (task["latest_user_message"] or "")[:40],
        "progress": (task["latest_progress"] or "")[:40],
        "messages": task["messages_total"],
        "plan": [(item["subject"][:20], item["status"]) for item in state["plan"]],
        "files": sorted(f["path"].rsplit("/", 1)[-1] for f in state["files_touched"]),
        "transcript": [(entry["role"], entry["text"][:24]) for entry in task["transcript"]],
    }


def test_a_deep_rewind_gives_the_full_reads_handoff(
    tmp_path: Path, tiny_spill: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/rewind` to the second prompt, long spilled: the replay follows it by reading
    again keeping everything, and the handoff is the one of the implementation that
    always kept everything (7343bb2): the first prompt and the reply to it are left."""
    path, workspace, maker = _long_session(tmp_path)
    path.write_bytes(path.read_bytes() + _line({"$rewindTo": maker.prompts[1]}))
    runs = _replays(monkeypatch)
    facts = _handoff_facts(_export_and_compare(path, workspace))
    assert True in runs and runs[-1] is False  # spilled, then read again keeping all
    assert facts == {
        "request": "Create calc.py with an add() function an",
        "latest": "Create calc.py with an add() function an",
        "progress": "I'll keep a todo list.",
        "messages": 2,
        "plan": [
            ("Write calc.py with a", "in_progress"),
            ("Make greet() say Hi", "pending"),
            ("Add a Usage section ", "pending"),
        ],
        "files": [],
        "transcript": [
            ("user", "Create calc.py with an a"),
            ("assistant", "I'll keep a todo list."),
        ],
    }


def test_a_resume_after_spilling_gives_the_full_reads_handoff(
    tmp_path: Path, tiny_spill: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gemini --resume` of a long session empties the history (a `$set` of the session
    context alone), then writes it again (a `$set` of every message, API-shaped, with
    `<id>_response` copies): the spilled messages, listed again in their order, are
    live again from their records, without a second replay, and the handoff is the one
    of the replay keeping everything (7343bb2 gives these facts)."""
    path, workspace, maker = _long_session(tmp_path)
    path.write_bytes(path.read_bytes() + maker.resume() + maker.real_turn(12))
    runs = _replays(monkeypatch)
    facts = _handoff_facts(_export_and_compare(path, workspace))
    assert runs and False not in runs  # every replay spilled, none read again
    assert facts == {
        "request": "Create calc.py with an add() function an",
        "latest": "Create calc.py with an add() function an",
        "progress": "I'll keep a todo list.",
        "messages": 5,
        "plan": [
            ("Write calc.py with a", "in_progress"),
            ("Make greet() say Hi", "pending"),
            ("Add a Usage section ", "pending"),
        ],
        "files": ["calc.py", "greet.py", "test_calc.py"],
        "transcript": [
            ("user", "Create calc.py with an a"),
            ("assistant", "I'll keep a todo list."),
            ("assistant", "Running the tests."),
            ("user", "Create calc.py with an a"),
            ("assistant", "I'll keep a todo list."),
        ],
    }


def test_a_rewritten_spilled_message_gives_the_full_reads_handoff(
    tmp_path: Path, tiny_spill: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record that rewrites the first prompt, long spilled, updates it in place (the
    CLI never writes it; a log may): the handoff says the rewritten text first, as
    7343bb2 does."""
    path, workspace, maker = _long_session(tmp_path)
    path.write_bytes(path.read_bytes() + maker.rewrite_old())
    runs = _replays(monkeypatch)
    facts = _handoff_facts(_export_and_compare(path, workspace))
    assert runs[-1] is False
    assert facts == {
        "request": "rewritten 13",
        "latest": "Create calc.py with an add() function an",
        "progress": "I'll keep a todo list.",
        "messages": 5,
        "plan": [
            ("Write calc.py with a", "in_progress"),
            ("Make greet() say Hi", "pending"),
            ("Add a Usage section ", "pending"),
        ],
        "files": ["calc.py", "greet.py", "test_calc.py"],
        "transcript": [
            ("user", "rewritten 13"),
            ("assistant", "I'll keep a todo list."),
            ("assistant", "Running the tests."),
            ("user", "Create calc.py with an a"),
            ("assistant", "I'll keep a todo list."),
        ],
    }


def test_a_long_resumed_session_keeps_its_checkpoint(
    tmp_path: Path, tiny_spill: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first export of a long session resumed after its first messages spilled:
    the first read meets the resume's `$set`, reads the window again keeping every
    message, and saves a checkpoint, so the next export reads only what was appended
    (instead of failing on the same line at every export)."""
    path, workspace, maker = _long_session(tmp_path)
    path.write_bytes(path.read_bytes() + maker.resume() + maker.real_turn(12))
    _export_and_compare(path, workspace)
    assert _saved(path) is not None
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + maker.real_turn(13))
    windows: list[int] = []
    run = _replay.Replay.run

    def spy(self: Replay, stream: Any = None, base: int = 0) -> None:
        if stream is not None:
            windows.append(base)
        run(self, stream, base)

    monkeypatch.setattr(_replay.Replay, "run", spy)
    handoff = _export_and_compare(path, workspace)
    assert windows[0] == size  # from the checkpoint
    assert isinstance(handoff, dict)
    assert handoff["task"]["latest_user_message"].startswith("Create calc.py")


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


# -- incremental export with spilling --------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, 1000), min_size=1, max_size=14),
    cuts=st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=1, max_size=8),
)
@example(  # a resume's history `$set` without its newline: the spilled run the first
    # window left out is listed again after its lines were forgotten
    picks=[0, 0, 0, 0, 545],
    cuts=[(False, 0.9999999999999999)],
)
def test_incremental_export_with_spilling_equals_full_read(
    picks: list[int], cuts: list[tuple[bool, float]]
) -> None:
    """The property of test_incremental_gemini with the tiny spill limits: the
    checkpoint holds a filter of the spilled ids, and whatever the appended lines do
    to spilled messages, the export equals the full read after every append."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_live, "KEEP", 4)
        patch.setattr(_live, "SPILL_CHUNK", 3)
        _appended_in_chunks(picks, cuts)


# -- the filter -------------------------------------------------------------------------
def test_a_filter_hit_is_checked_against_the_spilled_ids() -> None:
    """A spilled id entering again is found; an id that only shares the filter's bits
    with spilled ones (a false alarm) is not; a filter restored from a checkpoint has
    no ids to check with, and says maybe."""
    spill = Spill(2**16)
    spilled = array("q", range(1, 2001))
    assert not spill.check(spilled)
    spill.spilled(spilled)
    assert spill.check(array("q", [1500]))
    alarms = [k for k in range(10**6, 10**6 + 200_000) if _all_bits_set(spill, k)]
    assert alarms  # a small filter holding 2000 ids: some false alarms exist
    assert not spill.check(array("q", alarms[:1]))
    restored = Spill.unpacked(spill.bits, spill.packed())
    assert restored.check(array("q", alarms[1:2]))
    assert not restored.check(array("q", [5 * 10**7 + 1]))


def _all_bits_set(spill: Spill, key: int) -> bool:
    bloom, mask = spill._bloom(), (spill.bits >> 3) - 1
    probes = [
        ((key >> 3) & mask, key & 7),
        ((key >> 30) & mask, (key >> 27) & 7),
        ((key >> 40) & mask, (key >> 54) & 7),
    ]
    return all(bloom[byte] & (1 << bit) for byte, bit in probes)


def test_the_stash_gives_back_the_spilled_lines_in_order() -> None:
    spill = Spill(2**16)
    spill.stash(array("I", [10, 20]), array("q", [-1, 3]))
    spill.stash(array("I", [30]), array("q", [-1]))
    assert spill.pending_count == 3
    assert list(spill.drain()) == [(10, -1), (20, 3), (30, -1)]
    assert spill.pending_count == 0 and list(spill.drain()) == []
