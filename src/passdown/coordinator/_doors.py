"""The one export path every door takes: select -> prepare -> stage -> publish -> write.

`passdown inspect` (prepare only), `export`, `switch`, the agent hooks, the MCP
`prepare_handoff` tool and the Python API all turn a session into a handoff through
`HandoffCoordinator.prepare_handoff_sync` (session, project files, caller values,
compaction, redaction) and publish it with `HandoffCoordinator.export_sync` or
`execute_handoff_sync` (`execute.publish_and_write`: the files staged, then the store,
lifecycle and the compare-and-swapped active pointer, then the files renamed in and the
session's checkpoint written; a failure at any step changes none of these). This
module only picks the session and its workspace for a door, with the store and scope
the door passes in, so the same session gives the same handoff whichever door asked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from passdown import _pipeline as pipeline
from passdown._extract import DEFAULT_MAX_CHARS, DEFAULT_MAX_MESSAGES
from passdown._git import one_view
from passdown._workspace import ask_ahead_for_export
from passdown.errors import UsageError

if TYPE_CHECKING:
    from passdown._handoff_package import HandoffPackage, HandoffType
    from passdown.coordinator._core import HandoffCoordinator
    from passdown.handoff import Limits
    from passdown.store import ScopeLike, Store

MAX_RACE_RETRIES = 3  # another export published first: prepare again on top of it


class HandoffRequest(msgspec.Struct):
    """What a door asks for; the same fields as `passdown export`'s options."""

    source: str = "auto"
    session: str | None = None  # id, id prefix or path; None: the workspace's newest
    target: str | None = None
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_chars: int = DEFAULT_MAX_CHARS
    workspace: Path | None = None  # `--workspace`: look for sessions and hand off there
    limits: Limits | None = None  # the handoff's budgets; None: config.toml's, else defaults

    def handoff_type(self, picked_agent: str) -> HandoffType:
        return "session" if self.target is not None and self.target == picked_agent else "agent"


class Prepared(msgspec.Struct):
    coordinator: HandoffCoordinator
    package: HandoffPackage
    selection: pipeline.Selection


def prepare(
    request: HandoffRequest,
    here: str | os.PathLike[str],
    *,
    store: Store | str | Literal[False] | None = None,
    scope: ScopeLike | None = None,
    confine: bool = False,
    identity: str | None = None,
) -> Prepared:
    """Pick the session and its workspace, and prepare its package; nothing is written
    or stored. `here` is where the door runs (the CLI's cwd, the hook payload's cwd, the
    MCP server's workspace); `confine` refuses a session of another workspace instead
    of handing it off into its own (the MCP server is bound to one workspace). The
    caller closes the returned coordinator (it owns the store only when it opened it).
    Git is asked about the workspace once (`passdown._git.one_view`)."""
    with one_view():
        return _prepare(request, here, store=store, scope=scope, confine=confine, identity=identity)


def _prepare(
    request: HandoffRequest,
    here: str | os.PathLike[str],
    *,
    store: Store | str | Literal[False] | None,
    scope: ScopeLike | None,
    confine: bool,
    identity: str | None,
) -> Prepared:
    from passdown.agents.base import cwd_in_workspace
    from passdown.coordinator._core import HandoffCoordinator

    if request.target is not None:
        pipeline.source_agents(request.target)  # unknown target: fail before reading anything
    if request.workspace is not None:
        here = checked_workspace(request.workspace)  # like `git -C DIR`: as if run there
    invoked_in = pipeline.workspace_for(Path(here))
    ask_ahead_for_export(invoked_in)  # git works while the agents load and the session is read
    selection = pipeline.select_session(request.source, request.session, invoked_in)
    if confine and not cwd_in_workspace(selection.ref.cwd, invoked_in):
        raise UsageError(
            f"session {selection.ref.session_id} did not run in this workspace ({invoked_in})"
        )
    pipeline.hand_off_into(selection, invoked_in, request.workspace)
    coordinator = HandoffCoordinator(
        selection.workspace,
        store,
        scope=scope,
        identity=identity,
        max_chars=request.max_chars,
        max_messages=request.max_messages,
    )
    coordinator.options.limits = request.limits
    try:
        package = coordinator.prepare_handoff_sync(
            request.source,
            None,
            request.handoff_type(selection.agent.name),
            request.target,
            request.session,
            require_session=True,
            selection=selection,
        )
    except BaseException:
        coordinator.close()
        raise
    return Prepared(coordinator, package, selection)


def checked_workspace(folder: Path) -> Path:
    """`--workspace DIR`: an existing folder, or exit 2 (before any session is looked for)."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        what = "no such folder" if not path.exists() else "not a folder"
        raise UsageError(
            f"--workspace {folder}: {what}",
            hint="--workspace names the folder to work in, as `git -C` does",
        )
    return path.absolute()


def export(
    request: HandoffRequest,
    here: str | os.PathLike[str],
    *,
    store: Store | str | Literal[False] | None = None,
    scope: ScopeLike | None = None,
    out_dir: Path | None = None,
    confine: bool = False,
    identity: str | None = None,
    adjust: Callable[[HandoffCoordinator, HandoffPackage], HandoffPackage] | None = None,
) -> pipeline.WrittenHandoff:
    """prepare -> stage -> publish -> write: `passdown export`, the hooks and MCP
    `prepare_handoff`; a failure at any step changes nothing (`execute.publish_and_write`).
    With a store, the package is stored and made the active handoff by compare-and-swap;
    losing that race to another export prepares again on top of the winner. A package
    that says what the active handoff says is not stored again (`coordinator._unchanged`:
    the result's `unchanged_since` names the active one). `adjust`
    lets a door add what only it knows before publishing (a hook's payload says the turn
    failed on a rate limit when the session file does not)."""
    from passdown.errors import HandoffConflict

    for attempt in range(MAX_RACE_RETRIES):
        with one_view():  # git's answers hold until the files are written, not past a retry
            prepared = prepare(
                request, here, store=store, scope=scope, confine=confine, identity=identity
            )
            with prepared.coordinator as coordinator:
                package = adjust(coordinator, prepared.package) if adjust else prepared.package
                try:
                    written = coordinator.export_sync(
                        package, out_dir, store=store is not False, if_changed=True
                    )
                except HandoffConflict:
                    if attempt == MAX_RACE_RETRIES - 1:
                        raise
                    continue
                written.reading = prepared.selection.reading
                return written
    raise AssertionError("unreachable")
