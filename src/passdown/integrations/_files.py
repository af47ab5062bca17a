"""Changing agents' config files so that `passdown uninstall` can undo it exactly.

Every file `passdown install` changes goes through `ManagedEdits`:

- before the first change to a file, its original bytes (or the fact that it did not
  exist) are saved under `data_dir()/install/` and recorded in a manifest, together with
  the sha256 of what passdown wrote;
- installing again computes the same content, so nothing changes (idempotent) and the
  original backup is kept;
- uninstall restores the original bytes (or deletes a file passdown created, and the
  folders it created) when the file is still exactly what passdown wrote; when someone
  changed it since (Claude Code rewrites `.claude.json` on every start), passdown's own
  entries are removed from the current content instead, and the backup is kept.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passdown._fsio import FILE_MODE, confined_target, ensure_private_dir, write_atomic
from passdown._paths import data_dir
from passdown.errors import OutputError, UsageError

Transform = Callable[[str | None], str | None]  # current text (None: absent) -> new text

# A dry run's planned files ({path: text}), for an edit that reads a file an earlier edit
# of the same install changes (Codex's trust of a project's hooks): it sees the plan.
_PLANNED: ContextVar[dict[str, str] | None] = ContextVar("passdown_planned", default=None)


@contextlib.contextmanager
def planning(dry_run: bool) -> Iterator[None]:
    """While a dry run plans its edits, `read_planned` sees them."""
    token = _PLANNED.set({} if dry_run else None)
    try:
        yield
    finally:
        _PLANNED.reset(token)


def read_planned(path: Path) -> str:
    """The text of `path` as this install leaves it (its plan, in a dry run)."""
    planned = _PLANNED.get()
    if planned is not None and str(path) in planned:
        return planned[str(path)]
    return path.read_text(encoding="utf-8")


def install_dir() -> Path:
    return data_dir() / "install"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """The one atomic writer (`fsio`): an unpredictable temp name made with O_EXCL and
    O_NOFOLLOW, so a symlink planted in a repository is never written through."""
    write_atomic(path, data, FILE_MODE if mode is None else mode)


@dataclass(slots=True)
class Change:
    path: Path
    action: str  # created, updated, unchanged, restored, removed, cleaned; dry run: create, update
    diff: str | None = None  # a dry run's unified diff of the file

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": str(self.path), "action": self.action}
        if self.diff is not None:
            data["diff"] = self.diff
        return data


def unified_diff(path: Path, before: str | None, after: str) -> str:
    """`diff -u` of one file; a file that does not exist yet is /dev/null."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=str(path) if before is not None else "/dev/null",
        tofile=str(path),
    )
    marker = "\n\\ No newline at end of file\n"
    return "".join(line if line.endswith("\n") else line + marker for line in lines)


@dataclass
class ManagedEdits:
    """One (agent, scope) installation's files, with its manifest."""

    key: str  # e.g. "claude-user" or "codex-project-<hash of the project path>"
    # project scope: every file written must stay inside this folder (symlinks resolved)
    confine_to: Path | None = None
    # ...except these, the agent's own user config that a project install also edits
    # (named exactly: a repository link into that folder is still refused)
    outside: frozenset[Path] = frozenset()
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False  # say what would change (as diffs), write nothing

    @property
    def manifest_path(self) -> Path:
        return install_dir() / f"{self.key}.json"

    def _manifest(self) -> dict[str, Any]:
        raw = _read(self.manifest_path)
        return json.loads(raw) if raw else {"files": {}}

    def _save_manifest(self, manifest: dict[str, Any]) -> None:
        ensure_private_dir(self.manifest_path.parent)
        _write_atomic(self.manifest_path, json.dumps(manifest, indent=2).encode() + b"\n")

    def _target(self, path: Path) -> Path:
        if path in self.outside or self.confine_to is None:
            return confined_target(path, None)
        return confined_target(path, [self.confine_to])

    # -- install -------------------------------------------------------------------------
    def apply(self, path: Path, transform: Transform) -> None:
        """Set `path` to `transform(current)`, backing up the original the first time.
        A symlinked `path` is written through (the link stays a link)."""
        manifest = self._manifest()
        real = self._target(path)
        before = _read(real)
        try:
            text = transform(before.decode("utf-8") if before is not None else None)
        except UsageError as exc:
            raise UsageError(f"{path}: {exc.message}", hint=exc.hint) from None
        after = text.encode("utf-8") if text is not None else None
        entry = manifest["files"].get(str(path))
        if after == before:
            self.changes.append(Change(path, "unchanged"))
            if entry is not None and after is not None and not self.dry_run:
                entry["installed_sha256"] = _sha(after)
                self._save_manifest(manifest)
            return
        if after is None:
            raise OutputError(f"refusing to delete {path} while installing")
        if self.dry_run:
            self._plan(path, before, text or "")
            return
        if entry is None:
            entry = self._backup(path, real, before)
            manifest["files"][str(path)] = entry
        created = _make_parents(real.parent)
        entry["created_dirs"] = sorted(set(entry.get("created_dirs", [])) | set(created))
        mode = real.stat().st_mode & 0o777 if before is not None else None
        _write_atomic(real, after, mode)
        entry["installed_sha256"] = _sha(after)
        self._save_manifest(manifest)
        self.changes.append(Change(path, "created" if before is None else "updated"))

    def _plan(self, path: Path, before: bytes | None, text: str) -> None:
        old = before.decode("utf-8") if before is not None else None
        planned = _PLANNED.get()
        if planned is not None:
            planned[str(path)] = text
        action = "create" if before is None else "update"
        self.changes.append(Change(path, action, unified_diff(path, old, text)))

    def _backup(self, path: Path, real: Path, before: bytes | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"existed": before is not None, "created_dirs": []}
        if before is not None:
            name = f"{self.key}-{_sha(str(path).encode())[:12]}-{path.name}"
            backup = ensure_private_dir(install_dir() / "backups") / name
            _write_atomic(backup, before)  # private copy, kept until uninstall
            entry["backup"] = str(backup)
            entry["mode"] = real.stat().st_mode & 0o777
            entry["original_sha256"] = _sha(before)
        return entry

    # -- uninstall -----------------------------------------------------------------------
    def revert(self, removers: dict[Path, Transform]) -> None:
        """Undo every file of the manifest; `removers[path]` strips passdown's entries
        from a file that changed since install."""
        manifest = self._manifest()
        for name, entry in reversed(manifest["files"].items()):  # last made, first undone
            path = self._target(Path(name))  # through a link, which is kept
            current = _read(path)
            if current is not None and _sha(current) == entry.get("installed_sha256"):
                self._restore(path, entry)
            elif current is not None:
                self._clean(path, entry, current, removers.get(path))
            else:
                self.changes.append(Change(path, "unchanged"))
                _remove_dirs(entry.get("created_dirs", []))
        if manifest["files"]:
            self.manifest_path.unlink(missing_ok=True)
        else:
            self.notes.append("nothing was installed")

    def _restore(self, path: Path, entry: dict[str, Any]) -> None:
        if entry["existed"]:
            backup = Path(entry["backup"])
            data = backup.read_bytes()
            _write_atomic(path, data, entry.get("mode", backup.stat().st_mode & 0o777))
            backup.unlink()
            self.changes.append(Change(path, "restored"))
        else:
            path.unlink()
            _remove_dirs(entry.get("created_dirs", []))
            self.changes.append(Change(path, "removed"))

    def _clean(
        self, path: Path, entry: dict[str, Any], current: bytes, remover: Transform | None
    ) -> None:
        text = remover(current.decode("utf-8")) if remover else current.decode("utf-8")
        if text is None:
            path.unlink()
            _remove_dirs(entry.get("created_dirs", []))
        elif text.encode("utf-8") != current:
            _write_atomic(path, text.encode("utf-8"), path.stat().st_mode & 0o777)
        self.changes.append(Change(path, "cleaned"))
        if entry.get("backup"):
            self.notes.append(
                f"{path} changed since install: removed passdown's entries only; "
                f"the original is kept at {entry['backup']}"
            )


def _make_parents(folder: Path) -> list[str]:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for d in reversed(missing):
        d.mkdir()
    return [str(d) for d in missing]


def _remove_dirs(dirs: list[str]) -> None:
    for d in sorted(dirs, key=len, reverse=True):  # deepest first; only if still empty
        with contextlib.suppress(OSError):
            Path(d).rmdir()
