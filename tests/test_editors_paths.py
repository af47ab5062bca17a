"""Where the VS Code family keeps its User folder on each platform, and how a
workspaceStorage folder maps to the folder it was opened on."""

from __future__ import annotations

from pathlib import Path

import pytest

from passdown import _platform
from passdown.agents import _editors


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("linux", ".config/Code/User"),
        ("darwin", "Library/Application Support/Code/User"),
        ("win32", "AppData/Roaming/Code/User"),
    ],
)
def test_user_dir_per_platform(
    platform: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("APPDATA", "XDG_CONFIG_HOME", "PASSDOWN_EDITOR_USER_DIRS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_platform, "is_windows", lambda: platform == "win32")
    monkeypatch.setattr(_platform, "is_macos", lambda: platform == "darwin")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))
    dirs = _editors.user_dirs(("code",), remote=False)
    assert dirs == [tmp_path / expected]


def test_appdata_wins_on_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PASSDOWN_EDITOR_USER_DIRS", raising=False)
    monkeypatch.setenv("APPDATA", str(tmp_path / "roam"))
    monkeypatch.setattr(_platform, "is_windows", lambda: True)
    assert _editors.user_dirs(("cursor",), remote=False) == [tmp_path / "roam" / "Cursor" / "User"]


@pytest.mark.parametrize(
    ("uri", "folder"),
    [
        ("file:///home/dev/proj", "/home/dev/proj"),
        ("file:///c%3A/Users/dev/my%20proj", "c:/Users/dev/my proj"),
        ("file://server/share/proj", "//server/share/proj"),
        ("vscode-remote://ssh-remote%2Bbox/home/dev", None),
    ],
)
def test_folder_of_uri(uri: str, folder: str | None) -> None:
    assert _editors.folder_of_uri(uri) == folder


def test_workspace_storages_maps_and_skips_broken(tmp_path: Path) -> None:
    storage = tmp_path / "workspaceStorage"
    (storage / "a1").mkdir(parents=True)
    (storage / "a1" / "workspace.json").write_text('{"folder": "file:///home/dev/proj"}')
    (storage / "b2").mkdir()
    (storage / "b2" / "workspace.json").write_bytes(b"\xff{torn")
    (storage / "c3").mkdir()  # no workspace.json at all
    (storage / "d4").mkdir()
    (storage / "d4" / "workspace.json").write_text(
        '{"workspace": "file:///home/dev/multi/all.code-workspace"}'
    )
    found = list(_editors.workspace_storages(tmp_path))
    assert found == [(storage / "a1", "/home/dev/proj"), (storage / "d4", "/home/dev/multi")]


def test_override_replaces_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("PASSDOWN_EDITOR_USER_DIRS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert _editors.user_dirs() == [tmp_path / "a", tmp_path / "b"]
