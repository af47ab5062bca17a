"""The workspace's git state probed once, for the equivalence tests that export the same
untouched workspace hundreds of times.

An export asks git about its workspace three times (`git status` for the snapshot, then
`git log` and `git status` for the files changed since the session started): most of
what an export of a small session costs, and the same answer for the resumed read and
the full read it is compared with. Inside `workspace_probed_once()` each answer is
computed by passdown's own functions the first time it is asked for and reused while
the workspace folder is unchanged (the key holds the folder's mtime, so a file created
or removed in it probes again); everything else an export does runs as it always does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from passdown import _workspace


def _key(path: Path) -> tuple[Path, int]:
    try:
        return path, path.stat().st_mtime_ns
    except OSError:
        return path, -1


@contextmanager
def workspace_probed_once() -> Iterator[None]:
    real_snapshot = _workspace.snapshot
    real_changed = _workspace.files_changed_since
    snapshots: dict[tuple[Path, int], _workspace.WorkspaceSnapshot] = {}
    changes: dict[tuple[Path, int, str | None], list[str]] = {}

    def snapshot(path: Path) -> _workspace.WorkspaceSnapshot:
        key = _key(path)
        if key not in snapshots:
            snapshots[key] = real_snapshot(path)
        return snapshots[key].model_copy(deep=True)

    def files_changed_since(path: Path, since_iso: str | None) -> list[str]:
        key = (*_key(path), since_iso)
        if key not in changes:
            changes[key] = real_changed(path, since_iso)
        return list(changes[key])

    with (
        mock.patch.object(_workspace, "snapshot", snapshot),
        mock.patch.object(_workspace, "files_changed_since", files_changed_since),
    ):
        yield
