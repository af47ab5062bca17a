"""Does splitting one export across two processes pay? An upper bound, measured.

A grown real-shaped session is cut at a line boundary into two halves (two files, written
before any timing). Then, in the same run:
- one process reads + extracts the whole file (what passdown does today);
- two processes (the second forked, so it pays no import cost) each read + extract one
  half at the same time; the time is until both are done.
Merging the two partial states is not done (it would need extraction to support a
mergeable partial state) and cutting a tree-shaped session in two makes the second half
read in file order, so the two-process figure is a best case. CPU time and the machine's
load are printed beside wall time: a second process only helps when a core is idle.

Usage: python benchmarks/proto_two_cores.py [--agents claude,codex] [--size 300] [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realshape
from bench_export import MB


def read_and_extract(agent_name: str, path: Path) -> int:
    from passdown._extract import extract
    from passdown.agents._registry import get_agent

    agent = get_agent(agent_name)
    extracted = extract(agent.read(agent.ref_for_path(path)).events(), workspace=None)
    return len(extracted.state.commands)


def split(path: Path) -> tuple[Path, Path]:
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    first, second = path.with_name("a-" + path.name), path.with_name("b-" + path.name)
    first.write_bytes(data[:cut])
    second.write_bytes(data[cut:])
    return first, second


def cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one_process(agent: str, path: Path) -> tuple[float, float]:
    start, cpu = time.perf_counter(), cpu_now()
    read_and_extract(agent, path)
    return time.perf_counter() - start, cpu_now() - cpu


def two_processes(agent: str, first: Path, second: Path) -> tuple[float, float]:
    start, cpu = time.perf_counter(), cpu_now()
    pid = os.fork()
    if pid == 0:  # the worker: the second half
        try:
            read_and_extract(agent, second)
        finally:
            os._exit(0)
    read_and_extract(agent, first)
    os.waitpid(pid, 0)
    return time.perf_counter() - start, cpu_now() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default="claude,codex")
    parser.add_argument("--size", type=float, default=300)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="passdown-2cores-"))
    try:
        for agent in args.agents.split(","):
            fixture = realshape.fixtures()[agent]
            path = realshape.install(fixture, work / agent)
            os.environ[fixture.env_var] = str(work / agent)
            read_and_extract(agent, path)  # imports done before any timing and fork
            realshape.Grower(fixture).write(path, int(args.size * MB))
            first, second = split(path)
            for _ in range(args.runs):
                one = one_process(agent, path)
                two = two_processes(agent, first, second)
                print(
                    f"{agent:7} {path.stat().st_size / 1e6:5.0f} MB  one process "
                    f"{one[0]:6.2f}s wall {one[1]:6.2f}s CPU | two processes "
                    f"{two[0]:6.2f}s wall {two[1]:6.2f}s CPU | wall gain "
                    f"{one[0] / two[0]:4.2f}x  load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
            shutil.rmtree(work / agent)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
