"""Shared fixtures. Every test runs with its own passdown data folder and agent homes,
so nothing touches the user's real agent data or handoff store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The order's seed at the end of every run, `-q` included (pytest-randomly prints it
    only in the header, which `-q` leaves out), so a failure that depends on the order can
    be replayed."""
    if config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"tests in a random order: --randomly-seed={seed} replays it")


@pytest.fixture(autouse=True)
def isolated_homes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("home")
    # HOME too: agents without their own env var keep sessions under ~ (~/.gemini, ...)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(home / "passdown-data"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(home / ".cursor"))
    monkeypatch.delenv("PASSDOWN_STORE", raising=False)
    # set (empty = every agent) so code under test cannot leak a restriction into the
    # environment that later subprocesses inherit; restored after each test
    monkeypatch.setenv("PASSDOWN_AGENTS", "")
    return home


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace folder, the current directory (a test module that needs a git
    repository or files in it defines its own `workspace`)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


@pytest.fixture
def agents_on_path(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A stub program for every agent on PATH (exit 0), for tests of `switch --dry-run`,
    which fails like the real switch when the target is not installed."""
    from passdown.agents import load_agents

    bin_dir = tmp_path_factory.mktemp("agents-bin")
    for agent in load_agents().values():
        stub = bin_dir / agent.program
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir
