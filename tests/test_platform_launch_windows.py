"""Issue 22: launching on Windows never hands the prompt to cmd.exe.

npm installs every agent CLI there as a `.cmd` shim, and CreateProcess runs a batch
file through cmd.exe, which re-reads its command line: `&` and `|` start commands,
`%VAR%` expands, a newline ends the command ("BatBadBut"). With the platform simulated,
each hostile prompt must either reach `node <script>` (the shim resolved) as one argv
element, or the launch is refused before anything starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passdown import _launch, _platform, _platform_launch
from passdown.agents.claude import ClaudeCode
from passdown.errors import LaunchError

HOSTILE = [
    '"&calc&"',
    "&calc&",
    "a | calc",
    "%PATH%",
    "!PATH!",
    "line one\nline two & calc",
    "-rf --dangerously-skip-permissions",
    '" & del /q C:\\*.* & "',
    "^&calc^&",
]

# what npm's cmd-shim (v4+) writes for a package's bin
NPM_SHIM = r"""@ECHO off
GOTO start
:find_dp0
SET dp0=%~dp0
EXIT /b
:start
SETLOCAL
CALL :find_dp0

IF EXIST "%dp0%\node.exe" (
  SET "_prog=%dp0%\node.exe"
) ELSE (
  SET "_prog=node"
  SET PATHEXT=%PATHEXT:;.JS;=;%
)

endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\node_modules\@anthropic-ai\claude-code\cli.js" %*
"""


class _Started:
    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        STARTED.append((argv, kwargs))
        self.returncode = 0

    def wait(self) -> int:
        return 0

    def poll(self) -> int:
        return 0

    def send_signal(self, signum: int) -> None:
        pass


STARTED: list[tuple[list[str], dict[str, Any]]] = []


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, Any]]]:
    STARTED.clear()
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(subprocess, "Popen", _Started)
    return STARTED


def _shim(folder: Path, *, npm: bool, node_exe: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "claude.cmd"
    if npm:
        shim.write_text(NPM_SHIM.replace("\n", "\r\n"), encoding="utf-8")
        script = folder / "node_modules" / "@anthropic-ai" / "claude-code" / "cli.js"
        script.parent.mkdir(parents=True)
        script.write_text("// the CLI\n")
    else:
        shim.write_text("@ECHO off\r\nC:\\tools\\claude.exe %*\r\n", encoding="utf-8")
    if node_exe:
        (folder / "node.exe").write_bytes(b"MZ")
    return shim


def _launch_with(monkeypatch: pytest.MonkeyPatch, shim: Path, prompt: str, tmp_path: Path) -> int:
    monkeypatch.setattr(_launch, "resolve_program", lambda program, path=None: str(shim))
    spec = ClaudeCode().launch_spec(prompt, workspace=tmp_path, interactive=False)
    return _launch.run(spec, interactive=False)


def _cmd_exe_would_see(argv: list[str], executable: str) -> bool:
    return executable.lower().endswith((".cmd", ".bat")) or argv[0].lower().endswith(
        (".cmd", ".bat")
    )


@pytest.mark.parametrize("prompt", HOSTILE)
def test_an_npm_shim_is_started_as_node_and_its_script(
    windows: list[tuple[list[str], dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    prompt: str,
) -> None:
    shim = _shim(tmp_path / "npm", npm=True)
    assert _launch_with(monkeypatch, shim, prompt, tmp_path) == 0
    [(argv, kwargs)] = windows
    node, script = str(tmp_path / "npm" / "node.exe"), argv[1]
    assert kwargs["executable"] == node and argv[0] == node and kwargs["shell"] is False
    assert Path(script) == tmp_path / "npm" / "node_modules/@anthropic-ai/claude-code/cli.js"
    # the prompt is one argument after "--", byte for byte: node parses its own argv
    assert argv[2:] == ["-p", "--permission-mode", "acceptEdits", "--", prompt]
    assert not _cmd_exe_would_see(argv, kwargs["executable"])


@pytest.mark.parametrize("prompt", HOSTILE)
def test_a_batch_file_that_is_no_npm_shim_is_refused(
    windows: list[tuple[list[str], dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    prompt: str,
) -> None:
    shim = _shim(tmp_path / "bin", npm=False)
    with pytest.raises(LaunchError, match=r"batch file.*cmd\.exe"):
        _launch_with(monkeypatch, shim, prompt, tmp_path)
    assert windows == []  # nothing started


def test_a_shim_whose_script_is_missing_is_refused(
    windows: list[tuple[list[str], dict[str, Any]]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shim = _shim(tmp_path / "npm", npm=True)
    (tmp_path / "npm" / "node_modules/@anthropic-ai/claude-code/cli.js").unlink()
    with pytest.raises(LaunchError):
        _launch_with(monkeypatch, shim, "&calc&", tmp_path)
    assert windows == []


def test_without_node_exe_beside_the_shim_node_comes_from_path(
    windows: list[tuple[list[str], dict[str, Any]]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shim = _shim(tmp_path / "npm", npm=True, node_exe=False)
    node = tmp_path / "nodejs" / "node.exe"
    node.parent.mkdir()
    node.write_bytes(b"MZ")
    monkeypatch.setattr(
        _platform_launch.shutil, "which", lambda name: str(node) if name == "node" else None
    )
    _launch_with(monkeypatch, shim, "%PATH%", tmp_path)
    [(argv, _)] = windows
    assert argv[0] == str(node) and argv[-1] == "%PATH%"


def test_plain_words_may_reach_a_batch_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    bat = _shim(tmp_path / "bin", npm=False)
    assert _platform.spawn_argv(str(bat), [str(bat), "--version"]) == (
        str(bat),
        [str(bat), "--version"],
    )


def test_posix_and_exe_launches_are_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["claude", "--", "&calc& %PATH%\nx"]
    monkeypatch.setattr(sys, "platform", "linux")
    assert _platform.spawn_argv("/usr/bin/claude.cmd", argv) == ("/usr/bin/claude.cmd", argv)
    monkeypatch.setattr(sys, "platform", "win32")
    assert _platform.spawn_argv(r"C:\bin\claude.exe", argv) == (r"C:\bin\claude.exe", argv)
