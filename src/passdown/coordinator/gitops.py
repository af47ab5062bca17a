"""The few git operations the coordinator needs beyond the snapshot: ancestry (recovery),
what changed since a commit (recovery reports), and worktrees (parallel children).
All go through `passdown.workspace.run_git` (argv, timeout, no prompts, no hooks' env)."""

from __future__ import annotations

from pathlib import Path

from passdown.errors import GitError as GitError

MAX_COMMITS = 200
MAX_FILES = 500


def _git(path: Path, *args: str) -> tuple[bool, str, str]:
    from passdown.workspace import run_git

    result = run_git(path, *args)
    return result.ok, result.out.decode("utf-8", "replace"), result.error


def is_ancestor(path: Path, commit: str, head: str = "HEAD") -> bool:
    ok, _, _ = _git(path, "merge-base", "--is-ancestor", commit, head)
    return ok


def commits_since(path: Path, commit: str) -> list[str]:
    ok, out, _ = _git(path, "log", "--format=%h %s", f"--max-count={MAX_COMMITS}", f"{commit}..HEAD", "--")
    return out.splitlines() if ok else []


def files_changed_since(path: Path, commit: str) -> list[str]:
    """Files that differ from `commit` now: committed since, staged, unstaged, untracked."""
    from passdown.coordinator.checks import dirty_paths

    ok, out, _ = _git(path, "diff", "--name-only", "--no-renames", commit, "--")
    changed = set(out.splitlines()) if ok else set()
    changed.update(dirty_paths(path))
    return sorted(p for p in changed if p and not p.startswith(".agent-handoff"))[:MAX_FILES]


def add_worktree(repo: Path, where: Path, branch: str) -> Path:
    """A worktree at `where` on a new `branch` from HEAD; reused when it already exists
    on that branch (a re-run after a crash). Raises GitError otherwise."""
    if where.exists():
        ok, out, _ = _git(where, "symbolic-ref", "--short", "-q", "HEAD")
        if ok and out.strip() == branch:
            return where
        raise GitError(f"cannot create worktree {where}: the folder exists and is not on {branch}")
    where.parent.mkdir(parents=True, exist_ok=True)
    ok, _, err = _git(repo, "worktree", "add", "-q", "-b", branch, str(where), "HEAD")
    if not ok:
        ok, _, err = _git(repo, "worktree", "add", "-q", str(where), branch)  # branch exists
    if not ok:
        raise GitError(f"cannot create worktree {where} on {branch}: {err}")
    return where
