"""The four handoff types: session, agent, parallel, recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from passdown import HandoffCoordinator
from passdown.coordinator import HandoffNotFound
from passdown.errors import UsageError
from test_coordinator_fixtures import commit_all, git, launches

STEPS = [
    "Implement logout",
    "Add expiry tests",
    "Write reset email",
    "Rate-limit login",
    "Update docs",
]

pytest_plugins = ["test_coordinator_fixtures"]


def test_session_handoff_relaunches_the_same_agent(project: Path, fake_agents: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "context limit reached", "session")
    assert package.target_agent == "claude"  # same agent, new session
    result = coordinator.execute_handoff_sync(package)
    assert result.launched and [s["program"] for s in launches(fake_agents)] == ["claude"]
    argv = launches(fake_agents)[0]["argv"]
    assert argv[:3] == ["-p", "--permission-mode", "acceptEdits"]  # type: ignore[index]


def test_agent_handoff_needs_and_launches_a_different_target(
    project: Path, fake_agents: Path
) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "needs a reviewer", "agent")
    with pytest.raises(UsageError):
        coordinator.execute_handoff_sync(package)
    result = coordinator.execute_handoff_sync(package, "codex")
    assert result.package.target_agent == "codex" and result.package.handoff is not None
    assert result.package.handoff.target_agent == "codex"
    assert [s["program"] for s in launches(fake_agents)] == ["codex"]


def test_parallel_split_with_worktrees(project: Path, fake_agents: Path) -> None:
    coordinator = HandoffCoordinator(project)
    parent = coordinator.prepare_handoff_sync(
        "coding-agent",
        "split the auth work",
        "parallel",
        next_steps=STEPS,
        targets=["codex", "claude"],
        worktrees=True,
    )
    assert [c.assignment for c in parent.children] == [STEPS[0::2], STEPS[1::2]]
    result = coordinator.execute_handoff_sync(parent)
    assert result.status == "published" and len(result.children) == 2
    started = sorted(launches(fake_agents), key=lambda s: str(s["program"]))
    assert [s["program"] for s in started] == ["claude", "codex"]
    for child_result, ref in zip(result.children, parent.children, strict=True):
        child = child_result.package
        assert child.parent_id == parent.id and child.status == "published"
        assert child.state.next_steps == ref.assignment
        assert ref.worktree and Path(ref.worktree).is_dir()
        assert git(Path(ref.worktree), "symbolic-ref", "--short", "HEAD") == ref.branch
        launched = next(s for s in started if s["handoff"] == child.id)
        assert launched["cwd"] == ref.worktree
        markdown = (Path(ref.worktree) / ".agent-handoff" / "HANDOFF.md").read_text()
        assert "Other owners, do not work on their steps" in markdown
        assert all(step in markdown for step in ref.assignment)
    # disjoint, and nothing lost
    owned = [s for c in parent.children for s in c.assignment]
    assert sorted(owned) == sorted(STEPS) and len(set(owned)) == len(owned)
    # the parent is the active handoff and lists its children; children are stored too
    loaded = coordinator.load_handoff()
    assert loaded.id == parent.id and [c.id for c in loaded.children] == [
        c.package.id for c in result.children
    ]
    assert coordinator.load_handoff(parent.children[0].id).owners == parent.children
    # executing again starts nobody twice
    coordinator.execute_handoff_sync(parent)
    assert len(launches(fake_agents)) == 2


def test_parallel_without_worktrees_writes_each_child_apart(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    parent = coordinator.prepare_handoff_sync(
        "coding-agent",
        "split",
        "parallel",
        next_steps=STEPS[:2],
        targets=["bot-a", "bot-b", "bot-c"],
    )
    assert len(parent.children) == 2  # the third target had nothing to do
    result = coordinator.execute_handoff_sync(parent)
    for child in result.children:
        assert child.written is not None
        assert child.written.folder == project / ".agent-handoff" / "parallel" / child.package.id
        assert not child.launched


def test_parallel_needs_targets_and_steps(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    with pytest.raises(UsageError):
        coordinator.prepare_handoff_sync("coding-agent", "x", "parallel", next_steps=STEPS)
    with pytest.raises(UsageError):
        coordinator.prepare_handoff_sync(
            "coding-agent", "x", "parallel", next_steps=[], targets=["a"]
        )


def test_recovery_picks_the_newest_handoff_on_this_history(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    good = coordinator.prepare_handoff_sync(
        "coding-agent", "good state", next_steps=["Implement logout"]
    )
    coordinator.execute_handoff_sync(good, "coding-agent")
    base = git(project, "rev-parse", "HEAD")

    (project / "experiment.txt").write_text("doomed\n")
    commit_all(project, "experiment")
    doomed = coordinator.prepare_handoff_sync(
        "coding-agent", "doomed state", next_steps=["Keep experimenting"]
    )
    coordinator.execute_handoff_sync(doomed, "coding-agent")

    git(project, "reset", "-q", "--hard", base)  # the experiment is abandoned
    (project / "fix.txt").write_text("fixed\n")
    commit_all(project, "fix after the crash")

    recovery = coordinator.prepare_handoff_sync("coding-agent", handoff_type="recovery")
    assert recovery.recovery is not None and recovery.recovery.from_id == good.id
    assert [c.split(" ", 1)[1] for c in recovery.recovery.commits_since] == ["fix after the crash"]
    assert recovery.recovery.files_changed == ["fix.txt"]
    assert recovery.state.next_steps == ["Implement logout"]
    assert recovery.provenance["state.next_steps"] == f"recovered:{good.id}"
    assert recovery.summary.startswith(
        f"Recovery from {good.id}: 1 commit(s) and 1 changed file(s)"
    )
    assert recovery.previous_id == doomed.id
    result = coordinator.execute_handoff_sync(recovery, "coding-agent")
    assert result.status == "published"
    assert coordinator.status(doomed.id).status == "superseded"  # type: ignore[union-attr]


def test_recovery_without_any_handoff(project: Path) -> None:
    with pytest.raises(HandoffNotFound):
        HandoffCoordinator(project).prepare_handoff_sync("coding-agent", handoff_type="recovery")
