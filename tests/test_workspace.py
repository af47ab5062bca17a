"""Workspace snapshots of real temporary git repos (local only: the "upstream" is a bare
repo in the temp folder)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from passdown import _workspace as workspace
from passdown._workspace import files_changed_since, git_env, snapshot, workspace_root


@pytest.fixture(autouse=True)
def clean_git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ignore the machine's git config; give commits a fixed identity."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.invalid")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return proc.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit_file(repo: Path, name: str, text: str, message: str | None = None) -> str:
    target = repo / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    git(repo, "add", "--", name)
    git(repo, "commit", "-q", "-m", message or f"add {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "repo")
    commit_file(r, "README.md", "hello\n", "Initial commit")
    return r


def by_path(snap: workspace.WorkspaceSnapshot) -> dict[str, workspace.DirtyPath]:
    return {d.path: d for d in snap.dirty}


# -- outside git ------------------------------------------------------------------------


def test_not_a_repo(tmp_path: Path) -> None:
    snap = snapshot(tmp_path)
    assert snap.is_git is False
    assert snap.path == str(tmp_path.resolve())
    assert snap.errors == []
    assert snap.head is None and snap.branch is None and snap.dirty == []


def test_workspace_root_outside_git_is_cwd(tmp_path: Path) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert workspace_root(sub) == sub.resolve()
    assert workspace_root(sub).is_absolute()


def test_missing_folder_is_an_error_not_an_exception(tmp_path: Path) -> None:
    snap = snapshot(tmp_path / "gone")
    assert snap.is_git is False
    assert snap.errors == [f"workspace folder not found: {(tmp_path / 'gone').resolve()}"]


def test_git_not_installed(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    snap = snapshot(repo)
    assert snap.is_git is False
    assert snap.errors == ["git is not installed"]
    assert workspace_root(repo / ".") == repo.resolve()
    assert files_changed_since(repo, "2000-01-01T00:00:00Z") == []


def test_broken_repo_gives_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nonexistent/elsewhere\n")
    snap = snapshot(broken)
    assert snap.errors and snap.errors[0].startswith("git status:")
    assert snap.head is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_repo_of_another_user_is_an_error(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "theirs")
    for p in (r, *r.rglob("*")):
        os.lchown(p, 65534, 65534)
    snap = snapshot(r)
    assert snap.is_git is True
    assert "dubious ownership" in snap.errors[0]


def test_timeout_is_reported(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(*args: object, **kwargs: object) -> None:
        raise subprocess.TimeoutExpired(cmd="git", timeout=10)

    monkeypatch.setattr(subprocess, "run", slow)
    snap = snapshot(repo)
    assert snap.errors == ["git status timed out after 10 s"]


def test_a_git_started_ahead_that_does_not_answer_in_time_is_stopped(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown import _git

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    started = _git.start(repo, ("status",))
    assert not isinstance(started, _git.GitResult)
    result = _git.collect("status", started, timeout=0.2)
    assert result == _git.GitResult(False, error="git status timed out after 0.2 s")
    assert started.returncode is not None  # stopped and reaped, not left running


# -- HEAD and branch ------------------------------------------------------------------


def test_clean_repo(repo: Path) -> None:
    snap = snapshot(repo)
    assert snap.is_git is True
    assert snap.branch == "main"
    assert snap.head == git(repo, "rev-parse", "HEAD")
    assert len(snap.head) == 40
    assert snap.head_subject == "Initial commit"
    assert snap.upstream is None and snap.ahead is None and snap.behind is None
    assert snap.dirty == [] and snap.dirty_total == 0
    assert snap.diff_stat == "" and snap.diff_files == []
    assert snap.stash_count == 0
    assert snap.errors == []


def test_repo_without_commits(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh")
    (r / "new.txt").write_text("x\n")
    snap = snapshot(r)
    assert snap.is_git is True
    assert snap.branch == "main"
    assert snap.head is None and snap.head_subject is None
    assert [(d.status, d.path) for d in snap.dirty] == [("??", "new.txt")]
    assert snap.errors == []


def test_detached_head(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    commit_file(repo, "b.txt", "b\n")
    git(repo, "checkout", "-q", "--detach", first)
    snap = snapshot(repo)
    assert snap.branch is None
    assert snap.head == first
    assert snap.head_subject == "Initial commit"
    assert snap.errors == []


def test_workspace_root_from_subfolder_and_symlink(repo: Path, tmp_path: Path) -> None:
    sub = repo / "pkg" / "deep"
    sub.mkdir(parents=True)
    assert workspace_root(sub) == repo.resolve()
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert workspace_root(link / "pkg") == repo.resolve()


def test_ignores_git_dir_from_environment(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = init_repo(tmp_path / "other")
    commit_file(other, "o.txt", "o\n", "Other repo")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as inside a git hook
    snap = snapshot(repo)
    assert snap.head_subject == "Initial commit"


# -- dirty files and diff ---------------------------------------------------------------


def test_dirty_paths_renames_spaces_unicode(repo: Path) -> None:
    commit_file(repo, "old name.txt", "same\n" * 20)
    commit_file(repo, "gone.txt", "bye\n")
    git(repo, "mv", "old name.txt", "névé 文件.txt")
    (repo / "README.md").write_text("hello\nmore\n")
    (repo / "gone.txt").unlink()
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    (repo / "untracked ü.txt").write_text("u\n")
    (repo / "new\nline.txt").write_text("n\n")
    snap = snapshot(repo)
    dirty = by_path(snap)
    assert dirty["névé 文件.txt"].status == "R "
    assert dirty["névé 文件.txt"].orig_path == "old name.txt"
    assert dirty["README.md"].status == " M"
    assert dirty["gone.txt"].status == " D"
    assert dirty["staged.txt"].status == "A "
    assert dirty["untracked ü.txt"].status == "??"
    assert dirty["new\nline.txt"].status == "??"
    assert snap.dirty_total == len(snap.dirty) == 6
    assert snap.errors == []


def test_pathspec_magic_in_names_is_literal(repo: Path) -> None:
    # as pathspec magic, ":(glob)x.txt" would mean "x.txt" and miss this file
    name = ":(glob)x.txt"
    (repo / name).write_text("one\n")
    git(repo, "--literal-pathspecs", "add", "--", name)
    git(repo, "commit", "-q", "-m", "odd name")
    (repo / name).write_text("two\n")
    snap = snapshot(repo)
    assert [d.path for d in snap.dirty] == [name]
    assert [f.path for f in snap.diff_files] == [name]


def test_untracked_folder_is_one_entry(repo: Path) -> None:
    (repo / "build" / "x").mkdir(parents=True)
    (repo / "build" / "x" / "a.o").write_text("a")
    assert [(d.status, d.path) for d in snapshot(repo).dirty] == [("??", "build/")]


def test_handoff_folder_is_not_dirty(repo: Path) -> None:
    (repo / ".agent-handoff").mkdir()
    (repo / ".agent-handoff" / "HANDOFF.md").write_text("x")
    (repo / ".agent-handoff-not-ours.txt").write_text("y")
    assert [d.path for d in snapshot(repo).dirty] == [".agent-handoff-not-ours.txt"]


def test_non_utf8_file_name(repo: Path) -> None:
    os.close(os.open(os.fsencode(repo) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    snap = snapshot(repo)
    assert [d.path for d in snap.dirty] == ["caf\ufffd.txt"]
    snap.model_dump_json()  # serialisable


def test_merge_conflict_is_unmerged(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    commit_file(repo, "README.md", "side\n")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "README.md", "main\n")
    result = subprocess.run(
        ["git", "-C", str(repo), "merge", "-q", "side"], capture_output=True, check=False
    )
    assert result.returncode != 0
    dirty = by_path(snapshot(repo))
    assert dirty["README.md"].status == "UU"


def test_dirty_list_is_bounded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "MAX_DIRTY", 2)
    for i in range(5):
        (repo / f"f{i}.txt").write_text("x")
    snap = snapshot(repo)
    assert len(snap.dirty) == 2
    assert snap.dirty_total == 5


def test_diff_stat_and_numstat(repo: Path) -> None:
    commit_file(repo, "a file.txt", "one\ntwo\nthree\n")
    (repo / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    git(repo, "add", "bin.dat")
    (repo / "a file.txt").write_text("one\n2\nthree\nfour\n")
    git(repo, "mv", "README.md", "READ ME ü.md")
    snap = snapshot(repo)
    files = {f.path: f for f in snap.diff_files}
    assert (files["a file.txt"].added, files["a file.txt"].deleted) == (2, 1)
    assert (files["bin.dat"].added, files["bin.dat"].deleted) == (None, None)
    assert files["READ ME ü.md"].orig_path == "README.md"
    assert "a file.txt" in snap.diff_stat
    assert "READ ME ü.md" in snap.diff_stat  # core.quotepath=false: readable names
    assert "3 files changed" in snap.diff_stat.splitlines()[-1]
    assert snap.errors == []


def test_diff_stat_is_bounded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "MAX_STAT_CHARS", 500)
    for i in range(40):
        commit_file(repo, f"file-with-a-long-name-{i:03}.txt", "a\n")
    for i in range(40):
        (repo / f"file-with-a-long-name-{i:03}.txt").write_text("b\n")
    snap = snapshot(repo)
    assert len(snap.diff_stat) <= 500
    assert snap.diff_stat.splitlines()[-1].strip().startswith("40 files changed")
    assert len(snap.diff_files) == 40


# -- upstream and stash ---------------------------------------------------------------


def test_ahead_and_behind_a_local_upstream(tmp_path: Path) -> None:
    bare = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = init_repo(tmp_path / "seed")
    commit_file(seed, "a.txt", "a\n", "Base")
    git(seed, "push", "-q", str(bare), "main")

    mine = tmp_path / "mine"
    theirs = tmp_path / "theirs"
    git(tmp_path, "clone", "-q", str(bare), str(mine))
    git(tmp_path, "clone", "-q", str(bare), str(theirs))
    commit_file(theirs, "t.txt", "t\n", "Theirs")
    git(theirs, "push", "-q", "origin", "main")
    git(mine, "fetch", "-q", "origin")
    commit_file(mine, "m1.txt", "1\n", "Mine 1")
    commit_file(mine, "m2.txt", "2\n", "Mine 2")

    snap = snapshot(mine)
    assert snap.branch == "main"
    assert snap.upstream == "origin/main"
    assert (snap.ahead, snap.behind) == (2, 1)
    assert snap.head_subject == "Mine 2"


def test_upstream_gone(tmp_path: Path) -> None:
    bare = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    mine = init_repo(tmp_path / "mine")
    commit_file(mine, "a.txt", "a\n")
    git(mine, "remote", "add", "origin", str(bare))
    git(mine, "push", "-q", "-u", "origin", "main")
    git(mine, "update-ref", "-d", "refs/remotes/origin/main")
    snap = snapshot(mine)
    assert snap.upstream == "origin/main"
    assert snap.ahead is None and snap.behind is None
    assert snap.errors == []


def test_stash_count(repo: Path) -> None:
    for text in ("one\n", "two\n"):
        (repo / "README.md").write_text(text)
        git(repo, "stash", "-q")
    snap = snapshot(repo)
    assert snap.stash_count == 2
    assert snap.dirty == []


# -- files changed since ----------------------------------------------------------------


def test_files_changed_since(repo: Path) -> None:
    old = {"GIT_COMMITTER_DATE": "2020-01-01T00:00:00+00:00"}
    (repo / "old.txt").write_text("o\n")
    git(repo, "add", "old.txt")
    git(repo, "commit", "-q", "-m", "old", env=old)
    commit_file(repo, "src/new file.py", "n\n")
    git(repo, "mv", "README.md", "docs.md")
    git(repo, "commit", "-q", "-m", "rename")
    (repo / "dirty ü.txt").write_text("d\n")
    (repo / "untracked" / "deep").mkdir(parents=True)
    (repo / "untracked" / "deep" / "f.txt").write_text("f\n")
    (repo / ".agent-handoff").mkdir()
    (repo / ".agent-handoff" / "handoff.json").write_text("{}")

    since = files_changed_since(repo, "2024-06-01T12:00:00Z")
    assert since == sorted(
        ["README.md", "dirty ü.txt", "docs.md", "src/new file.py", "untracked/deep/f.txt"]
    )
    assert "old.txt" in files_changed_since(repo, "2019-12-31T00:00:00")
    assert files_changed_since(repo, None) == ["dirty ü.txt", "untracked/deep/f.txt"]
    assert files_changed_since(repo, "not a time") == ["dirty ü.txt", "untracked/deep/f.txt"]


def test_files_changed_since_outside_git(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("x")
    assert files_changed_since(tmp_path, "2024-01-01T00:00:00Z") == []


def test_files_changed_since_without_commits(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh")
    (r / "a.txt").write_text("a")
    assert files_changed_since(r, "2024-01-01T00:00:00Z") == ["a.txt"]


# -- how git is run -------------------------------------------------------------------------


def test_git_environment() -> None:
    env = git_env()
    assert env["LC_ALL"] == "C"
    assert env["GIT_OPTIONAL_LOCKS"] == "0"
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_does_not_need_or_take_the_index_lock(repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    lock = repo / ".git" / "index.lock"
    lock.write_text("held by another git")  # as while the agent runs `git commit`
    snap = snapshot(repo)
    assert snap.errors == []
    assert [d.path for d in snap.dirty] == ["README.md"]
    assert lock.read_text() == "held by another git"


def test_snapshot_is_fast(repo: Path) -> None:
    for i in range(300):
        (repo / "pkg" / f"m{i // 50}").mkdir(parents=True, exist_ok=True)
        (repo / "pkg" / f"m{i // 50}" / f"f{i}.py").write_text(f"x = {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "many files")
    for i in range(0, 300, 30):
        (repo / "pkg" / f"m{i // 50}" / f"f{i}.py").write_text("changed\n")
    snapshot(repo)  # warm the file system cache
    start = time.perf_counter()
    snap = snapshot(repo)
    elapsed = time.perf_counter() - start
    assert len(snap.dirty) == 10
    assert elapsed < 1.0  # generous for CI; about 15 ms on the 2-core dev machine
