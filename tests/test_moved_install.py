"""Moving from one passdown install to another (issue 31): the clone's virtual
environment is removed and passdown is installed again elsewhere (pipx, uv tool).
For every agent with hooks, in the user scope and in a project's files where the agent
has them, `passdown doctor` finds the hooks that still point at the passdown that is
gone, and `passdown install` run by the new passdown rewrites them: no entry names the
old path, none is doubled, and doctor says they fire.

Through the CLI in subprocesses, with a fresh HOME and a PATH without passdown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from passdown.integrations import integrated_agents, integration_for
from test_doctor_scopes import console_script, doctor, environ, run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX console scripts")

AGENTS = integrated_agents()


def files_naming(root: Path, text: str) -> list[str]:
    """The files under `root` whose text names `text` (backups of passdown's own aside)."""
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "passdown-data" in path.parts:
            continue
        if text in path.read_text(encoding="utf-8", errors="replace"):
            found.append(str(path.relative_to(root)))
    return found


@pytest.mark.parametrize("scope", ["user", "project"])
def test_doctor_finds_hooks_of_a_passdown_that_is_gone_and_install_rewrites_them(
    tmp_path: Path, scope: str
) -> None:
    agents = [a for a in AGENTS if scope in integration_for(a).scopes]
    assert len(agents) >= (16 if scope == "user" else 2), agents
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    where = project if scope == "project" else home
    env = environ(home)
    old = console_script(tmp_path / "clone" / ".venv" / "bin")
    proc = run(old, env, project, "install", *agents, "--scope", scope)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert files_naming(where, str(old)), "the install wrote no hook naming its passdown"

    # the clone's venv is removed; passdown is installed again, somewhere else
    old.unlink()
    new = console_script(tmp_path / "pipx" / "venvs" / "passdown" / "bin")
    code, found = doctor(new, env, project, *agents, "--scope", scope)
    assert code == 1
    for agent in agents:
        diagnosis = found[agent]
        assert diagnosis["status"] == "broken", (agent, diagnosis)
        gone = [p for p in diagnosis["programs"] if p["program"] == str(old)]
        assert gone and "does not exist" in gone[0]["problem"], (agent, diagnosis)

    proc = run(new, env, project, "install", *agents, "--scope", scope)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert files_naming(where, str(old)) == []  # every entry rewritten, none left behind
    code, found = doctor(new, env, project, *agents, "--scope", scope)
    for agent in agents:
        programs = [p["program"] for p in found[agent]["programs"]]
        assert programs == [str(new)], (agent, found[agent])
        assert found[agent]["why_not"] == [] or found[agent]["status"] == "agent_missing", (
            agent,
            found[agent],
        )
    assert code == 0
