"""Pass 1 of a large tree session on two cores (`_two_core.split_first_walk`,
`TreeResumable.walk_in_two`): a forked worker walks the second half of the file back
from the leaf while the reader walks the first half; the two walks join when the first
half's walk started at the record the second half's branch comes from, and otherwise
the reader walks it all as on one core.

Whatever happens, the walk must be the single walk's: the same branch runs (a run
across the middle is one run), the same leaf, the same diagnostics and title; and the
export, its handoff and checkpoint, the single-core one. The sessions are real-shaped
(test_incremental_tree's makers: turns of the recorded sessions with rewinds,
compactions, records outside the tree or written again in fragments (Qwen), API errors,
unreadable lines), the middle forced at any line.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from passdown import _two_core
from passdown.agents import get_agent
from passdown.agents._tree import TreeResumable, find_active_branch
from passdown.transcript import Diagnostics, SessionInfo
from test_incremental_tree import CLAUDE, PI, QWEN, STEPS, ClaudeMaker, PiMaker, QwenMaker, _store
from test_two_core_tree import _assert_no_children, _export, _line_starts

MAKERS = {"claude": (CLAUDE, ClaudeMaker), "pi": (PI, PiMaker), "qwen": (QWEN, QwenMaker)}


@pytest.fixture(autouse=True)
def _two_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two-core read splits the tree reader's two passes: the one-core read it is
    compared with takes them too, not the forward pass (test_tree_forward compares that
    one with the two passes; its checkpoint counts the lines once, not twice)."""
    monkeypatch.setenv("PASSDOWN_NO_FORWARD_PASS", "1")


@pytest.fixture
def walk_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Split pass 1 on small files, at the line start the test picks."""
    chosen: list[int] = []
    monkeypatch.setattr(_two_core, "MIN_BYTES", 1)
    monkeypatch.setattr(TreeResumable, "walk_middle", lambda self, fd, end: chosen[0])
    yield chosen


def _session(agent: str, steps: list[tuple[int, int]]) -> bytes:
    fixture, maker_class = MAKERS[agent]
    maker = maker_class(fixture)
    data = maker.header() + maker.turn(0)
    return data + b"".join(STEPS[step](maker, k) for step, k in steps)


def _planned(agent: str, path: Path, *, split: bool) -> dict[str, Any]:
    """What `begin` of a first read planned: the branch, leaf, diagnostics, title."""
    info = SessionInfo(agent=agent, session_id="s", path=path)
    diag = Diagnostics()
    reader = get_agent(agent).resumable_reader(info, diag, None, {})
    assert isinstance(reader, TreeResumable)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        end = os.pread(fd, size, 0).rfind(b"\n") + 1
        if split:
            _two_core.split_first_walk(reader, fd, end)
            assert reader.later_half is not None
        assert reader.begin(fd, 0, end, size)
    finally:
        os.close(fd)
    _assert_no_children()
    branch = reader.windows[0][1]
    return {
        "runs": branch.runs.tolist(),
        "broken": branch.broken,
        "leaf": (reader.leaf, reader.leaf_parent),
        "checkpointable": reader.checkpointable,
        "diagnostics": dataclasses.asdict(diag),
        "title": info.title,
        "joined": reader.walk_report.get("walk_joined"),
    }


def _same_walk(agent: str, path: Path) -> dict[str, Any]:
    single = _planned(agent, path, split=False)
    assert single.pop("joined") is None
    split = _planned(agent, path, split=True)
    joined = split.pop("joined")
    assert joined in (True, False)
    assert split == single
    split["joined"] = joined
    return split


@settings(
    max_examples=int(os.environ.get("PASSDOWN_TREE_SPLIT_CASES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    agent=st.sampled_from(sorted(MAKERS)),
    steps=st.lists(
        st.tuples(st.integers(0, len(STEPS) - 1), st.integers(0, 50)), min_size=1, max_size=12
    ),
    where=st.floats(0.0, 1.0),
    torn=st.booleans(),
)
@pytest.mark.fork_checkpoint
def test_the_walk_split_at_any_line_is_the_single_walk(
    walk_at: list[int], agent: str, steps: list[tuple[int, int]], where: float, torn: bool
) -> None:
    data = _session(agent, steps)
    starts = _line_starts(data)
    walk_at[:] = [starts[int(where * (len(starts) - 1))]]
    with _store(agent) as (path, _):
        # a torn last line is walked after the checkpoint, never by the halves
        path.write_bytes(data + (b'{"type":"user","parentUuid":"x' if torn else b""))
        planned = _same_walk(agent, path)
    tally(f"{agent}: {'joined' if planned['joined'] else 'walked again'}")


@pytest.mark.fork_checkpoint
def test_a_straight_session_joins_and_its_run_across_the_middle_is_one_run(
    walk_at: list[int],
) -> None:
    data = _session("pi", [(0, k) for k in range(1, 6)])
    starts = _line_starts(data)
    walk_at[:] = [starts[len(starts) // 2]]
    with _store("pi") as (path, _):
        path.write_bytes(data)
        planned = _same_walk("pi", path)
        assert planned["joined"] is True
        # every entry but the header is on the branch: one run, not one a half
        single = find_active_branch(path, Diagnostics(), _node_view("pi", path))
    assert planned["runs"] == single.runs.tolist()
    assert len(planned["runs"]) == 2


def _node_view(agent: str, path: Path) -> Any:
    reader = get_agent(agent).resumable_reader(
        SessionInfo(agent=agent, session_id="s", path=path), Diagnostics(), None, {}
    )
    assert isinstance(reader, TreeResumable)
    return reader.fmt.node_view(reader.info, reader.diag)


@pytest.mark.fork_checkpoint
def test_a_rewind_back_across_the_middle_walks_again_with_the_same_result(
    walk_at: list[int],
) -> None:
    """The branch leaves the second half for a record older than the newest one
    before the middle: the first half's walk started at the wrong record, so the
    reader walks the whole file itself, and the dead turn is still off the branch."""
    fixture, maker_class = MAKERS["claude"]
    maker = maker_class(fixture)
    data = maker.header() + maker.turn(0) + maker.turn(1)
    back_to = maker.nodes[-3]
    dead = maker.turn(2)
    middle = len(data) + len(dead)
    maker.leaf = back_to
    data += dead + maker.turn(3) + maker.turn(4)
    walk_at[:] = [middle]
    with _store("claude") as (path, _):
        path.write_bytes(data)
        planned = _same_walk("claude", path)
    assert planned["joined"] is False
    assert planned["diagnostics"]["off_branch_records"] >= 2


@pytest.mark.fork_checkpoint
def test_a_leaf_hint_before_the_middle_is_followed(walk_at: list[int]) -> None:
    """Claude's `last-prompt` record names the leaf: when the newest records are a
    dead branch after it, the worker's half starts from the hint and the leaf the
    hint names lies in the first half."""
    fixture, maker_class = MAKERS["claude"]
    maker = maker_class(fixture)
    data = maker.header() + maker.turn(0) + maker.turn(1)
    leaf = maker.leaf
    dead = maker.turn(2)
    hint = b'{"type":"last-prompt","lastPrompt":"go on","leafUuid":"%s"}\n' % leaf.encode()
    walk_at[:] = [len(data)]
    with _store("claude") as (path, _):
        path.write_bytes(data + dead + hint)
        planned = _same_walk("claude", path)
    assert planned["joined"] is True
    assert planned["leaf"][0] == leaf


@pytest.mark.parametrize("agent", sorted(MAKERS))
@pytest.mark.fork_checkpoint
def test_the_export_with_a_split_walk_equals_the_single_core_one(
    walk_at: list[int], monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    data = _session(agent, [(0, 1), (2, 9), (3, 0), (0, 4), (4, 2), (0, 5)])
    starts = _line_starts(data)
    walk_at[:] = [starts[len(starts) // 2]]
    with _store(agent) as (path, workspace):
        path.write_bytes(data)
        single = _export(path, workspace, monkeypatch, single=True, agent_name=agent)
        split = _export(path, workspace, monkeypatch, single=False, agent_name=agent)
    assert _two_core.LAST["walk_middle"] == walk_at[0]
    assert "walk_joined" in _two_core.LAST
    assert split == single
    assert single[0]["task"]["original_request"]
    _assert_no_children()


@pytest.mark.fork_checkpoint
def test_a_worker_that_fails_means_the_walk_on_one_core(
    walk_at: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _session("claude", [(0, 1), (0, 2), (0, 3)])
    walk_at[:] = [_line_starts(data)[len(_line_starts(data)) // 2]]

    def broken(self: TreeResumable, fd: int, lo: int, hi: int) -> Any:
        if lo > 0:  # the worker's half
            raise OSError("disk gone")
        return real(self, fd, lo, hi)

    real = TreeResumable._walk_alone
    monkeypatch.setattr(TreeResumable, "_walk_alone", broken)
    with _store("claude") as (path, _):
        path.write_bytes(data)
        planned = _same_walk("claude", path)
    assert planned["joined"] is False
    assert len(planned["runs"]) >= 2


@pytest.mark.fork_checkpoint
def test_a_qwen_fragment_on_both_sides_of_the_middle_walks_again(walk_at: list[int]) -> None:
    """Qwen writes a record again under its uuid: the piece before the middle belongs
    to the branch only because the later half took that uuid, which the first half's
    walk cannot know; the reader walks it all, and both pieces are on the branch."""
    fixture, maker_class = MAKERS["qwen"]
    maker = maker_class(fixture)
    head = maker.header() + maker.turn(0)
    reply = maker.node(
        {
            "type": "assistant",
            "timestamp": "2026-11-29T21:20:00.000Z",
            "message": {"role": "model", "parts": [{"text": "Half of the reply."}]},
        }
    )
    fragment = maker.outside(1)
    walk_at[:] = [len(head) + len(reply)]  # between the record and its fragment
    with _store("qwen") as (path, _):
        path.write_bytes(head + reply + fragment + maker.turn(1))
        planned = _same_walk("qwen", path)
    assert planned["joined"] is False
    starts = [planned["runs"][k] for k in range(0, len(planned["runs"]), 2)]
    ends = [planned["runs"][k + 1] for k in range(0, len(planned["runs"]), 2)]
    piece = len(head)
    assert any(lo <= piece <= hi for lo, hi in zip(starts, ends, strict=True))


@pytest.mark.fork_checkpoint
def test_a_qwen_fragment_after_the_middle_joins(walk_at: list[int]) -> None:
    fixture, maker_class = MAKERS["qwen"]
    maker = maker_class(fixture)
    head = maker.header() + maker.turn(0) + maker.turn(1)
    walk_at[:] = [len(head)]
    with _store("qwen") as (path, _):
        path.write_bytes(head + maker.turn(2) + maker.outside(3) + maker.turn(3))
        planned = _same_walk("qwen", path)
    assert planned["joined"] is True


@pytest.mark.fork_checkpoint
def test_a_qwen_piece_before_its_parent_and_after_the_middle_walks_again(
    walk_at: list[int],
) -> None:
    """A file a writer mangled: a piece of record X lies before X's parent W, and X's
    other piece after the middle. The first half's walk starts at W, the record the
    later half's branch comes from, yet it cannot know that the piece before W belongs
    (a single walk took X's id in the later half): the ids it asked about show it, and
    the reader walks it all."""
    fixture, maker_class = MAKERS["qwen"]
    maker = maker_class(fixture)
    head = maker.header() + maker.turn(0)
    w_line = maker.node(
        {
            "type": "assistant",
            "timestamp": "2026-11-29T21:20:00.000Z",
            "message": {"role": "model", "parts": [{"text": "W speaks."}]},
        }
    )
    x_line = maker.node(
        {
            "type": "assistant",
            "timestamp": "2026-11-29T21:20:01.000Z",
            "message": {"role": "model", "parts": [{"text": "X speaks."}]},
        }
    )
    x_piece = x_line.replace(b"X speaks.", b"X goes on.")
    rest = maker.turn(1)  # hangs off X
    walk_at[:] = [len(head) + len(x_piece) + len(w_line)]
    with _store("qwen") as (path, _):
        path.write_bytes(head + x_piece + w_line + x_line + rest)
        planned = _same_walk("qwen", path)
    assert planned["joined"] is False
    on_branch = [
        lo <= len(head) <= hi
        for lo, hi in zip(planned["runs"][::2], planned["runs"][1::2], strict=True)
    ]
    assert any(on_branch)  # the piece before W is on the branch, as on one core
