"""The project scope of a repository, where it comes from, and naming it once for every
clone in a committed `.passdown.toml` (`passdown scope NAME`)."""

from __future__ import annotations

import re
from pathlib import Path

from passdown.errors import UsageError


def scope_source(workspace: Path) -> tuple[str, str]:
    """(the scope, a few words on where it comes from)."""
    from passdown._git import SCOPE_FILE, project_name, run_git, scope_setting

    here = Path(workspace)
    top = run_git(here, "rev-parse", "--show-toplevel")
    project = project_name(here)
    if not top.ok:
        return project, "the folder's path (not a git repository)"
    root = Path(top.out.decode("utf-8", "replace").strip())
    try:
        if scope_setting(root) is not None:
            return project, SCOPE_FILE
    except ValueError as exc:
        raise UsageError(f"cannot use the committed scope setting: {exc}") from None
    names = run_git(root, "remote").out.decode("utf-8", "replace").split()
    if not names:
        return project, "the repository's path (it has no remote)"
    which = next((n for n in ("upstream", "origin") if n in names), min(names))
    return project, f"the remote {which!r}"


def name_project(workspace: Path, name: str) -> Path:
    """Write `project = "NAME"` into the repository's `.passdown.toml` (other lines as
    they are); the file's path. UsageError outside git or for a name that cannot be one."""
    from passdown._fsio import write_atomic
    from passdown._git import SCOPE_FILE, run_git, scope_setting, valid_scope_name

    if not valid_scope_name(name):
        raise UsageError(
            f"not a project name: {name!r} (1 to 100 characters, no ~, / or control characters)"
        )
    top = run_git(Path(workspace), "rev-parse", "--show-toplevel")
    if not top.ok:
        raise UsageError(f"{workspace} is not in a git repository: the setting is committed")
    path = Path(top.out.decode("utf-8", "replace").strip()) / SCOPE_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    line = f"project = {_toml_string(name.strip())}"
    tables = next((i for i, text in enumerate(lines) if text.lstrip().startswith("[")), len(lines))
    at = next((i for i in range(tables) if re.match(r"\s*project\s*=", lines[i])), None)
    if at is None:
        lines.insert(0, line)
    else:
        lines[at] = line
    write_atomic(path, ("\n".join(lines) + "\n").encode(), 0o644)
    try:
        if scope_setting(path.parent) != name.strip():
            raise ValueError("it does not read back")
    except ValueError as exc:
        raise UsageError(f"{path}: the setting did not take: {exc}") from None
    return path


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
