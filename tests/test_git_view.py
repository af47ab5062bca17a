"""One look at a workspace's git state per export (`passdown._git.one_view`): a question
asked twice is asked of git once, a folder git put outside any repository is not asked
about again, and any other git command starts the view afresh."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from passdown import _git
from passdown._git import one_view, run_git, workspace_root
from passdown._workspace import (
    ask_ahead_for_snapshot,
    dirty_paths,
    files_changed_since,
    git_head,
    snapshot,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The argv of every git command passdown ran (through `run_git`)."""
    calls: list[tuple[str, ...]] = []
    real = _git._run

    def counting(path: Path, args: tuple[str, ...], *rest: object) -> _git.GitResult:
        calls.append(args)
        return real(path, args, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_git, "_run", counting)
    return calls


def _repo(path: Path) -> Path:
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(path), *args], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "one"], check=True)
    return path


def test_a_question_asked_twice_is_asked_of_git_once(
    tmp_path: Path, asked: list[tuple[str, ...]]
) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    with one_view():
        first = (workspace_root(repo), dirty_paths(repo))
        again = (workspace_root(repo), dirty_paths(repo), files_changed_since(repo, None))
    assert first == again[:2] == (repo.resolve(), ["a.txt", "new.txt"])
    assert again[2] == ["a.txt", "new.txt"]
    assert asked.count(("rev-parse", "--show-toplevel")) == 1
    assert sum(1 for a in asked if a[0] == "status") == 1  # dirty_paths' and files_changed_since's


def test_outside_a_view_every_question_goes_to_git(
    tmp_path: Path, asked: list[tuple[str, ...]]
) -> None:
    repo = _repo(tmp_path / "repo")
    workspace_root(repo)
    (repo / "b.txt").write_text("b\n")
    assert dirty_paths(repo) == ["b.txt"]
    (repo / "c.txt").write_text("c\n")
    assert dirty_paths(repo) == ["b.txt", "c.txt"]  # asked again: the new file is seen
    assert sum(1 for a in asked if a[0] == "status") == 2


def test_a_folder_outside_any_repository_is_asked_about_once(
    tmp_path: Path, asked: list[tuple[str, ...]]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with one_view():
        assert workspace_root(plain) == plain.resolve()
        snap = snapshot(plain)
        assert files_changed_since(plain, "2026-01-01T00:00:00Z") == []
        assert dirty_paths(plain) == []
        failed = run_git(plain, "log", "-1")
    assert not snap.is_git and snap.errors == []  # outside git, as when git is asked
    assert not failed.ok and failed.error.startswith("git log: fatal: not a git repository")
    assert asked == [("rev-parse", "--show-toplevel")]


def test_a_command_that_is_no_question_starts_the_view_afresh(
    tmp_path: Path, asked: list[tuple[str, ...]]
) -> None:
    repo = _repo(tmp_path / "repo")
    with one_view():
        assert dirty_paths(repo) == []
        (repo / "a.txt").write_text("changed\n")
        assert dirty_paths(repo) == []  # the view's answer
        run_git(repo, "add", "a.txt")  # not a question: what was seen may be stale now
        assert dirty_paths(repo) == ["a.txt"]
    assert sum(1 for a in asked if a[0] == "status") == 2


def test_a_question_asked_ahead_is_answered_by_the_git_already_running(
    tmp_path: Path, asked: list[tuple[str, ...]]
) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "new.txt").write_text("new\n")
    outside = snapshot(repo)
    asked.clear()
    with one_view():
        ask_ahead_for_snapshot(repo)
        running = dict(_view().running)
        assert len(running) == 3
        snap, changed = snapshot(repo), files_changed_since(repo, None)
        assert _view().running == {}  # every one collected
    assert asked == []  # nothing run when asked: each answer came from the git started ahead
    assert snap.model_dump() == outside.model_dump()
    assert changed == ["new.txt"]
    assert all(p.returncode == 0 for p in running.values())  # type: ignore[union-attr]


def test_a_command_that_is_no_question_stops_the_questions_asked_ahead(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    with one_view():
        ask_ahead_for_snapshot(repo)
        running = list(_view().running.values())
        assert run_git(repo, "tag", "v1").ok
        assert _view().running == {}
    assert all(p.returncode is not None for p in running)  # type: ignore[union-attr]


def test_questions_asked_ahead_and_never_asked_end_with_the_view(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    with one_view():
        ask_ahead_for_snapshot(repo)
        running = list(_view().running.values())
    assert len(running) == 3 and all(p.returncode is not None for p in running)  # type: ignore[union-attr]


def test_nothing_is_asked_ahead_outside_a_view_or_of_a_folder_outside_git(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    ask_ahead_for_snapshot(_repo(tmp_path / "repo"))  # no view: nothing to hold the answers
    with one_view():
        workspace_root(plain)  # git says: no repository
        ask_ahead_for_snapshot(plain)
        assert _view().running == {}


def _view() -> _git._View:
    view = _git._VIEW.get()
    assert view is not None
    return view


@pytest.mark.parametrize("state", ["on a branch", "detached", "no commit yet"])
def test_head_after_a_snapshot_is_read_from_its_status(
    tmp_path: Path, asked: list[tuple[str, ...]], state: str
) -> None:
    if state == "no commit yet":
        repo = tmp_path / "repo"
        repo.mkdir()
        subprocess.run(["git", "-C", str(repo), "init", "-q", "-b", "trunk"], check=True)
    else:
        repo = _repo(tmp_path / "repo")
    if state == "detached":
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach"], check=True)
    asked_of_git = git_head(repo)  # outside a view: rev-parse and symbolic-ref
    asked.clear()
    with one_view():
        snap = snapshot(repo)
        from_status = git_head(repo)
    assert from_status == asked_of_git == (snap.head, snap.branch)
    head, branch = from_status
    assert (head is None) == (state == "no commit yet")
    assert (branch is None) == (state == "detached")
    assert [a[0] for a in asked if a[0] in ("rev-parse", "symbolic-ref")] == []


def test_an_export_outside_git_runs_git_once(tmp_path: Path) -> None:
    """The whole export, through the CLI: every git process it starts is counted by a
    `git` first on PATH that logs its arguments and runs the real one."""
    from recorded import REC_ROOT, lay_out_recorded

    fixture = REPO / "tests" / "fixtures" / "sessions" / "claude" / "full"
    store = tmp_path / "store"
    layout = lay_out_recorded(fixture, store, tmp_path / "workspaces")
    ws = layout.workspace(f"{REC_ROOT}/claude-full")
    session = next((store / "projects").glob("*/*.jsonl"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    real_git = shutil.which("git")
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real_git} "$@"\n')
    wrapper.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO / "src"),
        "CLAUDE_CONFIG_DIR": str(store),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path),
        "GIT_CEILING_DIRECTORIES": str(tmp_path),  # tmp_path's parents hold no repository
    }
    out = tmp_path / "out"
    argv = ["export", "--from", "claude", "--session", str(session), "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *argv, "--no-store", "--quiet"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Add a Usage section" in (out / "HANDOFF.md").read_text()
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and lines[0].endswith("rev-parse --show-toplevel"), lines


def test_an_export_in_a_repository_waits_for_git_only_on_its_first_question(
    tmp_path: Path, asked: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every question but the workspace's root is asked ahead, while the agents load and
    the session is read: the remotes, the exclude file, the snapshot's status and the
    commits since the session began."""
    from passdown.cli import main
    from recorded import REC_ROOT, lay_out_recorded

    fixture = REPO / "tests" / "fixtures" / "sessions" / "claude" / "full"
    store = tmp_path / "store"
    layout = lay_out_recorded(fixture, store, tmp_path / "workspaces")
    ws = layout.workspace(f"{REC_ROOT}/claude-full")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start", "--allow-empty"]):
        subprocess.run(
            ["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True
        )
    started: list[tuple[str, ...]] = []
    real_start = _git.start

    def counting_start(path: Path, args: tuple[str, ...]) -> object:
        started.append(args)
        return real_start(path, args)

    monkeypatch.setattr(_git, "start", counting_start)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(store))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(ws)
    session = next((store / "projects").glob("*/*.jsonl"))
    assert main(["export", "--from", "claude", "--session", str(session), "--quiet"]) == 0
    assert "Add a Usage section" in (ws / ".agent-handoff" / "HANDOFF.md").read_text()
    assert asked == [("rev-parse", "--show-toplevel")]
    assert {args[0] for args in started} >= {"status", "config", "rev-parse", "log"}
    assert len(started) == len(set(started))  # each asked once
