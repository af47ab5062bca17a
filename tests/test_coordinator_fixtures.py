"""Shared fixtures and helpers for the coordinator tests (imported by the other
test_coordinator_* modules): a git project with harness progress files, and fake agent
programs on PATH that log how they were started and exit at once (never a real model)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
}  # fmt: skip

FEATURES = [
    {"id": "auth-001", "description": "Login endpoint", "passes": True},
    {"id": "auth-002", "description": "Logout endpoint", "passes": False},
    {"id": "auth-003", "description": "Password reset", "passes": False},
]

FAKE_AGENT = """#!{python}
import json, os, sys
with open(os.environ["FAKE_AGENT_LOG"], "a") as f:
    f.write(json.dumps({{"program": os.path.basename(sys.argv[0]), "argv": sys.argv[1:],
                        "cwd": os.getcwd(), "handoff": os.environ.get("PASSDOWN_HANDOFF_ID")}}) + "\\n")
sys.exit(int(os.environ.get("FAKE_AGENT_EXIT", "0")))
"""


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_features(repo: Path, features: list[dict[str, object]]) -> None:
    (repo / "feature_list.json").write_text(json.dumps(features, indent=2) + "\n")


def make_project(
    root: Path, *, features: list[dict[str, object]] | None = FEATURES, progress: str | None = None
) -> Path:
    repo = root / "webapp"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# webapp\n")
    if features is not None:
        write_features(repo, features)
    if progress is not None:
        (repo / "claude-progress.txt").write_text(progress)
    commit_all(repo, "initial")
    return repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def fake_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`claude` and `codex` on PATH that only log their launch; returns the log file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        path = bin_dir / name
        path.write_text(FAKE_AGENT.format(python=sys.executable))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "launches.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    return log


def launches(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]
