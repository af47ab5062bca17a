"""Preparing a package: read the base (a session, or a stored package for a recovery),
compose it with the project files and the caller's values, compact, redact and seal.
Nothing is written or stored here.

    request  = PrepareRequest(...)           what the caller asked for
    start    = session_start(...) / recovery_start(...)   what the package builds on
    position = store_position(ctx)           its place in the project's history
    package  = assemble(ctx, request, start, position)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from passdown import _pipeline as pipeline
from passdown._budgets import shorten_texts
from passdown._handoff_package import (
    ChildRef,
    HandoffPackage,
    HandoffType,
    PackageContext,
    RecoveryInfo,
)
from passdown.coordinator import _build as build
from passdown.coordinator._checks import fingerprint
from passdown.coordinator._compact import budget_chars, compact
from passdown.coordinator._project_files import FeatureList, read_feature_list, read_progress
from passdown.errors import HandoffNotFound, SessionNotFound, StoreError, UsageError

if TYPE_CHECKING:
    from passdown.coordinator._context import ProjectContext
    from passdown.handoff import Handoff


class PrepareRequest(msgspec.Struct):
    """What the caller asked for (the arguments of `prepare_handoff`, resolved)."""

    source_agent: str
    handoff_type: HandoffType
    target_agent: str | None
    overrides: build.Overrides
    budget: int  # characters for the compacted handoff
    max_tokens: int | None = None
    targets: list[str] = msgspec.field(default_factory=list)  # parallel: one agent per child
    worktrees: bool = False
    worktree_root: str | os.PathLike[str] | None = None


class Start(msgspec.Struct):
    """What the package is built on: the full handoff it extends (None: the project
    files alone), the state taken from it, and for a recovery where it came from."""

    handoff: Handoff | None = None
    base: build.Base | None = None
    recovery: RecoveryInfo | None = None


class SessionNumber(msgspec.Struct):
    value: int
    source: Literal["caller", "store", "none"]


class Position(msgspec.Struct):
    """The package's place in the project's history."""

    number: SessionNumber
    previous_id: str | None  # the active handoff it is prepared on top of
    warnings: list[str] = msgspec.field(default_factory=list)


# -- the start ---------------------------------------------------------------------------


def session_start(
    ctx: ProjectContext,
    source_agent: str,
    session: str | None,
    *,
    require: bool,
    options: pipeline.ExportOptions,
    selection: pipeline.Selection | None = None,
) -> Start:
    """The source agent's session through the core pipeline. No session (passdown does
    not read that agent, or it has none here) starts from the project files, unless one
    is required. `selection`: the session a door already picked (`coordinator.doors`)."""
    handoff = _read_session(ctx.workspace, source_agent, session, require, options, selection)
    if handoff is None:
        return Start()
    state, files = build.base_state(handoff)
    return Start(handoff, build.Base("session", state, files, handoff.task.latest_progress))


def _read_session(
    workspace: Path,
    source_agent: str,
    session: str | None,
    require: bool,
    options: pipeline.ExportOptions,
    selection: pipeline.Selection | None,
) -> Handoff | None:
    from passdown.agents import load_agents

    if selection is not None:
        return pipeline.read_handoff(selection, options)
    if source_agent != "auto" and source_agent not in load_agents():
        if require or session:
            pipeline.source_agents(source_agent)  # raises UnknownAgent
        return None
    try:
        selection = pipeline.select_session(source_agent, session, workspace)
    except SessionNotFound:
        if require or session:
            raise
        return None
    return pipeline.read_handoff(selection, options)


def recovery_start(ctx: ProjectContext) -> Start:
    """The newest stored package whose commit is an ancestor of HEAD (or, outside git,
    one prepared outside git), with what changed since; HandoffNotFound if none."""
    from passdown import _workspace as git

    head, _ = git.git_head(ctx.workspace)
    lc = ctx.lifecycle()
    for pkg in ctx.packages(limit=200):
        if pkg.parent_id or ctx.with_status(pkg, lc).status == "rejected":
            continue
        commit = pkg.context.git_hash
        if (head and commit and git.is_ancestor(ctx.workspace, commit, head)) or (
            not head and not commit
        ):
            info = RecoveryInfo(
                from_id=pkg.id,
                from_git_hash=commit,
                commits_since=git.commits_since(ctx.workspace, commit) if commit else [],
                files_changed=git.files_differing_from(ctx.workspace, commit) if commit else [],
            )
            recent = list(dict.fromkeys([*pkg.context.recent_files, *info.files_changed]))
            return Start(
                pkg.handoff, build.Base(f"recovered:{pkg.id}", pkg.state, recent, pkg.summary), info
            )
    raise HandoffNotFound(
        f"no stored handoff in project {ctx.scope.project!r} to recover from "
        "(none whose commit is an ancestor of HEAD)"
    )


def store_position(ctx: ProjectContext, session_number: int | None) -> Position:
    """The session number (the caller's, else one past the handoffs stored in scope) and
    the active handoff. An unreadable store is a warning, not a failure."""
    count, previous_id, warnings = 0, None, []
    if ctx.has_store:
        try:
            count = ctx.store().count(ctx.scope, type="handoff")
            previous_id = ctx.lifecycle().active()
        except StoreError as exc:
            warnings.append(
                f"the store could not be read ({exc.message}); session_number starts at 1"
            )
    source: Literal["caller", "store", "none"] = (
        "caller" if session_number else "store" if ctx.has_store else "none"
    )
    return Position(SessionNumber(session_number or count + 1, source), previous_id, warnings)


# -- assembling --------------------------------------------------------------------------


def assemble(
    ctx: ProjectContext, request: PrepareRequest, start: Start, position: Position
) -> HandoffPackage:
    from passdown._workspace import files_changed_since

    ws, overrides, recovery = ctx.workspace, request.overrides, start.recovery
    features, progress = read_feature_list(ws), read_progress(ws)
    git_files = files_changed_since(ws, None) if start.base is None else None
    composed = build.compose(start.base, features, progress, overrides, git_files=git_files)
    if recovery is not None and overrides.summary is None:
        composed.summary = _recovery_summary(recovery, composed.summary)
        composed.provenance["summary"] = f"recovered:{recovery.from_id}"
    target_agent = request.target_agent
    if request.handoff_type == "session" and target_agent is None:
        target_agent = request.source_agent
    handoff_id, created = pipeline.new_handoff_id(), pipeline.now_iso()
    handoff = _handoff(ctx, request, start, handoff_id, created, features, position.number.value)
    handoff = build.apply_to_handoff(
        handoff,
        composed,
        features=features,
        summary_from_caller=overrides.summary is not None or recovery is not None,
        target=target_agent,
    )
    package = HandoffPackage(
        id=handoff_id,
        source_agent=request.source_agent,
        target_agent=target_agent,
        timestamp=created,
        state=composed.state,
        context=PackageContext(
            recent_files=composed.recent_files,
            git_hash=handoff.workspace.head,
            session_number=position.number.value,
        ),
        summary=composed.summary,
        handoff_type=request.handoff_type,
        project=ctx.scope.project,
        workspace=str(ws),
        previous_id=position.previous_id,
        recovery=recovery,
        provenance={
            **composed.provenance,
            "context.git_hash": "git",
            "context.session_number": position.number.source,
        },
        handoff=handoff,
        warnings=position.warnings,
    )
    # redacted once, here, before anything is cut: a secret cut in two is no longer found
    package = build.redact_package(package)
    package = _compacted(package, budget_chars(request.budget, request.max_tokens))
    if request.handoff_type == "parallel":
        children = _split(package, request.targets, request.worktrees, request.worktree_root)
        package = package.model_copy(update={"children": children})
    return package.model_copy(update={"fingerprint": fingerprint(ws)}).sealed()


def _handoff(
    ctx: ProjectContext,
    request: PrepareRequest,
    start: Start,
    handoff_id: str,
    created: str,
    features: FeatureList | None,
    number: int,
) -> Handoff:
    """The package's full handoff: the session's under a new id, or for a recovery the
    stored one on today's workspace, or one built from the project files alone."""
    from passdown._workspace import snapshot

    if start.handoff is not None and start.recovery is None:
        return start.handoff.model_copy(update={"id": handoff_id, "created_at": created})
    snap = snapshot(ctx.workspace)
    if start.handoff is not None:
        handoff = start.handoff.model_copy(
            deep=True,
            update={
                "id": handoff_id,
                "created_at": created,
                "workspace": snap,
            },
        )
    else:
        handoff = build.synthetic_handoff(
            id=handoff_id,
            created_at=created,
            source_agent=request.source_agent,
            session_label=f"session-{number}",
            workspace=ctx.workspace,
            snapshot=snap,
            features=features,
            request=request.overrides.request,
        )
    if start.recovery is not None:
        handoff.source.agent = request.source_agent
        handoff.warnings.append(
            f"recovery from {start.recovery.from_id}: " + _recovery_summary(start.recovery, "")
        )
    return handoff


def _compacted(package: HandoffPackage, budget: int) -> HandoffPackage:
    assert package.handoff is not None  # assemble always builds one
    extra = [package.summary, *package.state.completed_features]
    # long texts shortened only now, after redaction, as `pipeline.build_handoff` does
    handoff, report = compact(shorten_texts(package.handoff), budget, extra=extra)
    return package.model_copy(update={"handoff": handoff, "compaction": report})


def _recovery_summary(info: RecoveryInfo, previous: str) -> str:
    text = (
        f"Recovery from {info.from_id}: {len(info.commits_since)} commit(s) and "
        f"{len(info.files_changed)} changed file(s) since it was prepared."
    )
    return f"{text} Its summary: {previous}" if previous else text


def _split(
    package: HandoffPackage,
    targets: list[str],
    worktrees: bool,
    root: str | os.PathLike[str] | None,
) -> list[ChildRef]:
    """Next steps dealt round-robin to the targets: disjoint, none lost. A target with
    nothing to do gets no child."""
    steps = package.state.next_steps
    if not steps:
        raise UsageError(
            "a parallel handoff needs next steps to split (none were derived or given)"
        )
    groups: list[list[str]] = [[] for _ in targets]
    for i, step in enumerate(steps):
        groups[i % len(targets)].append(step)
    ws = Path(package.workspace or ".")
    base = Path(root) if root else ws.parent / f"{ws.name}-worktrees"
    tag = package.id.rsplit("-", 1)[-1][:8]
    refs = []
    for n, (target, group) in enumerate(zip(targets, groups, strict=True), start=1):
        if not group:
            continue
        child_id = f"{package.id}-p{n}"
        refs.append(
            ChildRef(
                id=child_id,
                target_agent=target,
                assignment=group,
                branch=f"passdown/{tag}-{n}-{target}" if worktrees else None,
                worktree=str(base / f"{tag}-{n}-{target}") if worktrees else None,
            )
        )
    return refs
