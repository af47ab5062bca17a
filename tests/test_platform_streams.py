"""Issue 22: passdown's streams and sockets on Windows.

- stdout, stderr and stdin in UTF-8 whatever the console code page: a Windows pipe gets
  the ANSI code page (cp1252 here through PYTHONIOENCODING, which sets what Windows would),
  in which the `→` of HANDOFF.md cannot be written;
- the MCP wire in binary mode (no CRLF translation by Windows' C runtime);
- `serve` and `ui` bind with SO_EXCLUSIVEADDRUSE on Windows (SO_REUSEADDR there lets a
  second server take a port in use), and a port in use is a message and an exit code.
Windows' socket options and C runtime are not on this machine: those two are checked
with the platform simulated in-process (what passdown asks of them); the streams through
the CLI in a subprocess, with and without the whole Windows simulation (tests/simwin).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from passdown import _platform
from recorded import scenarios

TESTS = Path(__file__).resolve().parent
SIMULATION = TESTS / "simwin"
CLAUDE = next(r for r in scenarios("claude") if r.scenario == "full")


def _env(tmp_path: Path, *, windows: bool, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        **extra,
    }
    if windows:
        env["PYTHONPATH"] = os.pathsep.join([str(SIMULATION), env.get("PYTHONPATH", "")])
        env["PASSDOWN_SIMULATE_WINDOWS"] = "1"
    env.pop("PYTHONUTF8", None)
    return env


@pytest.mark.parametrize(
    "windows",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                sys.platform == "win32", reason="simulates Windows on a POSIX machine"
            ),
        ),
    ],
    ids=["native", "simulated-windows"],
)
def test_the_handoff_prints_through_a_cp1252_pipe(
    tmp_path: Path, windows: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`passdown inspect` piped, stdout in the ANSI code page: the handoff arrives whole,
    in UTF-8, with its `→`, and exit 0 (on main: UnicodeEncodeError, exit 1)."""
    session = CLAUDE.install(tmp_path / "claude", monkeypatch, tmp_path / "workspaces")
    workspace = CLAUDE.workspace_in(tmp_path / "workspaces")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "inspect",
            "--from",
            "claude",
            "--session",
            str(session),
        ],
        env=_env(tmp_path, windows=windows, PYTHONIOENCODING="cp1252"),
        cwd=workspace,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    text = proc.stdout.decode("utf-8")  # strict: every byte is UTF-8
    assert "→ exit" in text
    assert str(workspace) in text or "# Handoff" in text
    assert b"Traceback" not in proc.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="simulates Windows on a POSIX machine")
def test_a_hook_payload_in_utf8_is_read_right_under_cp1252(tmp_path: Path) -> None:
    """stdin too: a hook's JSON payload naming a folder `café→` comes through as written
    (read as cp1252 it would be mojibake, a folder that does not exist)."""
    code = (
        "import sys\n"
        "from passdown.cli import utf8_stdio\n"
        "utf8_stdio()\n"
        "data = sys.stdin.read()\n"
        "print(sys.stdin.encoding, sys.stdout.encoding, data == 'caf\\u00e9\\u2192')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input="café→".encode(),
        env=_env(tmp_path, windows=True, PYTHONIOENCODING="cp1252"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().split() == ["utf-8", "utf-8", "True"]


# -- the MCP wire in binary mode -------------------------------------------------------


def test_the_mcp_wire_is_put_in_binary_mode_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    from passdown.mcp import _stdio

    calls: list[tuple[int, int]] = []
    fake = types.ModuleType("msvcrt")
    fake.setmode = lambda fd, mode: calls.append((fd, mode))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    monkeypatch.setattr(sys, "platform", "win32")
    with _stdio.claimed_stdio() as (source, out):
        wire = (source.fileno(), out.fileno())
    assert [fd for fd, _ in calls] == list(wire)
    assert {mode for _, mode in calls} == {0x8000}  # O_BINARY
    monkeypatch.setattr(sys, "platform", "linux")
    calls.clear()
    with _stdio.claimed_stdio():
        pass
    assert calls == []  # POSIX descriptors have no text mode


# -- exclusive binding -----------------------------------------------------------------


class _RecordingSocket:
    """What a bind asks of the socket, without Windows' socket options on this kernel."""

    made: list[_RecordingSocket] = []  # noqa: RUF012

    def __init__(self, *args: Any) -> None:
        self.options: list[tuple[int, int, int]] = []
        _RecordingSocket.made.append(self)

    def setsockopt(self, level: int, option: int, value: int) -> None:
        self.options.append((level, option, value))

    def bind(self, address: Any) -> None:
        pass

    def listen(self, backlog: int) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("door", ["serve", "ui"])
def test_servers_bind_exclusively_on_windows(monkeypatch: pytest.MonkeyPatch, door: str) -> None:
    from passdown.cli import _ui_cmds
    from passdown.mcp import _http

    bind = _http.bind if door == "serve" else _ui_cmds.bind
    monkeypatch.setattr(socket, "socket", _RecordingSocket)
    monkeypatch.setattr(socket, "SO_EXCLUSIVEADDRUSE", -5, raising=False)
    _RecordingSocket.made.clear()

    monkeypatch.setattr(sys, "platform", "win32")
    bind("127.0.0.1", 8765)
    options = _RecordingSocket.made[-1].options
    assert (socket.SOL_SOCKET, -5, 1) in options
    assert all(option != socket.SO_REUSEADDR for _, option, _ in options)

    monkeypatch.setattr(sys, "platform", "linux")
    bind("127.0.0.1", 8765)
    # POSIX: SO_REUSEADDR only lets a restart bind past TIME_WAIT, never a second listener
    assert _RecordingSocket.made[-1].options in ([(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)],)


def test_exclusive_binding_is_the_option_windows_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `socket.SO_EXCLUSIVEADDRUSE` (older Pythons) the value is Windows' own:
    ~SO_REUSEADDR (-5 there, where SO_REUSEADDR is 4)."""
    monkeypatch.delattr(socket, "SO_EXCLUSIVEADDRUSE", raising=False)
    monkeypatch.setattr(socket, "SO_REUSEADDR", 4)
    monkeypatch.setattr(sys, "platform", "win32")
    sock = _RecordingSocket()
    _platform.listen_exclusively(sock)  # type: ignore[arg-type]
    assert sock.options == [(socket.SOL_SOCKET, -5, 1)]


def test_ui_on_a_port_in_use_says_so_and_exits(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a careless server would
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "passdown", "ui", "--port", str(port)],
            env=_env(tmp_path, windows=False),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        busy.close()
    assert proc.returncode == 2, proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr
