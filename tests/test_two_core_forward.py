"""The forward pass on two cores (issue 20): a first read of a large Claude Code session
skips pass 1 and decodes every line once, its second part on a forked worker whose own
straight line (`_tree_forward.HalfLine`) must continue the main process's exactly. The
worker leaving its line (a rewind after the cut), a line that does not join at the cut
(a fork there), or the main process leaving its own (a rewind before the cut) all end in
the read with pass 1 (`BranchLeft`): the handoff and checkpoint written are always those
of the forward pass on one core, and a straight session never walks pass 1 at all.

Sessions as tests/test_two_core_tree.py makes them (recorded turns with fresh ids,
rewinds, compactions, records outside the tree, API errors, unreadable lines, a recorded
sub-agent's turn), cut at any line (hypothesis) or at the line a case needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from passdown import _checkpoint, _two_core
from test_incremental_tree import CLAUDE
from test_two_core_tree import (  # noqa: F401  (fixtures)
    TREE_STEPS,
    SplitMaker,
    _assert_no_children,
    _body,
    _cut_after,
    _export,
    _line_starts,
    _pieces,
    claude_store,
    split_at,
)

pytestmark = pytest.mark.fork_checkpoint


@pytest.fixture(autouse=True)
def _forward_pass(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PASSDOWN_NO_FORWARD_PASS", raising=False)
    yield


def _reads() -> dict[str, int]:
    return dict(_checkpoint.READS)


def _both(
    path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[dict[str, Any], dict[str, Any]], dict[str, int]]:
    """The forward pass on one core, then on two: equal handoffs and checkpoints. Returns
    the one-core result and what the two-core read did (`_checkpoint.READS` deltas)."""
    single = _export(path, workspace, monkeypatch, single=True)
    assert _two_core.LAST == {}
    before = _reads()
    split = _export(path, workspace, monkeypatch, single=False)
    after = _reads()
    assert split[0] == single[0]
    assert split[1] == single[1]
    _assert_no_children()
    return single, {k: after.get(k, 0) - before.get(k, 0) for k in after}


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
def test_the_forward_pass_split_at_any_line_equals_it_on_one_core(
    claude_store: tuple[Path, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],  # noqa: F811
    steps: list[tuple[int, int]],
    where: float,
) -> None:
    path, workspace = claude_store
    data = _body(SplitMaker(CLAUDE), steps)
    path.write_bytes(data)
    starts = _line_starts(data)
    split_at[:] = [starts[int(where * (len(starts) - 1))]]
    _single, reads = _both(path, workspace, monkeypatch)
    if reads.get("forward_left"):
        tally("left the forward pass: read with pass 1")
    elif "cut" in _two_core.LAST:
        tally("merged" if _two_core.LAST["merged"] else f"refused: {_two_core.LAST['reason']}")
    else:
        tally("not split")


def test_a_straight_session_is_read_once_on_two_cores(
    claude_store: tuple[Path, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],  # noqa: F811
) -> None:
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data, starts = _pieces(
        maker.header() + maker.turn(0), maker.turn(1) + maker.subagent(), maker.turn(2)
    )
    path.write_bytes(data)
    split_at[:] = [starts[0]]
    single, reads = _both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is True, _two_core.LAST.get("reason")
    assert "walk_middle" not in _two_core.LAST  # pass 1 was never walked, on either core
    assert reads["full"] == 1 and reads.get("forward_left", 0) == 0
    # what the worker read is in the handoff: the last turn's prompt and the sub-agent
    handoff = single[0]
    assert handoff["task"]["latest_user_message"]
    assert handoff["state"]["subagents"], handoff["state"].keys()
    # and the two passes (pass 1's walk, then the branch) give the same handoff
    monkeypatch.setenv("PASSDOWN_NO_FORWARD_PASS", "1")
    two_passes = _export(path, workspace, monkeypatch, single=False)
    assert two_passes[0] == handoff


# (what comes before the cut, what comes after it), for a session that is not one line
NOT_STRAIGHT: dict[str, Callable[[SplitMaker], tuple[bytes, bytes]]] = {
    # the worker leaves its line: it fails, this process reads on and leaves too
    "a rewind after the cut": lambda m: (
        m.header() + m.turn(0) + m.turn(1),
        m.turn(2) + m.rewind(3, 4),
    ),
    # this process leaves its line in the first part (the worker is cancelled)
    "a rewind before the cut": lambda m: (
        m.header() + m.turn(0) + m.turn(1) + m.rewind(2, 3),
        m.turn(3) + m.turn(0),
    ),
    # each part a straight line, but the first record after the cut hangs off an older one
    "a fork at the cut": lambda m: (
        m.header() + m.turn(0) + m.turn(1),
        m.rewind(2, 5) + m.turn(3),
    ),
    # the worker's part ends with a leaf hint naming an older record: the branch ends
    # there (checked after the merge, before the checkpoint)
    "an older leaf hint after the cut": lambda m: (
        m.header() + m.turn(0) + m.turn(1),
        m.turn(2) + m.outside(4 + 7 * 3),
    ),
}


@pytest.mark.parametrize("case", NOT_STRAIGHT)
def test_a_session_that_is_not_one_line_across_the_cut_is_read_with_pass_1(
    claude_store: tuple[Path, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],  # noqa: F811
    case: str,
) -> None:
    path, workspace = claude_store
    first, later = NOT_STRAIGHT[case](SplitMaker(CLAUDE))
    path.write_bytes(first + later)
    split_at[:] = [len(first)]
    single, reads = _both(path, workspace, monkeypatch)
    assert reads.get("forward_left") == 1, reads
    if "rewind" in case or "fork" in case:
        assert single[1]["diagnostics"]["off_branch_records"] > 0


def test_the_cut_right_after_an_open_tool_call_is_refused_then_read_on(
    claude_store: tuple[Path, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    split_at: list[int],  # noqa: F811
) -> None:
    """A refusal the pass-2 split knows (a result after the cut for a call before it):
    the main process reads on along its own straight line, no pass 1 needed."""
    path, workspace = claude_store
    maker = SplitMaker(CLAUDE)
    data = _body(maker, [(0, 1), (0, 2)])
    path.write_bytes(data)
    split_at[:] = [_cut_after(data, b'"name":"Write"')]
    single, reads = _both(path, workspace, monkeypatch)
    assert _two_core.LAST["merged"] is False
    assert "at the cut is named after it" in _two_core.LAST["reason"]
    assert reads.get("forward_left", 0) == 0
    assert "calc.py" in {f["path"] for f in single[0]["state"]["files_touched"]}
