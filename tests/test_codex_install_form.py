"""Which form `passdown install codex` writes, and `passdown doctor` on a Codex that
changed since.

The installed Codex says whether it has lifecycle hooks (`codex features list`); one that
answers only `--version` predates them (the turn-complete `notify`). A Codex that cannot
be asked (not on PATH yet, or failing) gets the form the newest Codex passdown knows
reads, the lifecycle hooks, and the install says so; `doctor` then says when the install
no longer fits the Codex installed since. Through the CLI in a subprocess, with a PATH
that holds no real Codex (only the fake ones these tests write)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from commands import SRC

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

BARE_PATH = "/usr/bin:/bin"
LIFECYCLE = ["SessionStart", "PreCompact", "Stop", "SessionEnd"]
USER_CONFIG = '# my Codex settings\nmodel = "o4"\n\n[projects."/x"]\ntrust_level = "trusted"\n'

# `codex` as each kind of Codex answers: features list, --version
NEW = "hooks                stable   true", "codex-cli 0.171.0"
WITHOUT_HOOKS = "apps                 stable   true", "codex-cli 0.60.0"
BEFORE_FEATURES = None, "codex-cli 0.20.0"  # `features` is no command of it
FAILING = None, None


def fake_codex(folder: Path, answers: tuple[str | None, str | None]) -> Path:
    features, version = answers
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["#!/bin/sh"]
    if features is not None:
        lines.append(f'[ "$1 $2" = "features list" ] && {{ echo "{features}"; exit 0; }}')
    if version is not None:
        lines.append(f'[ "$1" = "--version" ] && {{ echo "{version}"; exit 0; }}')
    lines.append('echo "error: unexpected argument" >&2\nexit 2\n')
    codex = folder / "codex"
    codex.write_text("\n".join(lines))
    codex.chmod(0o755)
    return folder


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


class User:
    """A HOME with a Codex config of its own, the passdown of this checkout, and a PATH
    with whichever `codex` the test puts on it (none at first)."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.config = self.home / ".codex" / "config.toml"
        self.config.parent.mkdir(parents=True)
        self.config.write_text(USER_CONFIG)
        self.script = console_script(tmp_path / "venv" / "bin")
        self.path = BARE_PATH

    def codex(self, folder: Path | None) -> None:
        self.path = f"{folder}:{BARE_PATH}" if folder else BARE_PATH

    def run(self, *args: str) -> Any:
        env = {
            "HOME": str(self.home),
            "PATH": self.path,
            "LANG": "C.UTF-8",
            "PASSDOWN_DATA_DIR": str(self.home / "passdown-data"),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "CODEX_HOME": str(self.home / ".codex"),
            "PASSDOWN_AGENTS": "",
        }
        return subprocess.run(
            [str(self.script), *args],
            env=env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def toml(self) -> dict[str, Any]:
        return tomllib.loads(self.config.read_text())

    def install(self) -> dict[str, Any]:
        proc = self.run("install", "codex", "--json")
        assert proc.returncode == 0, proc.stderr
        agent: dict[str, Any] = json.loads(proc.stdout)["agents"][0]
        return agent

    def doctor(self) -> tuple[int, dict[str, Any]]:
        proc = self.run("doctor", "codex", "--json")
        assert proc.stdout, proc.stderr
        return proc.returncode, json.loads(proc.stdout)["agents"][0]

    def uninstall_restores_the_config(self) -> None:
        assert self.run("uninstall", "codex").returncode == 0
        assert self.config.read_bytes() == USER_CONFIG.encode()
        assert not (self.home / ".codex" / "skills" / "passdown-takeover").exists()


@pytest.fixture
def user(tmp_path: Path) -> User:
    return User(tmp_path)


@pytest.mark.parametrize("codex", ["not on PATH", "failing"])
def test_a_codex_that_cannot_be_asked_gets_the_lifecycle_hooks(
    user: User, tmp_path: Path, codex: str
) -> None:
    if codex == "failing":
        user.codex(fake_codex(tmp_path / "codexbin", FAILING))
    installed = user.install()
    assert installed["events"] == LIFECYCLE
    config = user.toml()
    assert set(config["hooks"]) == {*LIFECYCLE, "state"} and "notify" not in config
    (note,) = installed["notes"]
    assert note.startswith("could not ask Codex which hooks it has")
    assert "wrote the lifecycle hooks Codex 0.171 reads" in note
    proc = user.run("install", "codex")  # the text form says it too, once
    assert proc.stderr.count("note: could not ask Codex") == 1, proc.stderr
    user.uninstall_restores_the_config()


@pytest.mark.parametrize(
    ("answers", "events"),
    [
        (NEW, LIFECYCLE),
        (WITHOUT_HOOKS, ["agent-turn-complete"]),
        (BEFORE_FEATURES, ["agent-turn-complete"]),
    ],
    ids=["hooks", "no-hooks", "before-features"],
)
def test_an_installed_codex_is_asked(
    user: User, tmp_path: Path, answers: tuple[str | None, str | None], events: list[str]
) -> None:
    user.codex(fake_codex(tmp_path / "codexbin", answers))
    installed = user.install()
    assert installed["events"] == events
    assert not any(n.startswith("could not ask Codex") for n in installed["notes"])
    code, found = user.doctor()
    assert code == 0 and found["status"] == "ok" and found["warnings"] == [], found
    user.uninstall_restores_the_config()


def test_doctor_says_hooks_written_for_a_newer_codex_do_not_run(user: User, tmp_path: Path) -> None:
    """Installed before Codex was, then the Codex installed has no hooks: it would never
    run them. Doctor says so (exit 1) and what to do; install again writes the notify."""
    assert user.install()["events"] == LIFECYCLE
    code, found = user.doctor()
    assert code == 0 and found["status"] == "agent_missing"  # nothing to compare with yet

    user.codex(fake_codex(tmp_path / "codexbin", WITHOUT_HOOKS))
    code, found = user.doctor()
    assert code == 1 and found["status"] == "broken", found
    (why,) = found["why_not"]
    assert why.startswith("the installed Codex (codex-cli 0.60.0) has no lifecycle hooks")
    assert "run `passdown install codex` again" in why
    proc = user.run("doctor", "codex")
    assert proc.returncode == 1 and "codex-cli 0.60.0" in proc.stdout

    assert user.install()["events"] == ["agent-turn-complete"]
    code, found = user.doctor()
    assert code == 0 and found["status"] == "ok" and found["warnings"] == [], found
    assert "hooks" not in user.toml() and user.toml()["notify"][1:] == ["hook", "codex"]
    user.uninstall_restores_the_config()


def test_doctor_says_a_notify_install_misses_what_a_newer_codex_has(
    user: User, tmp_path: Path
) -> None:
    """Installed for a Codex without hooks, which was upgraded since: the notify still
    writes handoffs at each turn, so it is a warning, naming the version and the fix."""
    user.codex(fake_codex(tmp_path / "old", BEFORE_FEATURES))
    assert user.install()["events"] == ["agent-turn-complete"]
    user.codex(fake_codex(tmp_path / "new", NEW))
    code, found = user.doctor()
    assert code == 0 and found["status"] == "ok", found
    (warning,) = found["warnings"]
    assert warning.startswith("the installed Codex (codex-cli 0.171.0) has lifecycle hooks")
    assert "run `passdown install codex` again" in warning
    proc = user.run("doctor", "codex")
    assert "warning: codex: the installed Codex (codex-cli 0.171.0)" in proc.stderr

    assert user.install()["events"] == LIFECYCLE
    config = user.toml()
    assert set(config["hooks"]) == {*LIFECYCLE, "state"} and "notify" not in config
    code, found = user.doctor()
    assert code == 0 and found["status"] == "ok" and found["warnings"] == [], found
    user.uninstall_restores_the_config()
