"""`passdown push`: the project's handoffs, as commits under `refs/passdown/...`, to
the share remote (fast-forward only; a ref another clone moved meanwhile is fetched,
merged by record id and pushed again, a bounded number of times)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from passdown.errors import ShareError, UsageError
from passdown.share._common import (
    FileItem,
    Item,
    PushReport,
    all_records,
    checked_remote,
    home_folder,
    merge_files,
    repository,
    share_remote,
)
from passdown.share._gitio import Deadline, Git
from passdown.share._layout import (
    DIGEST_FILE,
    PRUNED_ROOT,
    REF_ROOT,
    HandoffRef,
    parse_ref,
    scope_key,
)
from passdown.share._objects import (
    NewCommit,
    commit_files,
    local_refs,
    local_subjects,
    object_types,
    push,
    read_blobs,
    remote_refs,
    update_refs,
    write_commits,
)
from passdown.share._records import Refused, Shared, shared_files, source_key

if TYPE_CHECKING:
    from passdown.records import Record

PUSH_ATTEMPTS = 3
SOURCE_MARK = " source:"  # in a handoff commit's subject: what its files were made from  # push, and after a rejection fetch + merge + push, at most this often


def push_handoffs(
    workspace: Path,
    remote: str | None = None,
    *,
    dry_run: bool = False,
    prune: int | None = None,
    timeout: float = 30.0,
) -> PushReport:
    """Push this repository's handoffs (and their status records) to `remote` (default:
    `share_remote`). `dry_run`: say what would leave, file by file, and change nothing;
    `prune`: keep only the newest N handoffs per branch on the remote. ShareError when
    git cannot reach or update the remote; the report says what was pushed."""
    if prune is not None and prune < 1:
        raise UsageError(f"--prune keeps at least 1 handoff per branch, not {prune}")
    if not timeout > 0:
        raise UsageError(f"the timeout must be more than 0 seconds, not {timeout}")
    root, project = repository(workspace)
    remote = checked_remote(remote or share_remote(root))
    git = Git(root, Deadline(timeout))
    report = PushReport(remote=remote, project=project, dry_run=dry_run)
    scope = scope_key(project)
    prefix = f"{REF_ROOT}/{scope}"
    local = local_refs(git, prefix)
    made_from = {
        _id(ref): subject.rpartition(SOURCE_MARK)[2]
        for ref, subject in local_subjects(git, prefix).items()
        if SOURCE_MARK in subject
    }
    shared = _shareable(root, project, report, made_from)
    pruned = {name.rpartition("/")[2] for name in local_refs(git, f"{PRUNED_ROOT}/{scope}")}
    shared = [s for s in shared if s.ref.id not in pruned]
    commits = _changed(git, shared, local, report)
    theirs = remote_refs(git, remote, prefix)
    if dry_run:
        _what_would_leave(git, commits, local, theirs, pruned, report)
        return report
    write_commits(git, commits)
    for attempt in range(PUSH_ATTEMPTS):
        local = local_refs(git, prefix)
        if attempt:
            theirs = remote_refs(git, remote, prefix)
        refused = {i.ref for i in report.refused}  # asked once: the remote's rules stand
        wanted = [r for r in _to_push(git, local, theirs, pruned) if r not in refused]
        if not wanted:
            break
        outcome = push(git, remote, [f"{ref}:{ref}" for ref in wanted])
        for ref, how in outcome.done.items():
            report.pushed.append(Item(_id(ref), ref, how))
        said = {i.ref for i in report.refused}
        report.refused += [
            Item(_id(r), r, why) for r, why in outcome.refused.items() if r not in said
        ]
        if not outcome.behind:
            break
        _merge_theirs(git, remote, outcome.behind, local, prefix)
    else:
        left = _to_push(git, local_refs(git, prefix), remote_refs(git, remote, prefix), pruned)
        behind = [r for r in left if r not in {i.ref for i in report.refused}]
        if behind:
            raise ShareError(
                f"{len(behind)} handoff(s) kept changing on {remote!r} while pushing; "
                "they were not pushed",
                hint="run `passdown push` again",
            )
    if prune is not None:
        _prune(git, remote, prefix, scope, prune, report)
    if report.refused:
        reasons = "; ".join(f"{i.id}: {i.reason}" for i in report.refused[:5])
        raise ShareError(
            f"{remote!r} refused {len(report.refused)} handoff ref(s): {reasons}",
            hint="the remote's rules (a pre-receive hook, permissions) decline passdown's refs",
        )
    return report


def _id(ref: str) -> str:
    parsed = parse_ref(ref)
    return parsed.id if parsed else ref.rpartition("/")[2]


def _shareable(
    root: Path, project: str, report: PushReport, made_from: dict[str, str]
) -> list[Shared]:
    """The shared form of every handoff in the store that changed since its local
    commit was made (`made_from`: {id: `source_key`} of the local commits)."""
    from passdown.store import open_store

    home = home_folder()
    with open_store() as store:
        statuses: dict[str, list[Record]] = {}
        for status in all_records(store, project, "status"):
            statuses.setdefault(status.id.rpartition("#")[0], []).append(status)
        out = []
        for record in all_records(store, project, "handoff"):
            own = statuses.get(record.id, [])
            if made_from.get(record.id) == source_key(record, own, root, home):
                report.unchanged += 1
                continue
            try:
                out.append(shared_files(record, own, root, project, home))
            except Refused as exc:
                report.skipped.append(Item(record.id, "", str(exc)))
    return out


def _changed(
    git: Git, shared: list[Shared], local: dict[str, str], report: PushReport
) -> list[NewCommit]:
    """A commit for each handoff whose files differ from its local ref's (merged with
    them: statuses a pull brought stay)."""
    present = [s for s in shared if s.ref.name in local]
    digests = read_blobs(git, [f"{local[s.ref.name]}:{DIGEST_FILE}" for s in present])
    commits = []
    for item in shared:
        name = item.ref.name
        files = item.files
        if name in local:
            if digests.get(f"{local[name]}:{DIGEST_FILE}") == files[DIGEST_FILE]:
                report.unchanged += 1
                continue
            before = commit_files(git, local[name])
            if isinstance(before, dict):
                files = merge_files(before, files)
                if before.get(DIGEST_FILE) == files[DIGEST_FILE]:
                    report.unchanged += 1
                    continue
        parents = [local[name]] if name in local else []
        message = f"passdown handoff {item.ref.id}{SOURCE_MARK}{item.source}"
        commits.append(NewCommit(name, files, parents, message))
    return commits


def _to_push(
    git: Git, local: dict[str, str], theirs: dict[str, str], pruned: set[str]
) -> list[str]:
    """Local refs the remote lacks or has behind: not one it already has further on."""
    types = object_types(git, [oid for oid in theirs.values()])
    wanted = []
    for ref, oid in sorted(local.items()):
        if _id(ref) in pruned or theirs.get(ref) == oid:
            continue
        other = theirs.get(ref)
        if (
            other
            and types.get(other) == "commit"
            and git.run("merge-base", "--is-ancestor", oid, other).ok
        ):
            continue  # the remote is ahead: a pull brings that
        wanted.append(ref)
    return wanted


def _merge_theirs(
    git: Git, remote: str, refs: list[str], local: dict[str, str], prefix: str
) -> None:
    """Fetch the refs the remote has moved on, and merge each into the local one."""
    from passdown.share._layout import INCOMING_ROOT
    from passdown.share._objects import fetch, is_ancestor

    staging = {ref: INCOMING_ROOT + ref.removeprefix(REF_ROOT) for ref in refs}
    fetch(git, remote, staging)
    fetched = {ref: local_refs(git, INCOMING_ROOT).get(staging[ref]) for ref in refs}
    commits, moves = [], {}
    for ref, theirs in fetched.items():
        ours = local.get(ref)
        if theirs is None or ours is None:
            continue
        if is_ancestor(git, ours, theirs):
            moves[ref] = (theirs, ours)
            continue
        mine, other = commit_files(git, ours), commit_files(git, theirs)
        if not isinstance(mine, dict) or not isinstance(other, dict):
            continue  # theirs is no handoff commit: the next push is rejected again, and says so
        commits.append(NewCommit(ref, merge_files(mine, other), [ours, theirs], "passdown merge"))
    update_refs(git, moves)
    write_commits(git, commits)
    update_refs(git, {name: (None, None) for name in staging.values()})


def _what_would_leave(
    git: Git,
    commits: list[NewCommit],
    local: dict[str, str],
    theirs: dict[str, str],
    pruned: set[str],
    report: PushReport,
) -> None:
    files = {c.ref: c.files for c in commits}
    for ref in _to_push(git, local, theirs, pruned):
        if ref not in files:
            found = commit_files(git, local[ref])
            if isinstance(found, dict):
                files[ref] = found
    for ref, content in sorted(files.items()):
        report.pushed.append(
            Item(_id(ref), ref, "would be updated" if ref in theirs else "would be new")
        )
        for path, data in sorted(content.items()):
            digest = hashlib.sha256(data).hexdigest()
            report.files.append(FileItem(ref, path, len(data), digest, data))


def _prune(git: Git, remote: str, prefix: str, scope: str, keep: int, report: PushReport) -> None:
    """Keep the newest `keep` handoffs per branch on the remote and here; this clone
    remembers what it took away (`refs/passdown-pruned/...`), so no later push sends it."""
    names = {**remote_refs(git, remote, prefix), **local_refs(git, prefix)}
    by_branch: dict[str, list[HandoffRef]] = {}
    for name in names:
        ref = parse_ref(name)
        if ref is not None:
            by_branch.setdefault(ref.branch, []).append(ref)
    gone = [r for refs in by_branch.values() for r in sorted(refs, reverse=True)[keep:]]
    if not gone:
        return
    theirs = remote_refs(git, remote, prefix)
    on_remote = [r.name for r in gone if r.name in theirs]
    if on_remote:
        outcome = push(git, remote, [f":{name}" for name in on_remote])
        for name, why in outcome.refused.items():
            report.refused.append(Item(_id(name), name, why))
    local = local_refs(git, prefix)
    moves: dict[str, tuple[str | None, str | None]] = {}
    for ref in gone:
        if any(i.ref == ref.name for i in report.refused):
            continue
        oid = local.get(ref.name) or theirs.get(ref.name)
        if ref.name in local:
            moves[ref.name] = (None, local[ref.name])
        if oid and object_types(git, [oid]).get(oid) == "commit":
            moves[f"{PRUNED_ROOT}/{scope}/{ref.id}"] = (oid, None)
        report.pruned.append(Item(ref.id, ref.name, "deleted (older than the newest kept)"))
    update_refs(git, moves)
