"""The fastest export a pure-Python reader could make: the bound under issue 13's targets.

An export has to split the session file into lines and decode the lines it reads with a
JSON decoder (msgspec, compiled); everything else it does per line (the reader's logic,
extraction) is Python. This benchmark measures the first two alone, with nothing else, on
the same real-shaped sessions as bench_export.py (grown from the recordings by
realshape.py), in one run per agent and size:

  floor     `wc -l FILE; cat FILE >/dev/null` (as bench_export.py)
  split     the file read in 1 MiB chunks and split into lines, one core (CPU s)
  decode    split + msgspec decode of every line into the agent's own record struct (the
            decoder its reading pass uses), one core (CPU s)
  pass 1    tree-shaped agents (Claude, Qwen, pi) and Gemini: split + the decoder of
            pass 1 (the envelope; Gemini's replay view), one core (CPU s)
  share     the part of the bytes pass 2 decodes (the active branch, from the real pass 1;
            1 for linear logs and for Gemini, whose emit pass decodes fewer lines)
  bound     a reader with no logic at all on two perfect cores (CPU s, so a loaded
            machine does not inflate it; and x floor): (pass 1 + decode x share) / 2
            where pass 1 runs on two cores too (Claude, Qwen, pi: the halves' walks
            join), pass 1 + decode x share / 2 where it stays serial (Gemini's replay)
  export    the real `passdown export` (first read, checkpoint and two cores on): wall s
            and x floor, CPU s
  logic     (export CPU - pass 1 - decode x share) / lines: the CPU microseconds per line
            the export spends beyond splitting and decoding (reader logic, extraction,
            start-up, the checkpoint's hash, rendering)
  budget    (target x floor - bound) x 2 cores / lines: the CPU microseconds per line
            left for all of that if the target is to be met on two perfect cores

Usage: python benchmarks/bound_python.py [--agents claude,codex] [--sizes 300,1000]
       [--workdir /tmp] [--no-export]
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realshape
from bench_export import MB, count_lines, essentials, export, floor_seconds

CHUNK = 1 << 20
# issue 13: x floor, by agent (at 1 GB for Claude and Codex, at 300 MB for the others)
TARGETS = {"claude": 10.0, "codex": 8.0}
SERIAL_PASS_1 = frozenset({"gemini"})  # the others' pass 1 runs on two cores
OTHER_TARGET = 15.0


@dataclass(frozen=True)
class Decoders:
    """`module:attribute` of the msgspec decoders the agent's reader uses."""

    records: str
    pass1: str | None = None


DECODERS = {
    "claude": Decoders(
        "passdown.agents._claude_records:_RECORD", "passdown.agents._claude_records:_ENVELOPE"
    ),
    "qwen": Decoders("passdown.agents.qwen:_RECORD", "passdown.agents.qwen:_ENVELOPE"),
    "pi": Decoders("passdown.agents.pi:_ENTRY", "passdown.agents.pi:_ENVELOPE"),
    "gemini": Decoders(
        "passdown.agents.gemini._emitter:_MESSAGE", "passdown.agents.gemini._replay:_CONTROL"
    ),
    "codex": Decoders("passdown.agents.codex:_TYPED_LINE"),
    "copilot": Decoders("passdown.agents.copilot:_DECODED_EVENT"),
}


def load(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def scan(path: Path, lo: int, hi: int, per_line: Callable[[bytes], object] | None) -> int:
    """Split bytes [lo, hi) (line-aligned) into lines, calling `per_line` on each."""
    lines = 0
    with open(path, "rb") as handle:
        handle.seek(lo)
        left = hi - lo
        carry = b""
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            parts = (carry + chunk).split(b"\n")
            carry = parts.pop()
            lines += len(parts)
            if per_line is not None:
                for line in parts:
                    if line:
                        per_line(line)
        if carry and per_line is not None:
            per_line(carry)
    return lines


def cpu(run: Callable[[], object], repeat: int = 2) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def line_start_after(path: Path, offset: int) -> int:
    with open(path, "rb") as handle:
        handle.seek(offset)
        handle.readline()
        return handle.tell()


def branch_share(agent: str, path: Path) -> float:
    """The share of the file's bytes on the active branch, by the real pass 1."""
    from passdown.agents import _tree
    from passdown.agents._registry import get_agent
    from passdown.transcript import Diagnostics, SessionInfo

    diag = Diagnostics()
    info = SessionInfo(agent=agent, session_id="s", path=path)
    fmt = get_agent(agent).resumable_reader(info, diag, None, {}).fmt  # type: ignore[attr-defined]
    branch = _tree.find_active_branch(
        path, diag, fmt.node_view(info, diag), fragments=fmt.fragments
    )
    size = path.stat().st_size
    return _tree.branch_bytes(branch, 0, size) / size


def measure(agent: str, size_mb: float, work: Path, with_export: bool) -> list[str]:
    fixture = realshape.fixtures()[agent]
    root = work / agent
    path = realshape.install(fixture, root)
    env = {
        "PASSDOWN_DATA_DIR": str(work / "data"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(work / "home"),
        fixture.env_var: str(root),
    }
    (work / "home").mkdir(exist_ok=True)
    reference = None
    if with_export:
        reference = essentials(
            export(agent, path, os.environ["BOUND_SRC"], env, work / "out", work)[3]
        )
    realshape.Grower(fixture).write(path, int(size_mb * MB))
    try:
        return _row(agent, size_mb, path, work, env, reference)
    finally:
        shutil.rmtree(root)


def _row(
    agent: str,
    size_mb: float,
    path: Path,
    work: Path,
    env: dict[str, str],
    reference: dict[str, Any] | None,
) -> list[str]:
    decoders = DECODERS[agent]
    records = load(decoders.records).decode
    floor_wall, _ = floor_seconds(path)
    lines = count_lines(path)
    size = path.stat().st_size
    split = cpu(lambda: scan(path, 0, size, None))
    decode = cpu(lambda: scan(path, 0, size, records))
    pass1 = 0.0
    if decoders.pass1 is not None:
        envelope = load(decoders.pass1).decode
        pass1 = cpu(lambda: scan(path, 0, size, envelope))
    share = branch_share(agent, path) if agent in ("claude", "qwen", "pi") else 1.0
    pass1_wall = pass1 if agent in SERIAL_PASS_1 else pass1 / 2
    bound = pass1_wall + decode * share / 2
    target = TARGETS.get(agent, OTHER_TARGET)
    budget_us = (target * floor_wall - bound) * 2 / lines * 1e6
    export_cells = ["-", "-", "-"]
    if reference is not None:
        wall, export_cpu, _, handoff = export(
            agent, path, os.environ["BOUND_SRC"], env, work / "out", work
        )
        ok = "" if essentials(handoff) == reference else " (content differs)"
        logic_us = (export_cpu - pass1 - decode * share) / lines * 1e6
        export_cells = [
            f"{wall:.2f}s {wall / floor_wall:.1f}x{ok}",
            f"{export_cpu:.2f}s",
            f"{logic_us:.2f}",
        ]
    return [
        agent,
        f"{size / MB:.0f}M",
        str(lines),
        f"{floor_wall:.3f}s",
        f"{split:.2f}s",
        f"{decode:.2f}s",
        f"{pass1:.2f}s" if decoders.pass1 else "-",
        f"{share:.2f}",
        f"{bound:.2f}s {bound / floor_wall:.1f}x",
        f"{target:.0f}x",
        *export_cells,
        f"{budget_us:.2f}",
    ]


HEADER = [
    "agent",
    "size",
    "lines",
    "floor",
    "split",
    "decode",
    "pass 1",
    "share",
    "bound",
    "target",
    "export",
    "export CPU",
    "logic us/line",
    "budget us/line",
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default="claude,codex,copilot,qwen,pi,gemini")
    parser.add_argument("--sizes", default="300")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--no-export", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("BOUND_SRC", str(Path(__file__).resolve().parents[1] / "src"))
    work = Path(tempfile.mkdtemp(prefix="passdown-bound-", dir=args.workdir))
    rows = [HEADER]
    try:
        for agent in args.agents.split(","):
            for size in args.sizes.split(","):
                rows.append(measure(agent, float(size), work, not args.no_export))
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows[1:]:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
