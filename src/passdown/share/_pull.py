"""`passdown pull`: the remote's handoffs of this project into the local store, and the
newest of the current branch made the active one when it is newer than the local one."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from passdown.errors import (
    OutputError,
    RecordConflict,
    RecordInvalid,
    RecordNotFound,
    UsageError,
)
from passdown.share._common import (
    Item,
    PullReport,
    checked_remote,
    current_place,
    merge_files,
    repository,
    share_remote,
)
from passdown.share._gitio import Deadline, Git
from passdown.share._layout import (
    INCOMING_ROOT,
    REF_ROOT,
    STATUS_RANK,
    HandoffRef,
    branch_key,
    head_key,
    newer,
    parse_ref,
    scope_key,
)
from passdown.share._objects import (
    NewCommit,
    commit_files,
    fetch,
    is_ancestor,
    local_refs,
    object_types,
    remote_refs,
    update_refs,
    write_commits,
)
from passdown.share._records import Arrived, Refused, read_shared

if TYPE_CHECKING:
    from passdown.handoff import Handoff
    from passdown.records import Record, Scope
    from passdown.store import Store


def pull_handoffs(
    workspace: Path, remote: str | None = None, *, timeout: float = 30.0
) -> PullReport:
    """Import this project's handoffs from `remote` (default: `share_remote`). Only the
    refs that differ from this clone's are fetched. A handoff that fails its checks is
    refused (`report.refused`, nothing of it imported) while the others are imported.
    ShareError when git cannot reach the remote."""
    if not timeout > 0:
        raise UsageError(f"the timeout must be more than 0 seconds, not {timeout}")
    root, project = repository(workspace)
    remote = checked_remote(remote or share_remote(root))
    git = Git(root, Deadline(timeout))
    report = PullReport(remote=remote, project=project)
    scope = scope_key(project)
    prefix = f"{REF_ROOT}/{scope}"
    theirs = remote_refs(git, remote, prefix)
    local = local_refs(git, prefix)
    known = object_types(git, theirs.values())
    refs: dict[str, HandoffRef] = {}
    wanted: dict[str, str] = {}
    for name, oid in sorted(theirs.items()):
        ref = parse_ref(name)
        if ref is None or ref.scope != scope:
            report.refused.append(Item(name.rpartition("/")[2], name, "not a handoff's ref name"))
            continue
        refs[name] = ref
        mine = local.get(name)
        if mine == oid or (mine and known.get(oid) == "commit" and is_ancestor(git, oid, mine)):
            report.unchanged += 1
            continue
        wanted[name] = oid
    staging = {name: INCOMING_ROOT + name.removeprefix(REF_ROOT) for name in wanted}
    incoming = f"{INCOMING_ROOT}/{scope}"
    try:
        fetch(git, remote, staging)
        fetched = local_refs(git, incoming)
        arrived = _check(git, root, project, refs, wanted, staging, fetched, local, report)
    finally:
        update_refs(git, {name: (None, None) for name in local_refs(git, incoming)})
    from passdown.records import Scope as ScopeModel
    from passdown.store import open_store

    sc = ScopeModel(project=project)
    moves: dict[str, tuple[str | None, str | None]] = {}
    commits: list[NewCommit] = []
    with open_store() as store:
        for name, (got, change) in arrived.items():
            try:
                said = _import(store, sc, got)
            except RecordInvalid as exc:  # this passdown's store takes it not (too large)
                report.refused.append(Item(got.record.id, name, exc.message))
                continue
            report.imported.append(Item(got.record.id, name, said))
            if isinstance(change, NewCommit):
                commits.append(change)
            else:
                moves[name] = change
        # the local refs move once their handoffs are stored: a pull that failed
        # before that fetches them again
        update_refs(git, moves)
        write_commits(git, commits)
        _activate(git, root, store, sc, refs, report)
    return report


Change = NewCommit | tuple[str | None, str | None]  # a merge commit, or (new, old) of a ref


def _check(
    git: Git,
    root: Path,
    project: str,
    refs: dict[str, HandoffRef],
    wanted: dict[str, str],
    staging: dict[str, str],
    fetched: dict[str, str],
    local: dict[str, str],
    report: PullReport,
) -> dict[str, tuple[Arrived, Change]]:
    """Each fetched handoff checked, and how its local ref changes once it is stored: to
    the fetched commit, or (the two diverged) to a merge of both."""
    arrived: dict[str, tuple[Arrived, Change]] = {}
    for name in wanted:
        ref = refs[name]
        oid = fetched.get(staging[name])
        files = commit_files(git, oid) if oid else "it could not be fetched"
        try:
            if isinstance(files, str):
                raise Refused(files)
            mine = local.get(name)
            before = (
                commit_files(git, mine) if mine and not is_ancestor(git, mine, oid or "") else None
            )
            if isinstance(before, dict):
                files = merge_files(before, files)
                merge = NewCommit(name, files, [mine or "", oid or ""], "passdown merge")
                arrived[name] = (read_shared(files, ref, project, root), merge)
            else:
                arrived[name] = (read_shared(files, ref, project, root), (oid, mine))
        except Refused as exc:
            report.refused.append(Item(ref.id, name, str(exc)))
    return arrived


def _import(store: Store, sc: Scope, got: Arrived) -> str:
    """Store the handoff unless this clone has it (a local record keeps its own paths),
    its status records this clone lacks, and its status when it is further along."""
    import json

    from passdown.coordinator._lifecycle import StatusEvent, status_pointer

    said = []
    try:
        store.retrieve(sc, got.record.id)
    except RecordNotFound:
        store.store(got.record)
        said.append("new")
    best: Record | None = None
    for status in got.statuses:
        with contextlib.suppress(RecordConflict):  # this clone's own version stays
            store.store(status)
        name = status.id.rpartition("#")[2]
        if best is None or STATUS_RANK[name] > STATUS_RANK[best.id.rpartition("#")[2]]:
            best = status
    if best is not None:
        to = best.id.rpartition("#")[2]
        raw = store.get_pointer(sc, status_pointer(got.record.id))
        now = json.loads(raw).get("status") if raw else None
        if now is None or STATUS_RANK.get(now, -1) < STATUS_RANK[to]:
            event = StatusEvent(
                status=to,  # type: ignore[arg-type]
                by=best.provenance.agent,
                at=best.created_at,
                note=best.content or None,
            )
            if store.set_pointer(sc, status_pointer(got.record.id), raw, event.model_dump_json()):
                said.append(to)
    return ", ".join(said) or "unchanged"


def _activate(
    git: Git, root: Path, store: Store, sc: Scope, refs: dict[str, HandoffRef], report: PullReport
) -> None:
    """Make the newest handoff of the current branch (detached: of HEAD's commit) the
    active one when it is newer than the active one, and write its HANDOFF.md and
    handoff.json into this clone's `.agent-handoff/`."""
    from passdown.coordinator._lifecycle import ACTIVE_POINTER, Lifecycle

    branch, head = current_place(git)
    if branch is not None:
        here = [r for r in refs.values() if r.branch == branch_key(branch)]
    else:
        here = [r for r in refs.values() if head and r.head == head_key(head)]
    refused = {i.ref for i in report.refused}
    for ref in sorted(here, reverse=True):
        if ref.name in refused:
            continue
        found = _stored_handoff(store, sc, ref.id)
        if found is None:
            continue
        record, handoff = found
        lifecycle = Lifecycle(store, sc)
        active = lifecycle.active()
        current = None
        if active is not None:
            if active == ref.id:
                report.active_reason = f"{ref.id} is already the active handoff"
                return
            with contextlib.suppress(RecordNotFound):
                current = (store.retrieve(sc, active).created_at, active)
        if not newer((record.created_at, record.id), current):
            report.active_reason = f"the active handoff {active} is newer than {ref.id}"
            return
        if not lifecycle.swap_active(active, ref.id):
            report.active_reason = "another writer changed the active handoff meanwhile"
            return
        from passdown._pipeline import HANDOFF_DIR, write_handoff

        try:
            write_handoff(handoff, root / HANDOFF_DIR, root)
        except OutputError:
            store.set_pointer(sc, ACTIVE_POINTER, ref.id, active)  # as it was
            raise
        report.active = ref.id
        report.active_reason = "the newest handoff of " + (
            f"branch {branch}" if branch else f"commit {head_key(head)}"
        )
        return
    report.active_reason = "no pulled handoff of " + (
        f"branch {branch}" if branch else "this commit"
    )


def _stored_handoff(store: Store, sc: Scope, record_id: str) -> tuple[Record, Handoff] | None:
    """The stored record and the handoff it holds (None: not stored, or no handoff)."""
    from pydantic import ValidationError

    from passdown._handoff_record import handoff_from_record

    try:
        record = store.retrieve(sc, record_id)
        handoff = handoff_from_record(record)
    except (RecordNotFound, ValidationError):
        return None
    return (record, handoff) if handoff is not None else None
