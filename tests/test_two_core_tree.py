"""Two-core reads of Claude Code sessions (passdown._two_core, agents/_claude_split.py):
once pass 1 has found the active branch, a worker decodes the branch's lines after a
cut; merged, or refused and read on by the main process, the handoff and the
checkpoint written equal the single-core ones.

The sessions are real-shaped: turns of the recorded session (tests/fixtures/sessions/
claude/full) with fresh ids chained onto the leaf (test_incremental_tree.ClaudeMaker),
with rewinds, compactions, records outside the tree, API errors, unreadable lines and a
recorded sub-agent's turn (tests/fixtures/sessions/claude/subagent: the Agent call, its
result, the sub-agent's own transcript), or a recorded session grown by
benchmarks/realshape.py. The cut is forced at any line (hypothesis) or chosen by the
splitter itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from passdown import _half_extract, _two_core
from passdown._checkpoint import Checkpoint
from passdown._pipeline import Selection, build_handoff
from passdown.agents import get_agent
from passdown.agents._claude_split import ClaudeSplitter
from passdown.agents._pi_split import PiSplitter
from passdown.agents._qwen_split import QwenSplitter
from passdown.agents._tree import branch_bytes, on_branch
from passdown.transcript import Diagnostics, SessionInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import growslice
import realshape

from test_incremental_tree import (
    CLAUDE,
    FIXTURES,
    PI,
    QWEN,
    STEPS,
    ClaudeMaker,
    PiMaker,
    QwenMaker,
    _store,
)
from worker_procs import assert_killed_export_leaves_no_worker, hook_exports, start_export

_REAL_CUT = ClaudeSplitter.cut
SUBAGENT = FIXTURES / "claude" / "subagent"
SUBAGENT_ID = "ac6976142fab9d7e0"


class SplitMaker(ClaudeMaker):
    """ClaudeMaker that also writes the recorded sub-agent's turn: the assistant's text,
    its Agent call, the result naming the sub-agent, the assistant's reply."""

    def subagent(self) -> bytes:
        session = next((SUBAGENT / "projects").glob("*/*.jsonl"))
        lines = session.read_bytes().splitlines()
        return self._emit(self._remap(lines[5:9]), self.leaf)


TREE_STEPS = [*STEPS, lambda m, k: m.subagent()]


@pytest.fixture(autouse=True)
def _two_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two-core read splits the tree reader's two passes: the one-core read it is
    compared with takes them too, not the forward pass (test_tree_forward compares that
    one with the two passes; its checkpoint counts the lines once, not twice)."""
    monkeypatch.setenv("PASSDOWN_NO_FORWARD_PASS", "1")


@pytest.fixture
def claude_store() -> Iterator[tuple[Path, Path]]:
    """The recorded store (task files included) with the session emptied and the
    recorded sub-agent's files where this session keeps its sub-agents."""
    with _store("claude") as (path, workspace):
        folder = path.parent / path.name.removesuffix(".jsonl") / "subagents"
        folder.mkdir(parents=True)
        for found in SUBAGENT.rglob(f"agent-{SUBAGENT_ID}*"):
            shutil.copy(found, folder / found.name)
        yield path, workspace


@pytest.fixture
def split_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Force the split on small files, at the line start the test picks."""
    chosen: list[int] = []
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setattr(ClaudeSplitter, "cut", lambda self, fd, start, end: chosen[0])
    monkeypatch.setattr(QwenSplitter, "cut", lambda self, fd, start, end: chosen[0])
    monkeypatch.setattr(PiSplitter, "cut", lambda self, fd, start, end: chosen[0])
    yield chosen


def _export(
    path: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    single: bool,
    agent_name: str = "claude",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The handoff (without id and creation time) and the checkpoint a first read writes."""
    data_dir = workspace.parent / ("single" if single else "split")
    shutil.rmtree(data_dir, ignore_errors=True)
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(data_dir))
    monkeypatch.setenv("PASSDOWN_SINGLE_CORE", "1" if single else "0")
    _two_core.LAST.clear()
    agent = get_agent(agent_name)
    handoff = build_handoff(
        Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    )
    out = json.loads(handoff.to_json())
    del out["id"], out["created_at"]
    saved = msgspec.msgpack.decode(
        next((data_dir / "checkpoints").glob("*.msgpack")).read_bytes(), type=Checkpoint
    )
    checkpoint = msgspec.to_builtins(msgspec.structs.replace(saved, reader=None))
    checkpoint["reader"] = msgspec.msgpack.decode(saved.reader)
    return out, checkpoint


def _same_on_both(
    path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, agent: str = "claude"
) -> tuple[dict[str, Any], dict[str, Any]]:
    single = _export(path, workspace, monkeypatch, single=True, agent_name=agent)
    assert _two_core.LAST == {}
    split = _export(path, workspace, monkeypatch, single=False, agent_name=agent)
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()
    return single


def _line_starts(data: bytes) -> list[int]:
    return [i + 1 for i, byte in enumerate(data[:-1]) if byte == 0x0A]


def _body(maker: SplitMaker, steps: list[tuple[int, int]]) -> bytes:
    body = maker.header() + maker.turn(0)
    return body + b"".join(TREE_STEPS[step](maker, k) for step, k in steps)


@settings(
    max_examples=int(os.environ.get("PASSDOWN_TREE_SPLIT_CASES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, len(TREE_STEPS) - 1), st.integers(0, 50)), min_size=1, max_size=12
    ),
    where=st.floats(0.0, 1.0),
)
@pytest.mark.fork_checkpoint
def test_claude_split_at_any_line_equals_the_single_pass(
    claude_store: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],
    steps: list[tuple[int, int]],
    where: float,
) -> None:
    path, workspace = claude_store
    data = _body(SplitMaker(CLAUDE), steps)
    path.write_bytes(data)
    starts = _line_starts(data)
    split_at[:] = [starts[int(where * (len(starts) - 1))]]
    single = _export(path, workspace, monkeypatch, single=True)
    split = _export(path, workspace, monkeypatch, single=False)
    if "cut" in _two_core.LAST:
        assert _two_core.LAST["cut"] == split_at[0]
        tally("merged" if _two_core.LAST["merged"] else f"refused: {_two_core.LAST['reason']}")
    else:
        tally("not split (no branch bytes to share)")
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()


def _pieces(*pieces: bytes) -> tuple[bytes, list[int]]:
    """The pieces written one after the other, and where each after the first starts."""
    starts, at = [], 0
    for piece in pieces[:-1]:
        at += len(piece)
        starts.append(at)
    return b"".join(pieces), starts


def _cut_before(data: bytes, needle: bytes, start: int = 0) -> int:
    """The start of the line holding `needle`."""
    return data.rindex(b"\n", 0, data.index(needle, start)) + 1


def _cut_after(data: bytes, needle: bytes, start: int = 0) -> int:
    """The start of the line after the one holding `needle`."""
    return data.index(b"\n", data.index(needle, start)) + 1


@pytest.mark.fork_checkpoint
def test_a_tool_result_after_the_cut_for_a_call_before_it_is_refused(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data = _body(maker, [(0, 1), (0, 2)])
    path.write_bytes(data)
    # right after the Write call: its result is the first line of the worker's half
    split_at[:] = [_cut_after(data, b'"name":"Write"')]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert "at the cut is named after it" in _two_core.LAST["reason"]
    assert "calc.py" in {f["path"] for f in single[0]["state"]["files_touched"]}


@pytest.mark.fork_checkpoint
def test_a_plan_created_before_the_cut_and_updated_after_it(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data = _body(maker, [])
    path.write_bytes(data)
    # after the third TaskCreate's result: the updates are all the worker's
    third = data.index(b'"subject":"Add a Usage section')
    split_at[:] = [_cut_after(data, b'"tool_use_id"', third)]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    plan = [(p["id"], p["status"]) for p in single[0]["state"]["plan"]]
    assert plan == [("1", "completed"), ("2", "completed"), ("3", "in_progress")]
    # the reader's own replay (checked against the task files) crossed the cut too
    assert [key for key, _ in single[1]["reader"]["decoder"]["plan"]] == ["1", "2", "3"]


@pytest.mark.fork_checkpoint
def test_a_plan_updated_on_both_sides_of_the_cut_with_ids_reused_after_it(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    """The turn with the TaskCreate calls again after the cut: the tasks it creates take
    ids the plan before the cut holds (the older ones, of an earlier plan, are counted and
    no longer listed), which only the replay of the whole plan in order gets right."""
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    # turn 0 (its three TaskCreate calls) twice, then turn 1; cut between the two
    data, starts = _pieces(maker.header() + maker.turn(0), maker.turn(0), maker.turn(1))
    path.write_bytes(data)
    split_at[:] = [starts[0]]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    ids = [p["id"] for p in single[0]["state"]["plan"]]
    assert ids == ["1", "2", "3"]
    assert single[0]["state"]["omitted"]["plan_set_aside"] == 3


@pytest.mark.fork_checkpoint
def test_an_assistant_message_streamed_across_the_cut(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    """Claude writes one message's blocks as records sharing its id: a cut between its
    text and its tool call is refused; a cut where the next record flushes the text
    merges (the flush comes first)."""
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data, starts = _pieces(maker.header() + maker.turn(0), maker.turn(1), maker.turn(2))
    path.write_bytes(data)
    text = data.index(b'"type":"text"', data.index(b'"type":"thinking"'))
    split_at[:] = [_cut_after(data, b'"type":"text"', text)]  # the tool_use record next
    _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == "an assistant message runs across the cut"
    # turn 1 ends with a reply (text only), turn 2 starts with a user prompt
    split_at[:] = [starts[1]]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert single[0]["task"]["latest_user_message"]


@pytest.mark.fork_checkpoint
def test_a_compaction_across_the_cut(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data = maker.header() + maker.turn(0) + maker.compaction() + maker.turn(3)
    path.write_bytes(data)
    # between the boundary (its trigger) and the summary: refused
    split_at[:] = [_cut_after(data, b'"subtype":"compact_boundary"')]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == "a compaction runs across the cut"
    assert single[0]["task"]["compaction_summary"]
    # before the boundary: the compaction is the worker's, merged
    split_at[:] = [_cut_before(data, b'"subtype":"compact_boundary"')]
    _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")


@pytest.mark.fork_checkpoint
def test_a_rewind_whose_dead_branch_straddles_the_cut(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data = _body(maker, [(0, 1), (0, 2), (2, 9), (0, 3)])  # the rewind drops turns
    path.write_bytes(data)
    middle = len(data) // 2
    split_at[:] = [data.index(b"\n", middle) + 1]
    single = _same_on_both(path, workspace, monkeypatch)
    assert "cut" in _two_core.LAST
    assert single[1]["diagnostics"]["off_branch_records"] > 0


@pytest.mark.fork_checkpoint
def test_a_subagent_after_the_cut_is_read_by_the_worker(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data, starts = _pieces(
        maker.header() + maker.turn(0), maker.turn(1), maker.subagent(), maker.turn(2)
    )
    path.write_bytes(data)
    split_at[:] = [starts[1]]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert [s["id"] for s in single[0]["state"]["subagents"]] == [SUBAGENT_ID]
    assert list(single[1]["reader"]["decoder"]["subagents"]) == [SUBAGENT_ID]


@pytest.mark.fork_checkpoint
def test_a_subagent_read_before_the_cut_and_named_again_after_it_is_refused(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    """Read once in one pass: the second Agent result naming it adds nothing; a worker
    starting after the first would read it again, so that split is refused."""
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data, starts = _pieces(
        maker.header() + maker.turn(0), maker.subagent(), maker.turn(1), maker.subagent()
    )
    path.write_bytes(data)
    split_at[:] = [starts[2]]
    single = _same_on_both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == "a sub-agent read before the cut is named after it"
    assert [s["id"] for s in single[0]["state"]["subagents"]] == [SUBAGENT_ID]


# Qwen Code -------------------------------------------------------------------------
@pytest.fixture
def qwen_store() -> Iterator[tuple[Path, Path]]:
    with _store("qwen") as (path, workspace):
        yield path, workspace


OTHER_TREES = {"qwen": (QWEN, QwenMaker), "pi": (PI, PiMaker)}


@settings(
    max_examples=int(os.environ.get("PASSDOWN_TREE_SPLIT_CASES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    agent=st.sampled_from(sorted(OTHER_TREES)),
    steps=st.lists(
        st.tuples(st.integers(0, len(STEPS) - 1), st.integers(0, 50)), min_size=1, max_size=12
    ),
    where=st.floats(0.0, 1.0),
)
@pytest.mark.fork_checkpoint
def test_qwen_and_pi_split_at_any_line_equals_the_single_pass(
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],
    agent: str,
    steps: list[tuple[int, int]],
    where: float,
) -> None:
    """Turns, rewinds, compactions, records outside the tree (Qwen: a record written
    again under its uuid; pi: a session_info title), API errors and unreadable lines,
    cut at any line."""
    fixture, maker_class = OTHER_TREES[agent]
    maker = maker_class(fixture)
    data = maker.header() + maker.turn(0)
    data += b"".join(STEPS[step](maker, k) for step, k in steps)
    with _store(agent) as (path, workspace):
        path.write_bytes(data)
        starts = _line_starts(data)
        split_at[:] = [starts[int(where * (len(starts) - 1))]]
        single = _export(path, workspace, monkeypatch, single=True, agent_name=agent)
        split = _export(path, workspace, monkeypatch, single=False, agent_name=agent)
    if "cut" in _two_core.LAST:
        assert _two_core.LAST["cut"] == split_at[0]
        reason = "merged" if _two_core.LAST["merged"] else f"refused: {_two_core.LAST['reason']}"
        tally(f"{agent}: {reason}")
    else:
        tally(f"{agent}: not split (no branch bytes to share)")
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()


@pytest.mark.fork_checkpoint
def test_a_qwen_record_written_in_fragments_across_the_cut_is_refused(
    qwen_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    path, workspace = qwen_store
    maker = QwenMaker(QWEN)
    head = maker.header() + maker.turn(0)
    reply = maker.node(
        {
            "type": "assistant",
            "timestamp": "2026-11-29T21:20:00.000Z",
            "message": {"role": "model", "parts": [{"text": "Half of the reply."}]},
        }
    )
    data, starts = _pieces(head, reply, maker.outside(1), maker.turn(1))
    path.write_bytes(data)
    split_at[:] = [starts[1]]  # between the record and its fragment
    single = _same_on_both(path, workspace, monkeypatch, "qwen")
    assert _two_core.LAST["merged"] is False
    assert _two_core.LAST["reason"] == "an assistant message runs across the cut"
    assert "Half of the reply." in json.dumps(single[0])
    split_at[:] = [starts[2]]  # after the fragment: the next turn flushes the reply
    _same_on_both(path, workspace, monkeypatch, "qwen")
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")


# real-shaped grown sessions ----------------------------------------------------------
@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixture = realshape.fixtures()["claude"]
    root = tmp_path_factory.mktemp("grown") / "claude"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, 3_000_000)
    return path


@pytest.fixture(scope="module")
def grown_qwen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixture = realshape.fixtures()["qwen"]
    root = tmp_path_factory.mktemp("grown") / "qwen"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, 3_000_000)
    return path


@pytest.fixture(scope="module")
def grown_pi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixture = realshape.fixtures()["pi"]
    root = tmp_path_factory.mktemp("grown") / "pi"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, 3_000_000)
    return path


@pytest.mark.parametrize("agent", ["qwen", "pi"])
@pytest.mark.fork_checkpoint
def test_the_splitters_own_cut_of_a_grown_qwen_or_pi_session_is_merged(
    agent: str,
    grown_qwen: Path,
    grown_pi: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grown = grown_qwen if agent == "qwen" else grown_pi
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    home = next(p for p in grown.parents if p.name == agent)  # realshape.install's root
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    single = _same_on_both(grown, workspace, monkeypatch, agent)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert 0.3 < _two_core.LAST["cut"] / _two_core.LAST["end"] < 0.7
    assert _two_core.LAST["walk_joined"] is True  # pass 1 on two cores too
    assert single[0]["task"]["original_request"]
    assert single[0]["state"]["files_touched"]
    assert bool(single[0]["state"]["plan"]) is (agent == "qwen")  # pi keeps no plan


@pytest.mark.fork_checkpoint
def test_the_splitters_own_cut_of_a_grown_session_is_merged(
    grown: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(grown.parents[2]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    single = _same_on_both(grown, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert _two_core.LAST["walk_joined"] is True
    cut, end = _two_core.LAST["cut"], _two_core.LAST["end"]
    assert 0.3 < cut / end < 0.7
    task, state = single[0]["task"], single[0]["state"]
    assert task["original_request"].startswith("Create calc.py")
    assert state["plan"] and state["files_touched"]


def test_the_cut_is_a_branch_line_after_a_user_record_with_no_call_open(
    grown: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(grown.parents[2]))
    data = grown.read_bytes()
    info = SessionInfo(agent="claude", session_id=grown.stem, path=grown)
    reader = get_agent("claude").resumable_reader(info, Diagnostics(), None, {})
    fd = os.open(grown, os.O_RDONLY)
    try:
        assert reader.begin(fd, 0, len(data), len(data))
        splitter = ClaudeSplitter.for_reader(reader)
        assert splitter is not None
        cut = _REAL_CUT(splitter, fd, 0, len(data))
    finally:
        os.close(fd)
    assert cut is not None
    branch = splitter.branch
    runs = list(zip(branch.runs[::2], branch.runs[1::2], strict=True))
    before_cut = sum(min(end, cut) - start for start, end in runs if start < cut)
    assert 0.4 < before_cut / branch_bytes(branch, 0, len(data)) < 0.6
    assert on_branch(branch)(cut)
    before = data[data.rindex(b"\n", 0, cut - 1) + 1 : cut]
    assert b'"type":"user"' in before
    called = re.findall(rb'"type":"tool_use","id":"([^"]+)"', data[:cut])
    answered = set(re.findall(rb'"tool_use_id":"([^"]+)"', data[:cut]))
    assert called and set(called) <= answered


@pytest.mark.fork_checkpoint
def test_an_incremental_export_of_a_split_read_continues_its_checkpoint(
    claude_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, split_at: list[int]
) -> None:
    """The checkpoint a split first read saved serves the next export like the
    single-core one: the appended turn is read from it, the handoff is the full read's."""
    from passdown import _checkpoint

    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data, starts = _pieces(maker.header() + maker.turn(0), maker.turn(1), maker.subagent())
    path.write_bytes(data)
    split_at[:] = [starts[1]]
    _export(path, workspace, monkeypatch, single=False)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    with path.open("ab") as out:
        out.write(maker.turn(2))
    _checkpoint.READS.clear()
    agent = get_agent("claude")
    selection = Selection(agent=agent, ref=agent.ref_for_path(path), workspace=workspace)
    resumed = json.loads(build_handoff(selection).to_json())
    assert _checkpoint.READS["resumed"] == 1
    single = _export(path, workspace, monkeypatch, single=True)[0]
    del resumed["id"], resumed["created_at"]
    assert resumed == single


def _assert_no_children() -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


# the command line: a hook's export of a large session --------------------------------
@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real-shaped Claude session whose branch is just over the two-core size."""
    fixture = realshape.fixtures()["claude"]
    root = tmp_path_factory.mktemp("big") / "claude"
    path = realshape.install(fixture, root)
    realshape.Grower(fixture).write(path, _two_core.MIN_BYTES + 8 * 1024 * 1024)
    return path


def _home(session: Path) -> dict[str, str]:
    """Where the grown session's Claude store is."""
    return {"CLAUDE_CONFIG_DIR": str(session.parents[2])}


@pytest.mark.fork_checkpoint
def test_a_hooks_export_of_a_claude_session_on_two_cores(big_session: Path, tmp_path: Path) -> None:
    """Run as a hook runs it: the handoff equals the single-core one, and pass 1 ran on
    two cores too, its halves joined."""
    (single, _, _), (split, stats, _) = hook_exports(
        "claude", big_session, tmp_path, home=_home(big_session)
    )
    assert b"'walk_joined': True" in stats
    assert split == single
    assert single["task"]["original_request"].startswith("Create calc.py")


def test_a_killed_claude_export_leaves_no_worker_running(big_session: Path, tmp_path: Path) -> None:
    export = start_export("claude", big_session, tmp_path, single=False, home=_home(big_session))
    assert_killed_export_leaves_no_worker(export)


@pytest.mark.fork_checkpoint
def test_a_plan_grown_session_with_thousands_of_reused_task_ids_is_merged_from_few_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's TaskCreate x3 + TaskUpdate calls repeated (benchmarks/growslice.py,
    the task ids "1", "2", "3" reused by every copy, thousands on each side of the cut):
    the worker hands back the few changes a replay can need, not every one, and the
    handoff and the checkpoint (the reader's own plan replay included) are the
    single-core ones."""
    grown = growslice.grow("claude", "plan", 8 * 1024 * 1024, tmp_path / "store")
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setenv(grown.env_var, str(grown.root))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    single = _same_on_both(grown.session, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    plan = single[0]["state"]["plan"]
    assert [p["id"] for p in plan] == ["1", "2", "3"]
    # every copy's tasks set aside the previous copy's: thousands, counted once each
    assert single[0]["state"]["omitted"]["plan_set_aside"] >= 3 * (grown.copies - 1)
    assert grown.copies > 1000
    # the report: the fixed-size filter of call ids, and little else
    assert _two_core.LAST["report_bytes"] < _half_extract._IdFilter.BITS // 8 + 64 * 1024
