"""Records stored before project scopes named the repository, adopted into the new scope.

passdown once scoped records by the folder's name (`alpha`); the scope is now the
repository's identity (`alpha~3f9c2a1b7d0e`, see `passdown._git.project_name`). On the
first use of a workspace's default project, `adopt_legacy_records` moves the handoffs
stored under the old name *that were written in this repository* (their handoff's
workspace path is this repository's root, or inside it), with every version, their
status records and pointers, and the active-handoff pointer when it names one of them.
Anything else under the old name stays where it is: a handoff written in another
folder of the same name (an unrelated `ws-codex`), and records with no workspace to
tell (tasks and records stored by clients); `--project alpha` still reaches them.

It runs through the Store API, so it is the same for every backend, and is idempotent:
a move interrupted half way is finished by the next run (a copy already in the new
scope is kept, the old one deleted). Once the old project has been looked through, a
pointer in the new scope (`adopted-legacy-project`) says so and later runs cost one
pointer read.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from passdown.errors import RecordConflict, RecordNotFound

if TYPE_CHECKING:  # the records models (pydantic) load only when something is adopted
    from passdown.records import Record, Scope
    from passdown.store._base import Store

ADOPTED_POINTER = "adopted-legacy-project"
ACTIVE_POINTER = "active-handoff"  # passdown.coordinator._lifecycle (a test checks they agree)
STATUSES = ("prepared", "published", "claimed", "completed", "rejected", "superseded")
_PAGE = 200


def adopt_pending(url: str, workspace: Path, project: str) -> None:
    """`adopt_legacy_records` for the session-start pickup, which reads a SQLite store
    through `StorePeek`: the store is opened only when the peek sees something to adopt
    (once per repository)."""
    import sqlite3

    from passdown._git import legacy_project_name
    from passdown.store._open import open_store
    from passdown.store._sqlite import StorePeek

    scheme, sep, rest = url.partition("://")
    if sep and scheme == "sqlite" and rest and rest != ":memory:":
        legacy = legacy_project_name(workspace)
        try:
            peek = StorePeek.open(Path(rest).expanduser())
            if peek is None:
                return
            try:
                done = peek.pointer(project, ADOPTED_POINTER) == legacy
                if done or legacy == project or peek.pointer(legacy, ACTIVE_POINTER) is None:
                    return  # pickup reads only the active handoff
            finally:
                peek.close()
        except sqlite3.Error:
            pass  # the store itself says why below
    with open_store(url) as store:
        adopt_legacy_records(store, workspace, project)


def adopt_legacy_records(store: Store, workspace: Path, project: str | None = None) -> int:
    """Move this repository's handoffs from its legacy project into `project` (default:
    the workspace's project), once; how many handoffs moved. Does nothing unless
    `project` is the workspace's default (an explicit --project adopts nothing)."""
    from passdown._git import legacy_project_name, project_name
    from passdown.records import Scope

    default = project_name(workspace)
    project = project or default
    if project != default:
        return 0
    legacy = legacy_project_name(workspace)
    new, old = Scope(project=project), Scope(project=legacy)
    if legacy == project or store.get_pointer(new, ADOPTED_POINTER) == legacy:
        return 0
    if not store.query(old, type="handoff", limit=1).records:
        return 0  # nothing stored under the old name: no marker written
    moved = [r.id for r in _legacy_handoffs(store, old) if _written_in(r, workspace)]
    for handoff_id in moved:
        _move_handoff(store, old, new, handoff_id)
    _move_active(store, old, new, set(moved))
    store.set_pointer(new, ADOPTED_POINTER, store.get_pointer(new, ADOPTED_POINTER), legacy)
    return len(moved)


def _legacy_handoffs(store: Store, old: Scope) -> list[Record]:
    found: list[Record] = []
    cursor: str | None = None
    while True:
        page = store.query(old, type="handoff", limit=_PAGE, cursor=cursor)
        found += page.records
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def _written_in(record: Record, workspace: Path) -> bool:
    """Whether the handoff was written in this repository: its workspace path (or the
    session's cwd) is the repository's root or inside it."""
    from passdown._git import workspace_root
    from passdown._redact import redact

    handoff = (record.model_extra or {}).get("passdown_handoff")
    if not isinstance(handoff, dict):
        return False
    places = [
        _get(handoff, "workspace", "path"),
        _get(handoff, "source", "cwd"),
    ]
    root = _resolved(workspace_root(workspace))
    roots = {str(root), redact(str(root))}
    for place in places:
        if not isinstance(place, str) or not place:
            continue
        if place in roots:
            return True
        resolved = _resolved(Path(place))
        if resolved == root or root in resolved.parents:
            return True
    return False


def _get(data: dict[str, Any], *keys: str) -> object:
    value: object = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return path


def _move_handoff(store: Store, old: Scope, new: Scope, handoff_id: str) -> None:
    for record_id in (handoff_id, *(f"{handoff_id}#{s}" for s in STATUSES)):
        _move_record(store, old, new, record_id)
    name = f"handoff-status/{handoff_id}"
    status = store.get_pointer(old, name)
    if status is not None:
        if store.get_pointer(new, name) is None:
            store.set_pointer(new, name, None, status)
        store.set_pointer(old, name, status, None)


def _move_record(store: Store, old: Scope, new: Scope, record_id: str) -> None:
    """Every kept version of the record, oldest first, into the new scope; then the old
    one deleted. A copy already in the new scope (an interrupted run, or another process
    adopting at the same time) is kept."""
    try:
        versions = [meta.version for meta in store.history(old, record_id)]
        bodies = [_version(store, old, record_id, v) for v in versions]
    except RecordNotFound:
        return  # not there, or moved meanwhile by another process
    try:
        store.retrieve(new, record_id)
    except RecordNotFound:
        _copy(store, new, [b for b in bodies if b is not None])
    with contextlib.suppress(RecordNotFound):  # another process finished the move
        store.delete(old, record_id)


def _version(store: Store, scope: Scope, record_id: str, version: int) -> Record | None:
    try:
        return store.retrieve(scope, record_id, version=version)
    except RecordNotFound:
        if version == store.history(scope, record_id)[-1].version:
            raise  # the record itself is gone
        return None  # an earlier version that was not kept


def _copy(store: Store, new: Scope, versions: list[Record]) -> None:
    from passdown.records import record_to_dict

    try:
        for index, body in enumerate(versions):
            data = record_to_dict(body)
            data["scope"] = {**data["scope"], "project": new.project}
            store.store(data, new_version=index > 0)
    except RecordConflict:
        pass  # another process is copying the same record: its copy stands


def _move_active(store: Store, old: Scope, new: Scope, moved: set[str]) -> None:
    active = store.get_pointer(old, ACTIVE_POINTER)
    if active is None or active not in moved:
        return
    if store.get_pointer(new, ACTIVE_POINTER) is None:
        store.set_pointer(new, ACTIVE_POINTER, None, active)
    store.set_pointer(old, ACTIVE_POINTER, active, None)
