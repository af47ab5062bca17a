"""What push and pull share: the repository and its scope, the share remote, the
reports, the store's handoffs, and merging two versions of one handoff's files."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from passdown.errors import UsageError
from passdown.share._gitio import Git
from passdown.share._layout import (
    DIGEST_FILE,
    RECORD_FILE,
    STATUS_DIR,
    with_digest,
)

if TYPE_CHECKING:
    from passdown.records import Record
    from passdown.store import Store

SHARE_REMOTE_KEY = "share_remote"  # `passdown config set share_remote ...`
GIT_CONFIG_KEY = "passdown.shareRemote"  # per repository: `git config passdown.shareRemote`
DEFAULT_REMOTE = "origin"


@dataclass(slots=True)
class Item:
    """One handoff in a report: its id, its ref, and what happened to it or why not."""

    id: str
    ref: str
    reason: str


@dataclass(slots=True)
class FileItem:
    """One file that leaves (`push --dry-run`)."""

    ref: str
    path: str
    bytes: int
    sha256: str
    data: builtins.bytes = field(default=b"", repr=False)  # as it leaves (`push --dry-run --out`)


@dataclass(slots=True)
class PushReport:
    remote: str
    project: str
    dry_run: bool = False
    pushed: list[Item] = field(default_factory=list)
    skipped: list[Item] = field(default_factory=list)  # not shareable, and why
    refused: list[Item] = field(default_factory=list)  # the remote refused them
    pruned: list[Item] = field(default_factory=list)
    files: list[FileItem] = field(default_factory=list)  # what leaves, file by file
    unchanged: int = 0

    def to_json(self) -> dict[str, Any]:
        shown = asdict(self)
        for item in shown["files"]:
            del item["data"]
        return shown


@dataclass(slots=True)
class PullReport:
    remote: str
    project: str
    imported: list[Item] = field(default_factory=list)
    refused: list[Item] = field(default_factory=list)
    active: str | None = None  # the handoff this pull made active
    active_reason: str = ""
    unchanged: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def repository(workspace: Path) -> tuple[Path, str]:
    """(the repository's root, its project scope); UsageError outside git or when the
    committed scope setting cannot be used."""
    from passdown._git import project_name, run_git, scope_setting

    folder = Path(workspace)
    if not folder.is_dir():
        raise UsageError(f"no such folder: {folder}")
    result = run_git(folder, "rev-parse", "--show-toplevel")
    top = result.out.decode("utf-8", "replace").strip()
    if not result.ok or not top:
        if result.missing:
            raise UsageError("git is not installed; handoffs travel through git")
        raise UsageError(
            f"{folder} is not in a git repository: handoffs travel through git refs",
            hint="run it inside a clone, or give -C PATH",
        )
    root = Path(top).resolve()
    try:
        scope_setting(root)
    except ValueError as exc:
        raise UsageError(f"cannot use the committed scope setting: {exc}") from None
    return root, project_name(root)


def share_remote(workspace: Path) -> str:
    """The remote handoffs travel to and from: the repository's `passdown.shareRemote`
    (git config), else `passdown config get share_remote`, else `origin`. A remote's
    name or a URL."""
    from passdown._git import run_git

    result = run_git(Path(workspace), "config", "--get", GIT_CONFIG_KEY)
    value = result.out.decode("utf-8", "replace").strip()
    if result.ok and value:
        return value
    from passdown._settings import load_config

    configured = load_config().get(SHARE_REMOTE_KEY)
    return configured if isinstance(configured, str) and configured.strip() else DEFAULT_REMOTE


def checked_remote(remote: str) -> str:
    if not remote.strip() or remote.startswith("-") or "\0" in remote:
        raise UsageError(f"not a remote name or URL: {remote!r}")
    return remote


def home_folder() -> str | None:
    try:
        return str(Path.home())
    except (RuntimeError, KeyError):
        return os.environ.get("HOME") or None


def all_records(store: Store, project: str, type: str) -> Iterator[Record]:
    cursor = None
    while True:
        page = store.query(project, type=type, limit=1000, cursor=cursor)
        yield from page.records
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def current_place(git: Git) -> tuple[str | None, str | None]:
    """(the checked-out branch, None when detached; HEAD's commit, None without commits)."""
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD")
    head = git.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    name = branch.out.decode("utf-8", "replace").strip() if branch.ok else ""
    commit = head.out.decode("ascii", "replace").strip() if head.ok else ""
    return name or None, commit or None


# -- two versions of one handoff's files --------------------------------------------------


def _status_key(data: bytes) -> tuple[str, bytes]:
    try:
        parsed = json.loads(data)
        created = str(parsed.get("created_at", "")) if isinstance(parsed, dict) else ""
    except (ValueError, RecursionError):
        created = ""
    return created, data


def merge_files(ours: dict[str, bytes], theirs: dict[str, bytes]) -> dict[str, bytes]:
    """One handoff's files from two clones, the same whichever side merges: every
    status either has (two versions of one status, such as two claims made before
    either was pushed: the earlier one); the rest from the side whose record sorts
    first."""
    first = min((ours, theirs), key=lambda f: f.get(RECORD_FILE, b""))
    merged = {k: v for k, v in first.items() if not k.startswith(STATUS_DIR + "/")}
    for name in sorted({*ours, *theirs}):
        if not name.startswith(STATUS_DIR + "/"):
            continue
        versions = [f[name] for f in (ours, theirs) if name in f]
        merged[name] = min(versions, key=_status_key)
    merged.pop(DIGEST_FILE, None)
    return with_digest(merged)
