"""Issue 21: an export that fails at any step changes nothing, through every door.

Each case makes a good export first (the previous handoff: stored, published, its files
and the session's checkpoint on disk), appends to the session (so that any export would
change all four), and then exports through one door (the CLI, the agent hook, the MCP
`prepare_handoff` tool, the `HandoffCoordinator` API; each a real process) under one
fault (`switch` is the CLI's other export, launching a stub agent):

- `readonly`: the workspace is mounted read-only (a bind mount over itself);
- `full`: the workspace is on a tmpfs that is full;
- `bad_out`: `--out /proc/nope` (the doors that take a folder);
- `killed`: the process is SIGKILLed at the moment it writes the first handoff file;
- `too_large`: the handoff is larger than the store takes (exit 15);
- `store_full`: the data folder (the SQLite store) is on a tmpfs that is full.

The store's rows (the active pointer among them), every file under `.agent-handoff/`
(and `.git/info/exclude`, and the workspace's own listing), and the checkpoints are
hashed before and after: they must be byte-identical. A clean export afterwards must
change them, so the comparison can fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from test_doors import Session, repo

pytestmark = pytest.mark.timeout(600)

SESSION_ID = "fa11fa11-0000-4000-8000-0000000000f1"
DOORS = ("cli", "switch", "hook", "mcp", "api")
FAULTS = ("readonly", "full", "bad_out", "killed", "too_large", "store_full")
# the exit code each door gives for each fault (None: the door reports it otherwise)
EXPECTED_EXIT = {
    "readonly": 8,
    "full": 8,
    "bad_out": 8,
    "killed": -9,
    "too_large": 15,
    "store_full": 9,
}

# Loaded first in the export's process (a `sitecustomize` on its PYTHONPATH): the first
# write of handoff data writes half of it, then the process SIGKILLs itself.
KILLER = """
import os, signal
import passdown._fsio as fsio

_real = fsio._write_all

def _write_then_die(fd, data):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = ""
    if "/logs/" in target or "/locks/" in target:
        return _real(fd, data)
    _real(fd, bytes(data[: max(1, len(data) // 2)]))
    os.kill(os.getpid(), signal.SIGKILL)

fsio._write_all = _write_then_die
"""

API_SCRIPT = """
import sys
from passdown import HandoffCoordinator, PassdownError

out = sys.argv[1] or None
try:
    with HandoffCoordinator(".") as coordinator:
        package = coordinator.prepare_handoff_sync("claude", require_session=True)
        coordinator.execute_handoff_sync(package, launch=False, out_dir=out)
except PassdownError as exc:
    print(f"{type(exc).__name__}: {exc.message}", file=sys.stderr)
    sys.exit(exc.exit_code)
"""


@dataclass
class World:
    ws: Path
    data: Path
    session: Session
    session_path: Path
    env: dict[str, str]
    out: str | None = None
    undo: list[list[str]] = field(default_factory=list)  # commands that take a fault back


# -- tmpfs --------------------------------------------------------------------------------


def _can_mount() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "4m") -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(folder: Path) -> None:
    """Fill the file system `folder` is on, to the last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (1 << 20, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * chunk)
    finally:
        os.close(fd)


# -- the state that must not change ------------------------------------------------------


def _digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def snapshot(world: World) -> dict[str, str]:
    state: dict[str, str] = {}
    # read from a copy: opening the store itself may need to write (its -shm), and its
    # folder may be a full disk
    copy = Path(tempfile.mkdtemp(prefix="store-copy-"))
    for name in ("store.db", "store.db-wal"):
        if (world.data / name).exists():
            shutil.copyfile(world.data / name, copy / name)
    with contextlib.closing(sqlite3.connect(copy / "store.db")) as conn:
        for table, order in (
            ("records", "project, id"),
            ("record_history", "project, id, version"),
            ("pointers", "project, name"),
            ("records_fts", "rowid"),
        ):
            columns = "rowid, text" if table == "records_fts" else "*"
            rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchall()
            state[f"store:{table}"] = _digest(json.dumps(rows))
        active = conn.execute("SELECT value FROM pointers WHERE name = 'active-handoff'")
        state["active"] = json.dumps(active.fetchall())
    shutil.rmtree(copy)
    handoff = world.ws / ".agent-handoff"
    for path in sorted(handoff.rglob("*")) if handoff.exists() else []:
        name = f"file:{path.relative_to(world.ws)}"
        state[name] = "folder" if path.is_dir() else _digest(path.read_bytes())
    state["workspace listing"] = json.dumps(sorted(p.name for p in world.ws.iterdir()))
    state["git exclude"] = _digest((world.ws / ".git" / "info" / "exclude").read_bytes())
    checkpoints = world.data / "checkpoints"
    for path in sorted(checkpoints.iterdir()) if checkpoints.exists() else []:
        state[f"checkpoint:{path.name}"] = _digest(path.read_bytes())
    return state


# -- the doors -----------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int | None  # the process's exit code (-9: killed)
    error: str  # what the door said about the failure


def run_door(door: str, world: World, *, timeout: float = 120) -> Outcome:
    python = [sys.executable]
    if door in ("cli", "switch"):
        args = ["export", "--from", "claude"]
        if door == "switch":  # to a stub Codex that exits 0 (see make_world)
            args = ["switch", "--from", "claude", "--to", "codex", "--non-interactive"]
        args += ["--out", world.out] if world.out else []
        proc = subprocess.run(
            [*python, "-m", "passdown", *args],
            cwd=world.ws,
            env=world.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return Outcome(proc.returncode, proc.stderr)
    if door == "hook":
        payload = {
            "hook_event_name": "SessionEnd",
            "session_id": SESSION_ID,
            "transcript_path": str(world.session_path),
            "cwd": str(world.ws),
            "reason": "other",
        }
        proc = subprocess.run(
            [*python, "-m", "passdown", "hook", "claude"],
            cwd=world.ws,
            env=world.env,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        log = world.data / "logs" / "hooks.log"
        return Outcome(proc.returncode, log.read_text() if log.exists() else "")
    if door == "api":
        proc = subprocess.run(
            [*python, "-c", API_SCRIPT, world.out or ""],
            cwd=world.ws,
            env=world.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return Outcome(proc.returncode, proc.stderr)
    assert door == "mcp"
    return _mcp_prepare_handoff(python, world, timeout)


def _mcp_prepare_handoff(python: list[str], world: World, timeout: float) -> Outcome:
    """`prepare_handoff` over stdio, stdin kept open until the answer (or the end)."""
    proc = subprocess.Popen(
        [*python, "-m", "passdown", "mcp"],
        cwd=world.ws,
        env=world.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "prepare_handoff", "arguments": {"source": "claude"}},
        },
    ]
    answer: dict[str, object] | None = None
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                answer = _read_answer(proc, int(str(message["id"])), timeout)
                if answer is None:
                    break
    except BrokenPipeError:
        answer = None
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if answer is None:
        return Outcome(proc.returncode, "")
    result = answer.get("result")
    assert isinstance(result, dict), answer
    text = "".join(str(c.get("text", "")) for c in result.get("content", []))
    return Outcome(None if result.get("isError") else 0, text if result.get("isError") else "")


def _read_answer(
    proc: subprocess.Popen[str], wanted: int, timeout: float
) -> dict[str, object] | None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                return None
            continue
        line = proc.stdout.readline()
        if not line:
            return None  # the server is gone
        message = json.loads(line)
        if message.get("id") == wanted:
            return dict(message)
    raise AssertionError("the MCP server did not answer")


# -- setting the scene ---------------------------------------------------------------------


def make_world(ws_parent: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    ws = repo(ws_parent / "ws")
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(data))
    session = (
        Session(SESSION_ID, ws)
        .user("Add a usage section to the README")
        .tool("Write", {"file_path": str(ws / "usage.md"), "content": "usage\n"})
        .assistant("Started. Next: write the usage example.")
    )
    path = session.write()
    stub = ws_parent / "bin" / "codex"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    env = {
        **os.environ,
        "PASSDOWN_AGENTS": "claude,codex",
        "PATH": f"{stub.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    world = World(ws, data, session, path, env)
    first = run_door("cli", world)
    assert first.code == 0, first.error
    # the session goes on: any export from here on would change the files, the
    # store and the checkpoint
    session.user("Now add an example").assistant("Added the example. Next: run the tests.")
    session.write()
    return world


def apply_fault(fault: str, door: str, world: World, tmp_path: Path) -> None:
    if fault == "readonly":  # the workspace, mounted read-only over itself
        if not _can_mount():
            pytest.skip("a read-only workspace needs a read-only bind mount (root and mount)")
        ws = str(world.ws)
        for command in (["mount", "--bind", ws, ws], ["mount", "-o", "remount,bind,ro", ws]):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", ws], capture_output=True)
                pytest.skip(f"cannot mount the workspace read-only: {done.stderr.strip()}")
        world.undo.append(["umount", ws])
    elif fault in ("full", "store_full"):
        fill(world.ws if fault == "full" else world.data)
    elif fault == "bad_out":
        world.out = "/proc/nope"
    elif fault == "killed":
        site = tmp_path / "killer"
        site.mkdir()
        (site / "sitecustomize.py").write_text(KILLER)
        world.env["PYTHONPATH"] = os.pathsep.join(
            [str(site), *filter(None, [world.env.get("PYTHONPATH")])]
        )
    elif fault == "too_large":
        world.env["PASSDOWN_MAX_RECORD_BYTES"] = "4096"


def undo_fault(world: World) -> None:
    world.out = None
    world.env.pop("PASSDOWN_MAX_RECORD_BYTES", None)
    world.env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    while world.undo:
        subprocess.run(world.undo.pop(), capture_output=True)
    for folder in (world.ws, world.data):
        (folder / "filler").unlink(missing_ok=True)


@pytest.fixture
def scene(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str, World]]:
    door, fault = request.param
    with contextlib.ExitStack() as stack:
        ws_parent, data = tmp_path, tmp_path / "data"
        if fault == "full":
            if not _can_mount():
                pytest.skip("a full disk needs a tmpfs (root and mount)")
            ws_parent = stack.enter_context(tmpfs(tmp_path / "disk"))
        elif fault == "store_full":
            if not _can_mount():
                pytest.skip("a full data folder needs a tmpfs (root and mount)")
            data = stack.enter_context(tmpfs(tmp_path / "data", size="8m"))
        world = make_world(ws_parent, data, monkeypatch)
        try:
            yield door, fault, world
        finally:
            undo_fault(world)


# the hook and MCP doors take no output folder: a bad one is no fault they can meet
CASES = [
    (door, fault)
    for door in DOORS
    for fault in FAULTS
    if not (fault == "bad_out" and door in ("hook", "mcp"))
]


@pytest.mark.parametrize("scene", CASES, ids=[f"{d}-{f}" for d, f in CASES], indirect=True)
def test_a_failed_export_changes_nothing(scene: tuple[str, str, World], tmp_path: Path) -> None:
    door, fault, world = scene
    apply_fault(fault, door, world, tmp_path)
    before = snapshot(world)

    outcome = run_door(door, world)

    if fault == "killed":
        assert outcome.code == -9, f"the {door} export was not killed while writing: {outcome}"
    elif door == "hook":  # a hook never fails its agent: the error is in hooks.log
        assert outcome.code == 0
        if fault != "store_full":  # (the log is in the full data folder too)
            assert "error" in outcome.error.lower(), outcome.error
    elif door == "mcp" and fault == "store_full" and outcome.code == 9:
        pass  # the server could not open its store: it exits 9 before answering
    elif door == "mcp":
        assert outcome.code is None, f"the MCP tool call did not fail: {outcome}"
        assert outcome.error
    else:
        assert outcome.code == EXPECTED_EXIT[fault], outcome.error
    if fault == "too_large" and door != "hook":
        assert "too large for the store" in outcome.error
    after = snapshot(world)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"the failed {door} export ({fault}) changed: {changed}"

    # the same export without the fault changes all of it (the test could have failed)
    undo_fault(world)
    clean = run_door(door, world)
    assert clean.code == 0, clean.error
    good = snapshot(world)
    assert good["active"] != before["active"]
    assert good["file:.agent-handoff/HANDOFF.md"] != before["file:.agent-handoff/HANDOFF.md"]
    assert [k for k in good if k.startswith("checkpoint:")], "no checkpoint after a good export"
    assert {k: v for k, v in good.items() if k.startswith("checkpoint:")} != {
        k: v for k, v in before.items() if k.startswith("checkpoint:")
    }
