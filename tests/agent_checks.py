"""Checks the agent modules' tests share (Auggie, Continue CLI, OpenHands, Mistral Vibe):
a fake HOME, a recorded store copied into it, `passdown` run in a subprocess with the
agents registered as pip would (`PassdownCLI`), a recorded session exported through it,
hooks installed into the user's own file and given back byte for byte
(`hooks_installed`), and launch argv tables, the long prompt handed over as a private
file included (`Launch`, `check_launch`)."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from passdown.agents.base import Agent

PASSDOWN = [sys.executable, "-m", "passdown"]


def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *unset: str) -> Path:
    """An empty HOME, with the agent's own store variables unset."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for variable in unset:
        monkeypatch.delenv(variable, raising=False)
    return home


def agent_fixtures(register: Callable[[Path], str], *unset: str) -> tuple[Any, Any]:
    """One agent's `home` (`fresh_home` with the agent's store variables unset) and `cli`
    (`PassdownCLI` in that HOME, the agent registered by `register`) fixtures, for its
    test module: `home, cli = agent_fixtures(register, "AGENT_HOME")`."""

    @pytest.fixture
    def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        return fresh_home(tmp_path, monkeypatch, *unset)

    @pytest.fixture
    def cli(home: Path, tmp_path: Path) -> PassdownCLI:
        return PassdownCLI(home, tmp_path, register)

    return home, cli


def copy_recorded(source: Path, home: Path, *ignore: str) -> None:
    """A recorded store (tests/fixtures/sessions/<agent>/<scenario>) into `home`,
    without its expected facts."""
    skipped = shutil.ignore_patterns("expected.json", *ignore)
    shutil.copytree(source, home, dirs_exist_ok=True, ignore=skipped)


@dataclass(frozen=True)
class PassdownCLI:
    """`python -m passdown` as a user runs it: this HOME, a bare PATH (before it `bin`,
    when given), the agents registered by `register`, the data folder in `tmp_path`."""

    home: Path
    tmp_path: Path
    register: Callable[[Path], str]
    bin: Path | None = None

    def env(self) -> dict[str, str]:
        path = "/usr/bin:/bin" if self.bin is None else f"{self.bin}:/usr/bin:/bin"
        return {
            "HOME": str(self.home),
            "PATH": path,
            "PYTHONPATH": self.register(self.tmp_path / "site"),
            "PASSDOWN_DATA_DIR": str(self.tmp_path / "data"),
        }

    def __call__(
        self, *args: str, cwd: Path | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*PASSDOWN, *args],
            cwd=cwd or self.tmp_path,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def hooks_log(self) -> str:
        return (self.tmp_path / "data" / "logs" / "hooks.log").read_text()

    def export(self, agent: str, session: str) -> dict[str, Any]:
        """`passdown export` of one session (by id or prefix) in the run folder, without
        storing it: the handoff.json it wrote."""
        out = self.tmp_path / "out"
        args = ["export", "--from", agent, "--session", session, "--workspace", "."]
        proc = self(*args, "--out", str(out), "--no-store")
        assert proc.returncode == 0, proc.stderr
        data: dict[str, Any] = json.loads((out / "handoff.json").read_text())
        return data

    def assert_export_survives(self, agent: str, session: Path) -> None:
        """A session file of any content: an exit code and a message, never a traceback."""
        args = ["export", "--from", agent, "--session", str(session)]
        proc = self(*args, "--out", str(self.tmp_path / "out"), "--no-store")
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
        assert proc.returncode in (0, 3, 4, 5), proc.stderr


@contextmanager
def hooks_installed(
    cli: PassdownCLI, agent: str, user_file: Path, mine: str
) -> Iterator[subprocess.CompletedProcess[str]]:
    """`passdown install AGENT` into the user's own hooks file, which holds `mine`;
    leaving, `passdown uninstall AGENT` gives the file back byte for byte."""
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(mine)
    installed = cli("install", agent)
    assert installed.returncode == 0, installed.stderr
    yield installed
    removed = cli("uninstall", agent)
    assert removed.returncode == 0, removed.stderr
    assert user_file.read_text() == mine


def assert_refused_as_too_large(agent: Agent, workspace: str) -> None:
    """The workspace's one session is larger than the reader's bound and its first item
    lies past it: nothing read, and a warning that says why."""
    [ref] = agent.sessions(Path(workspace))
    transcript = agent.read(ref)
    assert list(transcript.events()) == []
    assert any("larger than" in w for w in transcript.diagnostics.warnings)


@dataclass(frozen=True)
class Launch:
    """A prompt, the mode, and the argv the agent is launched with. `{file}` in an
    argument stands for the private prompt file (`.agent-handoff/<prompt_file>`), which
    must then hold the prompt, readable by the user only."""

    prompt: str
    interactive: bool
    argv: tuple[str, ...]
    env: dict[str, str] | None = None  # the launch's environment, where it sets one

    def __str__(self) -> str:
        mode = "interactive" if self.interactive else "batch"
        kind = "long" if len(self.prompt) > 1000 else repr(self.prompt)
        return f"{mode}-{kind}"


def check_launch(agent: Agent, launch: Launch, workspace: Path, prompt_file: str) -> None:
    spec = agent.launch_spec(launch.prompt, workspace=workspace, interactive=launch.interactive)
    path = workspace / ".agent-handoff" / prompt_file
    assert spec.argv == [arg.replace("{file}", str(path)) for arg in launch.argv]
    assert spec.cwd == workspace
    if launch.env is not None:
        assert spec.env == launch.env
    if any("{file}" in arg for arg in launch.argv):
        assert path.read_text() == launch.prompt
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
