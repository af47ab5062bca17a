"""What one `export_sync` costs, end to end: stage the files, publish to the store
(SQLite in the data folder), rename the files into place, with the write-ahead journal
(`passdown._wal`) since issue 21. Each run exports a new package on top of the last one
(a handoff replaced, its history copy kept), in a git workspace, as the hook does after
every turn. Prints the median and p90 of `--runs` runs after `--warmup` ones.

Compare two trees by running it with each on PYTHONPATH, e.g. the commit before:
    git archive <commit> src | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/src python benchmarks/bench_export_journal.py
    PYTHONPATH=src python benchmarks/bench_export_journal.py

Usage: python benchmarks/bench_export_journal.py [--runs 15] [--warmup 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the workspace and data folder go")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="passdown-bench-journal-", dir=args.dir) as tmp:
        root = Path(tmp)
        os.environ["PASSDOWN_DATA_DIR"] = str(root / "data")
        ws = root / "ws"
        ws.mkdir()
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        from passdown import HandoffCoordinator

        times: list[float] = []
        with HandoffCoordinator(ws, f"sqlite://{root / 'data' / 'store.db'}") as coordinator:
            for n in range(args.warmup + args.runs):
                package = coordinator.prepare_handoff_sync(
                    "coding-agent",
                    f"run {n}: wire the exporter",
                    next_steps=[f"step {n}"],
                    blockers=["none"],
                )
                start = time.perf_counter()
                coordinator.export_sync(package)
                if n >= args.warmup:
                    times.append(time.perf_counter() - start)
        import passdown

        times.sort()
        p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
        print(
            f"export_sync  median {statistics.median(times) * 1000:6.1f} ms  "
            f"p90 {p90 * 1000:6.1f} ms  min {times[0] * 1000:6.1f} ms  "
            f"({len(times)} runs, {Path(passdown.__file__).parent})"
        )


if __name__ == "__main__":
    sys.exit(main())
