"""Issue 20: linear in the session, bounded in the handoff.

- the plan replay stays linear when task ids are reused thousands of times (the work is
  counted, never timed), and the handoff keeps the current plan's open items and counts
  the tasks of earlier plans;
- every list of the handoff respects its budget and counts what it leaves out, and the
  extractor itself keeps a bounded number of items of every kind;
- HANDOFF.md fits one document budget, and the current plan's open items and the last
  failure survive it;
- the budgets are CLI options and `[handoff]` keys of config.toml (CLI in a subprocess);
- an incremental export (through the checkpoint) gives the same bounded handoff as a
  full read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from passdown import _checkpoint as checkpoint
from passdown._budgets import fit_lists, load_limits, shorten_texts
from passdown._extract import (
    PENDING_KEEP,
    ExtractorState,
    extract,
    extractor_state,
    new_extractor,
    restore_extractor,
)
from passdown._render import render_markdown
from passdown._workspace import WorkspaceSnapshot
from passdown.agents import get_agent
from passdown.agents._claude_plan import PlanReplay
from passdown.errors import UsageError
from passdown.handoff import (
    FILES_KEEP,
    SUBAGENTS_KEEP,
    CommandRun,
    Failure,
    FileTouched,
    Handoff,
    Limits,
    PlanEntry,
    Source,
    State,
    Subagent,
    Task,
    TranscriptEntry,
)
from passdown.transcript import (
    PLAN_KEEP,
    Plan,
    PlanItem,
    PlanOp,
    SubagentNote,
    ToolCall,
    ToolResult,
)
from test_claude_messy import Session

WS = "/tmp/passdown-bounded/ws"


# -- the plan replay: linear whatever repeats ------------------------------------------
class CountingDict(dict[str, Any]):
    """A dict that counts the entries each operation touches: the replay's work."""

    touched = 0

    def _count(self, n: int) -> None:
        CountingDict.touched += n

    def __setitem__(self, key: str, value: Any) -> None:
        self._count(1)
        super().__setitem__(key, value)

    def __getitem__(self, key: str) -> Any:
        self._count(1)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._count(1)
        return super().__contains__(key)

    def __delitem__(self, key: str) -> None:
        self._count(1)
        super().__delitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._count(1)
        return super().get(key, default)

    def pop(self, key: str, *default: Any) -> Any:
        self._count(1)
        return super().pop(key, *default)

    def items(self) -> Any:
        self._count(len(self))
        return super().items()

    def values(self) -> Any:
        self._count(len(self))
        return super().values()

    def __iter__(self) -> Any:
        self._count(len(self))
        return super().__iter__()

    def update(self, *args: Any, **kwargs: Any) -> None:
        other = dict(*args, **kwargs)
        self._count(len(other))
        super().update(other)

    def clear(self) -> None:
        self._count(len(self))
        super().clear()


def _create(subject: str) -> PlanOp:
    return PlanOp(op="create", items=(PlanItem(id="", subject=subject),))


@pytest.mark.parametrize("rounds", [300, 3000])
def test_a_replay_of_reused_task_ids_touches_each_op_a_bounded_number_of_times(
    rounds: int,
) -> None:
    """A forked Claude session numbers its tasks from 1 again: ids 1..3 reused `rounds`
    times. Today's replay rebuilt the whole plan and searched a primed id per reuse
    (quadratic); the work per operation must not grow with the session."""
    replay = PlanReplay()
    replay.items = CountingDict()
    CountingDict.touched = 0
    ops = 0
    for n in range(rounds):
        for task in ("1", "2", "3"):
            replay.apply(_create(f"round {n} task {task}"), task)
            replay.apply(PlanOp(op="update", item_id=task, status="in_progress"), None)
            ops += 2
    replay.apply(PlanOp(op="update", item_id="1", status="completed"), None)
    assert CountingDict.touched <= 4 * ops  # O(1) per operation, not O(plan)
    assert [(i.id, i.subject, i.status) for i in replay.items.values()] == [
        ("1", f"round {rounds - 1} task 1", "completed"),
        ("2", f"round {rounds - 1} task 2", "in_progress"),
        ("3", f"round {rounds - 1} task 3", "in_progress"),
    ]
    assert replay.plan.set_aside == 3 * (rounds - 1)


def test_a_plan_of_many_distinct_tasks_stays_bounded_with_amortised_work() -> None:
    """20,000 distinct tasks, most completed: the replay keeps at most 2 * PLAN_KEEP
    items, cuts the oldest closed ones first, counts every one it cut, and its work stays
    linear (each cut is paid for by the creations before it)."""
    plan = Plan(items=CountingDict())
    CountingDict.touched = 0
    total = 20_000
    for n in range(1, total + 1):
        plan.apply(_create(f"task {n}"), str(n))
        if n % 40:  # every fortieth stays pending
            plan.apply(PlanOp(op="update", item_id=str(n), status="completed"))
    assert CountingDict.touched <= 20 * total
    assert len(plan.items) <= 2 * PLAN_KEEP
    assert len(plan.items) + plan.dropped == total
    pending = [i for i in plan.items.values() if i.status == "pending"]
    assert len(pending) == total // 40  # the open items were kept, closed ones cut first
    assert plan.items[str(total - 1)].status == "completed"  # the latest closed one is there


# -- the extractor keeps a bounded number of items of every kind -------------------------
def test_the_extractor_keeps_a_bounded_number_of_items_of_every_kind() -> None:
    extractor = new_extractor(workspace=WS, max_messages=24, max_chars=80_000)
    n = 6000
    for i in range(n):
        for event in (
            ToolCall(call_id=f"e{i}", name="Edit", action="edit", paths=(f"{WS}/f{i}.py",)),
            ToolResult(call_id=f"e{i}"),
            ToolCall(call_id=f"x{i}", name="Edit", action="edit", paths=(f"{WS}/g{i}.py",)),
            ToolResult(call_id=f"x{i}", is_error=True, error="old_string not found"),
            SubagentNote(agent_id=f"agent-{i}"),
            # a call whose result never comes
            ToolCall(call_id=f"lost{i}", name="Bash", action="command", command=f"sleep {i}"),
        ):
            extractor.feed(event)
    kept = extractor.state
    assert len(kept.files) == FILES_KEEP and kept.files_evicted == n - FILES_KEEP
    assert len(kept.subagents) == SUBAGENTS_KEEP and kept.subagents_total == n
    assert len(kept.pending) == PENDING_KEEP
    # the checkpoint holds the same bounded state and restores to it
    saved = msgspec.msgpack.encode(extractor_state(extractor))
    restored = restore_extractor(msgspec.msgpack.decode(saved, type=ExtractorState))
    assert restored.state == extractor.state
    state = extractor.finish().state
    assert state.omitted.files_touched == n - FILES_KEEP
    assert state.omitted.subagents == n - SUBAGENTS_KEEP
    assert state.omitted.failed_edits == n - len(state.failed_edits)
    assert state.commands_total == n  # the lost calls count as unanswered commands
    assert state.omitted.commands == n - len(state.commands)


# -- every list respects its budget ---------------------------------------------------
def _handoff(state: State, *, transcript: int = 0, warnings: int = 0) -> Handoff:
    entries = [
        TranscriptEntry(role="user" if i % 2 == 0 else "assistant", text=f"message {i} " * 200)
        for i in range(transcript)
    ]
    return Handoff(
        id="h-1",
        created_at="2026-12-01T00:00:00Z",
        source=Source(agent="claude", session_id="s-1", transcript_path="/s.jsonl"),
        task=Task(original_request="Do the work", transcript=entries, messages_total=transcript),
        state=state,
        workspace=WorkspaceSnapshot(path=WS),
        warnings=[f"warning {i}" for i in range(warnings)],
    )


def _big_state(n: int) -> State:
    statuses = ["completed", "completed", "pending", "in_progress", "blocked", "cancelled"]
    plan = [PlanEntry(id=str(i), subject=f"task {i}", status=statuses[i % 6]) for i in range(n)]  # type: ignore[arg-type]
    return State(
        plan=plan,
        files_touched=[FileTouched(path=f"f{i}.py", actions=["edit"]) for i in range(n)],
        workspace_changes=[FileTouched(path=f"w{i}", source="git") for i in range(n)],
        failed_edits=[Failure(tool="Edit", path=f"e{i}.py", error="not found") for i in range(n)],
        commands=[CommandRun(command=f"cmd {i}", exit_code=0, ok=True) for i in range(n)],
        commands_total=n,
        last_failure=Failure(tool="Bash", command="pytest -x", exit_code=1, error="E  boom"),
        subagents=[Subagent(id=f"agent-{i}") for i in range(n)],
        decisions=[f"decision {i}" for i in range(n)],
        blockers=[f"blocker {i}" for i in range(n)]
        + ["last command failed (exit 1): pytest -x — E  boom"],
        open_questions=[f"question {i}?" for i in range(n)],
        next_steps=[f"step {i}" for i in range(n)],
    )


def test_every_list_keeps_its_budget_and_counts_the_rest() -> None:
    n = 300
    h = _handoff(_big_state(n), warnings=n)
    h.state.omitted.plan_set_aside = 7  # counted by the extraction: stays as it is
    limits = Limits(
        max_plan_items=60,
        max_files=5,
        max_commands=4,
        max_failures=3,
        max_subagents=2,
        max_notes=6,
        max_warnings=1,
    )
    s, omitted = fit_lists(h, limits).state, h.state.omitted
    # the plan: its 150 open items (in progress, blocked, pending) do not fit in 60: in
    # progress and blocked first (50 each), then the first pending ones; no closed one
    statuses = [p.status for p in s.plan]
    assert (statuses.count("in_progress"), statuses.count("blocked")) == (50, 10)
    assert len(s.plan) == 60 and omitted.plan == n - 60
    assert {p.status for p in s.plan} <= {"in_progress", "blocked", "pending"}
    assert [int(p.id) for p in s.plan] == sorted(int(p.id) for p in s.plan)  # plan order
    assert omitted.plan_set_aside == 7
    assert [f.path for f in s.files_touched] == [f"f{i}.py" for i in range(n - 5, n)]
    assert omitted.files_touched == n - 5
    assert [f.path for f in s.workspace_changes] == [f"w{i}" for i in range(5)]
    assert omitted.workspace_changes == n - 5
    assert [c.command for c in s.commands] == [f"cmd {i}" for i in range(n - 4, n)]
    assert omitted.commands == n - 4
    assert [f.path for f in s.failed_edits] == [f"e{i}.py" for i in range(n - 3, n)]
    assert omitted.failed_edits == n - 3
    assert [a.id for a in s.subagents] == [f"agent-{n - 2}", f"agent-{n - 1}"]
    assert omitted.subagents == n - 2
    assert s.decisions == [f"decision {i}" for i in range(n - 6, n)]
    assert s.next_steps == [f"step {i}" for i in range(6)] and omitted.next_steps == n - 6
    assert s.open_questions == [f"question {i}?" for i in range(6)]
    # the open failure's blocker line survives the blockers' budget
    assert s.blockers[-1].startswith("last command failed") and len(s.blockers) == 6
    assert omitted.blockers == n + 1 - 6 and omitted.decisions == n - 6
    assert h.warnings == ["warning 0"] and omitted.warnings == n - 1
    assert h.limits == limits
    # handoff.json carries where the counts live
    data = json.loads(h.to_json())
    assert data["state"]["omitted"]["commands"] == n - 4
    assert data["limits"]["max_commands"] == 4


def test_the_plan_keeps_open_items_then_the_latest_completed() -> None:
    plan = [PlanEntry(id=str(i), subject=f"done {i}", status="completed") for i in range(50)]
    plan.insert(10, PlanEntry(id="open", subject="still open", status="pending"))
    h = fit_lists(_handoff(State(plan=plan)), Limits(max_plan_items=4))
    assert [p.id for p in h.state.plan] == ["open", "47", "48", "49"]
    assert h.state.omitted.plan == 47


def test_long_texts_are_shortened_and_marked() -> None:
    state = State(commands=[CommandRun(command="x" * 50_000)], commands_total=1)
    h = shorten_texts(_handoff(state))
    command = h.state.commands[0].command
    assert len(command) < 1_100 and "characters cut" in command


# -- one document budget for HANDOFF.md --------------------------------------------------
def test_handoff_md_fits_its_budget_and_keeps_open_items_and_the_last_failure() -> None:
    h = fit_lists(
        _handoff(_big_state(400), transcript=24, warnings=50),
        Limits(
            max_plan_items=30,
            max_files=400,
            max_commands=100,
            max_failures=100,
            max_notes=50,
            max_subagents=200,
            max_doc_chars=12_000,
        ),
    )
    h.task.compaction_summary = "summary " * 2000
    text = render_markdown(h)
    assert len(text) <= 12_000
    open_items = [p for p in h.state.plan if p.status != "completed" and p.status != "cancelled"]
    assert open_items and all(f" {p.subject} ({p.status})" in text for p in open_items)
    assert "**Last failure:** `pytest -x` exited 1: E boom" in text
    assert "cut here to fit HANDOFF.md's size budget" in text
    assert text.startswith("# Handoff\n") and "## Takeover contract" in text
    # lower-priority sections went first: the transcript is cut before the plan is
    assert "### user" not in text


def test_a_handoff_under_its_budget_is_rendered_whole() -> None:
    h = fit_lists(_handoff(_big_state(6), transcript=4), Limits())
    text = render_markdown(h)
    assert "cut here" not in text
    assert text.count("### user") == 2 and "- [~] task 3 (in_progress)" in text


# -- the budgets from the CLI and from config.toml ---------------------------------------
def _session_with_reused_ids(config_dir: Path, rounds: int) -> Path:
    """A Claude session whose tasks 1..3 are created again each round (a forked
    session's numbering), with a failing test run each round; the last round leaves
    task 1 completed, 2 in progress, 3 pending."""
    s = Session(cwd=WS)
    s.user("Build the feature; track it as tasks.")
    for n in range(rounds):
        for task in (1, 2, 3):
            s.task_create(task, f"round {n} task {task}")
        s.task_update(1, "completed")
        s.task_update(2, "in_progress")
        s.tool(
            "Bash",
            {"command": "python -m pytest tests/test_feature.py"},
            "E   assert 1 == 2\nFAILED tests/test_feature.py::test_it",
            is_error=True,
        )
        s.assistant(f"Round {n}: tests still fail.")
    return s.write(config_dir)


def _export(
    path: Path, out: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    ws = Path(WS)
    ws.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [
            *(sys.executable, "-m", "passdown", "export", "--session", str(path)),
            *("--workspace", str(ws), "--out", str(out), "--no-store", "-q", *options),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )


@pytest.fixture
def claude_dir(isolated_homes: Path) -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])


def test_export_of_reused_task_ids_keeps_the_current_plan_and_stays_bounded(
    claude_dir: Path, tmp_path: Path
) -> None:
    rounds = 1500
    path = _session_with_reused_ids(claude_dir, rounds)
    done = _export(path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "out" / "handoff.json").read_text())
    state = data["state"]
    last = rounds - 1
    assert [(p["id"], p["subject"], p["status"]) for p in state["plan"]] == [
        ("1", f"round {last} task 1", "completed"),
        ("2", f"round {last} task 2", "in_progress"),
        ("3", f"round {last} task 3", "pending"),
    ]
    assert state["omitted"]["plan_set_aside"] == 3 * (rounds - 1)
    assert state["commands_total"] == rounds and len(state["commands"]) == 20
    assert state["omitted"]["commands"] == rounds - 20
    assert state["last_failure"]["command"] == "python -m pytest tests/test_feature.py"
    markdown = (tmp_path / "out" / "HANDOFF.md").read_text()
    assert len(markdown) <= Limits().max_doc_chars and markdown.count("\n") < 400
    assert f"- [~] round {last} task 2 (in_progress)" in markdown
    assert f"- [ ] round {last} task 3 (pending)" in markdown
    assert "**Last failure:** `python -m pytest tests/test_feature.py`" in markdown
    assert f"({3 * (rounds - 1)} task(s) of an earlier plan set aside" in markdown
    assert (tmp_path / "out" / "handoff.json").stat().st_size < 200_000


def test_budget_options_and_config_keys_take_effect(claude_dir: Path, tmp_path: Path) -> None:
    path = _session_with_reused_ids(claude_dir, 40)
    data_dir = Path(os.environ["PASSDOWN_DATA_DIR"])
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(
        "[handoff]\nmax_plan_items = 2\nmax_commands = 3\nmax_doc_chars = 20000\n"
    )
    done = _export(path, tmp_path / "a")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "a" / "handoff.json").read_text())
    # config: two plan items (the open ones), three commands
    assert [p["status"] for p in data["state"]["plan"]] == ["in_progress", "pending"]
    assert data["state"]["omitted"]["plan"] == 1
    assert len(data["state"]["commands"]) == 3 and data["state"]["omitted"]["commands"] == 37
    assert data["limits"]["max_doc_chars"] == 20_000
    # an option wins over the config key; the others still come from the config
    done = _export(path, tmp_path / "b", "--max-commands", "5", "--max-doc-chars", "15000")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "b" / "handoff.json").read_text())
    assert len(data["state"]["commands"]) == 5 and len(data["state"]["plan"]) == 2
    assert len((tmp_path / "b" / "HANDOFF.md").read_text()) <= 15_000
    # a budget out of range, from an option or from the config, is a usage error (exit 2)
    done = _export(path, tmp_path / "c", "--max-plan-items", "100000")
    assert done.returncode == 2 and "max_plan_items" in done.stderr
    assert not (tmp_path / "c").exists()
    (data_dir / "config.toml").write_text("[handoff]\nmax_plans = 2\n")
    done = _export(path, tmp_path / "d")
    assert done.returncode == 2 and "max_plans" in done.stderr


def test_load_limits_layers_options_over_config_over_defaults(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[store]\nurl = "sqlite:///x.db"\n[handoff]\nmax_notes = 3\nmax_files = 9\n')
    limits = load_limits({"max_files": 4, "max_commands": None}, config=config)
    assert (limits.max_notes, limits.max_files, limits.max_commands) == (3, 4, 20)
    config.write_text("[handoff]\nmax_notes = 'three'\n")
    with pytest.raises(UsageError, match="max_notes must be a whole number"):
        load_limits(config=config)


# -- incremental export: the same bounded handoff ----------------------------------------
def _comparable(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / "handoff.json").read_text())
    for key in ("id", "created_at"):
        data.pop(key)
    return data


def test_incremental_export_gives_the_same_bounded_handoff_as_a_full_read(
    claude_dir: Path, tmp_path: Path
) -> None:
    path = _session_with_reused_ids(claude_dir, 200)
    first = _export(path, tmp_path / "first", "--max-plan-items", "2")
    assert first.returncode == 0, first.stderr
    checkpoints = Path(os.environ["PASSDOWN_DATA_DIR"]) / "checkpoints"
    # the session goes on: more rounds appended (a new session object continues the chain)
    more = Session(cwd=WS)
    more.records = [json.loads(line) for line in path.read_text().splitlines()]
    more.parent = more.records[-1]["uuid"]
    more.calls = 10_000
    for n in range(200, 260):
        for task in (1, 2, 3):
            more.task_create(task, f"round {n} task {task}")
        more.task_update(3, "in_progress")
    path.write_text("".join(json.dumps(r) + "\n" for r in more.records))
    resumed = _export(path, tmp_path / "resumed", "--max-plan-items", "2")
    (saved,) = checkpoints.rglob("*.msgpack")
    saved_state = msgspec.msgpack.decode(saved.read_bytes(), type=checkpoint.Checkpoint)
    assert saved_state.resumed_from > 0  # the second export did resume from the checkpoint
    full = _export(
        path, tmp_path / "full", "--max-plan-items", "2", env={"PASSDOWN_NO_CHECKPOINT": "1"}
    )
    assert resumed.returncode == 0 and full.returncode == 0, resumed.stderr + full.stderr
    data = _comparable(tmp_path / "resumed")
    assert data == _comparable(tmp_path / "full")
    # in progress first, then the first pending one
    assert [p["subject"] for p in data["state"]["plan"]] == ["round 259 task 1", "round 259 task 3"]
    assert data["state"]["omitted"]["plan_set_aside"] == 3 * 259
    assert data["state"]["omitted"]["plan"] == 1


def test_the_cli_budget_options_name_every_limit_with_its_default() -> None:
    """The CLI keeps its own table (it imports only click until a command runs): it must
    name every budget of the model, with the model's default."""
    from passdown.cli._handoff_cmds import LIMIT_OPTIONS

    table = {field: default for field, default, _help in LIMIT_OPTIONS.values()}
    assert table == {name: info.default for name, info in Limits.model_fields.items()}
    assert all(
        option == "--" + field.replace("_", "-") for option, (field, _, _) in LIMIT_OPTIONS.items()
    )


def test_task_files_filling_gaps_keep_the_count_of_earlier_plan_tasks(claude_dir: Path) -> None:
    """The reader's replay emits the plan again when Claude's task files fill a gap: the
    replacement carries the count of tasks set aside, so it is not lost."""
    from test_claude_messy import _task_files

    s = Session(session_id="bbbbbbbb-0000-4000-8000-000000000077", cwd=WS)
    s.user("Write a.txt, then b.txt")
    for round_ in range(5):
        s.task_create(1, f"Write a.txt ({round_})")
    s.task_create(2, "Write b.txt")
    _task_files(
        claude_dir,
        s.session_id,
        [{"id": "2", "subject": "Write b.txt", "description": "from the task file"}],
    )
    agent = get_agent("claude")
    path = s.write(claude_dir)
    state = extract(agent.read(agent.ref_for_path(path)).events(), workspace=WS).state
    assert [(p.id, p.subject, p.description) for p in state.plan] == [
        ("1", "Write a.txt (4)", None),
        ("2", "Write b.txt", "from the task file"),
    ]
    assert state.omitted.plan_set_aside == 4


def test_the_document_budget_counts_escaped_control_characters() -> None:
    """A control character is written escaped (four characters for one): the budget
    holds for the text as written."""
    h = fit_lists(_handoff(_big_state(20)), Limits(max_doc_chars=10_000))
    h.task.transcript = [TranscriptEntry(role="user", text="\x01" * 1500) for _ in range(4)]
    text = render_markdown(h)
    assert len(text) <= 10_000 and "\x01" not in text
    assert "cut here to fit HANDOFF.md's size budget" in text
