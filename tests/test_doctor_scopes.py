"""`passdown doctor` looks at both scopes: the workspace's (a project install) and the
user's, says in which it found passdown, and warns when both are installed (the agent
reads both configs, so each event may run passdown's hook twice).

Through the CLI in a subprocess, as a user runs it, in a fresh HOME with a PATH that has
no passdown and no real agent on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from commands import SRC, passdown_script

BARE_PATH = "/usr/bin:/bin"


def console_script(bin_dir: Path) -> Path:
    """`bin_dir/passdown` as pip writes a console script, importing this checkout."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "passdown"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(SRC)!r})\n"
        "from passdown.cli import run\nif __name__ == '__main__':\n    sys.exit(run())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def environ(home: Path, path: str = BARE_PATH) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": path,
        "LANG": "C.UTF-8",
        "PASSDOWN_DATA_DIR": str(home / "passdown-data"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "PASSDOWN_AGENTS": "",
    }


def run(script: Path, env: dict[str, str], cwd: Path, *args: str) -> Any:
    return subprocess.run(
        [str(script), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def doctor(script: Path, env: dict[str, str], cwd: Path, *args: str) -> tuple[int, Any]:
    proc = run(script, env, cwd, "doctor", *args, "--json")
    assert proc.stdout, proc.stderr
    return proc.returncode, {a["agent"]: a for a in json.loads(proc.stdout)["agents"]}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(passdown script, HOME, a git project, an environment with a `claude` on PATH)."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    script = console_script(tmp_path / "venv" / "bin")
    agents = tmp_path / "agents"
    agents.mkdir()
    claude = agents / "claude"
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    return script, home, project, environ(home, f"{agents}:{BARE_PATH}")


def test_doctor_sees_a_project_install_without_being_told_the_scope(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, _home, project, env = setup
    assert run(script, env, project, "install", "claude", "--scope", "project").returncode == 0
    code, found = doctor(script, env, project, "claude")
    claude = found["claude"]
    assert code == 0 and claude["status"] == "ok" and claude["would_fire"] is True, claude
    assert claude["scope"] == "both" and claude["installed_in"] == ["project"]
    files = {u["file"] for p in claude["programs"] for u in p["used_by"]}
    assert files == {str(project / ".claude" / "settings.json"), str(project / ".mcp.json")}
    assert claude["warnings"] == []

    text = run(script, env, project, "doctor", "claude")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"claude    ok             hooks run {script} (passdown ")
    assert text.stdout.rstrip().endswith("(project scope)")
    assert "warning" not in text.stderr

    # one scope asked for: only that one
    code, found = doctor(script, env, project, "claude", "--scope", "user")
    assert code == 0 and found["claude"]["status"] == "not_installed"
    assert found["claude"]["installed_in"] == []
    code, found = doctor(script, env, project, "claude", "--scope", "project")
    assert found["claude"]["status"] == "ok" and found["claude"]["installed_in"] == ["project"]


def test_doctor_says_which_scope_is_broken(
    setup: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    script, _home, project, env = setup
    gone = passdown_script(tmp_path / "old venv" / "bin")
    assert run(script, env, project, "install", "claude").returncode == 0
    proc = run(
        script, env, project, "install", "claude", "--scope", "project", "--command", str(gone)
    )
    assert proc.returncode == 0, proc.stderr
    gone.unlink()
    code, found = doctor(script, env, project, "claude")
    claude = found["claude"]
    assert code == 1 and claude["status"] == "broken", claude
    assert claude["installed_in"] == ["user", "project"]
    assert [p["runs"] for p in claude["programs"]] == [True, False]
    assert claude["why_not"][0].startswith(f"project scope: {gone}: does not exist")
    assert [p["scope"] for p in claude["programs"]] == ["user", "project"]


def test_doctor_warns_when_both_scopes_are_installed(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, _home, project, env = setup
    assert run(script, env, project, "install", "claude").returncode == 0
    assert run(script, env, project, "install", "claude", "--scope", "project").returncode == 0
    code, found = doctor(script, env, project, "claude")
    claude = found["claude"]
    assert code == 0 and claude["status"] == "ok"
    assert claude["installed_in"] == ["user", "project"]
    (warning,) = claude["warnings"]
    assert "both the user and the project scope" in warning and "twice" in warning
    assert "passdown uninstall claude --scope project" in warning
    text = run(script, env, project, "doctor", "claude")
    assert text.returncode == 0
    assert text.stdout.rstrip().endswith("(user and project scopes)")
    assert "warning: claude: installed in both the user and the project scope" in text.stderr

    # the project's install undone: one scope left, no warning
    assert run(script, env, project, "uninstall", "claude", "--scope", "project").returncode == 0
    code, found = doctor(script, env, project, "claude")
    assert found["claude"]["installed_in"] == ["user"] and found["claude"]["warnings"] == []


def test_doctor_in_the_home_folder_counts_its_config_once(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    """Outside a repository the project is the current folder: in HOME, the project
    scope's `.claude/settings.json` is the user's own. One install, one scope."""
    script, home, _project, env = setup
    assert run(script, env, home, "install", "claude").returncode == 0
    code, found = doctor(script, env, home, "claude")
    assert code == 0 and found["claude"]["installed_in"] == ["user"], found["claude"]
    assert found["claude"]["warnings"] == []


def test_doctor_reads_each_agent_only_in_the_scopes_it_has(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    """gptme, Hermes and Kimi read hooks from the user's config only: doctor (both
    scopes, or `--scope project`) checks them there, and never fails on them."""
    script, _home, project, env = setup
    code, found = doctor(script, env, project, "--scope", "project")
    assert code == 0, found
    for agent in ("gptme", "hermes", "kimi"):
        assert found[agent]["status"] == "not_installed"
        assert found[agent]["notes"] == [
            f"{agent} has no project scope: its hooks live in the user's config"
        ]
    code, found = doctor(script, env, project)
    assert code == 0 and found["kimi"]["scope"] == "user" and found["claude"]["scope"] == "both"


def test_an_agent_that_reads_one_config_is_judged_by_the_one_it_reads(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    """OpenHands reads the project's hooks.json where there is one, else the user's:
    installed in both scopes, its hooks fire once (the project's), so no warning."""
    script, _home, project, env = setup
    assert run(script, env, project, "install", "openhands").returncode == 0
    assert run(script, env, project, "install", "openhands", "--scope", "project").returncode == 0
    code, found = doctor(script, env, project, "openhands")
    openhands = found["openhands"]
    assert code == 0 and openhands["status"] == "agent_missing", openhands
    assert openhands["installed_in"] == ["user", "project"] and openhands["warnings"] == []
    assert [p["scope"] for p in openhands["programs"]] == ["project"]
    assert openhands["notes"][0].startswith("openhands reads the project's config here")
