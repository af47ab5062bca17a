"""An export that would repeat the active handoff adds no version.

Hooks export at every session end, compaction and turn, and users run `passdown export`
again: a session that did not move on, in a workspace that did not change, would add one
identical record per run (to the timeline, to `find`). `publish_and_write` asks
`unchanged_active` first: when the active handoff says the same thing as the new package
(`HandoffPackage.content_digest`: everything but ids, times and the place in the
history), nothing is stored or published, the active handoff keeps its status (a claimed
one stays claimed), and its files are written again only where they are missing (or hold
another handoff).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from passdown import _pipeline as pipeline
from passdown._handoff_record import package_from_record
from passdown.errors import StoreError

if TYPE_CHECKING:
    from passdown._handoff_package import HandoffPackage
    from passdown.coordinator._context import ProjectContext


def unchanged_active(ctx: ProjectContext, pkg: HandoffPackage) -> HandoffPackage | None:
    """The project's active handoff when `pkg` says the same as it, else None (also when
    the active one cannot be read: the export then adds its version as usual)."""
    if pkg.handoff is None or pkg.handoff_type == "parallel" or pkg.parent_id:
        return None
    try:
        active_id = ctx.lifecycle().active()
        if active_id is None or active_id == pkg.id:
            return None
        active = package_from_record(ctx.store().retrieve(ctx.scope, active_id))
    except StoreError:
        return None
    if active.handoff is None or active.content_digest() != pkg.content_digest():
        return None
    return active


def keep_active(
    active: HandoffPackage, staged: pipeline.WrittenHandoff, workspace: Path
) -> pipeline.WrittenHandoff:
    """The active handoff's files in the folder the export `staged` its own: left as
    they are when they hold it, written (as an export writes them) when one is missing
    or holds another handoff. The staged export's warnings carry over."""
    assert active.handoff is not None  # unchanged_active only returns a full package
    planned = pipeline.planned_handoff(active.handoff, staged.folder)
    planned.warnings = list(staged.warnings)
    planned.files_kept = _holds(planned, active.handoff.id)
    if not planned.files_kept:
        again = pipeline.stage_handoff(active.handoff, staged.folder, workspace)
        try:
            again.commit()
        finally:
            again.discard()
    planned.record_id = active.id
    planned.unchanged_since = active.id
    return planned


def _holds(planned: pipeline.WrittenHandoff, handoff_id: str) -> bool:
    """Whether HANDOFF.md is there and handoff.json is the handoff `handoff_id`."""
    if not planned.markdown_path.is_file():
        return False
    try:
        data = json.loads(planned.json_path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("id") == handoff_id
