"""Regression tests for issue 11 items 1, 11 and 12: `passdown install` in a hostile
repository, Codex's config.toml edited as TOML, and a symlinked Claude settings file."""

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

# configs name `passdown` (tests of the command itself set their own)
pytestmark = pytest.mark.usefixtures("passdown_by_name")

RC_TEXT = "# my shell rc\nexport PATH=$PATH:/opt/bin\n"


def passdown(*args: str) -> int:
    return main(list(args))


@pytest.fixture(autouse=True)
def old_codex(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Codex without lifecycle hooks (notify only), whatever is on PATH."""
    from passdown.integrations import _codex as codex

    monkeypatch.setattr(codex, "has_lifecycle_hooks", lambda program="codex": False)


@pytest.fixture
def project(isolated_homes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture
def victim(isolated_homes: Path) -> Path:
    """A file outside the repository that a hostile repository would like overwritten."""
    rc = isolated_homes / ".bashrc"
    rc.write_text(RC_TEXT)
    return rc


# -- item 1: fixed temp-file names and symlinks out of the repository ----------------------


@pytest.mark.parametrize(
    "planted", [".mcp.json.passdown-tmp", ".claude/.settings.json.passdown-tmp"]
)
def test_planted_symlink_at_the_old_temp_name_is_never_written_through(
    project: Path, victim: Path, planted: str
) -> None:
    link = project / planted.replace(".mcp.json.passdown-tmp", "..mcp.json.passdown-tmp")
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
    assert passdown("install", "claude", "--scope", "project") == 0
    assert victim.read_text() == RC_TEXT
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["passdown"]["args"] == [
        "mcp"
    ]
    leftovers = [p.name for p in project.rglob("*.tmp")] + [
        p.name for p in project.rglob("*passdown-tmp") if p != link
    ]
    assert leftovers == []


def test_planted_symlink_at_the_old_codex_temp_name(project: Path, victim: Path) -> None:
    (project / ".AGENTS.md.passdown-tmp").symlink_to(victim)
    (project / "AGENTS.md").write_text("# Rules\n")
    assert passdown("install", "codex", "--scope", "project") == 0
    assert victim.read_text() == RC_TEXT
    assert "load_handoff" in (project / "AGENTS.md").read_text()


@pytest.mark.parametrize("linked", [".mcp.json", "AGENTS.md", ".claude", ".codex"])
def test_a_config_file_or_folder_linked_out_of_the_repository_is_refused(
    project: Path, victim: Path, linked: str
) -> None:
    outside = victim if not linked.startswith(".c") else victim.parent / "outside-dir"
    if outside != victim:
        outside.mkdir()
    (project / linked).symlink_to(outside)
    agent = "codex" if linked in ("AGENTS.md", ".codex") else "claude"
    assert passdown("install", agent, "--scope", "project") == 8
    assert victim.read_text() == RC_TEXT
    if outside != victim:
        assert list(outside.iterdir()) == []


def test_a_link_that_stays_inside_the_repository_is_written_through(project: Path) -> None:
    docs = project / "docs"
    docs.mkdir()
    (docs / "AGENTS.md").write_text("# Rules\n")
    (project / "AGENTS.md").symlink_to("docs/AGENTS.md")
    assert passdown("install", "codex", "--scope", "project") == 0
    assert (project / "AGENTS.md").is_symlink()
    assert "load_handoff" in (docs / "AGENTS.md").read_text()
    assert passdown("uninstall", "codex", "--scope", "project") == 0
    assert (project / "AGENTS.md").is_symlink() and (docs / "AGENTS.md").read_text() == "# Rules\n"


# -- item 11: Codex config.toml edited as TOML ---------------------------------------------


@pytest.fixture
def codex_config(isolated_homes: Path) -> Path:
    home = Path(os.environ["CODEX_HOME"])
    home.mkdir(parents=True)
    return home / "config.toml"


def test_existing_passdown_mcp_table_is_updated_not_duplicated(codex_config: Path) -> None:
    original = (
        '# my Codex config\nmodel = "gpt-5.5"\n\n'
        "[mcp_servers.passdown]  # added by `codex mcp add`\n"
        'command = "/usr/local/bin/passdown"\nargs = ["mcp"]\nstartup_timeout_sec = 20\n'
    )
    codex_config.write_text(original)
    assert passdown("install", "codex") == 0
    text = codex_config.read_text()
    config = tomllib.loads(text)  # a duplicate table would not parse
    assert text.count("[mcp_servers.passdown]") == 1
    assert config["mcp_servers"]["passdown"]["command"] == "passdown"
    assert config["mcp_servers"]["passdown"]["startup_timeout_sec"] == 20  # theirs kept
    assert "# my Codex config" in text and "# added by `codex mcp add`" in text
    assert passdown("install", "codex") == 0
    assert codex_config.read_text() == text  # idempotent
    assert passdown("uninstall", "codex") == 0
    assert codex_config.read_text() == original  # byte for byte


def test_multiline_array_with_a_bracket_line_keeps_notify_at_the_top_level(
    codex_config: Path,
) -> None:
    original = 'model = "gpt-5.5"\nprofiles_order = [\n  "a",\n["nested"]]\n\n[tui]\nnotifications = true\n'
    codex_config.write_text(original)
    assert passdown("install", "codex") == 0
    config = tomllib.loads(codex_config.read_text())
    assert config["profiles_order"] == ["a", ["nested"]]
    assert config["notify"] == ["passdown", "hook", "codex"]
    assert config["tui"] == {"notifications": True}
    assert passdown("uninstall", "codex") == 0
    assert codex_config.read_text() == original


def test_malformed_toml_is_refused_with_a_clear_error(
    codex_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = 'model = "gpt-5.5\n[tui\n'
    codex_config.write_text(broken)
    assert passdown("install", "codex") == 2
    err = capsys.readouterr().err
    assert "not valid TOML" in err and str(codex_config) in err
    assert codex_config.read_text() == broken


def test_changed_config_loses_only_passdowns_entries_on_uninstall(codex_config: Path) -> None:
    codex_config.write_text('model = "gpt-5.5"  # mine\n')
    assert passdown("install", "codex") == 0
    codex_config.write_text(
        codex_config.read_text() + '\n[projects."/w"]\ntrust_level = "trusted"\n'
    )
    assert passdown("uninstall", "codex") == 0
    text = codex_config.read_text()
    assert "# mine" in text
    assert tomllib.loads(text) == {
        "model": "gpt-5.5",
        "projects": {"/w": {"trust_level": "trusted"}},
    }


# -- item 12: a symlinked ~/.claude/settings.json --------------------------------------------


def test_symlinked_claude_settings_are_written_through_and_the_link_kept(
    isolated_homes: Path,
) -> None:
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    claude.mkdir(parents=True)
    dotfiles = isolated_homes / "dotfiles"
    dotfiles.mkdir()
    original = '{\n  "model": "opus"\n}\n'
    (dotfiles / "settings.json").write_text(original)
    (claude / "settings.json").symlink_to(dotfiles / "settings.json")
    assert passdown("install", "claude") == 0
    assert (claude / "settings.json").is_symlink()
    hooks = json.loads((dotfiles / "settings.json").read_text())["hooks"]
    assert hooks["SessionEnd"][0]["hooks"][0]["command"] == "passdown hook claude"
    assert passdown("uninstall", "claude") == 0
    assert (claude / "settings.json").is_symlink()
    assert (dotfiles / "settings.json").read_text() == original
