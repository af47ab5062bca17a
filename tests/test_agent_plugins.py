"""passdown's agent plugins (issue 31): the Claude Code plugin and the Gemini CLI
extension in `plugins/`, their launcher, and how `install` and `doctor` see them.

The files are checked against what `passdown install` writes (one source: the same
events, the packaged skill, the version); the launcher runs in `sh` with a PATH made for
the test; `install` and `doctor` run as a user runs them, in a subprocess with a fresh
HOME, reading plugin records written in the form the real CLIs write them
(`tests/e2e/test_claude_plugin.py` and `test_gemini_extension.py` make them for real)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import passdown
from passdown.integrations._base import SKILLS_DIR
from passdown.integrations._claude import WRITE_EVENTS, ClaudeHooks
from passdown.integrations._plugins import LAUNCHER_PLACES
from passdown.integrations._settings_json import GeminiHooks, QwenHooks
from test_doctor_scopes import BARE_PATH, console_script, doctor, environ, run

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "plugins"
LAUNCHER = PLUGINS / "claude" / "scripts" / "passdown-launch"
TOOLS = ("sh", "cat", "sed", "tr", "id", "head")  # what the launcher itself runs

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the launcher is POSIX sh")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _hook_events(path: Path) -> set[str]:
    return set(_json(path)["hooks"])


# -- the files: one source with what `passdown install` writes ------------------------------


def test_the_marketplace_serves_the_claude_plugin() -> None:
    market = _json(REPO / ".claude-plugin" / "marketplace.json")
    (entry,) = market["plugins"]
    assert entry["name"] == "passdown"
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


def test_the_plugins_hook_the_events_install_registers() -> None:
    claude = ClaudeHooks()
    assert _hook_events(PLUGINS / "claude" / "hooks" / "hooks.json") == set(claude.events)
    assert set(claude.events) == {*WRITE_EVENTS, "SessionStart"}
    assert _hook_events(PLUGINS / "gemini" / "hooks" / "hooks.json") == set(GeminiHooks.events)
    assert _hook_events(PLUGINS / "qwen" / "hooks" / "hooks.json") == set(QwenHooks.events)
    for agent in ("claude", "gemini", "qwen"):
        hooks = _json(PLUGINS / agent / "hooks" / "hooks.json")["hooks"]
        for groups in hooks.values():
            (command,) = [h["command"] for g in groups for h in g["hooks"]]
            assert command.startswith("sh ") and command.endswith(f" hook {agent}")
            assert "scripts" in command and "passdown-launch" in command


def test_the_plugins_carry_the_packaged_skill_the_launcher_and_the_version() -> None:
    skill = (SKILLS_DIR / "passdown-takeover" / "SKILL.md").read_bytes()
    version = passdown.__version__
    launcher = LAUNCHER.read_bytes()
    for agent in ("claude", "gemini", "qwen"):
        assert (PLUGINS / agent / "skills" / "passdown-takeover" / "SKILL.md").read_bytes() == skill
        assert (PLUGINS / agent / "scripts" / "passdown-launch").read_bytes() == launcher
    assert _json(PLUGINS / "claude" / ".claude-plugin" / "plugin.json")["version"] == version
    servers = [_json(PLUGINS / "claude" / ".mcp.json")["mcpServers"]]
    for agent in ("gemini", "qwen"):
        manifest = _json(PLUGINS / agent / f"{agent}-extension.json")
        assert (manifest["name"], manifest["version"]) == ("passdown", version)
        assert (PLUGINS / agent / manifest["contextFileName"]).is_file()
        servers.append(manifest["mcpServers"])
    for package in ("pi", "opencode"):
        assert _json(PLUGINS / package / "package.json")["version"] == version
    for server in servers:
        assert server["passdown"]["args"][-1] == "mcp"


def test_doctor_looks_where_the_launcher_looks() -> None:
    text = LAUNCHER.read_text(encoding="utf-8")
    for place in LAUNCHER_PLACES:
        assert f'"$HOME/{place}"' in text


# -- the launcher ------------------------------------------------------------------------------


def _bare_path(tmp_path: Path) -> str:
    """A PATH with the launcher's tools and no passdown."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in TOOLS:
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    return str(tools)


def _launch(tmp_path: Path, path: str, *args: str, stdin: str = "") -> Any:
    env = {"HOME": str(tmp_path / "home"), "PATH": path, "TMPDIR": str(tmp_path)}
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(
        ["sh", str(LAUNCHER), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        executable=shutil.which("sh"),
    )


def _fake_passdown(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "passdown"
    script.write_text('#!/bin/sh\necho "ran: $*"\ncat\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def test_the_launcher_runs_passdown_on_path_with_the_payload(tmp_path: Path) -> None:
    fake = _fake_passdown(tmp_path / "bin")
    proc = _launch(tmp_path, f"{fake.parent}:{_bare_path(tmp_path)}", "hook", "claude", stdin="{}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran: hook claude\n{}"


def test_the_launcher_falls_back_to_the_readme_venv(tmp_path: Path) -> None:
    _fake_passdown(tmp_path / "home" / ".local" / "share" / "passdown-venv" / "bin")
    proc = _launch(tmp_path, _bare_path(tmp_path), "mcp")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran: mcp\n"


def test_without_passdown_a_hook_tells_the_session_once(tmp_path: Path) -> None:
    path = _bare_path(tmp_path)
    start = json.dumps({"session_id": "s-1", "hook_event_name": "SessionStart"})
    first = _launch(tmp_path, path, "hook", "claude", stdin=start)
    assert first.returncode == 0, first.stderr
    told = json.loads(first.stdout)
    assert "passdown is not installed" in told["systemMessage"]
    assert told["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": told["systemMessage"],
    }
    end = json.dumps({"session_id": "s-1", "hook_event_name": "SessionEnd"})
    again = _launch(tmp_path, path, "hook", "claude", stdin=end)
    assert (again.returncode, again.stdout) == (0, "")
    other = _launch(tmp_path, path, "hook", "claude", stdin=end.replace("s-1", "s-2"))
    assert set(json.loads(other.stdout)) == {"systemMessage"}


def test_without_passdown_the_mcp_server_fails_with_a_message(tmp_path: Path) -> None:
    proc = _launch(tmp_path, _bare_path(tmp_path), "mcp")
    assert proc.returncode == 127
    assert "passdown is not installed" in proc.stderr


# -- install and doctor beside the plugins -----------------------------------------------------


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(passdown script, HOME, a git project, an environment with `claude` and `gemini`
    on PATH and passdown's script on it too, as the plugins' launcher would find it)."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    script = console_script(tmp_path / "venv" / "bin")
    agents = tmp_path / "agents"
    agents.mkdir()
    for name in ("claude", "gemini", "qwen"):
        (agents / name).write_text("#!/bin/sh\nexit 0\n")
        (agents / name).chmod(0o755)
    env = environ(home, f"{script.parent}:{agents}:{BARE_PATH}")
    return script, home, project, env


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _claude_plugin(home: Path, scope: str = "user", project: Path | None = None) -> None:
    """The records `claude plugin install passdown@passdown [--scope project]` writes."""
    entry: dict[str, Any] = {
        "scope": scope,
        "installPath": str(home / ".claude/plugins/cache/passdown/passdown/0.1.0"),
        "version": "0.1.0",
    }
    settings = home / ".claude" / "settings.json"
    if project is not None:
        entry["projectPath"] = str(project)
        settings = project / ".claude" / "settings.json"
    _write(
        home / ".claude/plugins/installed_plugins.json",
        {"version": 2, "plugins": {"passdown@passdown": [entry]}},
    )
    data = json.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}
    data.setdefault("enabledPlugins", {})["passdown@passdown"] = True
    _write(settings, data)


def test_install_claude_writes_nothing_where_the_plugin_is_installed(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    _claude_plugin(home)
    settings_before = (home / ".claude" / "settings.json").read_text(encoding="utf-8")
    for scope in ("user", "project"):
        proc = run(script, env, project, "install", "claude", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        (agent,) = json.loads(proc.stdout)["agents"]
        assert agent["changed"] is False and agent["events"] == []
        assert any("Claude Code plugin passdown@passdown" in n for n in agent["notes"])
    assert (home / ".claude" / "settings.json").read_text(encoding="utf-8") == settings_before
    assert not (home / ".claude.json").exists()
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()
    assert not (home / ".claude" / "skills").exists()


def test_a_project_plugin_leaves_other_projects_and_the_user_scope_to_install(
    setup: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    script, home, project, env = setup
    other = tmp_path / "other"
    other.mkdir()
    _claude_plugin(home, "project", other)
    proc = run(script, env, project, "install", "claude", "--scope", "project")
    assert proc.returncode == 0, proc.stderr
    assert "hook claude" in (project / ".claude" / "settings.json").read_text(encoding="utf-8")


def test_doctor_lists_the_plugin_and_warns_when_install_fires_beside_it(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    code, agents = doctor(script, env, project, "claude")
    assert (code, agents["claude"]["status"], agents["claude"]["plugins"]) == (
        0,
        "not_installed",
        [],
    )
    assert run(script, env, project, "install", "claude").returncode == 0
    _claude_plugin(home)  # then the plugin, with the earlier install still in place
    code, agents = doctor(script, env, project, "claude")
    claude = agents["claude"]
    assert code == 0 and claude["status"] == "ok", claude
    assert [p["name"] for p in claude["plugins"]] == ["passdown@passdown"]
    assert any("fire twice" in w and "passdown@passdown" in w for w in claude["warnings"])
    plugin_runs = [p for p in claude["programs"] if p["used_by"][0]["what"].startswith("plugin")]
    assert plugin_runs and plugin_runs[0]["runs"] is True

    # `uninstall` still removes the earlier install; the plugin is then the one source
    assert run(script, env, project, "uninstall", "claude").returncode == 0
    code, agents = doctor(script, env, project, "claude")
    claude = agents["claude"]
    assert (code, claude["status"], claude["installed_in"]) == (0, "ok", ["user"])
    assert not any("fire twice" in w for w in claude["warnings"])


def test_doctor_says_when_the_plugins_launcher_finds_no_passdown(
    setup: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    script, home, project, env = setup
    _claude_plugin(home)
    env = {**env, "PATH": f"{tmp_path / 'agents'}:{BARE_PATH}"}  # no passdown on it
    code, agents = doctor(script, env, project, "claude")
    assert code == 1 and agents["claude"]["status"] == "broken"
    assert any("launcher finds no passdown" in r for r in agents["claude"]["why_not"])


def test_a_disabled_plugin_is_listed_and_does_not_stop_install(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    _claude_plugin(home)
    _write(home / ".claude" / "settings.json", {"enabledPlugins": {"passdown@passdown": False}})
    assert run(script, env, project, "install", "claude").returncode == 0
    assert "hook claude" in (home / ".claude" / "settings.json").read_text(encoding="utf-8")
    _code, agents = doctor(script, env, project, "claude")
    assert agents["claude"]["plugins"][0]["enabled"] is False
    assert not any("fire twice" in w for w in agents["claude"]["warnings"])


@pytest.mark.parametrize(("agent", "kind"), [("gemini", "Gemini CLI"), ("qwen", "Qwen Code")])
def test_install_writes_nothing_where_the_extension_is_enabled(
    setup: tuple[Path, Path, Path, dict[str, str]], agent: str, kind: str
) -> None:
    script, home, project, env = setup
    # what `AGENT extensions install plugins/AGENT` leaves in ~/.AGENT/extensions
    folder = home / f".{agent}" / "extensions" / "passdown"
    shutil.copytree(PLUGINS / agent, folder)
    _write(
        folder / f".{agent}-extension-install.json",
        {"source": str(PLUGINS / agent), "type": "local"},
    )
    proc = run(script, env, project, "install", agent)
    assert proc.returncode == 0, proc.stderr
    assert f"{kind} extension passdown" in proc.stdout + proc.stderr
    assert not (home / f".{agent}" / "settings.json").exists()
    _code, agents = doctor(script, env, project, agent)
    assert agents[agent]["status"] == "ok" and agents[agent]["installed_in"] == ["user"]
    # `AGENT extensions disable passdown` for this folder: install writes the hooks
    _write(
        folder.parent / "extension-enablement.json",
        {"passdown": {"overrides": [f"!{project}/*"]}},
    )
    assert run(script, env, project, "install", agent).returncode == 0
    settings = (home / f".{agent}" / "settings.json").read_text(encoding="utf-8")
    assert f"hook {agent}" in settings
    assert os.path.exists(folder)


def test_under_copilot_the_claude_plugins_hook_runs_passdown_hook_copilot(tmp_path: Path) -> None:
    """Copilot CLI installs the Claude Code plugin from the same marketplace and runs its
    hooks with COPILOT_CLI=1 and a Claude-style payload naming its own session."""
    fake = _fake_passdown(tmp_path / "bin")
    path = f"{fake.parent}:{_bare_path(tmp_path)}"
    env = {"HOME": str(tmp_path), "PATH": path, "TMPDIR": str(tmp_path), "COPILOT_CLI": "1"}
    end = '{"hook_event_name":"SessionEnd","session_id":"c-1","cwd":"/w","reason":"complete"}'

    def launch(payload: str) -> Any:
        return subprocess.run(
            ["sh", str(LAUNCHER), "hook", "claude"],
            env=env,
            input=payload,
            capture_output=True,
            text=True,
            timeout=30,
            executable=shutil.which("sh"),
        )

    proc = launch(end)
    assert proc.returncode == 0, proc.stderr
    ran, payload = proc.stdout.split("\n", 1)
    assert ran == "ran: hook copilot sessionEnd"
    assert json.loads(payload) == {
        "hook_event_name": "SessionEnd",
        "sessionId": "c-1",
        "cwd": "/w",
        "reason": "complete",
    }
    assert launch(end.replace("SessionEnd", "PreCompact")).stdout.startswith(
        "ran: hook copilot preCompact\n"
    )
    assert launch(end.replace("SessionEnd", "StopFailure")).stdout.startswith(
        "ran: hook copilot errorOccurred\n"
    )
    start = launch(end.replace("SessionEnd", "SessionStart"))  # Copilot takes no context there
    assert (start.returncode, start.stdout) == (0, "")


def test_install_copilot_writes_nothing_where_copilot_runs_the_plugin(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    (Path(env["PATH"].split(":")[1]) / "copilot").write_text("#!/bin/sh\nexit 0\n")
    (Path(env["PATH"].split(":")[1]) / "copilot").chmod(0o755)
    # what `copilot plugin marketplace add REPO && copilot plugin install passdown@passdown` write
    settings = home / ".copilot" / "settings.json"
    _write(
        settings,
        {
            "extraKnownMarketplaces": {
                "passdown": {"source": {"source": "directory", "path": str(REPO)}}
            },
            "enabledPlugins": {"passdown@passdown": True},
        },
    )
    before = settings.read_text(encoding="utf-8")
    proc = run(script, env, project, "install", "copilot")
    assert proc.returncode == 0, proc.stderr
    assert "passdown@passdown" in proc.stdout + proc.stderr
    assert settings.read_text(encoding="utf-8") == before
    _code, agents = doctor(script, env, project, "copilot")
    copilot = agents["copilot"]
    assert copilot["status"] == "ok", copilot
    assert copilot["plugins"][0]["path"] == str(REPO / "plugins" / "claude")
