"""Issue 22: workspace paths compared as paths (Windows drive letters, case, separators,
UNC, `\\\\?\\`; macOS `/private` aliases and case-insensitive volumes), not as POSIX
strings. The platform is simulated (`sys.platform`); Linux keeps its exact rules."""

from __future__ import annotations

import json
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from passdown import _platform
from passdown._extract import new_extractor
from passdown._pipeline import _relative_to_workspace
from passdown.agents.base import cwd_in_workspace
from passdown.agents.claude import ClaudeCode, encode_cwd
from passdown.agents.cursor import cwd_of_slug, workspace_slugs

# (path, root, relative part or None when outside)
WINDOWS = [
    (r"C:\Users\dev\proj\calc.py", r"C:\Users\dev\proj", "calc.py"),
    (r"c:\Users\dev\proj\calc.py", r"C:\Users\dev\proj", "calc.py"),  # drive-letter case
    (r"C:\Users\dev\proj\src\a.py", r"c:\users\DEV\proj", "src/a.py"),  # case variants
    (r"C:\Users\Dev\Proj\Src\A.py", r"C:\Users\dev\proj", "Src/A.py"),  # keeps its case
    ("C:/Users/dev/proj/src/a.py", r"C:\Users\dev\proj", "src/a.py"),  # separators
    (r"C:\Users\dev\proj/src\a.py", "C:/Users/dev/proj/", "src/a.py"),  # mixed, trailing
    (r"C:\Users\dev\proj", r"C:\Users\dev\proj", ""),
    (r"C:\Users\dev\proj\\", r"C:\Users\dev\proj", ""),
    (r"C:\a\b", "C:\\", "a/b"),  # a drive's root
    (r"C:\Users\dev\project\a.py", r"C:\Users\dev\proj", None),  # a sibling, same prefix
    (r"D:\Users\dev\proj\a.py", r"C:\Users\dev\proj", None),  # another drive
    (r"C:\Users\dev", r"C:\Users\dev\proj", None),  # above it
    (r"\\server\share\proj\a.py", r"\\SERVER\share\proj", "a.py"),  # UNC
    (r"\\server\share2\proj\a.py", r"\\server\share\proj", None),  # another share
    (r"\\?\C:\Users\dev\proj\a.py", r"C:\Users\dev\proj", "a.py"),  # long-path prefix
    (r"\\?\UNC\server\share\proj\a.py", r"\\server\share\proj", "a.py"),
]
MACOS = [
    ("/private/tmp/w/a.py", "/tmp/w", "a.py"),
    ("/tmp/w/a.py", "/private/tmp/w", "a.py"),
    ("/private/var/folders/x/T/w/a.py", "/var/folders/x/T/w", "a.py"),
    ("/Users/Dev/Proj/a.py", "/Users/dev/proj", "a.py"),  # case-insensitive volume
    ("/Users/dev/proj", "/users/dev/proj/", ""),
    ("/Users/dev/proj2/a.py", "/Users/dev/proj", None),
    ("/private/tmpx/a.py", "/tmp", None),
]
LINUX = [
    ("/ws/a.py", "/ws", "a.py"),
    ("/ws/src/../a.py", "/ws", "a.py"),
    ("/ws", "/ws/", ""),
    ("/a/b", "/", "a/b"),
    ("/wsx/a.py", "/ws", None),
    ("/WS/a.py", "/ws", None),  # Linux file systems are case-sensitive
    ("/private/tmp/w/a.py", "/tmp/w", None),  # no /private aliases on Linux
]


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def simulate(platform: str) -> None:
        monkeypatch.setattr(sys, "platform", platform)

    return simulate


@pytest.mark.parametrize(("path", "root", "rel"), WINDOWS)
@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_windows_paths_compare_as_windows_paths(
    on, platform: str, path: str, root: str, rel: str | None
) -> None:
    on(platform)  # a session recorded on Windows reads the same on Linux
    assert _platform.relative_inside(path, root) == rel
    assert _platform.inside(path, root) is (rel is not None)
    if not path.startswith("\\\\?\\"):  # pathlib does not fold the long-path prefix
        pure = PureWindowsPath(path)
        assert (pure == PureWindowsPath(root) or pure.is_relative_to(root)) is (rel is not None)


@pytest.mark.parametrize(("path", "root", "rel"), MACOS)
def test_macos_folds_private_aliases_and_case(on, path: str, root: str, rel: str | None) -> None:
    on("darwin")
    assert _platform.relative_inside(path, root) == rel


@pytest.mark.parametrize(("path", "root", "rel"), LINUX)
def test_linux_keeps_exact_posix_rules(on, path: str, root: str, rel: str | None) -> None:
    on("linux")
    assert _platform.relative_inside(path, root) == rel
    pure = PurePosixPath(path.replace("/src/..", ""))
    assert (pure == PurePosixPath(root) or pure.is_relative_to(root)) is (rel is not None)


def test_cwd_in_workspace_uses_the_path_rules(on) -> None:
    on("linux")
    assert cwd_in_workspace(r"c:\users\dev\proj\sub", Path(r"C:\Users\dev\proj"))
    assert not cwd_in_workspace(r"C:\Users\dev\project", Path(r"C:\Users\dev\proj"))
    assert not cwd_in_workspace("/private/tmp/w", Path("/tmp/w"))
    on("darwin")
    assert cwd_in_workspace("/private/tmp/w/sub", Path("/tmp/w"))
    assert cwd_in_workspace("/Users/DEV/proj", Path("/Users/dev/proj"))


def test_extract_shows_windows_paths_relative_to_the_session_cwd(on) -> None:
    on("linux")
    extractor = new_extractor(workspace=r"C:\Users\dev\proj", max_messages=24, max_chars=80_000)
    assert extractor._rel(r"c:\Users\dev\proj\src\calc.py") == "src/calc.py"
    assert extractor._rel("C:/Users/dev/proj/README.md") == "README.md"
    assert extractor._rel(r"C:\Users\dev\proj") == "."
    assert extractor._rel(r"C:\Users\dev\other\x.py") == r"C:\Users\dev\other\x.py"
    on("darwin")
    extractor = new_extractor(workspace="/tmp/w", max_messages=24, max_chars=80_000)
    assert extractor._rel("/private/tmp/w/a.py") == "a.py"


def test_pipeline_relative_to_workspace(on) -> None:
    on("linux")
    ws = Path("/work/ws")
    assert _relative_to_workspace("src/a.py", "/work/ws", ws) == "src/a.py"
    assert _relative_to_workspace("/work/ws/b.py", None, ws) == "b.py"
    assert _relative_to_workspace("/elsewhere/b.py", None, ws) == "/elsewhere/b.py"
    assert _relative_to_workspace(".", "/work/ws", ws) == "."
    win = Path(r"C:\Users\dev\proj")
    assert _relative_to_workspace(r"src\a.py", r"c:\users\dev\proj", win) == "src/a.py"
    assert _relative_to_workspace(r"C:\Users\dev\proj\b.py", None, win) == "b.py"
    assert _relative_to_workspace(r"D:\b.py", r"C:\Users\dev\proj", win) == r"D:\b.py"


def _claude_store(root: Path, folder: str, cwd: str) -> None:
    project = root / "projects" / folder
    project.mkdir(parents=True)
    record = {"type": "user", "cwd": cwd, "timestamp": "2026-11-29T21:12:19.124Z"}
    record["message"] = {"role": "user", "content": "hi"}
    (project / "5e551011-0000-4000-8000-0000000000aa.jsonl").write_text(json.dumps(record) + "\n")


@pytest.mark.parametrize(
    ("platform", "folder", "cwd", "workspace"),
    [
        ("win32", "C--Users-dev-proj", r"C:\Users\dev\proj", r"C:\Users\dev\proj"),
        ("win32", "c--Users-dev-proj", r"c:\Users\dev\proj", r"C:\Users\dev\proj"),
        ("win32", "C--Users-dev-proj-sub", r"C:\Users\dev\proj\sub", r"C:\Users\dev\proj"),
        ("darwin", "-tmp-w", "/tmp/w", "/private/tmp/w"),
        ("darwin", "-private-tmp-w", "/private/tmp/w", "/tmp/w"),
        ("darwin", "-Users-Dev-proj", "/Users/Dev/proj", "/Users/dev/proj"),
    ],
)
def test_claude_finds_the_project_folder_of_each_spelling(
    on,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    platform: str,
    folder: str,
    cwd: str,
    workspace: str,
) -> None:
    assert encode_cwd(r"C:\Users\dev\proj") == "C--Users-dev-proj"  # Claude's own naming
    _claude_store(tmp_path, folder, cwd)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    on(platform)
    refs = list(ClaudeCode().discover(Path(workspace)))
    assert [r.cwd for r in refs] == [cwd]


def test_claude_on_linux_keeps_case_and_aliases_apart(
    on, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claude_store(tmp_path, "-tmp-W", "/tmp/W")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    on("linux")
    assert list(ClaudeCode().discover(Path("/tmp/w"))) == []
    assert [r.cwd for r in ClaudeCode().discover(Path("/tmp/W"))] == ["/tmp/W"]


def test_cursor_slugs_and_cwd_rebuild(on) -> None:
    on("linux")
    assert workspace_slugs("/home/dev/proj") == {"home-dev-proj"}
    assert cwd_of_slug("home-dev-proj") == "/home/dev/proj"
    assert "C--Users-dev-proj" in workspace_slugs(r"C:\Users\dev\proj")
    on("darwin")
    assert {"tmp-w", "private-tmp-w"} <= workspace_slugs("/private/tmp/w")
    on("win32")
    assert cwd_of_slug("C--Users-dev-proj") == r"C:\Users\dev\proj"
