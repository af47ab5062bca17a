"""Issue 32, cloud agents, both ways: each snippet `passdown install cloud` writes is run
as its agent runs it (a shell in a fresh clone of a bare repository, a HOME of its own,
no network, passdown found on PATH as the setup leaves it) and pulls the handoff another
clone pushed, leaving `.agent-handoff/HANDOFF.md`; the Claude Code web `Stop` hook and
`cloud.sh end` push the cloud session's handoff back, and the first clone pulls it."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from commands import passdown_script
from recorded import scenarios
from share_world import GIT_ENV, Side, git, make_remote, make_side, refs_on

BARE = "/usr/bin:/bin"


def environ(home: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    """A cloud box's environment: its own HOME, passdown on PATH, nothing else."""
    return {
        "HOME": str(home),
        "PATH": f"{bin_dir}:{BARE}",
        "LANG": "C.UTF-8",
        "PASSDOWN_DATA_DIR": str(home / "passdown-data"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "PASSDOWN_AGENTS": "",
        **GIT_ENV,
        **extra,
    }


def shell(
    command: str, where: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", command],
        cwd=where,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def passdown(side: Side, bin_dir: Path, *args: str) -> str:
    done = shell(" ".join(["passdown", *args]), side.clone, environ(side.home, bin_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Side, Path, str]:
    """The bare remote; clone A, which committed `passdown install cloud`'s files (with
    a Cursor environment to extend) and pushed a handoff; passdown's bin folder; the
    handoff's id."""
    bin_dir = passdown_script(tmp_path / "bin").parent
    remote = make_remote(tmp_path)
    a = make_side(tmp_path, "a", remote, monkeypatch)
    (a.clone / ".cursor").mkdir()
    (a.clone / ".cursor" / "environment.json").write_text('{"install": "true"}\n', "utf-8")
    passdown(a, bin_dir, "install", "cloud")
    git(a.clone, "add", "-A")
    git(a.clone, "commit", "-q", "-m", "cloud agents pull the handoff")
    git(a.clone, "push", "-q", "origin", "main")
    handoff = a.export()
    passdown(a, bin_dir, "push")
    assert refs_on(remote)
    return remote, a, bin_dir, handoff


def setup_command(clone: Path, agent: str) -> tuple[str, dict[str, str]]:
    """The command `agent`'s cloud runs before it starts, read from the file it reads,
    and what that cloud adds to the environment."""
    if agent == "copilot":
        workflow = yaml.safe_load(
            (clone / ".github" / "workflows" / "copilot-setup-steps.yml").read_text("utf-8")
        )
        steps = workflow["jobs"]["copilot-setup-steps"]["steps"]
        return next(s["run"] for s in steps if "run" in s), {"GITHUB_ACTIONS": "true"}
    if agent == "cursor":
        env = json.loads((clone / ".cursor" / "environment.json").read_text("utf-8"))
        return env["install"], {}
    if agent == "codex":  # the environment's setup script, as docs/cloud-agents.md says
        from passdown.integrations._cloud import SETUP_LINE

        return f"{SETUP_LINE} codex", {}
    settings = json.loads((clone / ".claude" / "settings.json").read_text("utf-8"))
    hooks = [h["command"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    assert len(hooks) == 1
    return hooks[0], {"CLAUDE_CODE_REMOTE": "true", "CLAUDE_PROJECT_DIR": str(clone)}


@pytest.mark.parametrize("agent", ["copilot", "cursor", "codex", "claude"])
def test_each_cloud_setup_pulls_the_handoff_into_a_fresh_clone(
    world: tuple[Path, Side, Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
) -> None:
    remote, _a, bin_dir, handoff = world
    b = make_side(tmp_path, "b", remote, monkeypatch)
    assert not (b.clone / ".agent-handoff").exists()
    command, extra = setup_command(b.clone, agent)
    payload = json.dumps(
        {
            "hook_event_name": "SessionStart",
            "session_id": "web-1",
            "source": "startup",
            "cwd": str(b.clone),
        }
    )
    done = shell(command, b.clone, environ(b.home, bin_dir, **extra), payload)
    assert done.returncode == 0, done.stdout + done.stderr
    handoff_md = b.clone / ".agent-handoff" / "HANDOFF.md"
    assert handoff_md.is_file(), done.stderr
    assert handoff in passdown(b, bin_dir, "retrieve", handoff)  # in this box's store now
    # an agent that commits everything it changed does not commit the handoff
    assert ".agent-handoff" not in git(b.clone, "status", "--porcelain", "--untracked-files=all")
    if agent == "claude":  # the hook hands the session the pickup pointer, and only that
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "HANDOFF.md" in context or handoff[:8] in context
    else:
        assert done.stdout == ""


@pytest.mark.parametrize("way", ["claude-stop-hook", "cloud.sh end"])
def test_the_cloud_session_pushes_its_handoff_back(
    world: tuple[Path, Side, Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    way: str,
) -> None:
    """In the cloud clone a recorded Claude Code session ran; its `Stop` hook (as Claude
    Code on the web fires it), or `cloud.sh end` (what AGENTS.md asks an agent without
    hooks to run), exports and pushes; clone A pulls and has that handoff."""
    remote, a, bin_dir, first = world
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    home = tmp_path / "home-web"
    home.mkdir()
    workspaces = tmp_path / "web"
    session = recorded.install(home / ".claude", monkeypatch, workspaces=workspaces)
    clone = recorded.workspace_in(workspaces)
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    env = environ(home, bin_dir, CLAUDE_CODE_REMOTE="true", CLAUDE_PROJECT_DIR=str(clone))
    before = set(refs_on(remote))
    # a pull prefers the later creation time (seconds), ties go by id: the cloud's
    # handoff must be made in a later second than the first one to be the newer
    _wait_past_the_second_of(first)

    if way == "claude-stop-hook":
        settings = json.loads((clone / ".claude" / "settings.json").read_text("utf-8"))
        [stop] = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
        payload = {
            "hook_event_name": "Stop",
            "session_id": session.stem,
            "transcript_path": str(session),
            "cwd": str(clone),
        }
        done = shell(stop, clone, env, json.dumps(payload))
    else:
        done = shell("sh .passdown/cloud.sh end claude", clone, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    pushed = set(refs_on(remote)) - before
    assert len(pushed) == 1, done.stderr

    a.use()
    passdown(a, bin_dir, "pull")
    came_back = json.loads((a.clone / ".agent-handoff" / "handoff.json").read_text("utf-8"))
    assert came_back["id"] != first and came_back["id"] in next(iter(pushed))


def test_a_remote_that_cannot_be_reached_is_said_and_the_setup_exits_1(
    world: tuple[Path, Side, Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remote, _a, bin_dir, _handoff = world
    b = make_side(tmp_path, "b", remote, monkeypatch)
    git(b.clone, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    done = shell("sh .passdown/cloud.sh setup codex", b.clone, environ(b.home, bin_dir))
    assert done.returncode == 1
    assert "passdown cloud: passdown pull failed" in done.stderr
    assert not (b.clone / ".agent-handoff" / "HANDOFF.md").exists()


def _wait_past_the_second_of(handoff_id: str) -> None:
    stamp = datetime.strptime(handoff_id.split("-")[1], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    while datetime.now(UTC) < stamp + timedelta(seconds=1):
        time.sleep(0.05)
