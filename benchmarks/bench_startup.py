"""Start-up cost of the CLI: `passdown --help` and `passdown export --help` must answer in
under 0.3 s. The baseline is a bare `python -c pass` in the same run, so the figure
shows what passdown itself adds.

Usage: python benchmarks/bench_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    baseline = None
    for name, argv in COMMANDS.items():
        _time(argv)  # warm the file cache
        runs = sorted(_time(argv) for _ in range(args.runs))
        median = statistics.median(runs)
        baseline = baseline or median
        print(f"{name:28} median {median * 1000:6.0f} ms  p90 {runs[int(len(runs) * 0.9) - 1] * 1000:6.0f} ms"
              f"  ({median / baseline:4.1f}x baseline)")


if __name__ == "__main__":
    main()
