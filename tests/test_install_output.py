"""What `passdown install | uninstall` print (issue 14): with `--json` one document that
matches the files on disk (per agent: files with their action, events hooked, pickup;
skipped agents and why), errors as JSON on stderr, every value redacted, and progress
only on a terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from commands import passdown_by_name, passdown_script  # noqa: F401  (a fixture)
from e2e.agents import VERSIONS, find_agent, npm_bin_dir  # before a test moves HOME
from passdown.cli import main
from passdown.integrations._files import install_dir
from test_cli_shape import run, run_on_terminal
from test_install import CODEX_TOML, agent_files, home  # noqa: F401  (home: a fixture)

# configs name `passdown` (tests of the command itself set their own)
pytestmark = pytest.mark.usefixtures("passdown_by_name")

GITHUB_TOKEN = "ghp_" + "Inst4llJs0nT0ken0123456789abcdefghijk"
CLAUDE_HOOK = "passdown hook claude"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data: dict[str, Any] = json.loads(captured.out)
    return data


def by_agent(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["agent"]: entry for entry in document["agents"]}


def claude_hook_events(settings: Path) -> set[str]:
    hooks = json.loads(settings.read_text())["hooks"]
    return {
        event
        for event, groups in hooks.items()
        if any(h["command"] == CLAUDE_HOOK for g in groups for h in g["hooks"])
    }


def manifest_files(key: str) -> set[str]:
    return set(json.loads((install_dir() / f"{key}.json").read_text())["files"])


def test_install_json_matches_the_files_on_disk(
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    claude, codex = home / ".claude", home / ".codex"
    before = agent_files(home)
    document = run_json(capsys, "install", "claude", "codex")
    assert document["action"] == "install" and document["skipped"] == []
    agents = by_agent(document)
    assert list(agents) == ["claude", "codex"]

    entry = agents["claude"]
    assert entry["scope"] == "user" and entry["command"] == "passdown" and entry["pickup"] is True
    assert entry["changed"] is True
    actions = {f["path"]: f["action"] for f in entry["files"]}
    skill = claude / "skills" / "passdown-takeover" / "SKILL.md"
    assert actions == {
        str(claude / ".claude.json"): "updated",  # it existed
        str(claude / "settings.json"): "updated",
        str(skill): "created",
    }
    assert all(Path(path).is_file() for path in actions)
    assert set(actions) == manifest_files("claude-user"), "each file listed is backed up"
    assert set(entry["events"]) == claude_hook_events(claude / "settings.json")
    assert set(entry["events"]) == {"SessionStart", "SessionEnd", "PreCompact", "StopFailure"}
    assert "passdown" in json.loads((claude / ".claude.json").read_text())["mcpServers"]

    entry = agents["codex"]  # this Codex has no lifecycle hooks (the fixture): notify
    config = tomllib.loads((codex / "config.toml").read_text())
    assert entry["events"] == ["agent-turn-complete"]
    assert config["notify"] == ["passdown", "hook", "codex"] and "hooks" not in config
    # passdown's own notify is not "the user's notify program" (it once said so)
    assert not any("already sets notify" in note for note in entry["notes"])
    assert {f["path"]: f["action"] for f in entry["files"]} == {
        str(codex / "config.toml"): "updated",
        str(codex / "skills" / "passdown-takeover" / "SKILL.md"): "created",
    }

    # the same install again changes nothing, and says so
    again = by_agent(run_json(capsys, "install", "claude", "codex"))
    assert all(not e["changed"] for e in again.values())
    assert {f["action"] for e in again.values() for f in e["files"]} == {"unchanged"}

    # without pickup: the session-start hook goes, and only settings.json changes
    no_pickup = by_agent(run_json(capsys, "install", "claude", "--no-pickup"))["claude"]
    assert no_pickup["pickup"] is False
    assert set(no_pickup["events"]) == {"SessionEnd", "PreCompact", "StopFailure"}
    assert claude_hook_events(claude / "settings.json") == set(no_pickup["events"])
    assert {f["path"]: f["action"] for f in no_pickup["files"]}[
        str(claude / "settings.json")
    ] == "updated"
    assert [f["action"] for f in no_pickup["files"]].count("unchanged") == 2

    removed = run_json(capsys, "uninstall", "claude", "codex")
    assert removed["action"] == "uninstall"
    undone = by_agent(removed)
    assert {f["path"]: f["action"] for f in undone["claude"]["files"]} == {
        str(skill): "removed",
        str(claude / "settings.json"): "restored",
        str(claude / ".claude.json"): "restored",
    }
    assert "events" not in undone["claude"] and "pickup" not in undone["claude"]
    assert not skill.exists()
    assert agent_files(home) == before, "restored byte for byte"


def test_codex_lifecycle_events_are_the_hooks_in_config_toml(
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from passdown.integrations import _codex as codex_integration

    monkeypatch.setattr(codex_integration, "has_lifecycle_hooks", lambda program="codex": True)
    entry = by_agent(run_json(capsys, "install", "codex"))["codex"]
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    hooked = {event for event in config["hooks"] if event != "state"}
    assert entry["events"] == ["SessionStart", "PreCompact", "Stop", "SessionEnd"]
    assert set(entry["events"]) == hooked
    assert "notify" not in config


def test_codex_keeps_the_users_notify_and_reports_no_events(
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = home / ".codex" / "config.toml"
    config.write_text('notify = ["my-notifier"]\n' + CODEX_TOML)
    entry = by_agent(run_json(capsys, "install", "codex"))["codex"]
    assert entry["events"] == [], "the user's notify program stays: no passdown hook runs"
    assert tomllib.loads(config.read_text())["notify"] == ["my-notifier"]
    assert any("already sets notify" in note for note in entry["notes"])


def fake_program(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)


def test_install_all_skips_agents_that_are_not_here(
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = home / "bin"
    fake_program(bin_dir, "claude")
    fake_program(bin_dir, "gemini")
    passdown_script(bin_dir)  # the command the hooks run, which install runs once
    monkeypatch.setenv("PATH", str(bin_dir))
    document = run_json(capsys, "install", "all")
    assert list(by_agent(document)) == ["claude", "gemini"]
    skipped = {s["agent"]: s["reason"] for s in document["skipped"]}
    assert skipped["codex"] == "not installed (codex is not on PATH)"
    assert skipped["aider"].startswith("no hook integration")
    assert skipped["cursor"].startswith("no hook integration")
    assert set(skipped) == {"codex", "copilot", "opencode", "pi", "qwen", "aider", "cursor"} | {
        "cline",  # not on PATH (issue 23)
        "kimi",
        "droid",
        "kilo",
        "gptme",  # issue 23's third wave: PyPI agents, not on PATH
        "hermes",
        "auggie",  # issue 23, third wave: not on PATH
        "continue",  # no hooks that fire
        "cursor-ide",  # issue 24: Cursor's editor chats, a source without hooks
        "vibe",
        "openhands",
    } | {"copilot-chat", "cline-ext", "roo"}  # editors' chats: sources only (issue 24)
    assert (home / ".gemini" / "settings.json").is_file()
    assert (
        not (home / ".qwen").exists() and "notify" not in (home / ".codex/config.toml").read_text()
    )

    removed = run_json(capsys, "uninstall", "all")
    assert list(by_agent(removed)) == ["claude", "gemini"]
    assert {s["agent"]: s["reason"] for s in removed["skipped"]}["codex"] == (
        "nothing installed (scope user)"
    )
    assert not (home / ".gemini" / "settings.json").exists()


def test_install_errors_are_json_on_stderr(
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["install", "aider", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    error = json.loads(captured.err)
    assert error["code"] == 2 and "cannot install into 'aider'" in error["error"]

    config = home / ".codex" / "config.toml"
    config.write_text("model = [unclosed\n")
    assert main(["install", "claude", "codex", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    error = json.loads(captured.err)
    assert error["code"] == 2 and "not valid TOML" in error["error"]
    assert error["hint"] and "fix the file" in error["hint"]
    assert config.read_text() == "model = [unclosed\n"

    assert main(["uninstall", "nonesuch", "--json"]) == 13  # an unknown agent
    assert json.loads(capsys.readouterr().err)["code"] == 13


def test_install_output_is_redacted(
    isolated_homes: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config_dir = isolated_homes / GITHUB_TOKEN / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    monkeypatch.chdir(isolated_homes)
    command = str(passdown_script(isolated_homes / "opt" / GITHUB_TOKEN))
    assert main(["install", "claude", "--command", command]) == 0
    text = capsys.readouterr()
    assert GITHUB_TOKEN not in text.out + text.err
    assert "created   " in text.out and "[REDACTED" in text.out
    assert (config_dir / "settings.json").is_file(), "the real path is written to"
    document = run_json(capsys, "install", "claude", "--command", command)
    dumped = json.dumps(document)
    assert GITHUB_TOKEN not in dumped
    entry = by_agent(document)["claude"]
    assert "[REDACTED" in entry["command"] and all("[REDACTED" in f["path"] for f in entry["files"])


def test_install_text_names_the_events_and_skipped_agents(
    home: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["install", "claude", "--no-pickup"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "hooks     claude: SessionEnd, PreCompact, StopFailure (pickup off)" in out
    monkeypatch.setenv("PATH", str(home / "nothing-here"))
    assert main(["install", "all"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "skipped claude: not installed (claude is not on PATH)" in captured.err.splitlines()


# -- progress ------------------------------------------------------------------------------


def test_install_shows_progress_only_on_a_terminal(
    home: Path,  # noqa: F811
) -> None:
    code, out, terminal = run_on_terminal(["install", "claude", "gemini"], home)
    assert code == 0, terminal
    assert "installing claude" in terminal or "installing gemini" in terminal
    assert "created" in out and "installing" not in out

    piped = run(["uninstall", "claude", "gemini"], home)
    assert piped.returncode == 0, piped.stderr
    assert "restored" in piped.stdout
    assert "uninstalling" not in piped.stderr and "\x1b" not in piped.stderr + piped.stdout

    code, out, terminal = run_on_terminal(["install", "claude", "--json"], home)
    assert code == 0, terminal
    assert by_agent(json.loads(out))["claude"]["changed"] is True
    assert "installing" not in terminal and "\x1b[" not in terminal


# -- with the real agent CLIs ----------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_install_all_with_the_pinned_clis_matches_their_config(home: Path) -> None:  # noqa: F811
    """Every integrated agent is on PATH, so `all` installs into each of them (the two
    without hooks are the only ones skipped); Codex's own `features list` says it has
    lifecycle hooks, and those are the events reported and written."""
    for name in VERSIONS:  # installed by .ci/setup; a missing one fails here, loudly
        find_agent(name)
    path = {"PATH": f"{npm_bin_dir()}:{os.environ['PATH']}"}
    proc = run(["install", "all", "--json"], home, env=path)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    agents = by_agent(document)
    assert sorted(agents) == [
        *(
            "auggie",
            "claude",
            "cline",
            "codex",
            "copilot",
            "droid",
            "gemini",
            "kilo",
            "opencode",
            "pi",
            "qwen",
        )
    ]
    # no hooks: aider, continue, cursor, cursor-ide; kimi, gptme, hermes, vibe, openhands
    # (PyPI) live in their own venvs, not on PATH
    assert {s["agent"] for s in document["skipped"]} == {
        "aider",
        "continue",
        "cursor",
        "kimi",
        "gptme",
        "hermes",
        "cursor-ide",
        "vibe",
        "openhands",
        "copilot-chat",  # editors' chats: sources only (issue 24)
        "cline-ext",
        "roo",
    }
    for entry in agents.values():
        assert entry["changed"] and entry["events"], entry["agent"]
        assert all(Path(f["path"]).is_file() for f in entry["files"]), entry["agent"]
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert agents["codex"]["events"] == ["SessionStart", "PreCompact", "Stop", "SessionEnd"]
    assert {e for e in config["hooks"] if e != "state"} == set(agents["codex"]["events"])
    assert len(config["hooks"]["state"]) == 4, "each hook trusted as Codex records it"

    removed = run(["uninstall", "all", "--json"], home, env=path)
    assert removed.returncode == 0, removed.stderr
    undone = by_agent(json.loads(removed.stdout))
    assert sorted(undone) == sorted(agents)
    assert "passdown" not in (home / ".codex" / "config.toml").read_text()


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_install_codex_into_a_codex_home_not_there_yet_is_idempotent(tmp_path: Path) -> None:
    """Before: the real `codex features list` refused a CODEX_HOME that did not exist, so
    the first install wrote `notify` and the second switched to `[hooks]`."""
    find_agent("codex")
    codex_home = tmp_path / "new-codex-home"
    env = {
        "PATH": f"{npm_bin_dir()}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "CODEX_HOME": str(codex_home),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
    }
    first = run(["install", "codex", "--json"], tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    entry = by_agent(json.loads(first.stdout))["codex"]
    assert entry["events"] == ["SessionStart", "PreCompact", "Stop", "SessionEnd"]
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert "notify" not in config and "SessionStart" in config["hooks"]
    second = run(["install", "codex", "--json"], tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    assert by_agent(json.loads(second.stdout))["codex"]["changed"] is False
