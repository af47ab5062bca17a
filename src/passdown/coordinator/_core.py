"""`HandoffCoordinator`: the Python API harnesses call, and the engine under the CLI.

It reads as the seed's API (prepare_handoff, execute_handoff, load_handoff, verify,
claim, complete, reject, history) on top of smaller parts, each taking the project's
`ProjectContext` (workspace, scope, identity, store) explicitly:

- `prepare`: read the base (a session through `pipeline.select_session` +
  `pipeline.build_handoff`, or a stored package), add the project files and the caller's
  values, compact, redact, seal;
- `execute`: check, store, publish, write (`pipeline.write_handoff`), launch
  (`pipeline.launch_spec_for` + `launch.run`), by handoff type;
- `checks`, `lifecycle`: validation, and status and pointers in the store.

The CLI, the hooks and the MCP server come in through `coordinator.doors`, so every
door prepares and publishes the same way.

The blocking work lives in the `*_sync` methods; each async method runs its twin in a
worker thread (same signature), so harnesses with an event loop never block it and
scripts without one call the `*_sync` twins directly.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from passdown import _pipeline as pipeline
from passdown._extract import DEFAULT_MAX_CHARS, DEFAULT_MAX_MESSAGES
from passdown._handoff_package import HANDOFF_TYPES, HandoffPackage, HandoffType
from passdown._handoff_record import package_from_record
from passdown._package_status import LifecycleStatus
from passdown.coordinator import _build as build
from passdown.coordinator import _execute as execute
from passdown.coordinator import _prepare as prepare
from passdown.coordinator._checks import (
    CheckResult,
    coerce_package,
    differences,
    fingerprint,
    run_checks,
)
from passdown.coordinator._context import ProjectContext
from passdown.coordinator._execute import ExecuteOptions, ExecuteResult, OnLaunch
from passdown.coordinator._lifecycle import Lifecycle, StatusEvent
from passdown.coordinator._project_files import read_feature_list
from passdown.errors import HandoffNotFound, RecordNotFound, UsageError
from passdown.handoff import Limits

if TYPE_CHECKING:
    from passdown._checkpoint_writes import PendingCheckpoint
    from passdown.records import Scope
    from passdown.store import ScopeLike, Store

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _in_thread(
    sync: Callable[Concatenate[HandoffCoordinator, _P], _R],
) -> Callable[Concatenate[HandoffCoordinator, _P], Coroutine[Any, Any, _R]]:
    """The async twin of a `*_sync` method: the same signature, run in a worker thread."""

    async def twin(self: HandoffCoordinator, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        import asyncio  # here: 25 ms of start-up that the CLI's sync doors never use

        return await asyncio.to_thread(sync, self, *args, **kwargs)

    return functools.wraps(sync)(twin)  # type: ignore[return-value]  # _Wrapped is that callable


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

    `limits`: the handoff's budgets, as the CLI's `--max-plan-items`, `--max-files`, ...
    `--max-doc-chars` options set them. A `passdown.handoff.Limits` is used whole; a
    mapping of some of its keys (`{"max_plan_items": 5}`) goes over the `[handoff]`
    table of config.toml, then the defaults, as options given on the command line do;
    None: config.toml's, else the defaults. A bad key or value is a `UsageError` here.
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
        limits: Limits | Mapping[str, int] | None = None,
    ) -> None:
        from passdown.records import default_project

        workspace = pipeline.workspace_for(Path(project_dir))
        self.context = ProjectContext(
            workspace,
            _scope(scope or default_project(workspace)),
            identity or f"passdown@{socket.gethostname()}:{os.getpid()}",
            store,
        )
        self.options = pipeline.ExportOptions(
            max_messages=max_messages, max_chars=max_chars, limits=_budgets(limits)
        )
        self.options.validate()
        self.max_tokens = max_tokens

    # -- the project and its store ---------------------------------------------------------------
    @property
    def workspace(self) -> Path:
        return self.context.workspace

    @property
    def scope(self) -> Scope:
        return self.context.scope

    @property
    def identity(self) -> str:
        return self.context.identity

    @property
    def has_store(self) -> bool:
        return self.context.has_store

    def store(self) -> Store:
        """The store, opened on first use; StoreError when this coordinator has none."""
        return self.context.store()

    def lifecycle(self) -> Lifecycle:
        return self.context.lifecycle()

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> HandoffCoordinator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> HandoffCoordinator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- prepare -------------------------------------------------------------------------------
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
        """Build, compact, redact and seal a package; nothing is written or stored.

        The base is the source agent's session (`session`: an id, prefix or path; None:
        the workspace's newest; `require_session` fails when there is none), or for a
        recovery the newest stored package whose commit is an ancestor of HEAD. The
        keyword values override what passdown derives (see `provenance`)."""
        if handoff_type not in HANDOFF_TYPES:
            raise UsageError(
                f"unknown handoff type {handoff_type!r}: expected one of {', '.join(HANDOFF_TYPES)}"
            )
        if handoff_type == "parallel" and not targets:
            raise UsageError("a parallel handoff needs targets=[...] (one agent per child)")
        options = pipeline.ExportOptions(
            max_messages=max_messages or self.options.max_messages,
            max_chars=max_chars or self.options.max_chars,
            target_agent=target_agent,
            limits=self.options.limits,
        )
        options.validate()
        from passdown._checkpoint_writes import deferred

        checkpoints: list[PendingCheckpoint] = []
        if handoff_type == "recovery":
            start = prepare.recovery_start(self.context)
        else:
            # the session first: an unreadable one fails before the store is even opened;
            # its checkpoint is written only when this package is exported
            with deferred() as checkpoints:
                start = prepare.session_start(
                    self.context,
                    source_agent,
                    session,
                    require=require_session,
                    options=options,
                    selection=selection,
                )
            if start.handoff is not None:
                source_agent = start.handoff.source.agent  # "auto" -> the agent it picked
        wanted = prepare.PrepareRequest(
            source_agent=source_agent,
            handoff_type=handoff_type,
            target_agent=target_agent,
            overrides=build.Overrides(
                summary=summary,
                current_feature=current_feature,
                completed_features=completed_features,
                blockers=blockers,
                next_steps=next_steps,
                recent_files=recent_files,
                request=request,
            ),
            budget=options.max_chars,
            max_tokens=self.max_tokens,
            targets=list(targets or []),
            worktrees=worktrees,
            worktree_root=worktree_root,
        )
        package = prepare.assemble(
            self.context, wanted, start, prepare.store_position(self.context, session_number)
        )
        self.context.hold_checkpoints(package.id, checkpoints)
        return package

    prepare_handoff = _in_thread(prepare_handoff_sync)

    # -- execute -------------------------------------------------------------------------------
    def execute_handoff_sync(
        self,
        package: HandoffPackage | Mapping[str, Any],
        target_agent: str | None = None,
        *,
        launch: bool | None = None,
        interactive: bool = False,
        force: bool = False,
        out_dir: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
        store: bool = True,
        require_store: bool = True,
        env: Mapping[str, str] | None = None,
        on_launch: OnLaunch | None = None,
    ) -> ExecuteResult:
        """Check (errors block unless `force`), store, publish, write and launch; see
        `coordinator.execute.execute` for each handoff type and option."""
        opts = ExecuteOptions(
            launch=launch,
            interactive=interactive,
            force=force,
            out_dir=Path(out_dir) if out_dir else None,
            dry_run=dry_run,
            store=store,
            require_store=require_store,
            env=env,
            on_launch=on_launch,
        )
        return execute.execute(self.context, package, target_agent, opts)

    execute_handoff = _in_thread(execute_handoff_sync)

    def launch_handoff_sync(
        self,
        package: HandoffPackage,
        *,
        interactive: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> ExecuteResult:
        """Start the package's target agent on the takeover prompt, at most once per
        package: for harnesses that publish with `launch=False`, then claim and launch
        from the target side."""
        return execute.launch_only(self.context, package, interactive=interactive, env=env)

    launch_handoff = _in_thread(launch_handoff_sync)

    def write(
        self, package: HandoffPackage, out_dir: Path | None = None
    ) -> pipeline.WrittenHandoff:
        """HANDOFF.md and handoff.json for the package (no store, no lifecycle), written
        as an export writes them (all or nothing; the session's checkpoint moves on)."""
        return execute.publish_and_write(self.context, package, out_dir, store=False)

    def export_sync(
        self,
        package: HandoffPackage,
        out_dir: Path | None = None,
        *,
        store: bool = True,
        if_changed: bool = False,
    ) -> pipeline.WrittenHandoff:
        """`passdown export`: stage the files, store and publish the package, then make
        the files visible (`execute.publish_and_write`). Any failure (a read-only or
        full disk, the store, a handoff too large for it) is raised and changes nothing:
        the store, the active handoff, its files and the session's checkpoint stay as
        they were. A lost race for the active handoff (HandoffConflict) is raised too,
        so the caller can prepare again on top of the winner. With `if_changed` (as
        `passdown export`, the hooks and MCP `prepare_handoff` call it), a package that
        says what the active handoff says (apart from ids and times) is not stored: the
        result names the active one (`unchanged_since`, `record_id`), whose status
        stays as it is, and its files are written where missing."""
        return execute.publish_and_write(
            self.context, package, out_dir, store=store and self.has_store, if_changed=if_changed
        )

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
            raise HandoffNotFound(
                f"no handoff {wanted!r} in project {self.scope.project!r}"
            ) from None
        return self.context.with_status(package_from_record(record), lc)

    def verify_sync(self, package: HandoffPackage | Mapping[str, Any]) -> Verification:
        """Reconcile the package with the live workspace: every check, and the differences
        (HEAD, branch, changed files, features that changed state) since it was prepared."""
        model, _ = coerce_package(package)
        checks = run_checks(package, self.workspace, previous=self.context.previous(model))
        if model is None:
            return Verification(
                str(dict(package).get("id", "?")) if isinstance(package, Mapping) else "?",
                checks,
                [],
            )
        now = fingerprint(self.workspace)
        diffs = differences(model.fingerprint, now) if model.fingerprint else []
        diffs += _feature_differences(model, self.workspace)
        return Verification(model.id, checks, diffs)

    verify = _in_thread(verify_sync)

    def validate(self, package: HandoffPackage | Mapping[str, Any]) -> list[CheckResult]:
        model, _ = coerce_package(package)
        return run_checks(package, self.workspace, previous=self.context.previous(model))

    def claim(
        self, package: HandoffPackage | str | None = None, *, by: str | None = None
    ) -> HandoffPackage:
        """The target takes the handoff: published -> claimed."""
        return self._move(package, "claimed", by, None)

    def complete(
        self,
        package: HandoffPackage | str | None = None,
        *,
        by: str | None = None,
        note: str | None = None,
    ) -> HandoffPackage:
        return self._move(package, "completed", by, note)

    def reject(
        self,
        package: HandoffPackage | str | None = None,
        *,
        by: str | None = None,
        reason: str | None = None,
    ) -> HandoffPackage:
        return self._move(package, "rejected", by, reason)

    def _move(
        self,
        package: HandoffPackage | str | None,
        to: LifecycleStatus,
        by: str | None,
        note: str | None,
    ) -> HandoffPackage:
        pkg = package if isinstance(package, HandoffPackage) else self.load_handoff(package)
        lc = self.lifecycle()
        lc.transition(pkg.id, to, by=by or self.identity, note=note)
        return self.context.with_status(pkg, lc)

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
        return [self.context.with_status(p, lc) for p in self.context.packages(limit, text)]

    def recall(self, text: str, limit: int = 10) -> list[HandoffPackage]:
        return self.history(limit, text=text)

    # -- session manager -----------------------------------------------------------------------
    def on_threshold_sync(
        self,
        source_agent: str,
        usage: float,
        *,
        limit: float | None = None,
        threshold: float = 0.8,
        summary: str | None = None,
        execute: bool = False,
        target_agent: str | None = None,
        session: str | None = None,
        current_feature: str | None = None,
        completed_features: list[str] | None = None,
        blockers: list[str] | None = None,
        next_steps: list[str] | None = None,
        recent_files: list[str] | None = None,
        request: str | None = None,
        session_number: int | None = None,
        require_session: bool = False,
        max_chars: int | None = None,
        max_messages: int | None = None,
        launch: bool | None = None,
        interactive: bool = False,
        force: bool = False,
        out_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> HandoffPackage | None:
        """Called by a harness as context or usage grows: below `threshold` (a fraction of
        `limit`, or of 1 when `usage` is already a fraction) nothing happens; at or above
        it a session handoff is prepared (the keywords of `prepare_handoff_sync`) and, with
        `execute=True`, executed (published and, for a passdown agent, launched unless
        `launch=False`)."""
        ratio = usage / limit if limit else usage
        if ratio < threshold:
            return None
        package = self.prepare_handoff_sync(
            source_agent,
            summary,
            "session",
            target_agent,
            session,
            current_feature=current_feature,
            completed_features=completed_features,
            blockers=blockers,
            next_steps=next_steps,
            recent_files=recent_files,
            request=request,
            session_number=session_number,
            require_session=require_session,
            max_chars=max_chars,
            max_messages=max_messages,
        )
        if not execute:
            return package
        return self.execute_handoff_sync(
            package,
            target_agent,
            launch=launch,
            interactive=interactive,
            force=force,
            out_dir=out_dir,
            env=env,
        ).package

    on_threshold = _in_thread(on_threshold_sync)


def _budgets(given: Limits | Mapping[str, int] | None) -> Limits | None:
    """`HandoffCoordinator(limits=...)` as the budgets every export of it uses."""
    if given is None or isinstance(given, Limits):
        return given
    if not isinstance(given, Mapping):
        raise UsageError(
            f"limits must be a passdown.handoff.Limits or a mapping, not {type(given).__name__}"
        )
    from passdown._budgets import load_limits

    unknown = sorted(set(given) - set(Limits.model_fields))
    if unknown:
        raise UsageError(
            f"unknown handoff budget(s): {', '.join(map(str, unknown))}",
            hint=f"known: {', '.join(Limits.model_fields)}",
        )
    return load_limits(dict(given))


def _scope(scope: ScopeLike) -> Scope:
    from pydantic import ValidationError

    from passdown.records import Scope, invalid_from

    if isinstance(scope, Scope):
        return scope
    try:
        return Scope.model_validate({"project": scope} if isinstance(scope, str) else dict(scope))
    except ValidationError as exc:
        raise invalid_from(exc, "scope") from exc


def _feature_differences(pkg: HandoffPackage, workspace: Path) -> list[str]:
    features = read_feature_list(workspace)
    if features is None or features.error:
        return []
    then, now = set(pkg.state.completed_features), set(features.completed)
    out = [f"feature {f} now passes" for f in sorted(now - then)]
    out += [f"feature {f} no longer passes" for f in sorted(then - now) if f in features.by_id()]
    return out
