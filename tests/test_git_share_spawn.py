"""`_platform.spawn_detached`, which the pre-push hook of `passdown install git` starts
its background push with: the child outlives the caller and holds none of its pipes
(a caller that captures output, as git's caller may, is not kept waiting), and on
Windows it is a detached process in a new process group without a console."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passdown import _platform, _platform_launch, _platform_os

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX session")
def test_the_caller_returns_while_the_detached_child_runs_on(tmp_path: Path) -> None:
    done_file = tmp_path / "done"
    child = f"import time, pathlib; time.sleep(3); pathlib.Path({str(done_file)!r}).touch()"
    log = tmp_path / "child.log"
    parent = (
        f"import sys; sys.path.insert(0, {str(SRC)!r})\n"
        "from passdown import _platform\n"
        f"print(_platform.spawn_detached([sys.executable, '-c', {child!r}], "
        f"cwd={str(tmp_path)!r}, env={{}}, log={str(log)!r}))\n"
    )
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, check=True, timeout=30
    )
    took = time.monotonic() - started
    assert took < 2.5, took  # not held until the child's 3 s are over
    assert int(out.stdout.strip()) > 0 and not done_file.exists()
    deadline = time.monotonic() + 20
    while not done_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done_file.exists()  # the child ran on after its parent ended


def test_windows_gets_a_detached_process_without_a_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class FakePopen:
        pid = 42

        def __init__(self, argv: list[str], **kwargs: Any) -> None:
            seen.update(kwargs, argv=argv)

    monkeypatch.setattr(_platform_os, "is_windows", lambda: True)
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    exe = str(tmp_path / "python.exe")
    assert _platform.spawn_detached([exe, "-m", "passdown"], cwd=str(tmp_path), env={}) == 42
    assert seen["argv"] == [exe, "-m", "passdown"] and "start_new_session" not in seen
    assert seen["creationflags"] & 0x8 and seen["creationflags"] & 0x200  # detached, group
    assert seen["creationflags"] & 0x8000000  # no console window
    assert seen["stdin"] == subprocess.DEVNULL and seen["stdout"] == subprocess.DEVNULL
    assert _platform.spawn_detached is _platform_launch.spawn_detached
