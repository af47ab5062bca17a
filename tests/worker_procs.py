"""What the two-core suites run: an export as a hook runs it, on one core and on two,
and the check that a killed export leaves no forked worker behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import passdown


def start_export(
    agent: str, session: Path, out: Path, *, single: bool, home: dict[str, str]
) -> subprocess.Popen[bytes]:
    """`passdown export` of `session` as a hook runs it (--quiet, streams piped), on one
    core or two, its stats line asked for; `home` names the agent's store."""
    env = {
        **os.environ,
        **home,
        "PYTHONPATH": str(Path(passdown.__file__).parents[1]),
        "PASSDOWN_DATA_DIR": str(out / "data"),
        "PASSDOWN_SINGLE_CORE": "1" if single else "0",
        "PASSDOWN_TWO_CORE_STATS": "1",
    }
    argv = [sys.executable, "-m", "passdown", "export", "--from", agent, "--session"]
    argv += [str(session), "--out", str(out / "handoff"), "--no-store", "--quiet"]
    argv += ["--workspace", str(out.parent)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def hook_exports(
    agent: str, session: Path, tmp_path: Path, *, home: dict[str, str]
) -> list[tuple[dict[str, Any], bytes, bytes]]:
    """`start_export` on one core, then on two, each read to the end as a hook runner
    reads its pipes (they close when the export exits: no worker holds them). Asserts
    what a hook's export must show: nothing on stdout, nothing on stderr on one core,
    only the stats line asked for on two, saying the halves merged. Returns, one core
    first, (handoff without its id and creation time, stderr, checkpoint bytes)."""
    results = []
    for single in (True, False):
        out = tmp_path / ("single" if single else "split")
        out.mkdir()
        export = start_export(agent, session, out, single=single, home=home)
        stdout, stderr = export.communicate(timeout=600)
        assert stdout == b""
        if single:
            assert stderr == b"", stderr.decode()[-2000:]
        else:
            assert stderr.startswith(b"passdown two-core: "), stderr.decode()[-2000:]
            assert stderr.count(b"\n") == 1  # the stats line only
            assert b"'merged': True" in stderr
        handoff = json.loads((out / "handoff" / "handoff.json").read_text())
        del handoff["id"], handoff["created_at"]
        saved = next((out / "data" / "checkpoints").glob("*.msgpack")).read_bytes()
        results.append((handoff, stderr, saved))
    return results


def assert_killed_export_leaves_no_worker(export: subprocess.Popen[bytes]) -> None:
    """Stop the export's worker as soon as it is seen (so it cannot finish its half and
    exit on its own), kill the export, and require the worker to die with it."""
    children: list[int] = []
    deadline = time.monotonic() + 120
    while not children and export.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        try:
            listed = Path(f"/proc/{export.pid}/task/{export.pid}/children").read_text()
        except OSError:
            break
        # the forked worker runs the export's own command line; git and other
        # subprocesses the export starts are no worker and not stopped
        own = _cmdline(export.pid)  # read each time: the first reads may precede exec
        children = [int(pid) for pid in listed.split() if _cmdline(int(pid)) == own]
        # a worker stopped before it asked for the parent-death signal would outlive
        # its parent by the test's own doing: wait for its setsid, which comes after
        children = [pid for pid in children if _leads_its_session(pid)]
    if not children:
        export.wait(timeout=600)
        pytest.skip("the export ended before its worker could be seen")
    for pid in children:
        os.kill(pid, signal.SIGSTOP)
    export.kill()
    export.wait(timeout=60)
    lingering = [pid for pid in children if not _gone(pid)]
    for pid in lingering:
        os.kill(pid, signal.SIGKILL)
    assert not lingering, "the worker outlived its killed parent"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _leads_its_session(pid: int) -> bool:
    fields = _stat_fields(pid)  # state, ppid, pgrp, session, ...
    return fields is not None and int(fields[3]) == pid


def _gone(pid: int, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        fields = _stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):  # gone, or dead and awaiting reaping
            return True
        time.sleep(0.05)
    return False
