"""Start-up cost of the CLI and of the MCP server.

`passdown --help` must answer in under 0.1 s and `passdown mcp` must answer MCP's
`initialize` over stdio in under 0.3 s (spawn to the reply). Also timed: the first
`tools/list` reply (both are answered before the MCP SDK loads, see
passdown.mcp._handshake) and the first `tools/call` reply, which waits for the SDK. The
baseline is a bare `python -c pass` in the same run, so the figures show what passdown
itself adds.

Usage: python benchmarks/bench_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "passdown --help": [sys.executable, "-m", "passdown", "--help"],
    "passdown export --help": [sys.executable, "-m", "passdown", "export", "--help"],
    "passdown switch --help": [sys.executable, "-m", "passdown", "switch", "--help"],
}


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
FOLLOW_UP = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "find_records", "arguments": {"limit": 1}},
}


def _mcp_session(workspace: str, env: dict[str, str]) -> tuple[float, float, float]:
    """Seconds from spawning `passdown mcp` to its `initialize` reply, to its first
    `tools/list` reply (sent right after `initialize` was answered, as clients do) and
    to its first `tools/call` reply (sent right after the tool list)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "mcp"],
        cwd=workspace,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    initialized = time.perf_counter() - start
    if reply.get("id") != 1 or "result" not in reply:
        raise SystemExit(f"bad initialize reply: {reply}")
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in FOLLOW_UP))
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    listed = time.perf_counter() - start
    if reply.get("id") != 2 or not reply.get("result", {}).get("tools"):
        raise SystemExit(f"bad tools/list reply: {reply}")
    proc.stdin.write(json.dumps(CALL).encode() + b"\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    called = time.perf_counter() - start
    if reply.get("id") != 3 or reply.get("result", {}).get("isError") is not False:
        raise SystemExit(f"bad tools/call reply: {reply}")
    proc.stdin.close()
    proc.wait(30)
    return initialized, listed, called


def _report(name: str, runs: list[float], baseline: float | None) -> float:
    runs = sorted(runs)
    median = statistics.median(runs)
    ratio = f"  ({median / baseline:4.1f}x baseline)" if baseline else ""
    print(
        f"{name:34} median {median * 1000:6.0f} ms  p90 "
        f"{runs[int(len(runs) * 0.9) - 1] * 1000:6.0f} ms{ratio}",
        flush=True,
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    baseline = None
    for name, argv in COMMANDS.items():
        _time(argv)  # warm the file cache
        median = _report(name, [_time(argv) for _ in range(args.runs)], baseline)
        baseline = baseline or median
    with tempfile.TemporaryDirectory(prefix="passdown-bench-mcp-") as tmp:
        env = {**os.environ, "PASSDOWN_DATA_DIR": f"{tmp}/data", "HOME": tmp}
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
        session: Callable[[], tuple[float, float, float]] = lambda: _mcp_session(tmp, env)  # noqa: E731
        session()  # warm
        runs = [session() for _ in range(max(5, args.runs // 2))]
        _report("passdown mcp: initialize reply", [r[0] for r in runs], baseline)
        _report("passdown mcp: first tools/list", [r[1] for r in runs], baseline)
        _report("passdown mcp: first tools/call", [r[2] for r in runs], baseline)


if __name__ == "__main__":
    main()
