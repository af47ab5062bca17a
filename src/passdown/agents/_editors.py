"""Where the VS Code family of editors keeps its per-user state, on each platform.

Code, Code - Insiders, VSCodium and Cursor all lay out one "User" folder the same way
(Electron's userData + `/User`): `globalStorage/<extension id>/` for extensions'
files, `globalStorage/state.vscdb` for global key/value state, and
`workspaceStorage/<id>/` per opened folder, whose `workspace.json` names that folder
as a `file://` URI. The editor agents (Cursor's IDE chats, Copilot Chat, the Cline
and Roo Code extensions) find their stores through here.

Roots, from Electron's `app.getPath("userData")` as each editor names its folder:
- Linux: `$XDG_CONFIG_HOME/<Name>/User` (default `~/.config`)
- macOS: `~/Library/Application Support/<Name>/User`
- Windows: `%APPDATA%\\<Name>\\User`
- VS Code Server / Remote / Codespaces: `~/.vscode-server/data/User`, `~/.vscode-remote/data/User`
`PASSDOWN_EDITOR_USER_DIRS` (os.pathsep-separated) replaces the whole list.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit

import msgspec

from passdown import _platform
from passdown._jsonl import read_side_file
from passdown.errors import UsageError

# Folder names under the platform's config root, in the order they are searched.
EDITOR_NAMES: dict[str, str] = {
    "code": "Code",
    "code-insiders": "Code - Insiders",
    "vscodium": "VSCodium",
    "cursor": "Cursor",
}

# Remote servers keep one User folder under the home, whatever the editor.
_REMOTE_USER_DIRS = (".vscode-server/data/User", ".vscode-remote/data/User")
_WORKSPACE_JSON_BYTES = 1024 * 1024


def config_root(home: Path | None = None) -> Path:
    """The folder Electron apps keep their userData under, on this platform."""
    home = home if home is not None else Path.home()
    if _platform.is_windows():
        appdata = os.environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    if _platform.is_macos():
        return home / "Library" / "Application Support"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else home / ".config"


def user_dirs(editors: tuple[str, ...] = tuple(EDITOR_NAMES), *, remote: bool = True) -> list[Path]:
    """The editors' User folders that may exist here (existence is the caller's check)."""
    override = os.environ.get("PASSDOWN_EDITOR_USER_DIRS")
    if override:
        return [Path(part).expanduser() for part in override.split(os.pathsep) if part]
    root = config_root()
    found = [root / EDITOR_NAMES[name] / "User" for name in editors]
    if remote:
        found += [Path.home() / rel for rel in _REMOTE_USER_DIRS]
    return found


def folder_of_uri(uri: str) -> str | None:
    """The local path a `file://` URI names (`file:///c%3A/Users/dev` -> `c:/Users/dev`),
    or None for another scheme (a remote `vscode-remote://` folder is not on this disk)."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    path = unquote(parts.path)
    if parts.netloc:  # a UNC share: file://server/share/dir
        return f"//{parts.netloc}{path}"
    # Windows drives are written file:///c%3A/...: drop the slash before the letter.
    if len(path) >= 3 and path[0] == "/" and path[2] == ":" and path[1].isalpha():
        return path[1:]
    return path


def workspace_folder(storage_dir: Path) -> str | None:
    """The folder one `workspaceStorage/<id>/` belongs to, from its `workspace.json`
    (`{"folder": "file:///..."}`; a `.code-workspace` file for a multi-root window).
    None when the file is missing or unreadable: such a storage is not listed."""
    # a regular file only, and bounded: a FIFO or a link to a device must not hang or
    # fill the memory of a listing
    raw = read_side_file(storage_dir / "workspace.json", _WORKSPACE_JSON_BYTES)
    if raw is None:
        return None
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("folder", "workspace"):
        value = data.get(key)
        if isinstance(value, str):
            folder = folder_of_uri(value)
            if folder is None:
                return None
            if key == "workspace":  # the .code-workspace file: its folder is the root
                return folder.rsplit("/", 1)[0] or folder
            return folder
    return None


def workspace_storages(user_dir: Path) -> Iterator[tuple[Path, str]]:
    """Each `workspaceStorage/<id>/` of one User folder with the folder it maps to."""
    try:
        entries = sorted(os.scandir(user_dir / "workspaceStorage"), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        folder = workspace_folder(Path(entry.path))
        if folder is not None:
            yield Path(entry.path), folder


def not_a_launch_target(display_name: str) -> UsageError:
    """The error (exit 2) for `switch --to` an editor's chat: passdown reads it as a source
    but cannot start it on a handoff."""
    return UsageError(
        f"{display_name} is a source to hand off from, not an agent passdown can start",
        hint="pass --to with a CLI agent (claude, codex, gemini, ...)",
    )


def iso_millis(millis: object) -> str | None:
    """An epoch-milliseconds time (as the editors and their extensions write them) as ISO
    8601 UTC, or None when it is no time."""
    if not isinstance(millis, (int, float)) or isinstance(millis, bool) or millis <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
