"""Where an export's time goes: cProfile of reading + extraction of one grown session,
in-process (no redaction, rendering or workspace inspection, which do not grow with the
file).

Usage: python benchmarks/profile_export.py AGENT SIZE_MB [--top 30] [--keep PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realshape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("agent")
    parser.add_argument("size_mb", type=float)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    fixture = realshape.fixtures()[args.agent]
    work = Path(tempfile.mkdtemp(prefix="passdown-profile-"))
    try:
        path = realshape.install(fixture, work / args.agent)
        realshape.Grower(fixture).write(path, int(args.size_mb * 1024 * 1024))
        os.environ[fixture.env_var] = str(work / args.agent)
        from passdown.agents.registry import get_agent
        from passdown.extract import extract

        agent = get_agent(args.agent)
        ref = agent.ref_for_path(path)
        profile = cProfile.Profile()
        start, cpu = time.perf_counter(), time.process_time()
        profile.enable()
        extract(agent.read(ref).events(), workspace=None)
        profile.disable()
        print(f"{path.stat().st_size / 1e6:.0f} MB: {time.perf_counter() - start:.2f} s wall, "
              f"{time.process_time() - cpu:.2f} s CPU (profiled)")
        pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
