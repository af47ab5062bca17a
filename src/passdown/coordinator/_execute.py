"""Executing a package: check, store, publish, write, launch; by handoff type.

Every step can run again after a crash and does its part once:
- storing the same record again is a no-op (a different package under the same id is
  a HandoffConflict);
- status changes are compare-and-swaps that say whether they happened;
- the active-handoff swap expects the handoff that was active when the package was
  prepared; if the pointer already names this package, that step is done;
- writing the files again writes the same bytes;
- a launch is claimed in the store before the agent starts (and released only if it
  could not start), so a second execute never starts the agent twice.

An export killed between its first store change and its last rename is taken back by
the next process that opens the store (`passdown._wal`, the write-ahead journal).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from passdown import _pipeline as pipeline
from passdown._handoff_package import ChildRef, HandoffPackage
from passdown._handoff_record import package_from_record, package_to_record
from passdown._locks import publish_lock
from passdown._wal import crash_point
from passdown.coordinator import _build as build
from passdown.coordinator._checks import (
    CheckResult,
    blocking,
    coerce_package,
    fingerprint,
    run_checks,
)
from passdown.coordinator._lifecycle import (
    ACTIVE_POINTER,
    Journal,
    Lifecycle,
    now_us_series,
    status_pointer,
)
from passdown.errors import (
    AgentNotInstalled,
    HandoffBlocked,
    HandoffConflict,
    HandoffStateError,
    LaunchError,
    RecordConflict,
    RecordInvalid,
    RecordNotFound,
    RecordTooLarge,
    StoreError,
    UsageError,
)

if TYPE_CHECKING:
    from passdown.agents import LaunchSpec
    from passdown.coordinator._context import ProjectContext

PARALLEL_DIR = "parallel"
ENV_HANDOFF_ID = "PASSDOWN_HANDOFF_ID"


class ExecuteResult(msgspec.Struct):
    package: HandoffPackage
    checks: list[CheckResult] = msgspec.field(default_factory=list)
    written: pipeline.WrittenHandoff | None = None
    stored: bool = False
    launched: bool = False
    already_launched: bool = False  # an earlier execute of this package started the agent
    exit_code: int | None = None
    argv: list[str] | None = None
    children: list[ExecuteResult] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)

    @property
    def status(self) -> str:
        return self.package.status


OnLaunch = Callable[["LaunchSpec", ExecuteResult], None]


class ExecuteOptions(msgspec.Struct):
    """How to execute a package (the keywords of `HandoffCoordinator.execute_handoff`)."""

    launch: bool | None = None
    interactive: bool = False
    force: bool = False
    out_dir: Path | None = None
    dry_run: bool = False
    store: bool = True
    require_store: bool = True
    env: Mapping[str, str] | None = None
    on_launch: OnLaunch | None = None


def execute(
    ctx: ProjectContext,
    package: HandoffPackage | Mapping[str, Any],
    target_agent: str | None,
    opts: ExecuteOptions,
) -> ExecuteResult:
    """Check the package (errors block unless `opts.force`), then by type:

    - session / agent / recovery: store and publish it, write HANDOFF.md + handoff.json,
      and launch the target. `launch=None` launches when the target is an agent passdown
      can start; `launch=False` only records it (the caller's harness launches).
    - parallel: publish the parent, then for each child (its own worktree and branch
      when prepared with `worktrees=True`) store, publish and write its package, and
      launch the children side by side.

    `dry_run` returns where the files would go and the argv, writing, storing and
    launching nothing.
    `on_launch(spec, result)` is called right before the agent starts.
    `require_store=False` goes on without the store when it cannot be opened (a
    warning); a failure while publishing fails the execute, which then changes nothing.
    """
    model, schema = coerce_package(package)
    if model is None:
        raise HandoffBlocked([schema])
    checks = run_checks(model, ctx.workspace, previous=ctx.previous(model))
    if blocking(checks) and not opts.force:
        raise HandoffBlocked(checks)
    pkg = finalise(ctx, model, target_agent)
    if pkg.handoff_type == "parallel":
        result = _execute_parallel(ctx, pkg, opts)
    else:
        result = _execute_one(ctx, pkg, opts)
    result.checks = checks
    return result


def finalise(ctx: ProjectContext, pkg: HandoffPackage, target: str | None) -> HandoffPackage:
    """The package as it will be stored: its target set, and a full handoff (built from
    the seed's fields when the package came from elsewhere). Deterministic, so a re-run
    of the same execute produces the same record."""
    target = (
        target or pkg.target_agent or (pkg.source_agent if pkg.handoff_type == "session" else None)
    )
    if target is None and pkg.handoff_type == "agent":
        raise UsageError("an agent handoff needs a target agent (target_agent=...)")
    if (
        pkg.handoff is not None
        and target == pkg.target_agent
        and pkg.handoff.target_agent == target
    ):
        return pkg
    handoff = pkg.handoff or _handoff_for(ctx, pkg)
    handoff = handoff.model_copy(update={"target_agent": target})
    return pkg.model_copy(update={"target_agent": target, "handoff": handoff}).sealed()


def _handoff_for(ctx: ProjectContext, pkg: HandoffPackage) -> Any:
    """A handoff for a package that arrived without one (e.g. the seed's JSON)."""
    from passdown._workspace import snapshot

    ws = workspace_of(ctx, pkg)
    h = build.synthetic_handoff(
        id=pkg.id,
        created_at=pkg.timestamp,
        source_agent=pkg.source_agent,
        session_label=f"session-{pkg.context.session_number}",
        workspace=ws,
        snapshot=snapshot(ws),
        features=None,
        request=None,
    )
    composed = build.Composed(
        state=pkg.state, recent_files=pkg.context.recent_files, summary=pkg.summary, provenance={}
    )
    h = build.apply_to_handoff(
        h, composed, features=None, summary_from_caller=True, target=pkg.target_agent
    )
    return pipeline.redact_handoff(h)


# -- one package ------------------------------------------------------------------------------


def _execute_one(ctx: ProjectContext, pkg: HandoffPackage, opts: ExecuteOptions) -> ExecuteResult:
    """A dry run writes and stores nothing, and fails as the real run would (a target
    that is not installed). A launch that cannot happen (the target is not installed,
    the argv is too long) fails before anything is stored, published or written; so
    does every other failure of the export (`publish_and_write`): the previous handoff
    stays the active one, in the store and on disk."""
    result = ExecuteResult(package=pkg)
    target = pkg.target_agent
    launching = bool(target) and _should_launch(opts.launch, target or "")
    planned = pipeline.planned_handoff(_handoff_of(pkg), _out_folder(ctx, pkg, opts.out_dir))
    if launching:
        spec = launch_spec(ctx, pkg, planned, opts)
        _resolved(spec)
        if opts.dry_run:
            result.argv = spec.argv
    if opts.dry_run:
        result.written = planned
        return result
    storing = opts.store and ctx.has_store
    if storing and not opts.require_store:
        try:
            ctx.store()
        except StoreError as exc:  # the caller chose to go on without a store it cannot open
            storing = False
            result.warnings.append(f"the handoff was not stored: {exc.message}")
    result.written = publish_and_write(ctx, pkg, opts.out_dir, store=storing)
    result.stored = storing
    lc = ctx.lifecycle() if storing else None
    if launching:
        _launch(ctx, lc, pkg, result, opts)
    if lc is not None:
        result.package = ctx.with_status(pkg, lc)
    return result


def publish_and_write(
    ctx: ProjectContext,
    pkg: HandoffPackage,
    out_dir: Path | None,
    *,
    store: bool,
    if_changed: bool = False,
) -> pipeline.WrittenHandoff:
    """The one order of every export: the files are staged (written where nobody sees
    them: a read-only or full disk, a bad folder fail here), the package is published
    (stored, made the active handoff by compare-and-swap, the previous one superseded),
    the files are made visible (handoff.json last), and only then is the session's
    checkpoint moved on. A failure at any step takes back what the steps before it did
    (`Journal.undo`), so the store, the active pointer, the files and the checkpoint stay
    as they were. Each change is announced first in a write-ahead journal on disk
    (`passdown._wal`): a process killed half-way is taken back by the next one that opens
    the store. A lost race (HandoffConflict) keeps its `rejected` record: that is the
    race's history. `if_changed`: a package that says what the active handoff says is
    not published; the active one's files are written where missing
    (`coordinator._unchanged`)."""
    from passdown._wal import WriteAhead, recover_and_say, store_identity
    from passdown.coordinator._unchanged import keep_active, unchanged_active

    opened = ctx.store() if store else None
    recover_and_say(opened)  # interrupted exports: taken back before anything is read
    ws = workspace_of(ctx, pkg)
    staged = pipeline.stage_handoff(_handoff_of(pkg), _out_folder(ctx, pkg, out_dir), ws)
    staged.batch.place_last(staged.written.json_path)  # in place: the commit is complete
    try:
        # one export of a workspace publishes and renames at a time: the files an export
        # leaves are those of the handoff the pointer names, whichever finished first
        with publish_lock(ws):
            same = unchanged_active(ctx, pkg) if opened is not None and if_changed else None
            if same is not None:
                kept = keep_active(same, staged.written, ws)
                ctx.apply_checkpoints(pkg.id)
                return kept
            header = {
                "handoff": pkg.id,
                "store": store_identity(opened) if opened is not None else None,
                "scope": ctx.scope.model_dump(exclude_none=True),
                "files": staged.batch.plan(),
            }
            wal = WriteAhead(header)
            journal = Journal(wal)
            try:
                if opened is not None:
                    publish(ctx, pkg, journal)
                wal.note()  # the files it will place, at the latest now
                written = staged.commit()
            except HandoffConflict:
                wal.finish()  # the rejected record stays: the race's history
                raise
            except BaseException:
                _undo(ctx, journal)
                raise
            crash_point("before-journal-removed")  # test hook: inert unless asked for
            wal.finish()
    finally:
        staged.discard()
    ctx.apply_checkpoints(pkg.id)
    written.record_id = pkg.id if store else None
    return written


def _undo(ctx: ProjectContext, journal: Journal) -> None:
    """Take back a publish; the error that made the export fail is the one reported.
    When the store cannot take it back now, the journal stays on disk for the next
    process that opens the store."""
    assert journal.wal is not None
    if not journal.empty:
        try:
            journal.undo(ctx.store(), ctx.scope)
        except StoreError:
            journal.wal.abandon()
            return
    journal.wal.finish()


def _handoff_of(pkg: HandoffPackage) -> Any:
    if pkg.handoff is None:
        raise UsageError("the package has no handoff to write; execute it instead")
    return pkg.handoff


def _out_folder(ctx: ProjectContext, pkg: HandoffPackage, out_dir: Path | None) -> Path:
    return out_dir or workspace_of(ctx, pkg) / pipeline.HANDOFF_DIR


def workspace_of(ctx: ProjectContext, pkg: HandoffPackage) -> Path:
    """Where the package's files go and its target runs. The package's `workspace` is
    redacted like everything it carries (a token in a folder name becomes
    `[REDACTED:...]`), and redaction must never change where passdown writes: when it
    names this coordinator's workspace, the real path is used."""
    from passdown._redact import redact

    if not pkg.workspace or pkg.workspace == redact(str(ctx.workspace)):
        return ctx.workspace
    return Path(pkg.workspace)


def _resolved(spec: LaunchSpec) -> str:
    """The target's program, found on the PATH it will run with; AgentNotInstalled if not."""
    from passdown._launch import resolve_program

    path = {**os.environ, **spec.env}.get("PATH", os.defpath)
    return resolve_program(spec.argv[0], path=path)


def _should_launch(launch: bool | None, target: str) -> bool:
    if launch is not None:
        return launch
    from passdown.agents import load_agents

    return target in load_agents()


def publish(ctx: ProjectContext, pkg: HandoffPackage, journal: Journal | None = None) -> None:
    """Store the record, then prepared -> published, swapping the active pointer from
    the package's `previous_id` (children of a parallel handoff are never active).
    `journal` notes every change, for `publish_and_write` to take back."""
    lc, by = Lifecycle(ctx.store(), ctx.scope, journal), ctx.identity
    at: list[str | None] = [None, None, None]  # the events' times: now, unless announced
    if journal is not None:
        at[:] = now_us_series(3)
        journal.declare(_publish_changes(lc, pkg, by, at))
    _store_record(ctx, pkg, lc)
    crash_point("record-stored")  # test hook: inert unless asked for
    lc.transition(pkg.id, "prepared", by=by, only_from=frozenset({None}), at=at[0])  # type: ignore[arg-type]
    event = lc.current(pkg.id)
    status = event.status if event else None
    if status in ("rejected", "superseded"):
        raise HandoffStateError(f"handoff {pkg.id} was {status}; prepare a new one")
    if status == "prepared":
        if (
            pkg.parent_id is None
            and lc.active() != pkg.id
            and not lc.swap_active(pkg.previous_id, pkg.id)
            and (winner := lc.active()) != pkg.id  # the same package, published by a twin
        ):
            lc.transition(
                pkg.id,
                "rejected",
                by=by,
                only_from=frozenset({"prepared"}),
                note=f"lost the race: {winner} became the active handoff first",
            )
            raise HandoffConflict(
                f"handoff {pkg.id} was prepared on top of {pkg.previous_id or 'no handoff'}, "
                f"but {winner} is active now",
                hint="another coordinator published first; prepare again from the current state",
            )
        crash_point("pointer-moved")  # test hook: inert unless asked for
        lc.transition(pkg.id, "published", by=by, only_from=frozenset({"prepared"}), at=at[1])
    if pkg.previous_id:
        lc.transition(
            pkg.previous_id,
            "superseded",
            by=by,
            note=f"superseded by {pkg.id}",
            only_from=frozenset({"prepared", "published", "claimed"}),
            at=at[2],
        )


def _publish_changes(
    lc: Lifecycle, pkg: HandoffPackage, by: str, at: list[str | None]
) -> list[dict[str, Any]]:
    """What `publish` is about to change in the store, for its journal to announce in
    one write (one sync to disk, not five). Only a first publish's changes: any change
    not announced here (a re-run, a retried compare-and-swap) is announced when made."""
    changes: list[dict[str, Any]] = []
    if not lc.exists(pkg.id):
        changes.append({"kind": "record", "id": pkg.id})
    if lc.current(pkg.id) is None:
        assert at[0] is not None and at[1] is not None
        prepared = lc.status_change(pkg.id, None, "prepared", by, at[0])
        changes.append(prepared)
        if pkg.parent_id is None:
            changes.append(lc.pointer_change(ACTIVE_POINTER, pkg.previous_id, pkg.id))
        published = lc.status_change(pkg.id, prepared["after"], "published", by, at[1], own=True)
        changes.append(published)
    if pkg.previous_id and at[2] is not None:
        raw = lc.store.get_pointer(lc.scope, status_pointer(pkg.previous_id))
        note = f"superseded by {pkg.id}"
        changes.append(lc.status_change(pkg.previous_id, raw, "superseded", by, at[2], note))
    return changes


def _store_record(ctx: ProjectContext, pkg: HandoffPackage, lc: Lifecycle | None = None) -> None:
    store = ctx.store()
    try:
        (lc or ctx.lifecycle()).store_new(package_to_record(pkg, project=ctx.scope.project))
    except RecordTooLarge as exc:
        raise RecordTooLarge(
            f"the handoff is too large for the store, so nothing was written or stored: "
            f"{exc.message.removeprefix('invalid record: ')}",
            hint="lower --max-chars / --max-messages, raise PASSDOWN_MAX_RECORD_BYTES, "
            "or export with --no-store",
        ) from None
    except RecordConflict:
        try:
            stored = package_from_record(store.retrieve(ctx.scope, pkg.id))
        except (RecordNotFound, RecordInvalid):
            stored = None
        if stored is None or stored.content_hash() != pkg.content_hash():
            raise HandoffConflict(
                f"a different package with id {pkg.id} is already stored",
                hint="each package is executed once (for one target); prepare a new one",
            ) from None


def write_files(
    ctx: ProjectContext, pkg: HandoffPackage, out_dir: Path | None
) -> pipeline.WrittenHandoff:
    ws = workspace_of(ctx, pkg)
    return pipeline.write_handoff(_handoff_of(pkg), _out_folder(ctx, pkg, out_dir), ws)


def launch_spec(
    ctx: ProjectContext, pkg: HandoffPackage, written: pipeline.WrittenHandoff, opts: ExecuteOptions
) -> LaunchSpec:
    from passdown._launch import check_argv
    from passdown.agents import get_agent

    agent = get_agent(pkg.target_agent or "")
    spec = pipeline.launch_spec_for(
        agent, written, interactive=opts.interactive, workspace=workspace_of(ctx, pkg)
    )
    spec.env.update(opts.env or {})
    spec.env.setdefault(ENV_HANDOFF_ID, pkg.id)
    check_argv(spec.argv, env={**os.environ, **spec.env})
    return spec


def _launch(
    ctx: ProjectContext,
    lc: Lifecycle | None,
    pkg: HandoffPackage,
    result: ExecuteResult,
    opts: ExecuteOptions,
) -> None:
    """Start the target once: the launch is claimed in the store first, and released
    only when the agent could not be started at all."""
    from passdown._launch import run

    assert result.written is not None  # written before any launch
    spec = launch_spec(ctx, pkg, result.written, opts)
    result.argv = list(spec.argv)
    if lc is not None and not lc.claim_launch(pkg.id, ctx.identity):
        result.already_launched = True
        return
    try:
        spec.argv[0] = _resolved(spec)
        if opts.on_launch is not None:
            opts.on_launch(spec, result)
        result.exit_code = run(spec, interactive=opts.interactive)
    except (AgentNotInstalled, LaunchError):
        if lc is not None:
            lc.release_launch(pkg.id)
        raise
    result.launched = True


# -- parallel --------------------------------------------------------------------------------


def _execute_parallel(
    ctx: ProjectContext, parent: HandoffPackage, opts: ExecuteOptions
) -> ExecuteResult:
    if opts.interactive and len(parent.children) > 1:
        raise UsageError(
            "parallel children cannot share one terminal; launch them non-interactively"
        )
    ws = workspace_of(ctx, parent)
    result = _execute_one(ctx, parent, _child_options(opts, launch=False, out_dir=opts.out_dir))
    for ref in parent.children:
        child = child_package(ctx, parent, ref)
        out = None if ref.worktree else ws / pipeline.HANDOFF_DIR / PARALLEL_DIR / ref.id
        result.children.append(
            _execute_one(ctx, child, _child_options(opts, launch=False, out_dir=out))
        )
    to_launch = [
        c
        for c in result.children
        if c.package.target_agent and _should_launch(opts.launch, c.package.target_agent)
    ]
    if to_launch and not opts.dry_run:
        lc = ctx.lifecycle() if result.stored else None
        with ThreadPoolExecutor(max_workers=len(to_launch)) as pool:
            for future in [pool.submit(_launch, ctx, lc, c.package, c, opts) for c in to_launch]:
                future.result()
    elif opts.dry_run:
        for c in to_launch:
            assert c.written is not None
            c.argv = launch_spec(ctx, c.package, c.written, opts).argv
    return result


def _child_options(opts: ExecuteOptions, *, launch: bool, out_dir: Path | None) -> ExecuteOptions:
    return msgspec.structs.replace(opts, launch=launch, out_dir=out_dir)


def child_package(ctx: ProjectContext, parent: HandoffPackage, ref: ChildRef) -> HandoffPackage:
    """The child's own package: its assignment as next steps, a note of who owns what,
    its worktree as workspace. A stored child (an earlier, interrupted run) is reused."""
    from passdown._workspace import add_worktree, snapshot

    if ctx.has_store:
        try:
            return package_from_record(ctx.store().retrieve(ctx.scope, ref.id))
        except (RecordNotFound, StoreError):
            pass
    assert parent.handoff is not None
    ws = workspace_of(ctx, parent)
    child_ws = add_worktree(ws, Path(ref.worktree), ref.branch or ref.id) if ref.worktree else ws
    h = parent.handoff.model_copy(deep=True)
    h.id, h.target_agent = ref.id, ref.target_agent
    h.state.next_steps = list(ref.assignment)
    h.state.decisions = [_owners_note(parent, ref), *h.state.decisions]
    if child_ws != ws:
        h.workspace = snapshot(child_ws)
    child = parent.model_copy(
        update={
            "id": ref.id,
            "target_agent": ref.target_agent,
            "parent_id": parent.id,
            "state": parent.state.model_copy(update={"next_steps": list(ref.assignment)}),
            "children": [],
            "owners": list(parent.children),
            "previous_id": None,
            "handoff": h,
            "workspace": str(child_ws),
            "fingerprint": fingerprint(child_ws),
            "status": "prepared",
        }
    )
    return child.sealed()


def _owners_note(parent: HandoffPackage, ref: ChildRef) -> str:
    others = [
        f"{c.id} ({c.target_agent}): {'; '.join(c.assignment)}"
        for c in parent.children
        if c.id != ref.id
    ]
    where = f" in worktree {ref.worktree} on branch {ref.branch}" if ref.worktree else ""
    note = (
        f"Parallel handoff {parent.id}: you ({ref.id}, {ref.target_agent}) own only the "
        f"next steps listed here{where}."
    )
    if others:
        note += " Other owners, do not work on their steps: " + " | ".join(others)
    return note


def launch_only(
    ctx: ProjectContext,
    pkg: HandoffPackage,
    *,
    interactive: bool = False,
    env: Mapping[str, str] | None = None,
) -> ExecuteResult:
    """Start the target of a published package (the target side of a harness that
    launches its own sessions); at most once per package, like execute."""
    if not pkg.target_agent:
        raise UsageError(f"handoff {pkg.id} has no target agent to launch")
    result = ExecuteResult(package=pkg)
    result.written = write_files(ctx, pkg, None)
    lc = ctx.lifecycle() if ctx.has_store else None
    _launch(ctx, lc, pkg, result, ExecuteOptions(launch=True, interactive=interactive, env=env))
    return result
