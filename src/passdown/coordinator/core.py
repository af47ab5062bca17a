"""`HandoffCoordinator`: the Python API harnesses call, and the engine under the CLI.

It adds no second pipeline: a session is read with `pipeline.select_session` +
`pipeline.build_handoff`, files are written with `pipeline.write_handoff`, the target
is started with `pipeline.launch_spec_for` + `launch.run`. The coordinator adds the
project files, caller overrides, compaction, checks, the store lifecycle and the four
handoff types on top. The CLI, the hooks and the MCP server come in through
`coordinator.doors`, so every door prepares and publishes the same way.

The blocking work lives in the `*_sync` methods; the async methods run them in a
worker thread, so harnesses with an event loop never block it and scripts without one
call the `*_sync` twins directly.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from passdown import pipeline
from passdown.coordinator import build
from passdown.coordinator.checks import (
    CheckResult,
    coerce_package,
    differences,
    fingerprint,
    run_checks,
)
from passdown.coordinator.compact import budget_chars, compact
from passdown.coordinator.errors import HandoffNotFound
from passdown.coordinator.lifecycle import Lifecycle, StatusEvent
from passdown.coordinator.package import (
    HANDOFF_TYPES,
    ChildRef,
    HandoffPackage,
    HandoffType,
    PackageContext,
    RecoveryInfo,
)
from passdown.coordinator.project_files import read_feature_list, read_progress
from passdown.errors import RecordNotFound, SessionNotFound, StoreError, UsageError
from passdown.extract import DEFAULT_MAX_CHARS, DEFAULT_MAX_MESSAGES
from passdown.handoff_record import package_from_record

if TYPE_CHECKING:
    from passdown.coordinator.execute import ExecuteResult
    from passdown.handoff import Handoff
    from passdown.records import Scope
    from passdown.store import ScopeLike, Store

class Verification:
    """What `verify` found: the checks, and how the live workspace differs from the package."""

    def __init__(self, package_id: str, checks: list[CheckResult], diffs: list[str]) -> None:
        self.package_id = package_id
        self.checks = checks
        self.differences = diffs

    @property
    def ok(self) -> bool:
        return not any(c.blocking for c in self.checks)

    def __repr__(self) -> str:
        return f"Verification({self.package_id!r}, ok={self.ok}, differences={self.differences!r})"


class HandoffCoordinator:
    """Prepare, execute, load and verify handoffs for one project.

    `store`: None opens the default store (`$PASSDOWN_STORE`, config, or SQLite in the
    data folder) on first use; a URL opens that store; a `Store` is used as is (and not
    closed here); False works without a store (no lifecycle, no history).
    """

    def __init__(
        self,
        project_dir: str | os.PathLike[str] = ".",
        store: Store | str | Literal[False] | None = None,
        *,
        scope: ScopeLike | None = None,
        identity: str | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_tokens: int | None = None,
    ) -> None:
        from passdown.records import default_project

        self.workspace = pipeline.workspace_for(Path(project_dir))
        self.scope: Scope = _scope(scope or default_project(self.workspace))
        self.identity = identity or f"passdown@{socket.gethostname()}:{os.getpid()}"
        self.options = pipeline.ExportOptions(max_messages=max_messages, max_chars=max_chars)
        self.options.validate()
        self.max_tokens = max_tokens
        self._store_arg = store
        self._store: Store | None = store if not isinstance(store, (str, bool)) and store is not None else None
        self._owns_store = False

    # -- store ---------------------------------------------------------------------------------
    @property
    def has_store(self) -> bool:
        return self._store_arg is not False

    def store(self) -> Store:
        """The store, opened on first use; StoreError when this coordinator has none."""
        if self._store is None:
            if self._store_arg is False:
                raise StoreError("this coordinator was created without a store (store=False)")
            from passdown.store import open_store

            self._store = open_store(self._store_arg if isinstance(self._store_arg, str) else None)
            self._owns_store = True
        return self._store

    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self.store(), self.scope)

    def close(self) -> None:
        if self._owns_store and self._store is not None:
            self._store.close()
            self._store = None
            self._owns_store = False

    def __enter__(self) -> HandoffCoordinator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> HandoffCoordinator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- prepare -------------------------------------------------------------------------------
    async def prepare_handoff(
        self, source_agent: str, summary: str | None = None, handoff_type: HandoffType = "session",
        target_agent: str | None = None, session: str | None = None, **options: Any,
    ) -> HandoffPackage:
        """Build, compact, redact and seal a package; nothing is written or stored.
        Keyword options are those of `prepare_handoff_sync`."""
        return await asyncio.to_thread(
            self.prepare_handoff_sync, source_agent, summary, handoff_type, target_agent, session, **options
        )

    def prepare_handoff_sync(
        self,
        source_agent: str,
        summary: str | None = None,
        handoff_type: HandoffType = "session",
        target_agent: str | None = None,
        session: str | None = None,
        *,
        current_feature: str | None = None,
        completed_features: list[str] | None = None,
        blockers: list[str] | None = None,
        next_steps: list[str] | None = None,
        recent_files: list[str] | None = None,
        request: str | None = None,
        session_number: int | None = None,
        targets: list[str] | None = None,
        worktrees: bool = False,
        worktree_root: str | os.PathLike[str] | None = None,
        require_session: bool = False,
        max_chars: int | None = None,
        max_messages: int | None = None,
        selection: pipeline.Selection | None = None,
    ) -> HandoffPackage:
        if handoff_type not in HANDOFF_TYPES:
            raise UsageError(f"unknown handoff type {handoff_type!r}: expected one of {', '.join(HANDOFF_TYPES)}")
        if handoff_type == "parallel" and not targets:
            raise UsageError("a parallel handoff needs targets=[...] (one agent per child)")
        options = pipeline.ExportOptions(
            max_messages=max_messages or self.options.max_messages,
            max_chars=max_chars or self.options.max_chars,
            target_agent=target_agent,
        )
        options.validate()
        overrides = build.Overrides(
            summary=summary, current_feature=current_feature, completed_features=completed_features,
            blockers=blockers, next_steps=next_steps, recent_files=recent_files, request=request,
        )
        if handoff_type == "recovery":
            base_handoff, base, recovery = self._recovery_base(source_agent)
        else:
            # the session first: an unreadable one fails before the store is even opened
            base_handoff = self._read_session(source_agent, session, require_session, options, selection)
            base, recovery = None, None
            if base_handoff is not None:
                state, files = build.base_state(base_handoff)
                base = ("session", state, files, base_handoff.task.latest_progress)
        if base_handoff is not None and handoff_type != "recovery":
            source_agent = base_handoff.source.agent  # "auto" -> the agent it picked
        count, previous_id, warnings = self._store_context()
        number = session_number or count + 1
        number_source = "caller" if session_number else "store" if self.has_store else "none"
        return self._assemble(
            source_agent=source_agent, handoff_type=handoff_type, target_agent=target_agent,
            overrides=overrides, base_handoff=base_handoff, base=base, recovery=recovery,
            number=(number, number_source), previous_id=previous_id, warnings=warnings, budget=options.max_chars,
            targets=targets, worktrees=worktrees, worktree_root=worktree_root,
        )

    def _store_context(self) -> tuple[int, str | None, list[str]]:
        """(earlier handoffs in scope, the active handoff's id, warnings)."""
        if not self.has_store:
            return 0, None, []
        try:
            store = self.store()
            return _count_handoffs(store, self.scope), self.lifecycle().active(), []
        except StoreError as exc:
            return 0, None, [f"the store could not be read ({exc.message}); session_number starts at 1"]

    def _read_session(
        self, source_agent: str, session: str | None, require: bool, options: pipeline.ExportOptions,
        selection: pipeline.Selection | None = None,
    ) -> Handoff | None:
        """The source agent's session through the core pipeline, or None when passdown
        does not read that agent or it has no session here (unless one is required).
        `selection`: the session a door already picked (`passdown.coordinator.doors`)."""
        from passdown.agents import load_agents

        if selection is not None:
            return pipeline.build_handoff(selection, options)
        if source_agent != "auto" and source_agent not in load_agents():
            if require or session:
                pipeline.source_agents(source_agent)  # raises UnknownAgent
            return None
        try:
            selection = pipeline.select_session(source_agent, session, self.workspace)
        except SessionNotFound:
            if require or session:
                raise
            return None
        return pipeline.build_handoff(selection, options)

    def _recovery_base(self, source_agent: str) -> tuple[Handoff | None, tuple[str, Any, list[str], str | None], RecoveryInfo]:
        from passdown import workspace as git

        head, _ = git.git_head(self.workspace)
        for pkg in self.history(limit=200):
            if pkg.parent_id or pkg.status == "rejected":
                continue
            commit = pkg.context.git_hash
            if (head and commit and git.is_ancestor(self.workspace, commit, head)) or (not head and not commit):
                info = RecoveryInfo(
                    from_id=pkg.id, from_git_hash=commit,
                    commits_since=git.commits_since(self.workspace, commit) if commit else [],
                    files_changed=git.files_differing_from(self.workspace, commit) if commit else [],
                )
                recent = list(dict.fromkeys([*pkg.context.recent_files, *info.files_changed]))
                return pkg.handoff, (f"recovered:{pkg.id}", pkg.state, recent, pkg.summary), info
        raise HandoffNotFound(
            f"no stored handoff in project {self.scope.project!r} to recover from "
            "(none whose commit is an ancestor of HEAD)"
        )

    def _assemble(
        self, *, source_agent: str, handoff_type: HandoffType, target_agent: str | None,
        overrides: build.Overrides, base_handoff: Handoff | None,
        base: tuple[str, Any, list[str], str | None] | None, recovery: RecoveryInfo | None,
        number: tuple[int, str], previous_id: str | None, warnings: list[str], budget: int,
        targets: list[str] | None, worktrees: bool, worktree_root: str | os.PathLike[str] | None,
    ) -> HandoffPackage:
        from passdown.workspace import files_changed_since, snapshot

        ws = self.workspace
        number, number_source = number
        features, progress = read_feature_list(ws), read_progress(ws)
        git_files = files_changed_since(ws, None) if base is None else None
        composed = build.compose(base, features, progress, overrides, git_files=git_files)
        if recovery is not None and overrides.summary is None:
            composed.summary = _recovery_summary(recovery, composed.summary)
            composed.provenance["summary"] = f"recovered:{recovery.from_id}"
        if handoff_type == "session" and target_agent is None:
            target_agent = source_agent
        handoff_id, created = pipeline.new_handoff_id(), pipeline.now_iso()
        if base_handoff is None or recovery is not None:
            snap = snapshot(ws)
            handoff = base_handoff.model_copy(deep=True, update={
                "id": handoff_id, "created_at": created, "workspace": snap,
            }) if base_handoff is not None else build.synthetic_handoff(
                id=handoff_id, created_at=created, source_agent=source_agent,
                session_label=f"session-{number}", workspace=ws, snapshot=snap,
                features=features, request=overrides.request,
            )
            if recovery is not None:
                handoff.source.agent = source_agent
                handoff.warnings.append(f"recovery from {recovery.from_id}: " + _recovery_summary(recovery, ""))
        else:
            handoff = base_handoff.model_copy(update={"id": handoff_id, "created_at": created})
        handoff = build.apply_to_handoff(
            handoff, composed, features=features, summary_from_caller=overrides.summary is not None or recovery is not None,
            target=target_agent,
        )
        extra = [composed.summary, *(composed.state.completed_features or [])]
        handoff, report = compact(handoff, budget_chars(budget, self.max_tokens), extra=extra)
        package = HandoffPackage(
            id=handoff_id, source_agent=source_agent, target_agent=target_agent, timestamp=created,
            state=composed.state,
            context=PackageContext(recent_files=composed.recent_files, git_hash=handoff.workspace.head,
                                   session_number=number),
            summary=composed.summary, handoff_type=handoff_type, project=self.scope.project,
            workspace=str(ws), previous_id=previous_id, recovery=recovery,
            provenance={**composed.provenance, "context.git_hash": "git",
                        "context.session_number": number_source},
            compaction=report, handoff=handoff, warnings=warnings,
        )
        package = _redacted(package)
        if handoff_type == "parallel":
            package = package.model_copy(update={"children": _split(package, targets or [], worktrees, worktree_root)})
        return package.model_copy(update={"fingerprint": fingerprint(ws)}).sealed()

    # -- execute -------------------------------------------------------------------------------
    async def execute_handoff(
        self, package: HandoffPackage | Mapping[str, Any], target_agent: str | None = None, **options: Any
    ) -> ExecuteResult:
        """Check, store, publish, write and (optionally) launch. Options: see `execute_handoff_sync`."""
        return await asyncio.to_thread(self.execute_handoff_sync, package, target_agent, **options)

    def execute_handoff_sync(
        self, package: HandoffPackage | Mapping[str, Any], target_agent: str | None = None, **options: Any
    ) -> ExecuteResult:
        from passdown.coordinator.execute import execute

        return execute(self, package, target_agent, **options)

    async def launch_handoff(self, package: HandoffPackage, **options: Any) -> ExecuteResult:
        return await asyncio.to_thread(self.launch_handoff_sync, package, **options)

    def launch_handoff_sync(
        self, package: HandoffPackage, *, interactive: bool = False, env: Mapping[str, str] | None = None
    ) -> ExecuteResult:
        """Start the package's target agent on the takeover prompt, at most once per
        package: for harnesses that publish with `launch=False`, then claim and launch
        from the target side."""
        from passdown.coordinator.execute import launch_only

        return launch_only(self, package, interactive=interactive, env=env)

    def write(self, package: HandoffPackage, out_dir: Path | None = None) -> pipeline.WrittenHandoff:
        """HANDOFF.md and handoff.json for the package (no store, no lifecycle)."""
        from passdown.coordinator.execute import write_files

        return write_files(self, package, out_dir)

    def export_sync(
        self, package: HandoffPackage, out_dir: Path | None = None, *, store: bool = True
    ) -> pipeline.WrittenHandoff:
        """`passdown export`: store and publish the package, then write the files. A store
        failure does not lose the handoff (the files are written): it becomes a warning.
        A lost race for the active handoff (HandoffConflict) writes nothing and is raised,
        so the caller can prepare again on top of the winner."""
        from passdown.coordinator.errors import HandoffConflict
        from passdown.coordinator.execute import publish

        warnings: list[str] = []
        stored = False
        if store and self.has_store:
            try:
                publish(self, package)
                stored = True
            except HandoffConflict:
                raise
            except StoreError as exc:
                warnings.append(f"the handoff was written but not stored: {exc.message}")
        written = self.write(package, out_dir)
        written.warnings.extend(warnings)
        written.record_id = package.id if stored else None
        return written

    # -- the target side -------------------------------------------------------------------------
    def load_handoff(self, id: str | None = None) -> HandoffPackage:
        """The stored package `id`, or the project's active handoff; its status is current."""
        lc = self.lifecycle()
        wanted = id or lc.active()
        if wanted is None:
            raise HandoffNotFound(f"no active handoff in project {self.scope.project!r}")
        try:
            record = self.store().retrieve(self.scope, wanted)
        except RecordNotFound:
            raise HandoffNotFound(f"no handoff {wanted!r} in project {self.scope.project!r}") from None
        return self._with_status(package_from_record(record), lc)

    async def verify(self, package: HandoffPackage | Mapping[str, Any]) -> Verification:
        return await asyncio.to_thread(self.verify_sync, package)

    def verify_sync(self, package: HandoffPackage | Mapping[str, Any]) -> Verification:
        """Reconcile the package with the live workspace: every check, and the differences
        (HEAD, branch, changed files, features that changed state) since it was prepared."""
        model, _ = coerce_package(package)
        checks = run_checks(package, self.workspace, previous=self._previous(model))
        if model is None:
            return Verification(str(dict(package).get("id", "?")) if isinstance(package, Mapping) else "?", checks, [])
        now = fingerprint(self.workspace)
        diffs = differences(model.fingerprint, now) if model.fingerprint else []
        diffs += _feature_differences(model, self.workspace)
        return Verification(model.id, checks, diffs)

    def validate(self, package: HandoffPackage | Mapping[str, Any]) -> list[CheckResult]:
        model, _ = coerce_package(package)
        return run_checks(package, self.workspace, previous=self._previous(model))

    def claim(self, package: HandoffPackage | str | None = None, *, by: str | None = None) -> HandoffPackage:
        """The target takes the handoff: published -> claimed."""
        return self._move(package, "claimed", by, None)

    def complete(self, package: HandoffPackage | str | None = None, *, by: str | None = None, note: str | None = None) -> HandoffPackage:
        return self._move(package, "completed", by, note)

    def reject(self, package: HandoffPackage | str | None = None, *, by: str | None = None, reason: str | None = None) -> HandoffPackage:
        return self._move(package, "rejected", by, reason)

    def _move(self, package: HandoffPackage | str | None, to: Any, by: str | None, note: str | None) -> HandoffPackage:
        pkg = package if isinstance(package, HandoffPackage) else self.load_handoff(package)
        lc = self.lifecycle()
        lc.transition(pkg.id, to, by=by or self.identity, note=note)
        return self._with_status(pkg, lc)

    def status(self, package_id: str) -> StatusEvent | None:
        return self.lifecycle().current(package_id)

    def events(self, package_id: str) -> list[StatusEvent]:
        """Every lifecycle transition of a package, with who and when, oldest first."""
        return self.lifecycle().events(package_id)

    # -- history and memory ----------------------------------------------------------------------
    def history(self, limit: int | None = 50, *, text: str | None = None) -> list[HandoffPackage]:
        """The project's handoffs, newest first, each with its current status; `text`
        searches titles, summaries and HANDOFF.md (the memory manager's recall)."""
        lc = self.lifecycle()
        return [self._with_status(p, lc) for p in self._iter_packages(limit, text)]

    def recall(self, text: str, limit: int = 10) -> list[HandoffPackage]:
        return self.history(limit, text=text)

    def _iter_packages(self, limit: int | None, text: str | None) -> Iterator[HandoffPackage]:
        store, cursor, seen = self.store(), None, 0
        while limit is None or seen < limit:
            page = store.query(self.scope, type="handoff", text=text, limit=min(limit or 1000, 1000), cursor=cursor)
            for record in page.records:
                try:
                    pkg = package_from_record(record)
                except StoreError:
                    continue  # a foreign record that is no package
                seen += 1
                yield pkg
                if limit is not None and seen >= limit:
                    return
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _with_status(self, pkg: HandoffPackage, lc: Lifecycle) -> HandoffPackage:
        event = lc.current(pkg.id)
        return pkg.model_copy(update={"status": event.status}) if event else pkg

    def _previous(self, pkg: HandoffPackage | None) -> HandoffPackage | None:
        if pkg is None or not pkg.previous_id or not self.has_store:
            return None
        try:
            return package_from_record(self.store().retrieve(self.scope, pkg.previous_id))
        except StoreError:
            return None

    # -- session manager -----------------------------------------------------------------------
    async def on_threshold(
        self, source_agent: str, usage: float, *, limit: float | None = None, threshold: float = 0.8,
        summary: str | None = None, execute: bool = False, target_agent: str | None = None,
        **options: Any,
    ) -> HandoffPackage | None:
        """Called by a harness as context or usage grows: below `threshold` (a fraction of
        `limit`, or of 1 when `usage` is already a fraction) nothing happens; at or above
        it a session handoff is prepared and, with `execute=True`, executed (published and,
        for a passdown agent, launched unless `launch=False` is passed)."""
        return await asyncio.to_thread(
            self.on_threshold_sync, source_agent, usage, limit=limit, threshold=threshold,
            summary=summary, execute=execute, target_agent=target_agent, **options,
        )

    def on_threshold_sync(
        self, source_agent: str, usage: float, *, limit: float | None = None, threshold: float = 0.8,
        summary: str | None = None, execute: bool = False, target_agent: str | None = None,
        **options: Any,
    ) -> HandoffPackage | None:
        ratio = usage / limit if limit else usage
        if ratio < threshold:
            return None
        execute_options = {k: options.pop(k) for k in list(options) if k in _EXECUTE_OPTIONS}
        package = self.prepare_handoff_sync(source_agent, summary, "session", target_agent, **options)
        if not execute:
            return package
        return self.execute_handoff_sync(package, target_agent, **execute_options).package


_EXECUTE_OPTIONS = frozenset({"launch", "interactive", "force", "out_dir", "env"})


def _scope(scope: ScopeLike) -> Scope:
    from pydantic import ValidationError

    from passdown.records import Scope, invalid_from

    if isinstance(scope, Scope):
        return scope
    try:
        return Scope.model_validate({"project": scope} if isinstance(scope, str) else dict(scope))
    except ValidationError as exc:
        raise invalid_from(exc, "scope") from exc


def _count_handoffs(store: Store, scope: Scope) -> int:
    count, cursor = 0, None
    while True:
        page = store.query(scope, type="handoff", limit=1000, cursor=cursor)
        count += len(page.records)
        if page.next_cursor is None:
            return count
        cursor = page.next_cursor


def _redacted(package: HandoffPackage) -> HandoffPackage:
    """Redact every string of the package (caller values too), keeping the handoff's
    own redaction findings and adding what this pass found."""
    data, findings = build.redact_package_data(package.model_dump(mode="json", exclude={"fingerprint", "integrity"}))
    if package.handoff is not None:
        merged = dict(package.handoff.redaction.findings)
        for kind, n in findings.items():
            merged[kind] = merged.get(kind, 0) + n
        data["handoff"]["redaction"] = {"applied": True, "findings": dict(sorted(merged.items()))}
    return HandoffPackage.model_validate(data)


def _recovery_summary(info: RecoveryInfo, previous: str) -> str:
    text = (f"Recovery from {info.from_id}: {len(info.commits_since)} commit(s) and "
            f"{len(info.files_changed)} changed file(s) since it was prepared.")
    return f"{text} Its summary: {previous}" if previous else text


def _split(package: HandoffPackage, targets: list[str], worktrees: bool, root: str | os.PathLike[str] | None) -> list[ChildRef]:
    """Next steps dealt round-robin to the targets: disjoint, none lost. A target with
    nothing to do gets no child."""
    steps = package.state.next_steps
    if not steps:
        raise UsageError("a parallel handoff needs next steps to split (none were derived or given)")
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
        refs.append(ChildRef(
            id=child_id, target_agent=target, assignment=group,
            branch=f"passdown/{tag}-{n}-{target}" if worktrees else None,
            worktree=str(base / f"{tag}-{n}-{target}") if worktrees else None,
        ))
    return refs


def _feature_differences(pkg: HandoffPackage, workspace: Path) -> list[str]:
    features = read_feature_list(workspace)
    if features is None or features.error:
        return []
    then, now = set(pkg.state.completed_features), set(features.completed)
    out = [f"feature {f} now passes" for f in sorted(now - then)]
    out += [f"feature {f} no longer passes" for f in sorted(then - now) if f in features.by_id()]
    return out
