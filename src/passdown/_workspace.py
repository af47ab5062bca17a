"""A read-only snapshot of the workspace's git state, for the handoff's Workspace section.

Nothing here raises on a broken or unusual workspace: not a git repo, git not installed,
a repo without commits, a detached HEAD, no upstream or a timed-out git all still give a
`WorkspaceSnapshot`; whatever could not be read is listed in its `errors`.

Every git call is an argv list run with `-C path`, a timeout, `LC_ALL=C` (parseable,
English messages), `GIT_OPTIONAL_LOCKS=0` (never take the index lock the agent or the
user may need) and no pager or prompt (`passdown._git` runs them). Paths in the output
are relative to the repo root.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# the runner lives in the light `passdown._git` (the session-start hook uses it alone);
# these names stay importable from here
from passdown._git import EXCLUDE_FILE as EXCLUDE_FILE
from passdown._git import GIT_TIMEOUT as GIT_TIMEOUT
from passdown._git import REMOTE_URLS as REMOTE_URLS
from passdown._git import GitResult as GitResult
from passdown._git import (
    _absolute,
    _text,
    answered,
    ask_ahead,
    asked_ahead,
    collect,
    is_not_repo,
    start,
)
from passdown._git import git_env as git_env
from passdown._git import is_ancestor as is_ancestor
from passdown._git import run_git as run_git
from passdown._git import workspace_root as workspace_root
from passdown._model_defaults import empty_list

HANDOFF_DIR = ".agent-handoff"
MAX_DIRTY = 1000  # dirty entries kept in a snapshot; the rest is counted, not listed
MAX_DIFF_FILES = 1000
MAX_STAT_FILES = 60  # files named in the `--stat` text (git adds a "..." line and the total)
MAX_STAT_CHARS = 8000
MAX_LOG_COMMITS = 1000  # commits scanned by files_changed_since
MAX_PATHSPEC = 500  # changed paths passed to `git diff`; past that it diffs the whole tree
MAX_PATHSPEC_BYTES = 64 * 1024


class DirtyPath(BaseModel):
    """One line of `git status --porcelain`."""

    model_config = ConfigDict(defer_build=True)  # built when first used

    status: str  # the two-letter porcelain v1 code: " M", "A ", "R ", "??", "UU", ...
    path: str
    orig_path: str | None = None  # the old name of a renamed or copied file


class DiffFile(BaseModel):
    """One line of `git diff --numstat HEAD`; binary files have no line counts."""

    model_config = ConfigDict(defer_build=True)  # built when first used

    path: str
    added: int | None = None
    deleted: int | None = None
    orig_path: str | None = None


class WorkspaceSnapshot(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built when first used

    path: str
    is_git: bool = False
    branch: str | None = None  # None when HEAD is detached
    head: str | None = None  # full hash; None in a repo without commits
    head_subject: str | None = None
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    dirty: list[DirtyPath] = Field(default_factory=empty_list)
    dirty_total: int = 0  # all dirty entries, including any past MAX_DIRTY
    diff_stat: str = ""
    diff_files: list[DiffFile] = Field(default_factory=empty_list)
    stash_count: int = 0
    errors: list[str] = Field(default_factory=empty_list)


# -- running git ------------------------------------------------------------------


# -- public API ---------------------------------------------------------------------


def snapshot(path: Path) -> WorkspaceSnapshot:
    """The git state of the workspace at `path`; never raises."""
    root = _absolute(path)
    snap = WorkspaceSnapshot(path=str(root))
    if not root.is_dir():
        snap.errors.append(f"workspace folder not found: {root}")
        return snap
    status = _status(root, *_SNAPSHOT_STATUS)
    if not status.ok:
        if not (is_not_repo(status) or status.missing):
            snap.is_git = True  # probably a repo git refuses to read (ownership, corruption)
        if not is_not_repo(status):
            snap.errors.append(status.error)
        return snap
    snap.is_git = True
    tracked = _apply_status(snap, status.out)
    if snap.head is not None:
        _apply_head_details(snap, root, tracked)
    return snap


def ask_ahead_for_snapshot(path: Path, started_at: str | None = None) -> None:
    """Start what `snapshot` and `files_changed_since(path, started_at)` will ask git
    about `path`, so it runs while the session is read (within `one_view`; else nothing
    happens)."""
    commits = _commits_since(started_at)
    questions = [(*_STATUS, *_SNAPSHOT_STATUS), _ALL_STATUS, _SUBJECT]
    ask_ahead(_absolute(path), *questions, *([commits] if commits else []))


def ask_ahead_for_export(root: Path) -> None:
    """`ask_ahead_for_snapshot`, and what else an export asks git about its workspace's
    root: its remotes (the project's scope) and where its exclude file is (which keeps
    `.agent-handoff/` out of git)."""
    ask_ahead_for_snapshot(root)
    ask_ahead(_absolute(root), REMOTE_URLS, EXCLUDE_FILE)


def files_changed_since(path: Path, since_iso: str | None) -> list[str]:
    """Files changed by commits made after `since_iso`, plus the paths dirty now.

    This is how passdown sees edits an agent made through shell commands, which leave no
    edit record in its session. Sorted, repo-root-relative, without `.agent-handoff/`.
    An unreadable or missing `since_iso` only drops the commit part; outside git the
    list is empty.
    """
    root = _absolute(path)
    found: set[str] = set()
    question = _commits_since(since_iso)
    if question is not None:
        log = run_git(root, *question)
        if log.ok:
            found.update(_split_z(log.out, log=True))
    status = _status(root, untracked="all")  # each new file, not just its folder
    if status.ok:
        for entry in _parse_entries(_split_z(status.out)):
            found.add(entry.path)
            if entry.orig_path:
                found.add(entry.orig_path)
    return sorted(p for p in found if not _is_handoff_path(p))


def _commits_since(since_iso: str | None) -> tuple[str, ...] | None:
    """What `files_changed_since` asks git: the files of the commits after `since_iso`."""
    since = _parse_iso(since_iso) if since_iso else None
    if since is None:
        return None
    # git dates have one-second resolution: a commit made in the same second the session
    # started (just before it) must not count as the agent's
    return (
        "log", f"--since=@{int(since.timestamp()) + 1}", f"--max-count={MAX_LOG_COMMITS}",
        "--name-only", "--format=", "--no-renames", "-z", "HEAD", "--",
    )  # fmt: skip


def dirty_paths(path: Path) -> list[str]:
    """Every changed or untracked path now (each file, not its folder; a rename's new
    name), sorted, without `.agent-handoff/`; empty outside git. Undecodable bytes are
    kept (surrogateescape), so each path can be opened."""
    status = _status(_absolute(path), untracked="all")
    if not status.ok:
        return []
    entries = _parse_entries(_split_z(status.out, exact=True))
    return sorted({e.path for e in entries if not _is_handoff_path(e.path)})


def git_head(path: Path) -> tuple[str | None, str | None]:
    """(HEAD's commit, the branch name): None for a repo without commits, a detached
    HEAD, or outside git. Within `one_view`, after `snapshot`, from its status."""
    status = answered(_absolute(path), *_STATUS, *_SNAPSHOT_STATUS)
    if status is not None and status.ok:
        return _head_in_status(status.out)
    head = run_git(path, "rev-parse", "--verify", "-q", "HEAD")
    branch = run_git(path, "symbolic-ref", "--short", "-q", "HEAD")
    return (
        head.out.decode().strip() or None if head.ok else None,
        branch.out.decode().strip() or None if branch.ok else None,
    )


# -- the coordinator's git operations: ancestry (recovery), worktrees (parallel) -----------

MAX_COMMITS = 200  # commits listed in a recovery report
MAX_FILES = 500  # files listed in a recovery report


def commits_since(path: Path, commit: str) -> list[str]:
    """`<short hash> <subject>` of each commit after `commit` up to HEAD, newest first."""
    log = run_git(
        path, "log", "--format=%h %s", f"--max-count={MAX_COMMITS}", f"{commit}..HEAD", "--"
    )
    return _text(log.out).splitlines() if log.ok else []


def files_differing_from(path: Path, commit: str) -> list[str]:
    """Files that differ from `commit` now: committed since, staged, unstaged, untracked.
    (`files_changed_since` asks the same from a point in time instead of a commit.)"""
    diff = run_git(path, "diff", "--name-only", "--no-renames", commit, "--")
    changed = set(_text(diff.out).splitlines()) if diff.ok else set()
    changed.update(dirty_paths(path))
    return sorted(p for p in changed if p and not p.startswith(HANDOFF_DIR))[:MAX_FILES]


def add_worktree(repo: Path, where: Path, branch: str) -> Path:
    """A worktree at `where` on a new `branch` from HEAD; reused when it already exists
    on that branch (a re-run after a crash). Raises GitError otherwise."""
    from passdown.errors import GitError

    if where.exists():
        current = run_git(where, "symbolic-ref", "--short", "-q", "HEAD")
        if current.ok and _text(current.out).strip() == branch:
            return where
        raise GitError(f"cannot create worktree {where}: the folder exists and is not on {branch}")
    where.parent.mkdir(parents=True, exist_ok=True)
    added = run_git(repo, "worktree", "add", "-q", "-b", branch, str(where), "HEAD")
    if not added.ok:
        added = run_git(repo, "worktree", "add", "-q", str(where), branch)  # the branch exists
    if not added.ok:
        raise GitError(f"cannot create worktree {where} on {branch}: {added.error}")
    return where


# -- status -------------------------------------------------------------------------


_STATUS = ("status", "--porcelain=v2", "-z", "--untracked-files=normal")
_SNAPSHOT_STATUS = ("--branch", "--show-stash")  # what `snapshot` asks besides
_ALL_STATUS = (*_STATUS[:3], "--untracked-files=all")  # each new file, not just its folder
_SUBJECT = ("log", "-1", "--no-show-signature", "--format=%s", "HEAD", "--")


def _status(root: Path, *extra: str, untracked: str = "normal") -> GitResult:
    args = (*_STATUS[:3], f"--untracked-files={untracked}", *extra)
    result = run_git(root, *args)
    if not result.ok and "show-stash" in result.error:
        # git older than 2.35 lacks --show-stash; the stash count is just left at 0
        result = run_git(root, *(a for a in args if a != "--show-stash"))
    return result


def _apply_status(snap: WorkspaceSnapshot, out: bytes) -> list[str]:
    """Fill branch, upstream and dirty; return the changed tracked paths (for the diff)."""
    tokens = _split_z(out)
    for token in tokens:
        if token.startswith("# "):
            _apply_header(snap, token[2:])
    entries = [e for e in _parse_entries(tokens) if not _is_handoff_path(e.path)]
    snap.dirty_total = len(entries)
    snap.dirty = entries[:MAX_DIRTY]
    tracked = [e.path for e in entries if e.status != "??"]
    return tracked + [e.orig_path for e in entries if e.orig_path]


def _apply_header(snap: WorkspaceSnapshot, line: str) -> None:
    key, _, value = line.partition(" ")
    if key == "branch.oid":
        snap.head = None if value == "(initial)" else value
    elif key == "branch.head":
        snap.branch = None if value == "(detached)" else value
    elif key == "branch.upstream":
        snap.upstream = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        snap.ahead, snap.behind = _int(ahead.lstrip("+")), _int(behind.lstrip("-"))
    elif key == "stash":
        snap.stash_count = _int(value) or 0


def _head_in_status(out: bytes) -> tuple[str | None, str | None]:
    """(HEAD's commit, the branch) from the headers of `status --branch`, which come first."""
    snap = WorkspaceSnapshot(path="")
    for raw in out.split(b"\0", 8)[:8]:
        token = _text(raw)
        if token.startswith("# "):
            _apply_header(snap, token[2:])
    return snap.head, snap.branch


def _parse_entries(tokens: list[str]) -> list[DirtyPath]:
    """Porcelain v2 entries, reported with porcelain v1 status codes."""
    entries: list[DirtyPath] = []
    it = iter(tokens)
    for token in it:
        kind = token[:2]
        if kind == "? ":
            entries.append(DirtyPath(status="??", path=token[2:]))
        elif kind == "1 ":  # 1 XY sub mH mI mW hH hI path
            fields = token.split(" ", 8)
            entries.append(DirtyPath(status=_xy(fields[1]), path=fields[-1]))
        elif kind == "2 ":  # 2 XY sub mH mI mW hH hI Xscore path, then NUL, orig path
            fields = token.split(" ", 9)
            orig = next(it, None)
            entries.append(DirtyPath(status=_xy(fields[1]), path=fields[-1], orig_path=orig))
        elif kind == "u ":  # u XY sub m1 m2 m3 mW h1 h2 h3 path
            fields = token.split(" ", 10)
            entries.append(DirtyPath(status=_xy(fields[1]), path=fields[-1]))
    return entries


def _xy(code: str) -> str:
    return code.replace(".", " ")  # v2 writes "." where v1 writes a space


# -- HEAD subject and diff ----------------------------------------------------------------


def _apply_head_details(snap: WorkspaceSnapshot, root: Path, tracked: list[str]) -> None:
    calls: dict[str, tuple[str, ...]] = {"subject": _SUBJECT}
    if tracked:  # a clean tree has no diff: skip the call
        calls["diff"] = _diff_args(tracked)
    results = _run_parallel(root, calls)
    subject = results["subject"]
    if subject.ok:
        snap.head_subject = _text(subject.out).strip() or None
    diff = results.get("diff")
    if diff is not None and diff.ok:
        numstat, _, stat = diff.out.rpartition(b"\0")  # numstat records end in NUL, then stat
        snap.diff_files = _parse_numstat(numstat)
        snap.diff_stat = _bounded_stat(_text(stat))
    snap.errors.extend(r.error for r in results.values() if not r.ok)


def _diff_args(tracked: list[str]) -> tuple[str, ...]:
    """One `git diff HEAD` for both --numstat and --stat, limited to the paths status
    named, so git does not lstat every file of a large tree a second time."""
    diff = (
        "diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M",
        "--numstat", "-z", f"--stat=120,100,{MAX_STAT_FILES}", "HEAD", "--",
    )  # fmt: skip
    if len(tracked) > MAX_PATHSPEC or sum(len(p) + 1 for p in tracked) > MAX_PATHSPEC_BYTES:
        return diff  # too many for an argv: the whole tree gives the same answer
    return (*diff, *tracked)


def _run_parallel(root: Path, calls: dict[str, tuple[str, ...]]) -> dict[str, GitResult]:
    """Each call's answer; all of them run at once. Within `one_view` a read-only
    question is the view's (perhaps asked ahead, and remembered)."""
    ask_ahead(root, *calls.values())
    started = {name: start(root, a) for name, a in calls.items() if not asked_ahead(root, a)}
    return {
        name: collect(args[0], started[name]) if name in started else run_git(root, *args)
        for name, args in calls.items()
    }


def _bounded_stat(text: str) -> str:
    text = text.rstrip()
    if len(text) <= MAX_STAT_CHARS:
        return text
    lines = text.splitlines()
    kept = "\n".join(lines[:-1])[: MAX_STAT_CHARS - 200].rsplit("\n", 1)[0]
    return f"{kept}\n ...\n{lines[-1][:200]}"  # keep git's "N files changed" total


def _parse_numstat(out: bytes) -> list[DiffFile]:
    """`added<TAB>deleted<TAB>path` NUL-terminated; a rename has an empty path followed
    by the old and new names as two more NUL-terminated fields."""
    files: list[DiffFile] = []
    it = iter(_split_z(out))
    for token in it:
        added, _, rest = token.partition("\t")
        deleted, _, name = rest.partition("\t")
        orig = None
        if not name:
            orig, name = next(it, ""), next(it, "")
        if not name or _is_handoff_path(name):
            continue
        files.append(DiffFile(path=name, added=_int(added), deleted=_int(deleted), orig_path=orig))
        if len(files) >= MAX_DIFF_FILES:
            break
    return files


# -- small helpers ------------------------------------------------------------------------


def _split_z(out: bytes, *, log: bool = False, exact: bool = False) -> list[str]:
    # `exact` keeps undecodable bytes (surrogateescape) for paths that are opened later
    tokens = (out.decode("utf-8", "surrogateescape") if exact else _text(out)).split("\0")
    if log:  # `log --format= -z` puts a newline between commits
        tokens = [t.lstrip("\n") for t in tokens]
    return [t for t in tokens if t]


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None  # "-" for binary files in --numstat


def _is_handoff_path(path: str) -> bool:
    return path == HANDOFF_DIR or path.startswith(HANDOFF_DIR + "/")


def _parse_iso(value: str) -> datetime | None:
    """An ISO 8601 time; a naive one is UTC, as agents' session files use."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"  # fromisoformat accepts "Z" only from Python 3.11
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
