"""How the `passdown` command ends (`cli.run`): without the interpreter's teardown, but
with what was registered to run at exit, its output flushed and its exit code kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_RUN = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('registered at exit ran', flush=False))\n"
    "sys.stdout.write('unflushed output;')\n"
    "sys.argv = ['passdown', *sys.argv[1:]]\n"
    "from passdown.cli import run\n"
    "run()\n"
)


def _python(code: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`code` run by this Python with this checkout's passdown, `args` after it."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HOME": str(tmp_path)}
    env["PASSDOWN_DATA_DIR"] = str(tmp_path / "data")
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60
    )


def _passdown(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return _python(_RUN, *args, tmp_path=tmp_path)


def test_a_command_ends_with_its_output_its_exit_functions_and_its_code(tmp_path: Path) -> None:
    ok = _passdown("--version", tmp_path=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("unflushed output;")
    assert "passdown, version" in ok.stdout and "registered at exit ran" in ok.stdout

    usage = _passdown("no-such-command", tmp_path=tmp_path)
    assert usage.returncode == 2
    assert "No such command" in usage.stderr and "registered at exit ran" in usage.stdout


def test_a_command_whose_thread_still_runs_waits_for_it(tmp_path: Path) -> None:
    """A non-daemon thread still running when the command returns gets the normal exit,
    which lets it finish."""
    marker = tmp_path / "finished"
    code = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "def work():\n"
        "    time.sleep(0.3)\n"
        f"    Path({str(marker)!r}).write_text('done')\n"
        "threading.Thread(target=work).start()\n"
        "sys.argv = ['passdown', '--version']\n"
        "from passdown.cli import run\n"
        "run()\n"
    )
    proc = _python(code, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "done"
