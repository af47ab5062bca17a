"""Where an export's time goes, on one grown real-shaped session, in-process (redaction,
rendering and the workspace snapshot do not grow with the file and are left out).

Default: cProfile of reading + extraction. `--phases` (tree-shaped agents: claude, qwen,
pi) instead times the layers one on top of the other without a profiler (CPU seconds,
best of 2), so each difference is the cost of one layer:
  split forward      LineReader.forward alone (chunked read + split into lines)
  split backward     LineReader.backward alone
  pass 1             find_active_branch (backward split + envelope decode + walk)
  pass 2 decode      branch_lines + the full record decode of every branch line
  pass 2 events      the agent's events (decode + per-event Python)
  + extraction       everything: pass 1 + pass 2 events + extract()

Usage: python benchmarks/profile_export.py AGENT SIZE_MB [--top 30] [--phases]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realshape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("agent")
    parser.add_argument("size_mb", type=float)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--phases", action="store_true")
    args = parser.parse_args()
    fixture = realshape.fixtures()[args.agent]
    work = Path(tempfile.mkdtemp(prefix="passdown-profile-"))
    try:
        path = realshape.install(fixture, work / args.agent)
        realshape.Grower(fixture).write(path, int(args.size_mb * 1024 * 1024))
        os.environ[fixture.env_var] = str(work / args.agent)
        from passdown._extract import extract
        from passdown.agents._registry import get_agent

        agent = get_agent(args.agent)
        ref = agent.ref_for_path(path)
        if args.phases:
            phases(args.agent, path)
            return
        profile = cProfile.Profile()
        start, cpu = time.perf_counter(), time.process_time()
        profile.enable()
        extract(agent.read(ref).events(), workspace=None)
        profile.disable()
        print(
            f"{path.stat().st_size / 1e6:.0f} MB: {time.perf_counter() - start:.2f} s wall, "
            f"{time.process_time() - cpu:.2f} s CPU (profiled)"
        )
        pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _best_cpu(fn: Callable[[], object]) -> float:
    runs = []
    for _ in range(2):
        start = time.process_time()
        fn()
        runs.append(time.process_time() - start)
    return min(runs)


def phases(agent_name: str, path: Path) -> None:
    import importlib

    from passdown._extract import extract
    from passdown._jsonl import LineReader
    from passdown.agents import _tree
    from passdown.agents._registry import get_agent
    from passdown.transcript import Diagnostics, SessionInfo

    module = importlib.import_module(f"passdown.agents.{agent_name}")
    agent = get_agent(agent_name)
    ref = agent.ref_for_path(path)
    record_decoder = module._RECORD if hasattr(module, "_RECORD") else module._ENTRY

    def info() -> SessionInfo:
        return SessionInfo(agent=agent_name, session_id=ref.session_id, path=path)

    def pass1(diag: Diagnostics) -> _tree.Branch:
        node = _node_reader(module, agent_name, info(), diag)
        fragments = agent_name == "qwen"
        return _tree.find_active_branch(path, diag, node, fragments=fragments)

    def decode_branch() -> None:
        diag = Diagnostics()
        branch = pass1(diag)
        for _offset, line, _tail in _tree.branch_lines(path, diag, branch):
            with contextlib.suppress(Exception):  # a benchmark: skip, do not stop
                record_decoder.decode(line)

    def events_only() -> None:
        for _ in agent.read(ref).events():
            pass

    layers: list[tuple[str, Callable[[], object]]] = [
        ("split forward", lambda: sum(1 for _ in LineReader(path, Diagnostics()).forward())),
        ("split backward", lambda: sum(1 for _ in LineReader(path, Diagnostics()).backward())),
        ("pass 1", lambda: pass1(Diagnostics())),
        ("pass 1 + pass 2 decode", decode_branch),
        ("pass 1 + pass 2 events", events_only),
        ("+ extraction", lambda: extract(agent.read(ref).events(), workspace=None)),
    ]
    size = path.stat().st_size / 1e6
    print(f"{agent_name} {size:.0f} MB, CPU seconds (best of 2), load {os.getloadavg()[0]:.1f}")
    for name, fn in layers:
        print(f"  {name:26} {_best_cpu(fn):6.2f} s", flush=True)


def _node_reader(module: object, agent_name: str, info: object, diag: object) -> Callable:
    if agent_name == "claude":
        return module._node_reader(info, diag)  # type: ignore[attr-defined,no-any-return]
    return module._node_view(info, diag)  # type: ignore[attr-defined,no-any-return]


if __name__ == "__main__":
    main()
