"""The editors' chats (issue 24): does an export stay linear whatever the chat repeats?

For each agent and slice kind of growslice.EDITOR_KINDS (copilot-chat: a .jsonl log of
pushed requests, of one field set again and again (`mutations`: ~60 bytes a line, so
16 MB is ~250,000 mutations), or of failed requests; cline-ext and roo: a ui_messages.json
repeating its middle, its plan messages or its failures), the session is grown to sizes
4x apart (2/8/32 MB by default) and exported by `passdown export --session ... --no-store`
in a child process with its own HOME. Each row prints wall and CPU seconds, `x prev` (CPU
time over the size before: 4x the bytes, at most 4.5x passes), the child's peak RSS, and
the handoff's size. A ui_messages.json past its read bound (64 MB) is read from its tail:
its peak RSS stays flat beyond it.

Usage: python benchmarks/bench_editor_chats.py [--agents copilot-chat,roo]
       [--kinds middle,mutations] [--sizes 2,8,32] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import growslice

REPO = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
# Runs the export as its own child and reports that child's peak RSS (KB) and CPU seconds.
_MEASURED = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(use.ru_maxrss, use.ru_utime + use.ru_stime, file=sys.stderr)\n"
    "sys.exit(done.returncode)\n"
)


def export(grown: growslice.Grown, work: Path) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS bytes, handoff.json bytes) of one export in a child."""
    workspace = grown.root.parent / "ws"
    env = {
        **os.environ,
        "HOME": str(work / "home"),
        "PASSDOWN_DATA_DIR": str(work / "data"),
        grown.env_var: str(grown.root),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "passdown", "export", "--from", grown.agent]
    argv += ["--session", str(grown.session), "--workspace", str(workspace), "--no-store"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"export failed ({done.returncode}): {done.stderr[-2000:]}")
    rss_kb, cpu = done.stderr.strip().splitlines()[-1].split()
    handoff = workspace / ".agent-handoff" / "handoff.json"
    return wall, float(cpu), int(rss_kb) * 1024, handoff.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(growslice.EDITOR_KINDS))
    parser.add_argument("--kinds", default="")
    parser.add_argument("--sizes", default="2,8,32")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    wanted = set(args.kinds.split(",")) - {""}
    work = Path(tempfile.mkdtemp(prefix="passdown-bench-editors-"))
    print(
        f"{'agent':13} {'kind':10} {'MB':>6} {'copies':>8} {'wall s':>7} {'cpu s':>7} "
        f"{'x prev':>6} {'peak MB':>8} {'json KB':>7}"
    )
    try:
        for agent in args.agents.split(","):
            for kind in growslice.EDITOR_KINDS[agent]:
                if wanted and kind not in wanted:
                    continue
                previous = None
                verdict = "PASS"
                for size in sizes:
                    target = work / f"{agent}-{kind}-{size}"
                    grown = growslice.grow_editor(agent, kind, size * MB, target / "store")
                    (target / "home").mkdir(parents=True, exist_ok=True)
                    wall, cpu, rss, json_bytes = export(grown, target)
                    ratio = cpu / previous if previous else 0.0
                    if previous and ratio > 4.5:
                        verdict = f"FAIL: x{ratio:.1f} at {size} MB"
                    previous = cpu
                    print(
                        f"{agent:13} {kind:10} {grown.size / MB:6.1f} {grown.copies:8} "
                        f"{wall:7.2f} {cpu:7.2f} {ratio or float('nan'):6.2f} "
                        f"{rss / MB:8.1f} {json_bytes / 1024:7.1f}"
                    )
                    if not args.keep:
                        shutil.rmtree(target, ignore_errors=True)
                print(f"{agent:13} {kind:10} {verdict}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(json.dumps({"kept": str(work)}))


if __name__ == "__main__":
    main()
