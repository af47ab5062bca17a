"""The forward pass of a Claude Code session (passdown.agents._tree_forward): a first
read on one core decodes a session without rewinds in one pass, and gives exactly the
events, facts and checkpoint state the two passes (pass 1's backward walk, then the
branch's lines) give. A session that is not a straight line (a rewind, a leaf hint
naming an older record) raises `BranchLeft` in the forward pass, and the export reads it
again with pass 1: the same handoff.

Sessions: the recorded ones in tests/fixtures/sessions/claude/, and the recorded turns
grown by test_incremental_tree.ClaudeMaker (rewinds, compactions, records outside the
tree, sidechains, API errors, unreadable lines, a last line without its newline).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passdown import _checkpoint as checkpoint
from passdown._jsonl import FdWindow
from passdown._seen import SeenEvents
from passdown.agents._registry import get_agent
from passdown.agents._tree import read_tree
from passdown.agents._tree_forward import DISABLE_ENV, BranchLeft
from passdown.agents._tree_resume import TreeResumable
from passdown.transcript import Diagnostics, Event, SessionInfo
from test_incremental import _env, _export_and_compare
from test_incremental_tree import CLAUDE, STEPS, ClaudeMaker, _append, _store

FIXTURES = Path(__file__).parent / "fixtures" / "sessions" / "claude"
_CHAIN = {"user", "assistant", "system", "attachment", "progress"}

Read = tuple[list[Event], Diagnostics, SessionInfo, object]


def _first_read(path: Path, *, forward: bool) -> Read:
    """A checkpointed export's first read of the session, as `passdown._checkpoint` runs
    it: the complete lines, the reader's state, then the last line without its newline."""
    agent = get_agent("claude")
    ref = agent.ref_for_path(path)
    info = SessionInfo(agent="claude", session_id=ref.session_id, path=path, cwd=ref.cwd)
    diag = Diagnostics()
    reader = agent.resumable_reader(info, diag, None, {})
    assert isinstance(reader, TreeResumable)
    reader.forward = forward
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        end = path.read_bytes().rfind(b"\n") + 1
        assert reader.begin(fd, 0, end, size)
        assert (reader.straight is not None) == forward
        events = list(reader.events(FdWindow(fd, 0, end)))
        state = reader.state()
        events += reader.events(FdWindow(fd, end, size))
        events += reader.close()
    finally:
        os.close(fd)
    return events, diag, info, state


def _full_read(path: Path) -> list[Event]:
    """The read without a checkpoint (`read_tree`: pass 1, then pass 2)."""
    agent = get_agent("claude")
    ref = agent.ref_for_path(path)
    info = SessionInfo(agent="claude", session_id=ref.session_id, path=path, cwd=ref.cwd)
    diag = Diagnostics()
    return list(read_tree(agent._format(), path, info, diag))  # type: ignore[attr-defined]


def _straight(data: bytes) -> bool:
    """Whether the forward pass may read the session, decided from its JSON alone: it is
    one straight line, and so are its complete lines (a checkpoint is saved at their end,
    with their leaf: a leaf hint naming an older record there leaves the forward pass,
    even if a last line without its newline names the leaf again)."""
    complete = data[: data.rfind(b"\n") + 1]
    return _one_line(complete) and _one_line(data)


def _one_line(data: bytes) -> bool:
    """Every tree record's parent is the tree record before it, and no leaf hint after
    the last one names another record."""
    last: str | None = None
    hint: str | None = None
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        kind = record.get("type")
        if kind in _CHAIN:
            if record.get("isSidechain") or not record.get("uuid"):
                continue
            parent = record.get("parentUuid")
            if parent is None and kind == "system":
                parent = record.get("logicalParentUuid")
            if parent != last:
                return False
            last, hint = record["uuid"], None
        elif kind in ("last-prompt", "summary") and record.get("leafUuid"):
            hint = record["leafUuid"]
    return hint in (None, last)


def _assert_same_read(path: Path) -> bool:
    """The forward pass against the two passes on one session; False when it left."""
    branch = _first_read(path, forward=False)
    try:
        forward = _first_read(path, forward=True)
    except BranchLeft:
        return False
    events, diag, info, state = forward
    assert events == branch[0]
    assert info == branch[2]
    assert state == branch[3]
    assert events == _full_read(path)
    # lines: the two passes count some lines twice (pass 2 from the start to the last
    # branch line); the forward pass counts each line of the file once
    assert diag.lines == len([line for line in path.read_bytes().split(b"\n") if line])
    diag.lines = branch[1].lines
    assert diag == branch[1]
    return True


@pytest.mark.parametrize("name", ["full", "todowrite", "subagent"])
def test_the_forward_pass_reads_a_recorded_session_as_the_two_passes_do(
    name: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / name, store, ignore=shutil.ignore_patterns("expected.json"))
    path = next((store / "projects").glob("*/*.jsonl"))
    with _env("CLAUDE_CONFIG_DIR", str(store)):
        assert _assert_same_read(path)
        events = _first_read(path, forward=True)[0]
    assert any(type(event).__name__ == "ToolCall" for event in events)


@settings(
    max_examples=int(os.environ.get("PASSDOWN_TREE_CASES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    steps=st.lists(st.tuples(st.integers(0, len(STEPS) - 1), st.integers(0, 50)), max_size=10),
    torn=st.booleans(),
)
def test_the_forward_pass_equals_the_two_passes_or_leaves_them_the_session(
    steps: list[tuple[int, int]], torn: bool
) -> None:
    maker = ClaudeMaker(CLAUDE)
    body = maker.header() + maker.turn(0)
    body += b"".join(STEPS[step](maker, k) for step, k in steps)
    if torn:
        body = body[:-1]  # the last line without its newline
    with _store("claude") as (path, _workspace):
        _append(path, body)
        assert _assert_same_read(path) == _straight(body)


def _session_with(*parts: str) -> tuple[ClaudeMaker, bytes]:
    maker = ClaudeMaker(CLAUDE)
    body = maker.header() + maker.turn(0) + maker.turn(1)
    for part in parts:
        body += maker.rewind(2, 5) if part == "rewind" else maker.turn(3)
    return maker, body


@pytest.mark.fork_checkpoint
def test_a_rewind_met_by_the_forward_pass_is_read_again_with_pass_1() -> None:
    """The export's first read takes the forward pass, meets the rewind, and reads the
    session again along its active branch: the handoff of a read without checkpoint, and
    a checkpoint the next append continues from."""
    maker, body = _session_with("rewind", "turn")
    with _store("claude") as (path, workspace):
        _append(path, body)
        checkpoint.READS.clear()
        handoff = _export_and_compare(path, workspace, "claude")
        assert checkpoint.READS["forward_left"] == 1 and checkpoint.READS["full"] == 1
        assert isinstance(handoff, dict)
        checkpoint.READS.clear()
        _append(path, maker.turn(2))
        _export_and_compare(path, workspace, "claude")
        assert checkpoint.READS["resumed"] == 1 and checkpoint.READS["full"] == 0


@pytest.mark.fork_checkpoint
def test_a_straight_session_is_read_in_one_pass_and_checkpointed() -> None:
    maker, body = _session_with("turn")
    with _store("claude") as (path, workspace):
        _append(path, body)
        checkpoint.READS.clear()
        _export_and_compare(path, workspace, "claude")
        assert checkpoint.READS["full"] == 1 and checkpoint.READS["forward_left"] == 0
        checkpoint.READS.clear()
        _append(path, maker.turn(2) + maker.compaction() + maker.turn(3))
        _export_and_compare(path, workspace, "claude")
        assert checkpoint.READS["resumed"] == 1


def _read_counts(path: Path, forward: bool) -> dict[str, int]:
    """How a checkpointed read of the session went (`_checkpoint.READS`)."""
    agent = get_agent("claude")
    checkpoint.READS.clear()
    with _env(DISABLE_ENV, None if forward else "1"):
        result = checkpoint.read_with_checkpoint(
            agent,
            agent.ref_for_path(path),
            SeenEvents(),
            workspace="/",
            max_messages=50,
            max_chars=100_000,
        )
    assert result is not None
    return dict(checkpoint.READS)


@pytest.mark.fork_checkpoint
def test_the_switch_turns_the_forward_pass_off() -> None:
    _maker, body = _session_with("rewind")
    with _store("claude") as (path, _workspace):
        _append(path, body)
        assert _read_counts(path, forward=True).get("forward_left") == 1
        checkpoint.checkpoint_path("claude", path).unlink(missing_ok=True)
        assert not _read_counts(path, forward=False).get("forward_left")


def _cli_handoff(path: Path, workspace: Path, out: Path, env: dict[str, str]) -> dict[str, Any]:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "export",
            "--from",
            "claude",
            "--session",
            str(path),
            "--out",
            str(out),
            "--no-store",
            "--quiet",
        ],
        cwd=workspace,
        env=env,
        check=True,
        capture_output=True,
    )
    data: dict[str, Any] = json.loads((out / "handoff.json").read_text())
    del data["id"], data["created_at"]
    return data


@pytest.mark.fork_checkpoint
@pytest.mark.parametrize("parts", [("turn",), ("rewind", "turn")], ids=["straight", "rewound"])
def test_export_on_one_core_gives_the_handoff_of_the_two_passes(
    parts: tuple[str, ...], tmp_path: Path
) -> None:
    """Through the CLI, on the one-core path macOS and Windows take: the forward pass's
    handoff is the two passes' (PASSDOWN_NO_FORWARD_PASS=1), with or without a rewind."""
    _maker, body = _session_with(*parts)
    with _store("claude") as (path, workspace):
        _append(path, body)
        env = {
            **os.environ,
            "PASSDOWN_NO_FORK": "1",
            "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
            "NO_COLOR": "1",
        }
        forward = _cli_handoff(path, workspace, tmp_path / "a", env)
        shutil.rmtree(tmp_path / "data", ignore_errors=True)
        two_passes = _cli_handoff(path, workspace, tmp_path / "b", {**env, DISABLE_ENV: "1"})
    assert forward == two_passes
    assert forward["task"]["original_request"]
    assert forward["state"]["plan"]


@pytest.mark.fork_checkpoint
def test_a_one_core_read_replays_the_plan_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader reads extraction's plan replay (`PlanReplay.share`): each plan call of
    the recorded session is replayed once, where a read without a checkpoint replays it
    twice (the reader's own copy, then extraction's), and the plans agree."""
    from passdown import transcript
    from passdown._extract import extract

    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "full", store, ignore=shutil.ignore_patterns("expected.json"))
    path = next((store / "projects").glob("*/*.jsonl"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(store))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    replayed = [0]
    apply = transcript.Plan.apply

    def counted(plan: transcript.Plan, *args: Any, **kwargs: Any) -> bool:
        replayed[0] += 1
        return apply(plan, *args, **kwargs)

    monkeypatch.setattr(transcript.Plan, "apply", counted)
    agent = get_agent("claude")
    ref = agent.ref_for_path(path)
    result = checkpoint.read_with_checkpoint(
        agent, ref, SeenEvents(), workspace="/", max_messages=50, max_chars=100_000
    )
    assert result is not None
    once, replayed[0] = replayed[0], 0
    full = extract(agent.read(ref).events(), workspace="/", max_messages=50, max_chars=100_000)
    assert once > 0 and replayed[0] == 2 * once
    assert result[1].state.plan == full.state.plan
    assert [item.subject for item in full.state.plan][:1] == [
        "Write calc.py with add() and its test"
    ]


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["create", "create-numbered", "create-two", "update", "replace"]),
            st.sampled_from(["1", "2", "3", None]),
        ),
        max_size=30,
    )
)
def test_a_shared_plan_replay_notes_a_reused_id_as_its_own_replay_does(
    ops: list[tuple[str, str | None]],
) -> None:
    """`PlanReplay.share`: the reader no longer replays the plan, but its saved state still
    says whether a created id was reused (`rekeyed`), as its own replay said."""
    from passdown.agents._claude_plan import PlanReplay
    from passdown.transcript import Plan, PlanItem, PlanOp

    own, shared, extraction = PlanReplay(), PlanReplay(), Plan()
    shared.share(extraction)
    for kind, key in ops:
        item = PlanItem(id="", subject=f"task {key}")
        created: str | None = None
        if kind == "create":
            op, created = PlanOp(op="create", items=(item,)), key
        elif kind == "create-numbered":
            op = PlanOp(op="create", items=(item,))
        elif kind == "create-two":
            op = PlanOp(op="create", items=(PlanItem(id=key or "", subject="a"), item))
        elif kind == "update":
            op = PlanOp(op="update", item_id=key, status="completed")
        else:
            op = PlanOp(op="replace", items=(PlanItem(id=key or "9", subject="r"),))
        own.apply(op, created)
        shared.apply(op, created)  # the reader, then extraction, as on one core
        extraction.apply(op, created)
        assert shared.rekeyed == own.rekeyed
    assert shared.items == own.items
