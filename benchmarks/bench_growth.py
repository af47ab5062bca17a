"""Growth harness: does an export stay linear, and its handoff bounded, whatever repeats?

For each agent's recording (tests/fixtures/sessions/<agent>/) and each slice kind
(growslice.KINDS: the whole middle as recorded, only plan operations, only a failing
command, only file edits, only sub-agent spawns, only compactions, only user prompts, only
API errors, only file edits under one tool-call id used again and again; a kind the agent's recordings do not hold is skipped), the session is grown to
three sizes 4x apart (4/16/64 MB by default) by repeating that one slice, and exported by
`passdown export --session ... --no-store` in a child process with its own HOME, store and
data dir. Each row prints:

- wall and CPU seconds, seconds per MB;
- `x prev`: the time at this size over the time at the size before (4x the bytes: at most
  4.5x passes), on CPU time (steadier than wall time on a shared machine);
- peak RSS of the child (its ru_maxrss) and its growth over the smallest size (at most
  10 MB passes);
- the size of handoff.json and HANDOFF.md, and how many plan items, commands, files and
  sub-agents handoff.json lists;
- the check: the first request and the current plan's open items survive.

The last line per agent and kind says PASS or what failed. Generated files live under
--workdir and are removed unless --keep.

Usage: python benchmarks/bench_growth.py [--agents claude,codex] [--kinds plan,failing]
       [--sizes 4,16,64] [--skip claude:plan]
       [--src [NAME=]DIR ...] [--timeout 600] [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import compileall
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import growslice

REPO = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
TIME_RATIO = 4.5  # the most time 4x the bytes may take
RSS_GROWTH_MB = 10.0  # the most the peak RSS may grow from the smallest to the largest size

# argv: TIMEOUT COMMAND...; prints "exit wall cpu maxrss_kb" of COMMAND
_WRAPPER = (
    "import resource,subprocess,sys,time;t=time.perf_counter()\n"
    "try:\n p=subprocess.run(sys.argv[2:],capture_output=True,timeout=float(sys.argv[1]));"
    "c=p.returncode;e=p.stderr\n"
    "except subprocess.TimeoutExpired as x:\n c='timeout';e=x.stderr or b''\n"
    "w=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.buffer.write(e)\n"
    "print(c, w, r.ru_utime+r.ru_stime, r.ru_maxrss)"
)


@dataclass
class Row:
    agent: str
    kind: str
    src: str
    size_mb: float
    copies: int
    wall_s: float
    cpu_s: float
    rss_mb: float
    json_kb: float
    md_kb: float
    plan: int
    commands: int
    files: int
    subagents: int
    check: str
    error: str = ""


def run_export(
    grown: growslice.Grown, src: str, work: Path, timeout: float
) -> tuple[Row, dict[str, Any] | None]:
    out, data, ws, home = work / "out", work / "data", work / "ws", work / "home"
    for folder in (out, data):
        shutil.rmtree(folder, ignore_errors=True)
    ws.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        grown.env_var: str(grown.root),
        "PASSDOWN_DATA_DIR": str(data),
        "PYTHONPATH": src,
    }
    argv = [
        sys.executable,
        "-m",
        "passdown",
        "export",
        "--from",
        grown.agent,
        "--session",
        grown.session_arg,
        "--out",
        str(out),
        "--no-store",
        "--quiet",
        "--workspace",
        str(ws),
    ]
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(timeout), *argv],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
    )
    code, wall, cpu, rss_kb = proc.stdout.split()
    rss = int(rss_kb) / 1024
    row = Row(
        grown.agent,
        grown.kind,
        "",
        grown.size / MB,
        grown.copies,
        float(wall),
        float(cpu),
        rss,
        0,
        0,
        0,
        0,
        0,
        0,
        "",
    )
    if code != "0":
        row.error = f"exit {code}: {proc.stderr.strip()[-300:]}"
        return row, None
    handoff_json = out / "handoff.json"
    handoff = json.loads(handoff_json.read_text())
    state = handoff["state"]
    row.json_kb = handoff_json.stat().st_size / 1024
    row.md_kb = (out / "HANDOFF.md").stat().st_size / 1024
    row.plan = len(state.get("plan") or [])
    row.commands = len(state.get("commands") or [])
    row.files = len(state.get("files_touched") or [])
    row.subagents = len(state.get("subagents") or [])
    row.check = content_check(grown, handoff, (out / "HANDOFF.md").read_text())
    return row, handoff


def open_items(agent: str, scenario: str) -> list[str]:
    """The recorded final plan's open items (pending, in progress, blocked)."""
    plan = growslice.expected(agent, scenario).get("plan") or []
    assert isinstance(plan, list)
    return [
        str(item.get("subject") or item.get("content") or item.get("step") or "")
        for item in plan
        if isinstance(item, dict) and item.get("status") in ("pending", "in_progress", "blocked")
    ]


def content_check(grown: growslice.Grown, handoff: dict[str, Any], markdown: str) -> str:
    """The first request, and the open items of the current plan, survive (in both files)."""
    first = str(growslice.expected(grown.agent, grown.scenario)["original_request"])[:60]
    missing = []
    if first not in str(handoff["task"].get("original_request")) or first not in markdown:
        missing.append("first request")
    subjects = {str(p.get("subject")) for p in handoff["state"].get("plan") or []}
    for item in open_items(grown.agent, grown.scenario):
        if item not in subjects or item not in markdown:
            missing.append(f"open item {item[:30]!r}")
    return "ok" if not missing else "MISSING " + ", ".join(missing)


def verdict(rows: list[Row]) -> str:
    if any(r.error for r in rows):
        return "FAIL: " + next(r.error for r in rows if r.error)
    problems = []
    for before, after in itertools.pairwise(rows):
        size_ratio = after.size_mb / before.size_mb
        ratio = after.cpu_s / before.cpu_s
        if ratio > TIME_RATIO * size_ratio / 4:
            problems.append(f"time x{ratio:.1f} for x{size_ratio:.1f} size")
    growth = rows[-1].rss_mb - rows[0].rss_mb
    if growth > RSS_GROWTH_MB:
        problems.append(f"RSS +{growth:.0f} MB")
    if any(r.check != "ok" for r in rows):
        problems.append("content")
    return "PASS" if not problems else "FAIL: " + "; ".join(problems)


HEADER = (
    f"{'agent':8} {'kind':11} {'src':8} {'size':>6} {'copies':>7} {'wall':>7} {'CPU':>7} {'s/MB':>6} "
    f"{'x prev':>6} {'RSS MB':>7} {'+RSS':>5} {'json KB':>8} {'md KB':>6} "
    f"{'plan':>5} {'cmds':>5} {'files':>5} {'subag':>5}  check"
)


def print_row(row: Row, prev: Row | None, first: Row) -> None:
    if row.error:
        print(
            f"{row.agent:8} {row.kind:11} {row.src:8} {row.size_mb:5.0f}M {row.copies:7d} "
            f"{row.wall_s:6.1f}s  {row.error}",
            flush=True,
        )
        return
    ratio = f"{row.cpu_s / prev.cpu_s:6.2f}" if prev and not prev.error else f"{'':6}"
    print(
        f"{row.agent:8} {row.kind:11} {row.src:8} {row.size_mb:5.0f}M {row.copies:7d} {row.wall_s:6.2f}s "
        f"{row.cpu_s:6.2f}s {row.cpu_s / row.size_mb:6.3f} {ratio} {row.rss_mb:7.0f} "
        f"{row.rss_mb - first.rss_mb:+5.0f} {row.json_kb:8.1f} {row.md_kb:6.1f} "
        f"{row.plan:5d} {row.commands:5d} {row.files:5d} {row.subagents:5d}  {row.check}",
        flush=True,
    )


def _label(src: str) -> tuple[str, str]:
    name, sep, path = src.partition("=")
    return (name, path) if sep else (Path(src).parent.name[-8:] or src, src)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default=",".join(growslice.agents()))
    parser.add_argument("--kinds", default=",".join(growslice.KINDS))
    parser.add_argument(
        "--skip", default="", help="agent:kind pairs to leave out, e.g. claude:plan"
    )
    parser.add_argument("--sizes", default="4,16,64", help="sizes in MB, 4x apart")
    parser.add_argument(
        "--src",
        nargs="+",
        default=[str(REPO / "src")],
        help="passdown source trees (PYTHONPATH of the export), each run on the same files; "
        "NAME=DIR labels one",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds per export")
    parser.add_argument("--json", help="also write the rows as JSON lines to this file")
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="passdown-growth-", dir=args.workdir))
    sizes = [float(s) for s in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    srcs = dict(_label(s) for s in args.src)
    for src in srcs.values():  # as an installed package is (pip compiles on install)
        compileall.compile_dir(src, quiet=1)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; src {srcs}")
    print(HEADER, flush=True)
    rows: list[Row] = []
    summary: list[str] = []
    try:
        for agent in args.agents.split(","):
            skip = set(args.skip.split(","))
            for kind in (k for k in growslice.kinds_for(agent) if k in kinds):
                if f"{agent}:{kind}" in skip:
                    continue
                done: dict[str, list[Row]] = {label: [] for label in srcs}
                for size in sizes:
                    grown = growslice.grow(agent, kind, int(size * MB), work / "store")
                    for label, src in srcs.items():
                        runs = done[label]
                        if runs and runs[-1].error:
                            continue  # a bigger size would only take longer
                        row, _ = run_export(grown, src, work, args.timeout)
                        row.src = label
                        print_row(row, runs[-1] if runs else None, runs[0] if runs else row)
                        runs.append(row)
                for label, runs in done.items():
                    rows.extend(runs)
                    summary.append(f"{agent:8} {kind:11} {label:8} {verdict(runs)}")
                shutil.rmtree(work / "store", ignore_errors=True)
        print()
        print("\n".join(summary))
    finally:
        if args.json:
            Path(args.json).write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
