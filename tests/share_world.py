"""Two machines and a bare remote for the `passdown push`/`pull` tests: each side has its
own HOME (passdown's data folder, so its own store) and its own clone; `use` makes a
side the current one for the in-process calls that follow."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from passdown.store import Store

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(where: Path, *args: str, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        ["git", *args],
        cwd=where,
        env={**env, **GIT_ENV},
        check=False,
        capture_output=True,
        text=True,
    )
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout.strip()


@dataclass
class Side:
    name: str
    home: Path
    clone: Path
    monkeypatch: pytest.MonkeyPatch

    def use(self) -> Side:
        self.monkeypatch.setenv("HOME", str(self.home))
        self.monkeypatch.setenv("PASSDOWN_DATA_DIR", str(self.home / "passdown-data"))
        self.monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(self.home / ".claude"))
        self.monkeypatch.setenv("CODEX_HOME", str(self.home / ".codex"))
        self.monkeypatch.chdir(self.clone)
        return self

    def export(self, summary: str = "Completed auth-001, starting auth-002") -> str:
        """A handoff of a real recorded Claude session (secrets and all) exported into
        this side's clone and store, as the session-end hook does; its id."""
        from passdown.integrations._hooks import run_hook
        from recorded import scenarios

        self.use()
        recorded = next(r for r in scenarios("claude") if r.scenario == "full")
        store_copy = self.home / f"claude-{len(list(self.home.iterdir()))}"  # a fresh one each time
        session = recorded.install(store_copy, self.monkeypatch)
        payload = {
            "hook_event_name": "SessionEnd",
            "session_id": session.stem,
            "transcript_path": str(session),
            "cwd": str(self.clone),
            "reason": "other",
        }
        assert run_hook("claude", [], json.dumps(payload)) == 0
        return self.handoff_id()

    def handoff_id(self) -> str:
        data = json.loads((self.clone / ".agent-handoff" / "handoff.json").read_text())
        return str(data["id"])

    def store(self) -> Store:
        from passdown.store import open_store

        self.use()
        return open_store()


def make_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    (seed / "README.md").write_text("# demo\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", str(remote), "main")
    return remote


def make_side(
    tmp_path: Path, name: str, remote: Path, monkeypatch: pytest.MonkeyPatch, *clone_args: str
) -> Side:
    home = tmp_path / f"home-{name}"
    home.mkdir()
    clone = tmp_path / f"clone-{name}" / "work"
    clone.parent.mkdir()
    git(tmp_path, "clone", "-q", *clone_args, str(remote), str(clone))
    return Side(name, home, clone, monkeypatch)


def refs_on(remote: Path) -> dict[str, str]:
    out = git(remote, "for-each-ref", "--format=%(objectname) %(refname)", "refs/passdown/")
    return {name: oid for oid, _, name in (line.partition(" ") for line in out.splitlines())}
