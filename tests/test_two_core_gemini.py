"""Two-core reads of Gemini CLI sessions (passdown._two_core, agents/_gemini_split.py):
once the replay (pass 1) knows which lines hold the live messages, a worker decodes the
second part of them; merged, or refused and read on by the main process, the handoff
and the checkpoint written equal the single-core ones, byte for byte.

The sessions are real-shaped: the recorded session's turns with fresh ids
(test_incremental_gemini.GeminiTurns: each model message written, then written again
under its id with its tool calls' results), `$set` touches, compressions, resumes and
history cuts (`$set.messages`), `/rewind` (`$rewindTo`), an old message rewritten, API
errors, cancelled requests and unreadable lines, with the spill of old messages made
tiny or left alone; or the recorded session grown by benchmarks/realshape.py. The cut
is forced at any position of the emit pass (hypothesis) or chosen by the splitter.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from passdown import _checkpoint, _two_core
from passdown._checkpoint import Checkpoint
from passdown._pipeline import Selection, build_handoff
from passdown.agents import _gemini_split, get_agent
from passdown.agents._gemini_split import GeminiSplitter
from passdown.agents.gemini import _live, _resume
from passdown.errors import SessionReadError
from passdown.transcript import Diagnostics, SessionInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import realshape

from test_incremental_gemini import HEADER, REAL_TURNS, TURNS, GeminiTurns, _layout, _line
from worker_procs import assert_killed_export_leaves_no_worker, hook_exports, start_export

_REAL_CHOOSE = GeminiSplitter.choose


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    return _layout(tmp_path)


@pytest.fixture
def split_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Force the split on small files, at the share of the emit pass the test picks."""
    chosen: list[float] = []
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)

    def choose(self: GeminiSplitter, fd: int, middle: int) -> int:
        return self.first + int(chosen[0] * (self.last - self.first))

    monkeypatch.setattr(GeminiSplitter, "choose", choose)
    yield chosen


def _export(
    path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, *, single: bool
) -> tuple[dict[str, Any], bytes]:
    """The handoff (without id and creation time) and the checkpoint's bytes a first
    read writes."""
    data_dir = workspace.parent / ("single" if single else "split")
    if data_dir.exists():
        for found in sorted(data_dir.rglob("*"), reverse=True):
            found.rmdir() if found.is_dir() else found.unlink()
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(data_dir))
    monkeypatch.setenv("PASSDOWN_SINGLE_CORE", "1" if single else "0")
    _two_core.LAST.clear()
    agent = get_agent("gemini")
    try:
        handoff = build_handoff(
            Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
        )
    except SessionReadError as exc:  # only lines nothing can read (the garbage line)
        return {"error": exc.message}, b""
    out = json.loads(handoff.to_json())
    del out["id"], out["created_at"]
    saved = list((data_dir / "checkpoints").glob("*.msgpack"))
    return out, saved[0].read_bytes() if saved else b""


def _same_on_both(
    path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both reads, their handoffs and checkpoint bytes equal; the single one's handoff
    and its checkpoint's reader state."""
    single = _export(path, workspace, monkeypatch, single=True)
    assert _two_core.LAST == {}
    split = _export(path, workspace, monkeypatch, single=False)
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()
    saved = msgspec.msgpack.decode(single[1], type=Checkpoint)
    return single[0], msgspec.msgpack.decode(saved.reader)


def _assert_no_children() -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@settings(
    max_examples=int(os.environ.get("PASSDOWN_GEMINI_SPLIT_CASES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    # real turns (the first picks) twice as often as the other records
    picks=st.lists(
        st.one_of(st.integers(0, len(REAL_TURNS) - 1), st.integers(0, 1000)),
        min_size=4,
        max_size=30,
    ),
    where=st.floats(0.02, 0.98),
    tiny_spill=st.booleans(),
    tail=st.sampled_from([1, 3, _resume.TAIL]),
)
def test_a_split_at_any_message_equals_the_single_pass(
    store: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[float],
    picks: list[int],
    where: float,
    tiny_spill: bool,
    tail: int,
) -> None:
    """`tail`: the messages the reader keeps back (fewer: more for the emit pass)."""
    path, workspace = store
    maker = GeminiTurns()
    path.write_bytes(HEADER + b"".join(TURNS[p % len(TURNS)](maker) for p in picks))
    split_at[:] = [where]
    with pytest.MonkeyPatch.context() as spill:
        spill.setattr(_resume, "TAIL", tail)
        if tiny_spill:  # old messages spilled: their lines come from the stash file
            spill.setattr(_live, "KEEP", 4)
            spill.setattr(_live, "SPILL_CHUNK", 3)
        single = _export(path, workspace, monkeypatch, single=True)
        split = _export(path, workspace, monkeypatch, single=False)
    if _two_core.LAST:
        reason = "merged" if _two_core.LAST["merged"] else f"refused: {_two_core.LAST['reason']}"
        tally(f"{reason} (spill: {tiny_spill})")
    else:
        tally("not split (no message on one side)")
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()


# the seams: what crosses the cut -----------------------------------------------------
def _model_message(message_id: str, calls: list[dict[str, Any]], text: str = "") -> bytes:
    return _line(
        {
            "id": message_id,
            "timestamp": f"2026-11-30T12:00:0{len(calls)}.000Z",
            "type": "gemini",
            "content": text,
            "model": "gemini-2.5-pro",
            "toolCalls": calls,
        }
    )


def _call(call_id: str, name: str, args: dict[str, Any], status: str) -> dict[str, Any]:
    call: dict[str, Any] = {"id": call_id, "name": name, "args": args, "status": status}
    if status == "success":
        response = {"id": call_id, "name": name, "response": {"output": "done"}}
        call["result"] = [{"functionResponse": response}]
    return call


def _session_with_a_call_across(name: str, args: dict[str, Any]) -> tuple[bytes, bytes]:
    """Real turns, a model message whose call is still running, a prompt; then a new
    model message naming the same call as finished, and more real turns."""
    maker = GeminiTurns()
    before = HEADER + maker.real_turn(0) + maker.real_turn(1)
    before += _model_message("open-1", [_call("call-open", name, args, "executing")])
    before += maker.prompt()
    after = _model_message("done-1", [_call("call-open", name, args, "success")])
    return before, after + _turns(maker, 2, 12) + maker.reply()


def _split_between(path: Path, data: bytes, cut_line: bytes, split_at: list[float]) -> None:
    """Cut the emit pass right before the message written on `cut_line`."""
    at = data.index(cut_line)
    info = SessionInfo(agent="gemini", session_id="s", path=path)
    reader = get_agent("gemini").resumable_reader(info, Diagnostics(), None, {})
    fd = os.open(path, os.O_RDONLY)
    try:
        assert reader.begin(fd, 0, len(data), len(data))  # type: ignore[attr-defined]
        splitter = GeminiSplitter.for_reader(reader)
        assert splitter is not None
        offsets = [offset for offset, _ in splitter.window.pairs(0, splitter.last)]
    finally:
        reader.replay.close()  # type: ignore[attr-defined]
        os.close(fd)
    position = next(k for k, offset in enumerate(offsets) if offset >= at)
    assert offsets[position] == at and 0 < position < len(offsets) - 1
    split_at[:] = [(position + 0.5) / len(offsets)]


def _turns(maker: GeminiTurns, first: int, count: int) -> bytes:
    return b"".join(maker.real_turn(k) for k in range(first, first + count))


@pytest.mark.fork_checkpoint
def test_a_read_call_open_at_the_cut_and_named_after_it_is_refused(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[float]
) -> None:
    """A read call still running before the cut (only the emitter waits on it) and
    finished in a message after it: the worker cannot pair them, so it is refused."""
    path, workspace = store
    before, after = _session_with_a_call_across("read_file", {"absolute_path": "/w/notes.md"})
    path.write_bytes(before + after)
    _split_between(path, before + after, after[:40], split_at)
    single, reader = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == _gemini_split.NAMED_AFTER
    assert reader["pending"] == []  # the one-core read paired them
    assert single["task"]["original_request"].startswith("Create calc.py")


@pytest.mark.fork_checkpoint
def test_a_command_open_at_the_cut_and_named_after_it_is_refused(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[float]
) -> None:
    """The same with a shell command, which extraction also waits on: refused by the
    extraction's own check, its result counted once."""
    path, workspace = store
    before, after = _session_with_a_call_across("run_shell_command", {"command": "make probe"})
    path.write_bytes(before + after)
    _split_between(path, before + after, after[:40], split_at)
    single, _ = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == "a tool call pending at the cut is named after it"
    commands = [c["command"] for c in single["state"]["commands"]]
    assert commands.count("make probe") == 1


@pytest.mark.fork_checkpoint
def test_a_call_left_open_before_the_cut_and_never_named_again_is_merged(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[float]
) -> None:
    """A call still running at the cut that nothing after it names: merged, and the
    checkpoint still waits on it (the extractor's own object)."""
    path, workspace = store
    before, after = _session_with_a_call_across("run_shell_command", {"command": "make slow"})
    after = after.replace(b"call-open", b"call-other")
    path.write_bytes(before + after)
    _split_between(path, before + after, after[:40], split_at)
    _, reader = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert [call["call_id"] for call in reader["pending"]] == ["call-open"]


@pytest.mark.fork_checkpoint
def test_a_worker_meeting_too_many_unknown_results_is_refused(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[float]
) -> None:
    """Results after the cut for calls the worker never saw are listed for the check;
    past the list's size the split is refused rather than guessed."""
    path, workspace = store
    maker = GeminiTurns()
    before = HEADER + maker.real_turn(0) + maker.real_turn(1)
    stray = {"functionResponse": {"id": "call-nobody", "name": "x", "response": {}}}
    after = _line({"id": "u-stray", "type": "user", "content": [stray, {"text": "Go on."}]})
    after += _turns(maker, 2, 12)
    path.write_bytes(before + after)
    monkeypatch.setattr(_gemini_split, "MAX_UNMATCHED", 0)
    _split_between(path, before + after, after[:30], split_at)
    single, _ = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == _gemini_split.OVERFLOW
    assert single["task"]["original_request"].startswith("Create calc.py")


@pytest.mark.parametrize("tiny_spill", [False, True])
@pytest.mark.fork_checkpoint
def test_a_failing_worker_is_refused_and_read_here(
    store: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[float],
    tiny_spill: bool,
) -> None:
    """The main process reads the worker's part itself, from the spill's stash too."""
    path, workspace = store
    if tiny_spill:
        monkeypatch.setattr(_live, "KEEP", 4)
        monkeypatch.setattr(_live, "SPILL_CHUNK", 3)
    maker = GeminiTurns()
    path.write_bytes(HEADER + _turns(maker, 0, 20))

    def broken(self: Any, stream: Any) -> Iterator[Any]:
        raise RuntimeError("the worker's disk went away")

    monkeypatch.setattr(_gemini_split._GeminiHalf, "events", broken)
    split_at[:] = [0.5]
    single, reader = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == "worker: RuntimeError: the worker's disk went away"
    assert single["state"]["files_touched"]
    assert (reader["spilled"] > 0) is tiny_spill


@pytest.mark.fork_checkpoint
def test_models_and_times_on_both_sides_join_as_one_pass(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[float]
) -> None:
    """A model named only after the cut joins the list after the first part's; the
    session's last activity is the worker's latest message."""
    path, workspace = store
    maker = GeminiTurns()
    before = HEADER + maker.real_turn(0) + maker.real_turn(1)
    late = _line(
        {
            "id": "late-1",
            "timestamp": "2026-12-24T08:00:00.000Z",
            "type": "gemini",
            "content": "Done on another model.",
            "model": "gemini-3-flash",
        }
    )
    path.write_bytes(before + late + _turns(maker, 2, 12))
    _split_between(path, path.read_bytes(), late[:20], split_at)
    single, reader = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert single["source"]["models"] == ["gemini-2.5-pro", "gemini-3-flash"]
    assert reader["max_ts"] == "2026-12-24T08:00:00.000Z"


# real-shaped grown sessions ----------------------------------------------------------
@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixture = realshape.fixtures()["gemini"]
    root = tmp_path_factory.mktemp("grown") / "gemini"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, 3_000_000)
    return path


@pytest.mark.fork_checkpoint
def test_the_splitters_own_cut_of_a_grown_session_is_merged(
    grown: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Merged, spilled messages on both sides (the real spill limits), the cut near the
    middle at a message of the model's."""
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setattr(_live, "KEEP", 512)
    monkeypatch.setattr(_live, "SPILL_CHUNK", 512)
    monkeypatch.setenv("HOME", str(grown.parents[4]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    single, reader = _same_on_both(grown, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    cut, end = _two_core.LAST["cut"], _two_core.LAST["end"]
    assert 0.3 < cut / end < 0.7
    line = grown.read_bytes()[cut : cut + 300]
    assert b'"type":"gemini"' in line
    assert reader["spilled"] > 0
    assert single["task"]["original_request"].startswith("Create calc.py")
    assert single["state"]["plan"] and single["state"]["files_touched"]


def test_the_real_choice_of_the_cut(grown: Path) -> None:
    """The first message whose line starts past the middle of the file, moved on to
    the next message the model wrote."""
    data = grown.read_bytes()
    info = SessionInfo(agent="gemini", session_id="s", path=grown)
    reader = get_agent("gemini").resumable_reader(info, Diagnostics(), None, {})
    fd = os.open(grown, os.O_RDONLY)
    try:
        assert reader.begin(fd, 0, len(data), len(data))  # type: ignore[attr-defined]
        splitter = GeminiSplitter.for_reader(reader)
        assert splitter is not None
        position = _REAL_CHOOSE(splitter, fd, len(data) // 2)
        offsets = [offset for offset, _ in splitter.window.pairs(0, splitter.last)]
    finally:
        reader.replay.close()  # type: ignore[attr-defined]
        os.close(fd)
    first_past = next(k for k, offset in enumerate(offsets) if offset >= len(data) // 2)
    assert first_past <= position < first_past + 8
    assert b'"type":"gemini"' in data[offsets[position] : offsets[position] + 256]
    skipped = [data[o : o + 256] for o in offsets[first_past:position]]
    assert not any(b'"type":"gemini"' in head for head in skipped)


@pytest.mark.fork_checkpoint
def test_an_incremental_export_of_a_split_read_continues_its_checkpoint(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[float]
) -> None:
    """The checkpoint a split first read saved serves the next export like the
    single-core one: the appended turn is read from it, the handoff is the full read's."""
    path, workspace = store
    maker = GeminiTurns()
    path.write_bytes(HEADER + _turns(maker, 0, 20))
    split_at[:] = [0.5]
    _export(path, workspace, monkeypatch, single=False)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    with path.open("ab") as out:
        out.write(maker.real_turn(7) + maker.prompt())
    _checkpoint.READS.clear()
    agent = get_agent("gemini")
    selection = Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    resumed = json.loads(build_handoff(selection).to_json())
    assert _checkpoint.READS["resumed"] == 1
    del resumed["id"], resumed["created_at"]
    monkeypatch.setenv(_checkpoint.DISABLE_ENV, "1")
    single = _export_without_checkpoint(path, workspace)
    assert resumed == single
    assert resumed["task"]["latest_user_message"].startswith("Prompt")


def _export_without_checkpoint(path: Path, workspace: Path) -> dict[str, Any]:
    agent = get_agent("gemini")
    handoff = build_handoff(
        Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    )
    out = json.loads(handoff.to_json())
    del out["id"], out["created_at"]
    return out


# the command line: a hook's export of a large session --------------------------------
@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real-shaped Gemini session just over the two-core size."""
    fixture = realshape.fixtures()["gemini"]
    root = tmp_path_factory.mktemp("big") / "gemini"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, _two_core.MIN_BYTES + 8 * 1024 * 1024)
    return path


def _home(session: Path) -> dict[str, str]:
    """Where the grown session's Gemini store is."""
    return {"HOME": str(session.parents[4])}


@pytest.mark.fork_checkpoint
def test_a_hooks_export_of_a_gemini_session_on_two_cores(big_session: Path, tmp_path: Path) -> None:
    """Run as a hook runs it: the handoff and the checkpoint equal the single-core ones."""
    (single, _, single_saved), (split, _, split_saved) = hook_exports(
        "gemini", big_session, tmp_path, home=_home(big_session)
    )
    assert split == single
    assert split_saved == single_saved
    assert single["task"]["original_request"].startswith("Create calc.py")


def test_a_killed_gemini_export_leaves_no_worker_running(big_session: Path, tmp_path: Path) -> None:
    export = start_export("gemini", big_session, tmp_path, single=False, home=_home(big_session))
    assert_killed_export_leaves_no_worker(export)
