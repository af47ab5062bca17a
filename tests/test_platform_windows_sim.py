"""Issue 22: passdown imports and exports with native Windows simulated.

Each check runs in a subprocess whose `sitecustomize` (tests/simwin) makes `fcntl`,
`resource`, `pwd` unimportable, deletes the POSIX-only `os` functions and flags, and
sets `sys.platform` to "win32" (`os.name` stays "posix": see that module). The recorded
Claude and Codex sessions are exported with their cwd rewritten to `C:\\Users\\dev\\proj`,
through `--session`, from a copy of each agent's store (CLAUDE_CONFIG_DIR, CODEX_HOME).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform == "win32",
    reason="simulates Windows on a POSIX machine (sitecustomize); on Windows the real "
    "system runs the other tests",
)

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures" / "sessions"
SIMULATION = TESTS / "simwin"
WIN_CWD = r"C:\Users\dev\proj"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(SIMULATION), env.get("PYTHONPATH", "")]),
        PASSDOWN_SIMULATE_WINDOWS="1",
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        **extra,
    )
    env.pop("PASSDOWN_DEBUG", None)
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _windows_copy(recorded: Path, target: Path, posix_cwd: str) -> None:
    """The recorded store with every mention of its workspace made a Windows path (as
    JSON text: backslashes escaped), and Claude's project folder named as on Windows."""
    shutil.copytree(recorded, target, ignore=shutil.ignore_patterns("expected.json"))
    escaped = WIN_CWD.replace("\\", "\\\\")
    for path in [p for p in target.rglob("*") if p.is_file()]:
        text = path.read_text(encoding="utf-8")
        text = text.replace(f"file://{posix_cwd}", "file:///C:/Users/dev/proj")
        text = text.replace(posix_cwd + "/", escaped + "\\\\").replace(posix_cwd, escaped)
        path.write_text(text, encoding="utf-8")
    for folder in (target / "projects").glob("-tmp-passdown-rec-*"):
        folder.rename(folder.with_name("C--Users-dev-proj"))


def test_the_simulation_really_takes_the_posix_parts_away(tmp_path: Path) -> None:
    probe = (
        "import os, sys\n"
        "for name in ('fcntl', 'resource', 'pwd'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "    except ModuleNotFoundError:\n"
        "        print('blocked', name)\n"
        "print(sys.platform, [n for n in ('fchmod', 'pread', 'fork', 'getuid', 'setsid',"
        " 'O_NONBLOCK', 'O_DIRECTORY') if hasattr(os, n)])\n"
    )
    proc = _run(["-c", probe], _env(tmp_path), tmp_path)
    assert proc.stdout.split("\n")[:4] == [
        "blocked fcntl",
        "blocked resource",
        "blocked pwd",
        "win32 []",
    ], proc.stderr


def test_the_pipeline_and_the_whole_cli_import(tmp_path: Path) -> None:
    code = (
        "import pkgutil, sys, passdown.agents.claude, passdown._pipeline, passdown.cli\n"
        "import passdown\n"
        "names = [m.name for m in pkgutil.walk_packages(passdown.__path__, 'passdown.')"
        " if not m.name.endswith('__main__')]\n"
        "for name in names:\n"
        "    __import__(name)\n"
        "print(len(names), sys.platform)\n"
    )
    proc = _run(["-c", code], _env(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stderr
    count, platform = proc.stdout.split()
    assert int(count) > 80 and platform == "win32"

    helped = _run(["-m", "passdown", "--help"], _env(tmp_path), tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "Usage: passdown" in helped.stdout and "export" in helped.stdout

    listed = _run(["-m", "passdown", "agents"], _env(tmp_path), tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    # every agent loads (on main, eight of nine failed over fcntl: only opencode was known)
    assert {"claude", "codex", "gemini", "qwen", "copilot", "pi", "cursor", "aider"} <= set(names)


@pytest.mark.parametrize(
    ("agent", "scenario", "env_var", "session"),
    [
        (
            "claude",
            "full",
            "CLAUDE_CONFIG_DIR",
            "projects/C--Users-dev-proj/5e551011-0000-4000-8000-00000000c1a0.jsonl",
        ),
        (
            "codex",
            "full",
            "CODEX_HOME",
            "sessions/2026/11/29/rollout-2026-11-29T21-12-24-01a22926-e5e1-7e83-acf2-37049be87d5c.jsonl",
        ),
    ],
)
def test_a_windows_session_exports_through_session(
    tmp_path: Path, agent: str, scenario: str, env_var: str, session: str
) -> None:
    recorded = FIXTURES / agent / scenario
    expected = json.loads((recorded / "expected.json").read_text())
    store = tmp_path / "store"
    _windows_copy(recorded, store, expected["workspace"])
    workspace, out = tmp_path / "ws", tmp_path / "out"
    workspace.mkdir()
    env = _env(tmp_path, **{env_var: str(store)})
    args = ["-m", "passdown", "export", "--from", agent, "--session", str(store / session)]
    proc = _run(
        [*args, "--workspace", str(workspace), "--out", str(out), "--no-store"], env, tmp_path
    )
    assert proc.returncode == 0, proc.stderr

    handoff = json.loads((out / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["source"]["agent"] == agent
    assert handoff["source"]["session_id"] == expected["session_id"]
    assert handoff["source"]["cwd"] == WIN_CWD
    state = handoff["state"]
    # paths under C:\Users\dev\proj read relative to it, as git would show them (a file
    # changed by a shell command is only known from the recorded git repository's state)
    by_tools = sorted({*expected["files_written"], *expected["files_edited"]})
    assert sorted(f["path"] for f in state["files_touched"]) == by_tools
    assert [e["path"] for e in state["failed_edits"]] == expected["failed_edits"]
    assert [(p["subject"], p["status"]) for p in state["plan"]] == [
        (p["subject"], p["status"]) for p in expected["plan"]
    ]
    assert [c["command"] for c in state["commands"]][-1] == expected["commands"][-1]["command"]
    text = (out / "HANDOFF.md").read_text(encoding="utf-8")
    assert "- `calc.py`" in text and expected["latest_user_message"][:20] in text
    for secret in expected["secrets"]:
        assert secret not in text and secret not in json.dumps(handoff)


def _appended_record(agent: str, session: Path) -> bytes:
    """One more record as the agent's next turn would write it: Codex's a response item,
    Claude's a user message chained onto the current leaf."""
    lines = session.read_bytes().splitlines()
    if agent == "codex":
        return lines[-1] + b"\n"
    last = json.loads(next(line for line in reversed(lines) if b'"uuid"' in line))
    record = {
        **last,
        "type": "user",
        "uuid": "0b0b0b0b-0000-4000-8000-000000000001",
        "parentUuid": last["uuid"],
        "message": {"role": "user", "content": "and now the docs, please"},
    }
    record.pop("toolUseResult", None)
    return json.dumps(record).encode() + b"\n"


@pytest.mark.parametrize(
    ("agent", "env_var", "session"),
    [
        (
            "claude",
            "CLAUDE_CONFIG_DIR",
            "projects/C--Users-dev-proj/5e551011-0000-4000-8000-00000000c1a0.jsonl",
        ),
        (
            "codex",
            "CODEX_HOME",
            "sessions/2026/11/29/rollout-2026-11-29T21-12-24-01a22926-e5e1-7e83-acf2-37049be87d5c.jsonl",
        ),
    ],
)
def test_a_windows_export_without_ctypes_reads_only_what_was_appended(
    tmp_path: Path, agent: str, env_var: str, session: str
) -> None:
    """Checkpoints need neither `os.pread` nor `ctypes`: on simulated Windows with ctypes
    unimportable, the export after an append reads from where the last one stopped, and
    gives the handoff a full read gives."""
    recorded = FIXTURES / agent / "full"
    expected = json.loads((recorded / "expected.json").read_text())
    store = tmp_path / "store"
    _windows_copy(recorded, store, expected["workspace"])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = _env(tmp_path, PASSDOWN_SIMULATE_NO_CTYPES="1", **{env_var: str(store)})
    path = store / session

    def export(out: str, **extra: str) -> dict[str, object]:
        args = ["-m", "passdown", "export", "--from", agent, "--session", str(path)]
        args += ["--workspace", str(workspace), "--out", str(tmp_path / out), "--no-store"]
        proc = _run([*args, "--json"], {**env, **extra}, tmp_path)
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout)["read"])

    probe = _run(["-c", "import ctypes"], env, tmp_path)
    assert "simulated Windows" in probe.stderr  # the simulation really blocks it
    size = path.stat().st_size
    assert export("first") == {"checkpoint": "full", "offset": 0, "bytes": size}
    appended = _appended_record(agent, path)
    with open(path, "ab") as handle:
        handle.write(appended)
    resumed = export("resumed")
    assert resumed == {"checkpoint": "resumed", "offset": size, "bytes": len(appended)}
    full = export("full", PASSDOWN_NO_CHECKPOINT="1")
    assert full == {"checkpoint": "off", "offset": 0, "bytes": size + len(appended)}
    handoffs = [
        json.loads((tmp_path / out / "handoff.json").read_text(encoding="utf-8"))
        for out in ("resumed", "full")
    ]
    for handoff in handoffs:
        del handoff["id"], handoff["created_at"]
    assert handoffs[0] == handoffs[1]
    if agent == "claude":
        assert handoffs[0]["task"]["latest_user_message"] == "and now the docs, please"
