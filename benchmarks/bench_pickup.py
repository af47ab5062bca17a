"""How long a new session waits for passdown's session-start hook (the pickup).

Run as the agent runs it: a fresh `passdown hook claude` process (the console script the
installers name, and `python -m passdown`) with a `SessionStart` payload on stdin,
against SQLite. Cases, all in one run with the interpreter's own start-up as baselines:

- no handoff: a workspace without `.agent-handoff/`;
- claimed: the workspace's handoff was already taken (every later session start);
- claim: a published handoff this session takes (the store is reset before each run,
  untimed), printing the pointer.

Target: under 0.3 s wall for each pickup case. `--before SRC` times another source tree
(the code before a change) interleaved with this one, in the same run.

Usage: python benchmarks/bench_pickup.py [--runs 15] [--before /tmp/base/src]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_hook import CLAUDE_FIXTURE, REPO, _git_workspace, _replant

TARGET_S = 0.3


def _setup(root: Path) -> tuple[dict[str, str], Path, Path, Path]:
    """(env, workspace with a published handoff, workspace without, store snapshot)."""
    ws, empty = root / "ws", root / "empty"
    _git_workspace(ws)
    _git_workspace(empty)
    claude_src = next(CLAUDE_FIXTURE.glob("*.jsonl"))
    encoded = "".join(c if c.isalnum() else "-" for c in str(ws))
    transcript = root / "claude" / "projects" / encoded / claude_src.name
    _replant(claude_src, transcript, "/tmp/passdown-rec/claude-full", str(ws), 1)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
        "PASSDOWN_DATA_DIR": str(root / "data"),
    }
    for name in ("PASSDOWN_STORE", "PASSDOWN_PICKUP", "PASSDOWN_AGENTS"):
        env.pop(name, None)
    stop_failure = {
        "hook_event_name": "StopFailure",
        "session_id": claude_src.stem,
        "transcript_path": str(transcript),
        "cwd": str(ws),
        "error": "rate_limit",
    }
    subprocess.run(
        [sys.executable, "-m", "passdown", "hook", "claude"],
        input=json.dumps(stop_failure),
        env=env,
        cwd=ws,
        check=True,
        capture_output=True,
        text=True,
    )
    if not (ws / ".agent-handoff" / "handoff.json").is_file():
        raise SystemExit("setup: the StopFailure hook wrote no handoff (see data/logs/hooks.log)")
    snapshot = root / "published.db"
    with sqlite3.connect(root / "data" / "store.db") as db, sqlite3.connect(snapshot) as copy:
        db.backup(copy)
    return env, ws, empty, snapshot


def _restore(snapshot: Path, store: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(snapshot, store)
    store.chmod(0o600)


def _start_payload(cwd: Path, n: int) -> str:
    return json.dumps(
        {
            "hook_event_name": "SessionStart",
            "session_id": f"bench-{n}",
            "cwd": str(cwd),
            "source": "startup",
        }
    )


class Runner:
    def __init__(self, env: dict[str, str], root: Path) -> None:
        self.env, self.root, self.n = env, root, 0
        self.cpu_seconds: list[float] = []  # of each run (user + system, git included)

    def time(
        self,
        argv: list[str],
        cwd: Path | None,
        expect: Callable[[str], bool],
        src: Path | None = None,
    ) -> float:
        self.n += 1
        stdin = _start_payload(cwd, self.n) if cwd else ""
        env = {**self.env, "PYTHONPATH": str(src)} if src else self.env
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(
            argv,
            input=stdin,
            env=env,
            cwd=cwd or self.root,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0 or not expect(proc.stdout):
            raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stdout!r} {proc.stderr}")
        self.cpu_seconds.append(cpu)
        return elapsed


def _row(name: str, times: list[float], cpu: list[float], target: bool) -> None:
    """Wall seconds (median, p90, max) and the median CPU seconds, which a loaded
    machine inflates far less than the wall time."""
    times.sort()
    p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
    verdict = ("  ok" if p90 < TARGET_S else "  SLOW") if target else ""
    print(
        f"{name:52} {statistics.median(times):8.3f} {p90:8.3f} {times[-1]:8.3f}"
        f" {statistics.median(cpu):8.3f}{verdict}"
    )


def _silent(out: str) -> bool:
    return out == ""


def _pointer(out: str) -> bool:
    return "additionalContext" in out and "HANDOFF.md" in out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--before",
        type=Path,
        help="another passdown source tree (its src/ folder) to time in the same run, "
        "interleaved, e.g. `git archive BASE src | tar -x -C /tmp/base`",
    )
    opts = parser.parse_args()
    sources: dict[str, Path | None] = {"": None}
    if opts.before:
        sources = {" [before]": opts.before.resolve(), " [now]": None}
    with tempfile.TemporaryDirectory(prefix="passdown-bench-pickup-") as tmp:
        root = Path(tmp)
        env, ws, empty, snapshot = _setup(root)
        store = root / "data" / "store.db"
        runner = Runner(env, root)
        script = Path(sys.executable).parent / "passdown"
        doors = {"passdown": [str(script)]} if script.is_file() else {}
        doors["python -m passdown"] = [sys.executable, "-m", "passdown"]
        print(
            f"{'':52} {'median':>8} {'p90':>8} {'max':>8} {'cpu':>8}"
            f"   (seconds, {opts.runs} runs; cpu: median user+system)"
        )
        baselines = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "python -S -c pass (no site)": [sys.executable, "-S", "-c", "pass"],
        }
        for name, argv in baselines.items():
            runner.cpu_seconds.clear()
            times = [runner.time(argv, None, _silent) for _ in range(opts.runs)]
            _row(name, times, list(runner.cpu_seconds), False)

        def interleaved(name: str, run: Callable[[Path | None], float]) -> None:
            times: dict[str, list[float]] = {label: [] for label in sources}
            cpu: dict[str, list[float]] = {label: [] for label in sources}
            for _ in range(opts.runs):
                for label, src in sources.items():
                    runner.cpu_seconds.clear()
                    times[label].append(run(src))
                    cpu[label].append(runner.cpu_seconds[-1])
            for label in sources:
                _row(f"{name}{label}", times[label], cpu[label], True)

        for door, argv in doors.items():
            for agent in ("claude", "codex"):
                hook = [*argv, "hook", agent]
                for src in sources.values():
                    runner.time(hook, empty, _silent, src)  # warm the page cache
                interleaved(
                    f"{door} hook {agent}: no handoff",
                    lambda src, hook=hook: runner.time(hook, empty, _silent, src),
                )
            hook = [*argv, "hook", "claude"]

            def claim(src: Path | None, hook: list[str] = hook) -> float:
                _restore(snapshot, store)
                return runner.time(hook, ws, _pointer, src)

            interleaved(f"{door} hook claude: claim a handoff", claim)
            interleaved(
                f"{door} hook claude: handoff already claimed",
                lambda src, hook=hook: runner.time(hook, ws, _silent, src),
            )
        log = (root / "data" / "logs" / "hooks.log").read_text()
        errors = [line for line in log.splitlines() if " error " in line]
        if errors:
            raise SystemExit("the hook logged errors:\n" + "\n".join(errors[:5]))
        outcomes = sorted(
            {" ".join(line.split()[3:4]) for line in log.splitlines() if " pickup " in line}
        )
        print(f"hook log: pickup outcomes {', '.join(outcomes)}; no errors")


if __name__ == "__main__":
    main()
