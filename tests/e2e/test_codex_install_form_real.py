"""`passdown install codex` made before Codex is installed writes what the pinned real
Codex reads: the same config as an install that asked it, which `passdown doctor` finds
fitting once that Codex is on PATH (no version mismatch, no warning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, npm_bin_dir, run_passdown

pytestmark = pytest.mark.e2e


def test_an_install_before_codex_fits_the_codex_installed_after(
    agent_bin: Path, tmp_path: Path
) -> None:
    blind = AgentEnv.create(tmp_path / "blind")
    asked = AgentEnv.create(tmp_path / "asked")
    without = {**blind.environ(), "PATH": "/usr/bin:/bin"}  # no Codex here yet
    assert not (Path("/usr/bin/codex").exists() or Path("/bin/codex").exists())
    proc = run_passdown(without, blind.home, "install", "codex", "--json")
    assert proc.returncode == 0, proc.stderr
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["events"] == ["SessionStart", "PreCompact", "Stop", "SessionEnd"]
    assert agent["notes"][0].startswith("could not ask Codex which hooks it has")

    with_codex = asked.environ()
    assert with_codex["PATH"].startswith(str(npm_bin_dir()))
    proc = run_passdown(with_codex, asked.home, "install", "codex", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["agents"][0]["events"] == agent["events"]
    written = (blind.codex_home / "config.toml").read_text()
    expected = (asked.codex_home / "config.toml").read_text()
    assert written.replace(str(blind.home), str(asked.home)) == expected

    # Codex installed since: doctor finds the install fits it
    later = {**blind.environ(), "PATH": with_codex["PATH"]}
    proc = run_passdown(later, blind.home, "doctor", "codex", "--json")
    (found,) = json.loads(proc.stdout)["agents"]
    assert proc.returncode == 0 and found["status"] == "ok", found
    assert found["warnings"] == [] and found["installed_in"] == ["user"]
