"""How long an agent waits for passdown's hook: `passdown hook claude` (SessionEnd /
PreCompact) and `passdown hook codex` (notify) on a typical session, run as the agent
runs it (a fresh process, the payload on stdin or as the last argument), storing into
SQLite. Target: under 0.5 s.

The sessions are the recorded real Claude Code and Codex sessions from
tests/fixtures/sessions, replanted into a temp git workspace. A bare `python -c pass`
is timed as the baseline.

Usage: python benchmarks/bench_hook.py [--runs 15] [--repeat N (session size x N)]
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "sessions"
CLAUDE_FIXTURE = FIXTURES / "claude" / "full" / "projects" / "-tmp-passdown-rec-claude-full"
CODEX_FIXTURE = FIXTURES / "codex" / "full" / "sessions"
TARGET_S = 0.5


def _git_workspace(path: Path) -> None:
    path.mkdir(parents=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.invalid",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.invalid",
    }
    (path / "README.md").write_text("# bench\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)


def _replant(src: Path, dest: Path, old_cwd: str, new_cwd: str, repeat: int) -> None:
    """The recorded session with its cwd moved to our workspace (`repeat` > 1 makes the
    file longer by repeating its middle, to see how the hook scales)."""
    lines = src.read_text(encoding="utf-8").replace(old_cwd, new_cwd).splitlines(keepends=True)
    body = lines[:1] + lines[1:-1] * repeat + lines[-1:]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(body), encoding="utf-8")


def _setup(
    root: Path, repeat: int
) -> tuple[dict[str, str], dict[str, tuple[list[str], str | None]]]:
    ws = root / "ws"
    _git_workspace(ws)
    claude_dir, codex_home = root / "claude", root / "codex"
    claude_src = next(CLAUDE_FIXTURE.glob("*.jsonl"))
    encoded = "".join(c if c.isalnum() else "-" for c in str(ws))
    transcript = claude_dir / "projects" / encoded / claude_src.name
    _replant(claude_src, transcript, "/tmp/passdown-rec/claude-full", str(ws), repeat)
    codex_src = next(CODEX_FIXTURE.rglob("rollout-*.jsonl"))
    rollout = codex_home / codex_src.relative_to(CODEX_FIXTURE.parent)
    _replant(codex_src, rollout, "/tmp/passdown-rec/codex-full", str(ws), repeat)
    thread_id = json.loads(rollout.read_text().splitlines()[0])["payload"]["id"]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CLAUDE_CONFIG_DIR": str(claude_dir),
        "CODEX_HOME": str(codex_home),
        "PASSDOWN_DATA_DIR": str(root / "data"),
    }
    env.pop("PASSDOWN_STORE", None)
    claude_payload = json.dumps(
        {
            "hook_event_name": "SessionEnd",
            "cwd": str(ws),
            "session_id": claude_src.stem,
            "transcript_path": str(transcript),
            "reason": "exit",
        }
    )
    codex_payload = json.dumps(
        {
            "type": "agent-turn-complete",
            "thread-id": thread_id,
            "turn-id": "1",
            "cwd": str(ws),
            "input-messages": [],
            "last-assistant-message": "done",
        }
    )
    py = [sys.executable]
    cases = {
        "python -c pass (baseline)": ([*py, "-c", "pass"], None),
        "passdown hook claude (SessionEnd)": (
            [*py, "-m", "passdown", "hook", "claude"],
            claude_payload,
        ),
        "passdown hook codex (notify)": (
            [*py, "-m", "passdown", "hook", "codex", codex_payload],
            None,
        ),
    }
    return env, cases


def _time(argv: list[str], stdin: str | None, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        argv, input=stdin or "", env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or proc.stdout:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stdout}{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=1)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="passdown-bench-hook-") as tmp:
        root = Path(tmp)
        env, cases = _setup(root, opts.repeat)
        log = root / "data" / "logs" / "hooks.log"
        print(f"{'':36} {'median':>8} {'p90':>8} {'max':>8}   (seconds, {opts.runs} runs)")
        for name, (argv, stdin) in cases.items():
            _time(argv, stdin, env, root / "ws")  # warm the page cache
            times = sorted(_time(argv, stdin, env, root / "ws") for _ in range(opts.runs))
            p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
            verdict = "" if "baseline" in name else ("  ok" if p90 < TARGET_S else "  SLOW")
            print(f"{name:36} {statistics.median(times):8.3f} {p90:8.3f} {times[-1]:8.3f}{verdict}")
        errors = [line for line in log.read_text().splitlines() if " error " in line]
        if errors:
            raise SystemExit("the hook logged errors:\n" + "\n".join(errors[:5]))
        print(f"hook log: {sum(1 for _ in log.open())} runs logged, no errors")


if __name__ == "__main__":
    main()
