"""Record a run of a real CLI as a fixture (tests/fixtures/sessions/<agent>/full), on
request: with $PASSDOWN_RECORD_FIXTURES set, a test runs in the fixed workspace the other
recordings use and copies the session's files, with an expected.json, into the fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from e2e.agents import CHAT_MODEL, REPO_ROOT
from e2e.record import REC_ROOT, seed_workspace

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sessions"
RECORD_ENV = "PASSDOWN_RECORD_FIXTURES"
SEED_HEAD = "e62143c3198705e982c1034a0939057af6f136fb"  # the seeded commit, fixed date


def recording() -> bool:
    return bool(os.environ.get(RECORD_ENV))


def recording_workspace(workspace: Path, agent: str) -> Path:
    """The workspace to run in: the test's own, or when recording the fixed
    /tmp/passdown-rec/<agent>-full the other recorded scenarios use."""
    if not recording():
        return workspace
    fixed = REC_ROOT / f"{agent}-full"
    shutil.rmtree(fixed, ignore_errors=True)
    return seed_workspace(fixed)


def scenario_facts(prompt: str, second: str, last: str, failing: str) -> dict[str, Any]:
    """What every recorded `full` scenario of issue 23's CLIs ends with, whatever the agent: the two
    requests, the last reply, the plan of three, hello.txt written, the failing command."""
    return {
        "original_request": prompt,
        "latest_user_message": second,
        "final_assistant_message": last,
        "turns": [prompt, second],
        "plan": [
            {"subject": "Write hello.txt", "status": "completed"},
            {"subject": "Run the tests", "status": "in_progress"},
            {"subject": "Say goodbye", "status": "completed"},
        ],
        "files_written": ["hello.txt"],
        "files_edited": ["hello.txt"],
        "files_touched": ["hello.txt"],
        "commands": [{"command": failing, "exit_code": 2}],
        "failing_command": {
            "command": failing,
            "exit_code": 2,
            "error_line_contains": "No such file",
        },
        "ended": "normal",
    }


def record_fixture(agent: str, files: dict[str, Path], facts: dict[str, Any]) -> None:
    """With $PASSDOWN_RECORD_FIXTURES set: copy the session's files (relative to HOME, as
    recorded) into tests/fixtures/sessions/<agent>/full with an expected.json in the shape
    the other recordings use (tests/fixtures/sessions/README.md), `facts` completing it."""
    if not recording():
        return
    target = FIXTURES / agent / "full"
    shutil.rmtree(target, ignore_errors=True)
    for rel, source in files.items():
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".db":
            copy_db(source, dest)
        else:
            shutil.copy2(source, dest)
    workspace = Path(facts["workspace"])
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    expected = {
        "agent": agent,
        "scenario": "full",
        "description": "request, plan with the agent's own tool, a file written, a command "
        "that fails, a 429 retried, the end (issue 23's scenario)",
        "config_dir_env": "HOME",
        "store_root": "HOME",
        "session_files": list(files),
        "plan_native_status": {},
        "failed_edits": [],
        "secrets": [],
        "model": CHAT_MODEL,
        **facts,
        "git_after": {"branch": "main", "head": SEED_HEAD, "status_porcelain": status},
    }
    (target / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")


def copy_db(source: Path, dest: Path) -> None:
    """A WAL database as one self-contained file (the -wal folded in)."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(dest) as out:
        src.backup(out)
    with sqlite3.connect(dest) as out:
        out.execute("PRAGMA journal_mode=DELETE")
