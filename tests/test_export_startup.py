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
