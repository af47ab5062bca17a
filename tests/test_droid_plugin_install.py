"""Factory Droid runs passdown's Claude Code plugin (issue 31): the launcher turns the
plugin's hooks into `passdown hook droid` under Droid, `passdown install droid` writes
nothing where Droid's plugin fires (user scope, or a project that enables it), and
`passdown doctor` lists the plugin. The records are those `droid plugin install` 0.225
writes (`tests/e2e/test_droid_plugin.py` makes them with the real CLI)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_agent_plugins import LAUNCHER, _bare_path, _fake_passdown
from test_doctor_scopes import BARE_PATH, console_script, doctor, environ, run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the launcher is POSIX sh")


def test_under_droid_the_claude_plugins_hook_runs_passdown_hook_droid(tmp_path: Path) -> None:
    fake = _fake_passdown(tmp_path / "bin")
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{fake.parent}:{_bare_path(tmp_path)}",
        "TMPDIR": str(tmp_path),
    }
    end = '{"hook_event_name":"SessionEnd","session_id":"d-1","cwd":"/w"}'

    def launch(extra: dict[str, str]) -> Any:
        return subprocess.run(
            ["sh", str(LAUNCHER), "hook", "claude"],
            env={**env, **extra},
            input=end,
            capture_output=True,
            text=True,
            timeout=30,
            executable=shutil.which("sh"),
        )

    under_droid = launch({"DROID_PROJECT_DIR": "/w", "DROID_PLUGIN_ROOT": "/p"})
    assert under_droid.returncode == 0, under_droid.stderr
    assert under_droid.stdout == f"ran: hook droid\n{end}"  # the payload as Droid sent it
    under_claude = launch({"CLAUDE_PROJECT_DIR": "/w"})
    assert under_claude.stdout == f"ran: hook claude\n{end}"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(passdown script, HOME, a git project, an environment with `droid` and the
    script on PATH, as the plugin's launcher would find it)."""
    home = tmp_path / "home"
    (home / ".factory").mkdir(parents=True)
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    script = console_script(tmp_path / "venv" / "bin")
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "droid").write_text("#!/bin/sh\nexit 0\n")
    (agents / "droid").chmod(0o755)
    return script, home, project, environ(home, f"{script.parent}:{agents}:{BARE_PATH}")


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def droid_plugin(home: Path, scope: str = "user", project: Path | None = None) -> Path:
    """What `droid plugin install passdown@passdown [--scope project]` writes: the record
    (no project named in it) and `enabledPlugins` in the scope's settings file."""
    install = home / ".factory/plugins/cache/passdown-1/passdown-2/d2929b8b8e77"
    _write(install / "hooks" / "hooks.json", {"hooks": {}})
    _write(
        home / f".factory/plugins/installed_plugins/passdown-passdown-{scope}-e4f1.json",
        {
            "schemaVersion": 1,
            "pluginId": "passdown@passdown",
            "entry": {"scope": scope, "installPath": str(install), "source": "passdown"},
        },
    )
    settings = (project or home) / ".factory" / "settings.json"
    data = json.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}
    data.setdefault("enabledPlugins", {})["passdown@passdown"] = True
    _write(settings, data)
    return settings


def test_install_droid_writes_nothing_where_droids_plugin_fires(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    settings = droid_plugin(home)
    before = settings.read_text(encoding="utf-8")
    for scope in ("user", "project"):
        proc = run(script, env, project, "install", "droid", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        (agent,) = json.loads(proc.stdout)["agents"]
        assert agent["changed"] is False and agent["events"] == []
        assert any("Claude Code plugin (in Droid) passdown@passdown" in n for n in agent["notes"])
    assert settings.read_text(encoding="utf-8") == before
    assert not (project / ".factory").exists()
    code, agents = doctor(script, env, project, "droid")
    droid = agents["droid"]
    assert code == 0 and droid["status"] == "ok", droid
    assert [p["name"] for p in droid["plugins"]] == ["passdown@passdown"]
    assert droid["programs"][0]["used_by"][0]["what"] == "plugin passdown@passdown"


def test_a_project_install_of_droids_plugin_fires_only_where_enabled(
    setup: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    script, home, project, env = setup
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    droid_plugin(home, "project", other)
    proc = run(script, env, project, "install", "droid", "--scope", "project")
    assert proc.returncode == 0, proc.stderr
    assert "hook droid" in (project / ".factory" / "settings.json").read_text(encoding="utf-8")
    proc = run(script, env, other, "install", "droid", "--scope", "project", "--json")
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False and "hooks" not in json.loads(
        (other / ".factory" / "settings.json").read_text(encoding="utf-8")
    )
