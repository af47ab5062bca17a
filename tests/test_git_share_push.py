"""The pre-push hook of `passdown install git` against real remotes (bare repositories in
tmp_path; issue 32): the user's push is not held up by a share remote that hangs, and
a handoff push the remote rejects does not fail the user's push, is queued (doctor says
so) and arrives with the next push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commands import passdown_script
from passdown.integrations._git_share_run import STATE_NAME
from recorded import scenarios

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="hooks are sh scripts here")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}
# the remote: hangs while `hang` exists, rejects while `reject` exists, for passdown's refs
PRE_RECEIVE = """#!/bin/sh
refs=$(cat)
case "$refs" in
    *refs/passdown/*)
        while [ -e "{flags}/hang" ]; do sleep 0.1; done
        if [ -e "{flags}/reject" ]; then echo "handoffs are not welcome" >&2; exit 1; fi ;;
esac
exit 0
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def passdown(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def flags(tmp_path: Path) -> Path:
    folder = tmp_path / "flags"
    folder.mkdir()
    return folder


@pytest.fixture
def clone(tmp_path: Path, flags: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone (one commit pushed) of a bare remote whose pre-receive obeys `flags`,
    opted in with `passdown install git`, holding one exported handoff."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(PRE_RECEIVE.format(flags=flags), encoding="utf-8")
    hook.chmod(0o755)
    ws = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(ws))
    (ws / "README.md").write_text("# demo\n", encoding="utf-8")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "initial")
    git(ws, "push", "-q", "origin", "main")
    monkeypatch.chdir(ws)
    command = passdown_script(tmp_path / "bin")
    done = passdown("install", "git", "--command", str(command), cwd=ws)
    assert done.returncode == 0, done.stderr
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    session = recorded.install(tmp_path / "claude-home", monkeypatch)
    from passdown.integrations._hooks import run_hook

    payload = {
        "hook_event_name": "SessionEnd",
        "session_id": session.stem,
        "transcript_path": str(session),
        "cwd": str(ws),
    }
    assert run_hook("claude", [], json.dumps(payload)) == 0
    assert (ws / ".agent-handoff" / "handoff.json").is_file()
    return ws


def commit(ws: Path, name: str) -> None:
    (ws / name).write_text(f"{name}\n", encoding="utf-8")
    git(ws, "add", name)
    git(ws, "commit", "-qm", name)


def passdown_refs(ws: Path) -> list[str]:
    bare = ws.parent / "remote.git"
    return [
        line.split()[1]
        for line in git(bare, "for-each-ref").splitlines()
        if "refs/passdown/" in line
    ]


def settled(ws: Path, key: str, timeout: float = 90) -> dict[str, object]:
    """The share state once the background push wrote `key` (waits for it)."""
    path = ws / ".git" / STATE_NAME
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = json.loads(path.read_bytes())
        except (OSError, ValueError):
            state = {}
        if state.get(key) and (key != "last_push" or not state.get("pending_since")):
            return dict(state)
        time.sleep(0.2)
    log = ws / ".git" / "passdown-share.log"
    raise AssertionError(
        f"no {key} in the share state; log: {log.read_text() if log.exists() else '-'}"
    )


def test_the_users_push_is_not_held_up_by_a_share_remote_that_hangs(
    clone: Path, flags: Path
) -> None:
    (flags / "hang").touch()
    commit(clone, "b.txt")
    started = time.monotonic()
    git(clone, "push", "-q", "origin", "main")
    pushed_in = time.monotonic() - started
    head = git(clone, "rev-parse", "HEAD").strip()
    assert git(clone.parent / "remote.git", "rev-parse", "main").strip() == head
    # passdown's part of the hook alone, as git runs it
    line = f"refs/heads/main {head} refs/heads/main {'0' * 40}\n"
    started = time.monotonic()
    subprocess.run(
        [str(clone / ".git" / "hooks" / "pre-push"), "origin", str(clone.parent / "remote.git")],
        input=line,
        text=True,
        cwd=clone,
        check=True,
        timeout=30,
        capture_output=True,
    )
    hook_took = time.monotonic() - started
    assert pushed_in < 5.0, pushed_in  # git's own local push included
    assert hook_took < 2.0, hook_took
    assert passdown_refs(clone) == []  # the handoff push is still waiting on the remote
    (flags / "hang").unlink()  # the remote answers again: the queued push goes through
    settled(clone, "last_push")
    assert passdown_refs(clone)


def test_a_rejected_handoff_push_is_queued_and_arrives_with_the_next_push(
    clone: Path, flags: Path
) -> None:
    (flags / "reject").touch()
    commit(clone, "b.txt")
    git(clone, "push", "-q", "origin", "main")  # the user's push succeeds
    state = settled(clone, "last_error")
    assert state["pending_since"] and "pre-receive hook declined" in str(state["last_error"])
    assert passdown_refs(clone) == []
    doctor = passdown("doctor", cwd=clone)
    assert f"git       pending        {clone}: handoffs pending since" in doctor.stdout, (
        doctor.stdout + doctor.stderr
    )

    (flags / "reject").unlink()
    commit(clone, "c.txt")
    git(clone, "push", "-q", "origin", "main")
    state = settled(clone, "last_push")
    assert "pending_since" not in state and passdown_refs(clone)
    doctor = passdown("doctor", "--json", cwd=clone)
    (shared,) = json.loads(doctor.stdout)["shared"]
    assert shared["ok"] is True and shared["last_push"] == state["last_push"]


def test_a_session_start_waits_for_a_hanging_remote_once_and_then_skips_it(
    clone: Path, tmp_path: Path
) -> None:
    """The remote's upload-pack never answers: the pull before pickup gives up within
    its budget, and the next starts skip it (the negative cache) instead of waiting."""
    from passdown.integrations._git_share_run import PULL_BUDGET_S, pull_at_start

    hang = tmp_path / "hang-upload-pack"
    hang.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    hang.chmod(0o755)
    git(clone, "config", "remote.origin.uploadpack", str(hang))
    started = time.monotonic()
    outcome = pull_at_start(clone)
    first = time.monotonic() - started
    assert outcome.startswith("failed: "), outcome
    assert first < PULL_BUDGET_S + 0.3, first  # the pull gets what is left of the budget
    started = time.monotonic()
    assert pull_at_start(clone) == "skipped-offline"
    assert time.monotonic() - started < 0.5
    doctor = passdown("doctor", "--json", cwd=clone)
    (shared,) = json.loads(doctor.stdout)["shared"]
    assert shared["last_pull_error"]
