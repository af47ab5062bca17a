"""Start-up cost of the CLI, of the MCP server, of an export and of every hook event.

`passdown --help` must answer in under 0.1 s and `passdown mcp` must answer MCP's
`initialize` over stdio in under 0.3 s (spawn to the reply). Also timed: the first
`tools/list` reply (both are answered before the MCP SDK loads, see
passdown.mcp._handshake) and the first `tools/call` reply, which waits for the SDK. The
baseline is a bare `python -c pass` in the same run, so the figures show what passdown
itself adds.

Then what a user waits for on a small session (the recorded Claude Code and Codex
sessions of tests/fixtures, 75 KB and 93 KB, in a temp git workspace, storing into
SQLite): `passdown export`, and `passdown hook claude|codex` for each event the
installed hooks send, the payload on stdin (Codex's notify: as the last argument), as
the agent runs it. Target: 0.25 s each on this machine (printed beside each row).
`--before SRC` times another source tree too, interleaved run by run with this one
(e.g. `--before /path/to/main/src`), so both see the same load.

Usage: python benchmarks/bench_startup.py [--runs 20] [--before SRC] [--only-sessions]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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


def _report(name: str, runs: list[float], baseline: float | None, suffix: str = "") -> float:
    runs = sorted(runs)
    median = statistics.median(runs)
    ratio = f"  ({median / baseline:4.1f}x baseline)" if baseline else ""
    print(
        f"{name:34} median {median * 1000:6.0f} ms  p90 "
        f"{runs[int(len(runs) * 0.9) - 1] * 1000:6.0f} ms{ratio}{suffix}",
        flush=True,
    )
    return median


# -- an export and each hook event on a small session -----------------------------------

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "sessions"
TARGET_S = 0.25
CLAUDE_EVENTS = ("SessionStart", "SessionEnd", "PreCompact", "StopFailure")
CODEX_EVENTS = ("SessionStart", "PreCompact", "Stop", "SessionEnd")


def _sessions(tmp: Path) -> tuple[Path, Path, Path]:
    """(workspace, Claude session, Codex session) laid out in `tmp`."""
    ws = tmp / "ws"
    ws.mkdir()
    git = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid"}
    git |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    (ws / "README.md").write_text("# bench\n")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=ws, env={**os.environ, **git}, check=True)
    shutil.copytree(FIXTURES / "claude" / "full", tmp / "claude")
    shutil.copytree(FIXTURES / "codex" / "full", tmp / "codex")
    claude = next((tmp / "claude" / "projects").glob("*/*.jsonl"))
    codex = next((tmp / "codex" / "sessions").rglob("*.jsonl"))
    return ws, claude, codex


def _session_cases(ws: Path, claude: Path, codex: Path) -> dict[str, tuple[list[str], str | None]]:
    """name -> (passdown's argv, stdin)."""
    cases: dict[str, tuple[list[str], str | None]] = {
        "export (claude, 75 KB)": (
            ["export", "--from", "claude", "--session", str(claude), "--workspace", str(ws),
             "--quiet"],
            None,
        ),
    }  # fmt: skip
    for agent, session, events in (
        ("claude", claude, CLAUDE_EVENTS),
        ("codex", codex, CODEX_EVENTS),
    ):
        for event in events:
            payload = {"hook_event_name": event, "session_id": session.stem, "cwd": str(ws)}
            if event == "SessionStart":
                payload |= {"session_id": "a-new-session", "source": "startup"}
            else:
                payload["transcript_path"] = str(session)
            if event == "StopFailure":
                payload |= {"error": "rate_limit", "error_details": "API Error: 429 rate limit"}
            cases[f"hook {agent} {event}"] = (["hook", agent], json.dumps(payload))
    thread = "-".join(codex.stem.split("-")[-5:])  # rollout-<time>-<thread id>
    notify = {"type": "agent-turn-complete", "thread-id": thread, "cwd": str(ws)}
    cases["hook codex notify (turn complete)"] = (["hook", "codex", json.dumps(notify)], None)
    return cases


def _run_case(argv: list[str], stdin: str | None, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *argv],
        input=stdin,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"passdown {' '.join(argv[:3])} failed: {proc.stderr.strip()}")
    return took


def _time_sessions(runs: int, trees: dict[str, str]) -> None:
    """Each case `runs` times per source tree, the trees taking turns run by run."""
    with tempfile.TemporaryDirectory(prefix="passdown-bench-hooks-") as tmp:
        ws, claude, codex = _sessions(Path(tmp))
        base = {k: v for k, v in os.environ.items() if not k.startswith("PASSDOWN_")}
        base |= {"CLAUDE_CONFIG_DIR": str(Path(tmp) / "claude"), "HOME": tmp}
        base |= {"CODEX_HOME": str(Path(tmp) / "codex")}
        envs = {
            label: {**base, "PYTHONPATH": src, "PASSDOWN_DATA_DIR": f"{tmp}/data-{n}"}
            for n, (label, src) in enumerate(trees.items())
        }
        print(f"\nsmall sessions, target {TARGET_S * 1000:.0f} ms ({', '.join(trees)})")
        for name, (argv, stdin) in _session_cases(ws, claude, codex).items():
            times: dict[str, list[float]] = {label: [] for label in trees}
            for label in trees:
                _run_case(argv, stdin, ws, envs[label])  # warm: the store, the checkpoint
            for _ in range(runs):
                for label in trees:
                    times[label].append(_run_case(argv, stdin, ws, envs[label]))
            for label, found in times.items():
                median = statistics.median(found)
                verdict = "ok" if median <= TARGET_S else f"{median / TARGET_S:.1f}x target"
                row = f"{name} [{label}]" if len(trees) > 1 else name
                _report(row, found, None, f"  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--before", metavar="SRC", help="another source tree to time too")
    parser.add_argument(
        "--only-sessions", action="store_true", help="only the export and the hook events"
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    trees = {"this": str(REPO / "src")}
    if args.before:
        trees["before"] = os.path.abspath(args.before)
    if args.only_sessions:
        _time_sessions(max(5, args.runs // 2), trees)
        return
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
    _time_sessions(max(5, args.runs // 2), trees)


if __name__ == "__main__":
    main()
