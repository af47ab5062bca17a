"""Issue 32, cloud agents: `.passdown/cloud.sh` installs the pinned passdown where the
cloud box has none (pipx, else uv, else pip --user: stubs here, no network), says every
step that did not happen on stderr with exit 1, and prints nothing on stdout but what a
Claude Code hook hands the session."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from commands import passdown_script

BARE = "/usr/bin:/bin"


def installed(tmp_path: Path, spec: str | None = None) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = dict(os.environ)
    if spec is not None:
        env["PASSDOWN_CLOUD_SPEC"] = spec
    subprocess.run(
        [str(passdown_script(tmp_path / "pd")), "install", "cloud"],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return project


def stub(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def run_script(
    project: Path, *args: str, home: Path, path: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(project / ".passdown" / "cloud.sh"), *args],
        cwd=project,
        env={"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_box_without_passdown_gets_the_pinned_one_from_pipx(tmp_path: Path) -> None:
    """pipx installs into ~/.local/bin, which the script puts on PATH (and, on Claude
    Code's web, into CLAUDE_ENV_FILE for the session's later commands)."""
    spec = "git+https://github.com/example/passdown@v0.1.0"
    project = installed(tmp_path, spec)
    home = tmp_path / "home"
    log = tmp_path / "pipx.log"
    real = passdown_script(tmp_path / "real")
    tools = stub(
        tmp_path / "tools",
        "pipx",
        f'echo "$*" >"{log}"\nmkdir -p "$HOME/.local/bin"\n'
        f'ln -s "{real}" "$HOME/.local/bin/passdown"',
    )
    env_file = tmp_path / "claude.env"
    done = run_script(
        project,
        "setup",
        home=home,
        path=f"{tools.parent}:{BARE}",
        CLAUDE_ENV_FILE=str(env_file),
    )
    assert log.read_text(encoding="utf-8").strip() == f"install {spec}"
    assert (home / ".local" / "bin" / "passdown").exists()
    assert f'export PATH="{home}/.local/bin:$PATH"' in env_file.read_text(encoding="utf-8")
    assert done.stdout == ""  # a hook's stdout goes into the session: nothing but the pointer
    assert "could not install" not in done.stderr


def test_a_failed_install_is_said_and_exits_1(tmp_path: Path) -> None:
    project = installed(tmp_path)
    tools = stub(tmp_path / "tools", "pipx", "echo 'pipx: no network' >&2; exit 1")
    done = run_script(project, "setup", home=tmp_path / "home", path=f"{tools.parent}:{BARE}")
    assert done.returncode == 1
    assert "passdown cloud: could not install passdown==" in done.stderr
    assert "pipx: no network" in done.stderr
    assert done.stdout == ""


def test_a_failed_pull_is_said_and_exits_1(tmp_path: Path) -> None:
    project = installed(tmp_path)
    tools = stub(tmp_path / "tools", "passdown", "echo 'no remote' >&2; exit 7")
    done = run_script(project, "setup", home=tmp_path / "home", path=f"{tools.parent}:{BARE}")
    assert done.returncode == 1
    assert "passdown pull failed" in done.stderr and "no remote" in done.stderr


def test_the_claude_hooks_do_nothing_off_the_web(tmp_path: Path) -> None:
    project = installed(tmp_path)
    log = tmp_path / "calls.log"
    tools = stub(tmp_path / "tools", "passdown", f'echo "$*" >>"{log}"')
    for mode in ("claude-start", "claude-stop"):
        done = run_script(project, mode, home=tmp_path / "home", path=f"{tools.parent}:{BARE}")
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not log.exists()


def test_an_unknown_mode_is_a_usage_error(tmp_path: Path) -> None:
    project = installed(tmp_path)
    done = run_script(project, "sync", home=tmp_path / "home", path=BARE)
    assert done.returncode == 2
    assert "usage: sh .passdown/cloud.sh setup|end" in done.stderr
