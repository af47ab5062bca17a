"""Automatic sharing at run time (issue 32), with `passdown.share` replaced by a fake in
this process: the background push's queue and what doctor says of it, the pull before
pickup (opted-in repositories only, a short negative cache when it fails), the claim
pushed after pickup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from commands import passdown_by_name  # noqa: F401  (a fixture)
from passdown.errors import StoreError
from passdown.integrations import _git_share_run as run
from recorded import scenarios

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=ws,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def workspace(isolated_homes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "README.md").write_text("# demo\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(ws)
    return ws


class FakeShare:
    """`passdown.share` as this module sees it: each call noted, each answer scripted."""

    def __init__(self) -> None:
        self.pushes: list[dict[str, Any]] = []
        self.pulls: list[dict[str, Any]] = []
        self.push_error: Exception | None = None
        self.pull_error: Exception | None = None
        self.pull_delay = 0.0

    def push_handoffs(self, workspace: Path, remote: str | None = None, **kw: Any) -> None:
        self.pushes.append({"workspace": workspace, "remote": remote, **kw})
        if self.push_error is not None:
            raise self.push_error

    def pull_handoffs(self, workspace: Path, remote: str | None = None, **kw: Any) -> None:
        self.pulls.append({"workspace": workspace, "remote": remote, **kw})
        time.sleep(self.pull_delay)
        if self.pull_error is not None:
            raise self.pull_error


@pytest.fixture
def share(monkeypatch: pytest.MonkeyPatch) -> FakeShare:
    fake = FakeShare()
    module = types.ModuleType("passdown.share")
    module.push_handoffs = fake.push_handoffs  # type: ignore[attr-defined]
    module.pull_handoffs = fake.pull_handoffs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "passdown.share", module)
    return fake


def opt_in(ws: Path) -> None:
    git(ws, "config", "--local", "passdown.share", "true")


def doctor_json(ws: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "passdown", "doctor", "--json"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "Traceback" not in done.stderr
    return list(json.loads(done.stdout)["shared"])


def test_a_failed_push_is_queued_said_by_doctor_and_sent_by_the_next(
    workspace: Path, share: FakeShare
) -> None:
    opt_in(workspace)
    share.push_error = StoreError("git push: ! [remote rejected] refs/passdown/x (hook declined)")
    assert run.push_now(workspace) == 1
    state = run.load_state(workspace / ".git")
    assert state["pending_since"] and "remote rejected" in state["last_error"]
    (status,) = doctor_json(workspace)
    assert status["ok"] is False and status["pending_since"] == state["pending_since"]
    assert "remote rejected" in status["last_error"]
    line = run.share_status(workspace, None)
    assert line is not None and "pending since" in line.line()

    share.push_error = None  # the next push goes through: the queue is empty again
    assert run.push_now(workspace) == 0
    assert len(share.pushes) == 2
    (status,) = doctor_json(workspace)
    assert status["ok"] is False  # no pre-push hook in this repository: doctor says so
    assert status["pending_since"] is None and status["last_push"]


def test_doctor_says_nothing_of_a_repository_that_did_not_opt_in(workspace: Path) -> None:
    assert doctor_json(workspace) == []


def test_pull_runs_only_in_an_opted_in_repository_with_the_budget(
    workspace: Path, share: FakeShare
) -> None:
    assert run.pull_at_start(workspace) == "not-opted-in"
    assert share.pulls == []
    opt_in(workspace)
    assert run.pull_at_start(workspace) == "pulled"
    assert 0 < share.pulls[0]["timeout"] <= run.PULL_BUDGET_S


def test_a_failed_pull_is_not_tried_again_at_every_start(
    workspace: Path, share: FakeShare, monkeypatch: pytest.MonkeyPatch
) -> None:
    opt_in(workspace)
    share.pull_error = StoreError("git fetch timed out after 2 s")
    share.pull_delay = 0.3
    assert run.pull_at_start(workspace).startswith("failed: git fetch timed out")
    started = time.monotonic()
    assert run.pull_at_start(workspace) == "skipped-offline"
    assert time.monotonic() - started < 0.25  # no second wait for a remote that hangs
    assert len(share.pulls) == 1
    assert "timed out" in run.load_state(workspace / ".git")["last_pull_error"]

    later = time.time() + run.OFFLINE_FOR_S + 1
    monkeypatch.setattr(run.time, "time", lambda: later)
    share.pull_error = None
    assert run.pull_at_start(workspace) == "pulled"  # the cache ran out: tried again
    assert "last_pull_error" not in run.load_state(workspace / ".git")


# -- pickup: pull first, push the claim ---------------------------------------------------


@pytest.fixture
def claude_session(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    return recorded.install(tmp_path / "claude-home", monkeypatch)


def _hook(agent: str, payload: dict[str, object]) -> None:
    from passdown.integrations._hooks import run_hook

    assert run_hook(agent, [], json.dumps(payload)) == 0


@pytest.mark.usefixtures("passdown_by_name")
@pytest.mark.parametrize("shared", [True, False])
def test_pickup_pulls_first_and_pushes_its_claim(
    claude_session: Path,
    workspace: Path,
    share: FakeShare,
    monkeypatch: pytest.MonkeyPatch,
    shared: bool,
) -> None:
    from passdown.integrations._continuity import pickup

    _hook(
        "claude",
        {
            "hook_event_name": "SessionEnd",
            "session_id": claude_session.stem,
            "transcript_path": str(claude_session),
            "cwd": str(workspace),
        },
    )
    if shared:
        opt_in(workspace)
    claims: list[Path] = []
    monkeypatch.setattr(run, "push_claim_soon", lambda ws: claims.append(ws) or "started")
    result = pickup("codex", "new-session", str(workspace))
    assert result.outcome.startswith("claimed ")
    assert len(share.pulls) == (1 if shared else 0)
    assert claims == ([workspace] if shared else [])


def test_two_background_pushes_of_one_repository_never_overlap(
    workspace: Path, share: FakeShare, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    opt_in(workspace)
    running: list[int] = []
    overlaps: list[int] = []

    def push_handoffs(ws: Path, remote: str | None = None, **kw: Any) -> None:
        running.append(1)
        overlaps.append(len(running))
        time.sleep(0.3)
        running.pop()

    monkeypatch.setattr(sys.modules["passdown.share"], "push_handoffs", push_handoffs)
    threads = [threading.Thread(target=run.push_now, args=(workspace,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [1, 1, 1]  # one after the other, under the share lock
    assert "pending_since" not in run.load_state(workspace / ".git")
