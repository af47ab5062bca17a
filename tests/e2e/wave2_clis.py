"""Run the second-wave CLIs (Cline CLI from npm, Kimi CLI from PyPI) against a scripted
chat-completions server on 127.0.0.1 in an isolated HOME, export their sessions through
`python -m passdown`, and (on request) record a run as a fixture.

Cline 3 ignores SIGTERM (a run with an unfinished team task loops on "[SYSTEM] You still
have team obligations"): every run is under `timeout -k 5`, which then kills it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e.agents import CHAT_MODEL, FAKE_KEY, REPO_ROOT, AgentEnv, find_agent
from e2e.pyagents import pyagent
from e2e.record import seed_workspace
from wave2_agents import register

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sessions"
# Set to record the next run of a scenario as tests/fixtures/sessions/<agent>/full.
RECORD_ENV = "PASSDOWN_RECORD_FIXTURES"
SEED_HEAD = "e62143c3198705e982c1034a0939057af6f136fb"  # the seeded commit, fixed date


def _run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["timeout", "-k", "5", str(int(timeout)), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


# -- Cline CLI ---------------------------------------------------------------------------
def cline_environ(agent_env: AgentEnv, chat_url: str, cwd: Path) -> dict[str, str]:
    """Cline pointed at the server: `cline auth` writes providers.json (a hand-written
    one is ignored); local session backend (no hub daemon), no auto-update."""
    env = {
        **agent_env.environ(),
        "CLINE_SESSION_BACKEND_MODE": "local",
        "CLINE_NO_AUTO_UPDATE": "1",
    }
    auth = [str(find_agent("cline")), "auth", "-p", "openai", "-k", FAKE_KEY, "-m", CHAT_MODEL]
    proc = _run([*auth, "-b", f"{chat_url}/v1"], env, cwd, 60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return env


def run_cline(
    env: dict[str, str], cwd: Path, prompt: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`cline --json PROMPT` (act mode, auto-approve): one task, then exit."""
    return _run([str(find_agent("cline")), "--json", "--", prompt], env, cwd, timeout)


# -- Kimi CLI ----------------------------------------------------------------------------
def kimi_environ(agent_env: AgentEnv, chat_url: str) -> dict[str, str]:
    """Kimi 1.51 with an `openai_legacy` (chat completions) provider in config.toml."""
    kimi_dir = agent_env.home / ".kimi"
    kimi_dir.mkdir(parents=True, exist_ok=True)
    (kimi_dir / "config.toml").write_text(
        'default_model = "scripted"\n'
        "telemetry = false\n"
        "[providers.scripted]\n"
        'type = "openai_legacy"\n'
        f'base_url = "{chat_url}/v1"\n'
        f'api_key = "{FAKE_KEY}"\n'
        "[models.scripted]\n"
        'provider = "scripted"\n'
        f'model = "{CHAT_MODEL}"\n'
        "max_context_size = 200000\n",
        encoding="utf-8",
    )
    return {**agent_env.environ(), "KIMI_DISABLE_TELEMETRY": "1"}


def run_kimi(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`kimi --print -p PROMPT` (1.51.0 only: never a bare `kimi` of 1.52, which curls
    an installer); `-C` continues the workspace's last session."""
    return _run([str(pyagent("kimi")), "--print", *extra, "-p", prompt], env, cwd, timeout)


# -- passdown ------------------------------------------------------------------------------
def export(
    env: dict[str, str], cwd: Path, agent: str, site: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`python -m passdown export --from AGENT --no-store`, with the agent registered."""
    return subprocess.run(
        [sys.executable, "-m", "passdown", "export", "--from", agent, "--no-store", *extra],
        cwd=cwd,
        env={**env, "PYTHONPATH": register(site)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def recording() -> bool:
    return bool(os.environ.get(RECORD_ENV))


def recording_workspace(workspace: Path, agent: str) -> Path:
    """The workspace to run in: the test's own, or when recording the fixed
    /tmp/passdown-rec/<agent>-full the other recorded scenarios use."""
    if not recording():
        return workspace
    fixed = Path("/tmp/passdown-rec") / f"{agent}-full"
    shutil.rmtree(fixed, ignore_errors=True)
    return seed_workspace(fixed)


def scenario_facts(prompt: str, second: str, last: str, failing: str) -> dict[str, Any]:
    """What every wave-2 CLI's recorded scenario ends with, whatever the agent: the two
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
            _copy_db(source, dest)
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


def _copy_db(source: Path, dest: Path) -> None:
    """A WAL database as one self-contained file (the -wal folded in)."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(dest) as out:
        src.backup(out)
    with sqlite3.connect(dest) as out:
        out.execute("PRAGMA journal_mode=DELETE")
