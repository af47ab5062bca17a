"""`passdown export`'s start-up pays only for what an export uses (issue 20: on a 200 MB
session start-up was a sixth of the run): no asyncio (the coordinator's async twins
import it when called), no `ldconfig` process to find the OpenSSL that Python's own
hashlib already loaded (the async twins' own tests: tests/test_coordinator.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from recorded import REC_ROOT, lay_out_recorded

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "sessions" / "claude" / "full"
CLAUDE_WS = f"{REC_ROOT}/claude-full"


def test_an_export_imports_no_asyncio(tmp_path: Path) -> None:
    store = tmp_path / "store"
    layout = lay_out_recorded(FIXTURE, store, tmp_path / "workspaces")
    ws = layout.workspace(CLAUDE_WS)
    session = next((store / "projects").glob("*/*.jsonl"))
    code = (
        "import json, sys\n"
        "from passdown.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    out = tmp_path / "out"
    argv = ["export", "--from", "claude", "--session", str(session), "--out", str(out)]
    argv += ["--no-store", "--quiet"]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CLAUDE_CONFIG_DIR": str(store),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert "passdown.coordinator._core" in modules  # the export ran through the coordinator
    assert "Add a Usage section" in (out / "HANDOFF.md").read_text()
    assert "asyncio" not in modules


# what every export loads anyway: the helpers all readers share, and Claude's pass 1
# (which tells where a Claude session ran)
_SHARED = {"passdown.agents._common", "passdown.agents._record_fields"}
_READERS = (
    "ijson",
    "passdown.agents._json_stream",
    "passdown.agents._chat_log",
    "passdown.agents.gemini._legacy",
    "passdown.agents._claude_reader",
    "passdown.agents._copilot_side",
    "passdown.agents._numbered_files",
)


def test_loading_every_agent_compiles_and_loads_no_reader(tmp_path: Path) -> None:
    """An export loads every agent to learn where its sessions live (a concurrent session
    explains changes in the workspace): their readers' patterns and modules wait until a
    session of theirs is read."""
    code = (
        "import json, re, sys\n"
        "compiled = set()\n"
        "original = re._compile\n"
        "def recording(pattern, flags):\n"
        "    frame = sys._getframe(1)\n"
        "    while frame.f_code.co_filename.endswith(('re/__init__.py', 're\\\\__init__.py')):\n"
        "        frame = frame.f_back\n"
        "    compiled.add(frame.f_globals.get('__name__'))\n"
        "    return original(pattern, flags)\n"
        "re._compile = recording\n"
        "from passdown.agents._registry import every_agent\n"
        "agents = every_agent()\n"
        "print(json.dumps([len(agents), sorted(m for m in compiled if m), sorted(sys.modules)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    count, compiled, modules = json.loads(proc.stdout)
    assert count >= 23  # every built-in agent loaded
    agent_modules = {m for m in compiled if m.startswith("passdown.agents.")}
    assert agent_modules <= _SHARED | {"passdown.agents._claude_records"}, agent_modules
    assert [m for m in _READERS if m in modules] == []
