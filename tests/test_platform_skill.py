"""Issue 22: the skill's example lines (`passdown find ...`, `passdown export ...` in
SKILL.md and the AGENTS.md block) quoted for the shell the model runs them with: on
Windows Claude Code's Bash tool is Git Bash and Codex's shell tool is PowerShell
(`_command.WINDOWS_TOOL_SHELLS`); elsewhere `sh`. Checked in process with the platform
simulated, and through `passdown install` with Windows simulated (tests/simwin).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from passdown.integrations import _command
from passdown.integrations._base import add_md_block, skill_text
from passdown.integrations._command import POSIX, POWERSHELL
from test_platform_hooks import (
    HOSTILE,
    PATHEXT,
    SIMULATED,
    _fake_codex,
    _passdown_at,
    _powershell_words,
    _simulated,
    _windows_path,
)

FIND = ["find", "--type", "handoff", "--limit", "1", "--json"]


def _command_lines(text: str, program: str) -> list[str]:
    """Each line of the skill that runs passdown (`find ...`, `export --quiet`), from
    where `program` (as written for the shell) starts to the end of its words: the
    markdown around it (backticks, a `#` comment) is not part of the command."""
    found = []
    for line in text.splitlines():
        end = re.search(r" (?:find --type handoff --limit 1 --json|export --quiet)", line)
        if end is None:
            continue
        assert program in line, line
        found.append(line[line.index(program) : end.end()])
    return found


def _program(path: str, agent: str) -> str:
    return _command.shell_line(_command.tool_shell(agent), path, [])


@pytest.mark.parametrize(
    ("agent", "shell"), [("claude", POSIX), ("codex", POWERSHELL), ("someone", POWERSHELL)]
)
def test_each_agent_has_its_tool_shell(
    monkeypatch: pytest.MonkeyPatch, agent: str, shell: str
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    assert _command.tool_shell(agent) == POSIX
    monkeypatch.setattr(sys, "platform", "win32")
    assert _command.tool_shell(agent) == shell


@pytest.mark.parametrize("folder", HOSTILE)
def test_codex_skill_lines_are_powershell_on_windows(
    monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    path = _windows_path(folder)
    for text in (skill_text(path, "codex"), add_md_block(None, path)):
        lines = _command_lines(text, _program(path, "codex"))
        assert len(lines) == 2, text
        for line in lines:
            words = _powershell_words(line)
            assert words[0] == path and words[1:] in (FIND, ["export", "--quiet"]), line


@pytest.mark.parametrize("folder", HOSTILE)
def test_claude_skill_lines_are_git_bash_on_windows(
    monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    path = _windows_path(folder)
    lines = _command_lines(skill_text(path, "claude"), _program(path, "claude"))
    assert len(lines) == 2
    for line in lines:
        words = shlex.split(line)  # as bash reads it
        assert words[0] == path.replace("\\", "/") and words[1:] in (FIND, ["export", "--quiet"])


def test_posix_skill_lines_run_in_sh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    path = "/home/dev/Tom & Jerry's/bin/passdown"
    for text in (skill_text(path, "claude"), skill_text(path, "codex"), add_md_block(None, path)):
        lines = _command_lines(text, shlex.quote(path))
        assert len(lines) == 2
        for line in lines:
            assert shlex.split(line)[0] == path, line


# -- through `passdown install`, Windows simulated ---------------------------------------


@SIMULATED
@pytest.mark.parametrize(
    ("agent", "scope"), [("claude", "user"), ("codex", "user"), ("codex", "project")]
)
def test_install_on_windows_writes_skill_lines_for_the_models_shell(
    tmp_path: Path, agent: str, scope: str
) -> None:
    command = _passdown_at(tmp_path / "Tom & Jerry's tools")
    home = tmp_path / "home"
    project = tmp_path / "proj"
    project.mkdir()
    env = _simulated(tmp_path)
    env.update(CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"))
    env["PATH"] = str(_fake_codex(tmp_path / "npm", hooks=True)) + os.pathsep + env["PATH"]
    env["PATHEXT"] = PATHEXT
    argv = ["install", agent, "--scope", scope, "--command", str(command)]
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *argv],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if agent == "claude":
        written = home / ".claude" / "skills" / "passdown-takeover" / "SKILL.md"
    elif scope == "user":
        written = home / ".codex" / "skills" / "passdown-takeover" / "SKILL.md"
    else:
        written = project / "AGENTS.md"
    if agent == "codex":
        program = "& " + _command.quote_powershell(str(command))
    else:
        program = shlex.quote(str(command))  # a POSIX path: no `\\` to turn into `/`
    lines = _command_lines(written.read_text(encoding="utf-8"), program)
    assert len(lines) == 2, written.read_text(encoding="utf-8")
    for line in lines:
        if agent == "codex":
            words = _powershell_words(line)
            assert line.startswith("& '")  # a quoted program is called, not printed
        else:
            words = shlex.split(line)
        assert words[0] == str(command) and words[1:] in (FIND, ["export", "--quiet"]), line
