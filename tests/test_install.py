"""`passdown install | uninstall` in a temp HOME: what lands where, idempotence, backups,
byte-for-byte restore; and `passdown hook` never failing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from commands import passdown_by_name  # noqa: F401  (a fixture)
from passdown.cli import main
from passdown.integrations._files import install_dir

# configs name `passdown` (tests of the command itself set their own)
pytestmark = pytest.mark.usefixtures("passdown_by_name")

CLAUDE_JSON = '{\n  "numStartups": 3,\n  "mcpServers": {\n    "other": {"command": "x"}\n  }\n}'
SETTINGS = '{"model": "opus", "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye"}]}]}}'
CODEX_TOML = 'model = "gpt-5.5"   # mine\n\n[tui]\nnotifications = true\n'


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def passdown(*args: str) -> int:
    return main(list(args))


@pytest.fixture
def home(isolated_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with existing agent config (the files a user already has), and a Codex
    without lifecycle hooks (test_continuity.py covers the one with them)."""
    from passdown.integrations import _codex as codex_integration

    monkeypatch.setattr(codex_integration, "has_lifecycle_hooks", lambda program="codex": False)
    claude, codex = Path(os.environ["CLAUDE_CONFIG_DIR"]), Path(os.environ["CODEX_HOME"])
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    (claude / ".claude.json").write_text(CLAUDE_JSON)
    (claude / "settings.json").write_text(SETTINGS)
    os.chmod(claude / "settings.json", 0o600)
    (codex / "config.toml").write_text(CODEX_TOML)
    monkeypatch.chdir(isolated_homes)
    return isolated_homes


def agent_files(home: Path) -> dict[str, bytes]:
    return {
        **snapshot(home / ".claude"),
        **{"codex/" + k: v for k, v in snapshot(home / ".codex").items()},
    }


def test_install_claude_user(home: Path) -> None:
    claude = home / ".claude"
    assert passdown("install", "claude") == 0
    servers = json.loads((claude / ".claude.json").read_text())["mcpServers"]
    assert servers["passdown"] == {
        "type": "stdio",
        "command": "passdown",
        "args": ["mcp"],
        "env": {},
    }
    assert servers["other"] == {"command": "x"}  # the user's own entries survive
    settings = json.loads((claude / "settings.json").read_text())
    assert settings["model"] == "opus"
    end = settings["hooks"]["SessionEnd"]
    assert end[0]["hooks"][0]["command"] == "echo bye"
    assert end[1]["hooks"][0]["command"] == "passdown hook claude"
    assert settings["hooks"]["PreCompact"][0]["hooks"][0]["command"] == "passdown hook claude"
    skill = claude / "skills" / "passdown-takeover" / "SKILL.md"
    assert skill.read_text().startswith("---\nname: passdown-takeover\n")
    assert (claude / "settings.json").stat().st_mode & 0o777 == 0o600  # mode kept


def test_install_codex_user(home: Path) -> None:
    codex = home / ".codex"
    assert passdown("install", "codex") == 0
    config = tomllib.loads((codex / "config.toml").read_text())
    assert config["model"] == "gpt-5.5" and config["tui"] == {"notifications": True}
    assert config["notify"] == ["passdown", "hook", "codex"]  # top level, not inside [tui]
    assert config["mcp_servers"]["passdown"]["command"] == "passdown"
    assert config["mcp_servers"]["passdown"]["args"] == ["mcp"]
    assert (codex / "skills" / "passdown-takeover" / "SKILL.md").is_file()


def test_install_is_idempotent_and_keeps_backups(home: Path) -> None:
    before = agent_files(home)
    for agent in ("claude", "codex"):
        assert passdown("install", agent) == 0
    once = agent_files(home)
    for agent in ("claude", "codex"):
        assert passdown("install", agent) == 0
    assert agent_files(home) == once
    backups = {
        p.name.split("-", 3)[-1]: p.read_bytes() for p in (install_dir() / "backups").iterdir()
    }
    # one backup per file that existed and changed, holding the original bytes
    assert backups == {
        ".claude.json": before[".claude.json"],
        "settings.json": before["settings.json"],
        "config.toml": before["codex/config.toml"],
    }


def test_uninstall_restores_byte_for_byte(home: Path) -> None:
    before = agent_files(home)
    for agent in ("claude", "codex"):
        assert passdown("install", agent) == 0
        assert passdown("install", agent) == 0
    for agent in ("claude", "codex"):
        assert passdown("uninstall", agent) == 0
    assert agent_files(home) == before
    assert (home / ".claude" / "settings.json").stat().st_mode & 0o777 == 0o600
    assert not (home / ".claude" / "skills").exists()  # folders passdown made are gone
    assert passdown("uninstall", "claude") == 0  # nothing left to undo: still fine


def test_uninstall_after_the_agent_changed_a_file_removes_only_our_entries(home: Path) -> None:
    assert passdown("install", "claude") == 0
    path = home / ".claude" / ".claude.json"
    data = json.loads(path.read_text())
    data["numStartups"] = 4  # Claude Code rewrites this file as it runs
    path.write_text(json.dumps(data, indent=2))
    assert passdown("uninstall", "claude") == 0
    after = json.loads(path.read_text())
    assert after == {"numStartups": 4, "mcpServers": {"other": {"command": "x"}}}


def test_project_scope(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "AGENTS.md").write_text("# Rules\n\nBe nice.\n")
    monkeypatch.chdir(project)
    before = snapshot(project)
    assert passdown("install", "claude", "--scope", "project") == 0
    assert passdown("install", "codex", "--scope", "project") == 0
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["passdown"]["args"] == [
        "mcp"
    ]
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["enabledMcpjsonServers"] == ["passdown"]
    assert (project / ".claude" / "skills" / "passdown-takeover" / "SKILL.md").is_file()
    agents_md = (project / "AGENTS.md").read_text()
    assert agents_md.startswith("# Rules\n\nBe nice.\n") and "load_handoff" in agents_md
    assert "mcp_servers" in tomllib.loads((project / ".codex" / "config.toml").read_text())
    assert passdown("install", "codex", "--scope", "project") == 0
    assert (project / "AGENTS.md").read_text() == agents_md  # one snippet, not two
    assert passdown("uninstall", "claude", "--scope", "project") == 0
    assert passdown("uninstall", "codex", "--scope", "project") == 0
    assert snapshot(project) == before
    assert sorted(p.name for p in project.iterdir()) == [".git", "AGENTS.md"]


def test_invalid_json_config_is_left_alone(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text("{ not json")
    assert passdown("install", "claude") == 2
    assert path.read_text() == "{ not json"


def test_hook_never_fails_and_logs(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown.integrations._hooks import log_path, run_hook

    # `passdown hook` narrows PASSDOWN_AGENTS for its own process; keep this one's intact
    monkeypatch.setenv("PASSDOWN_AGENTS", "")

    assert run_hook("claude", [], "this is not json") == 0
    assert (
        run_hook(
            "codex",
            [
                json.dumps(
                    {
                        "type": "agent-turn-complete",
                        "thread-id": "0199a000-0000-7000-8000-000000000000",
                        "cwd": str(home),
                    }
                )
            ],
            None,
        )
        == 0
    )
    assert run_hook("gemini", [], "{}") == 0
    assert passdown("hook", "codex", "{}") == 0
    log = log_path().read_text()
    assert log.count(" error ") == 4, log
    assert "the hook payload is not a JSON object" in log and "no Codex" in log
    assert "Traceback" not in log  # bad input is not logged as a bug
    assert capsys.readouterr().out == ""  # a hook prints nothing
