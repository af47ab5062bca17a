"""Export speed and memory on large sessions, against the cost of reading the file.

Two shapes:
- `real` (default): real recorded sessions (tests/fixtures/sessions/<agent>/full/) grown
  to size by realshape.py: many small lines, as the agents write them;
- `fat`: synthetic Claude/Codex sessions with 3-4 KB lines (fatshape.py).

For each agent and size, in the same run:
- the floor: `wc -l FILE; cat FILE >/dev/null` (best of 3, page cache warm);
- `passdown export` in a child process: wall time, CPU time (user+system, both cores),
  wall / floor wall and CPU / floor CPU (steadier on a loaded machine), lines/s, MB/s,
  the child's peak RSS; best of `--runs`;
- the check: the export of the grown file says what the export of the recording says
  (first request, last progress, plan, files touched), or the row says what differs.

`--src` may name several source trees (e.g. an older checkout) to compare them on the same
files in the same run. Every export is a first read (the checkpoint folder is
emptied before each). With
`--runs N` the variants run in turn, N times, and a row shows the best or the median
run (`--pick`). Generated files live under --workdir (default /tmp) and are removed at the
end unless --keep.

Usage: python benchmarks/bench_export.py [--agents claude,codex] [--sizes 100,300,1000]
       [--shape real|fat] [--src DIR ...] [--runs 2] [--pick best|median]
       [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fatshape
import realshape

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = {"claude": "100,300,1000", "codex": "100,300,1000"}
OTHER_SIZES = "30,100,300"
MB = 1024 * 1024


@dataclass
class Row:
    agent: str
    shape: str
    src: str
    size_mb: float
    lines: int
    floor_s: float
    floor_cpu_s: float
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    check: str
    load: float

    @property
    def ratio(self) -> float:
        return self.wall_s / self.floor_s

    @property
    def cpu_ratio(self) -> float:
        return self.cpu_s / self.floor_cpu_s


def floor_seconds(path: Path) -> tuple[float, float]:
    """`wc -l FILE; cat FILE >/dev/null`: what reading every byte (twice) costs, as
    (wall s, CPU s); on a loaded machine the CPU figure is the steadier one."""
    script = 'wc -l "$1" >/dev/null; cat "$1" >/dev/null'
    runs = []
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(["sh", "-c", script, "sh", str(path)], check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        runs.append((wall, cpu))
    return min(runs[1:])  # the first run warms the page cache


def count_lines(path: Path) -> int:
    out = subprocess.run(["wc", "-l", str(path)], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[0])


_WRAPPER = (
    "import resource,subprocess,sys,time;t=time.perf_counter();"
    "p=subprocess.run(sys.argv[1:],capture_output=True);"
    "w=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN);"
    "sys.stderr.buffer.write(p.stderr);"
    "print(p.returncode, w, r.ru_utime+r.ru_stime, r.ru_maxrss)"
)


def export(
    agent: str, path: Path, src: str, env: dict[str, str], out: Path, cwd: Path
) -> tuple[float, float, float, dict[str, Any]]:
    """(wall s, CPU s, peak RSS MB, handoff.json) of one export in a child process."""
    if out.exists():
        shutil.rmtree(out)
    # a first read every time: no checkpoint left by an earlier run of the same file
    shutil.rmtree(Path(env["PASSDOWN_DATA_DIR"]) / "checkpoints", ignore_errors=True)
    argv = [
        sys.executable,
        "-m",
        "passdown",
        "export",
        "--from",
        agent,
        "--session",
        str(path),
        "--out",
        str(out),
        "--no-store",
        "--quiet",
        # the recording's own cwd is gone on this machine: hand off into the bench's
        "--workspace",
        str(cwd),
    ]
    run_env = {**env, "PYTHONPATH": src}
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *argv],
        cwd=cwd,
        env=run_env,
        capture_output=True,
        text=True,
    )
    code, wall, cpu, rss_kb = proc.stdout.split()
    if code != "0":
        raise RuntimeError(f"export failed ({code}): {proc.stderr.strip()[-2000:]}")
    handoff = json.loads((out / "handoff.json").read_text())
    return float(wall), float(cpu), int(rss_kb) / 1024, handoff


def essentials(handoff: dict[str, Any]) -> dict[str, Any]:
    task, state = handoff["task"], handoff["state"]
    return {
        "first request": task.get("original_request"),
        "last progress": task.get("latest_progress"),
        "plan": [(p["id"], p["subject"], p["status"]) for p in state.get("plan") or []],
        "files": sorted(f["path"] for f in state.get("files_touched") or []),
        # a grown file whose chain broke would add a warning (and be read in file order)
        "warnings": sorted(handoff.get("warnings") or []),
    }


def compare(reference: dict[str, Any], handoff: dict[str, Any]) -> str:
    got = essentials(handoff)
    bad = [key for key, value in reference.items() if got[key] != value]
    return "ok" if not bad else "DIFFERS: " + ", ".join(bad)


def fat_check(handoff: dict[str, Any]) -> str:
    got = essentials(handoff)
    bad = []
    if not str(got["first request"]).startswith("Step 1:"):
        bad.append("first request")
    if not str(got["last progress"]).startswith("Progress:"):
        bad.append("last progress")
    if not got["files"]:
        bad.append("files")
    return "ok" if not bad else "DIFFERS: " + ", ".join(bad)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="passdown-bench-", dir=args.workdir))
        self.cwd = self.work / "ws"
        self.cwd.mkdir()
        self.base_env = {**os.environ, "PASSDOWN_DATA_DIR": str(self.work / "data")}
        self.rows: list[Row] = []

    def run(self) -> None:
        print(
            f"{'agent':7} {'shape':5} {'src':>8} {'size':>7} {'lines':>9} {'floor':>7} "
            f"{'export':>7} {'x floor':>7} {'CPU':>7} {'x fl CPU':>7} {'klines/s':>8} {'MB/s':>6} "
            f"{'RSS MB':>7} {'load':>5}  check",
            flush=True,
        )
        for agent in self.args.agents.split(","):
            sizes = self.args.sizes or DEFAULT_SIZES.get(agent, OTHER_SIZES)
            for size_mb in (float(s) for s in sizes.split(",")):
                if self.args.shape == "real":
                    self.real(agent, size_mb)
                else:
                    self.fat(agent, size_mb)

    def real(self, agent: str, size_mb: float) -> None:
        fixture = realshape.fixtures()[agent]
        root = self.work / agent
        path = realshape.install(fixture, root)
        env = {**self.base_env, fixture.env_var: str(root)}
        references = {
            src: essentials(export(agent, path, src, env, self.work / "out", self.cwd)[3])
            for src in self.args.src
        }
        realshape.Grower(fixture).write(path, int(size_mb * MB))
        self.measure(agent, "real", path, env, lambda src, h: compare(references[src], h))
        shutil.rmtree(root)

    def fat(self, agent: str, size_mb: float) -> None:
        root = self.work / agent
        if agent == "claude":
            folder = root / "projects" / "-tmp-passdown-bench-ws"
            folder.mkdir(parents=True)
            path = folder / "5e551011-0000-4000-8000-00000000fa70.jsonl"
            fatshape.generate_claude(path, int(size_mb * MB))
            env = {**self.base_env, "CLAUDE_CONFIG_DIR": str(root)}
        elif agent == "codex":
            folder = root / "sessions" / "2026" / "11" / "29"
            folder.mkdir(parents=True)
            path = folder / "rollout-2026-11-29T10-00-00-01a22926-0000-7000-8000-00000000fa70.jsonl"
            fatshape.generate_codex(path, int(size_mb * MB))
            env = {**self.base_env, "CODEX_HOME": str(root)}
        else:
            raise SystemExit(f"the fat shape exists for claude and codex, not {agent}")
        self.measure(agent, "fat", path, env, lambda _src, h: fat_check(h))
        shutil.rmtree(root)

    def measure(self, agent: str, shape: str, path: Path, env: dict[str, str], check: Any) -> None:
        size = path.stat().st_size
        lines = count_lines(path)
        floor, floor_cpu = floor_seconds(path)
        results: dict[str, list[tuple[float, float, float, dict[str, Any]]]] = {
            src: [] for src in self.args.src
        }
        for _ in range(self.args.runs):  # alternating, so a change of load hits all alike
            for src in self.args.src:
                results[src].append(export(agent, path, src, env, self.work / "out", self.cwd))
        for src, runs in results.items():
            runs.sort(key=lambda result: result[0])
            picked = runs[0] if self.args.pick == "best" else runs[len(runs) // 2]
            wall, cpu, rss, handoff = picked
            row = Row(
                agent,
                shape,
                self._label(src),
                size / MB,
                lines,
                floor,
                floor_cpu,
                wall,
                cpu,
                rss,
                check(src, handoff),
                os.getloadavg()[0],
            )
            self.rows.append(row)
            print(
                f"{agent:7} {shape:5} {row.src:>8} {row.size_mb:6.0f}M {lines:9d} "
                f"{floor:6.2f}s {wall:6.2f}s {row.ratio:7.1f} {cpu:6.2f}s {row.cpu_ratio:7.1f} "
                f"{lines / wall / 1000:8.0f} {size / 1e6 / wall:6.0f} {rss:7.0f} "
                f"{row.load:5.1f}  {row.check}",
                flush=True,
            )

    def _label(self, src: str) -> str:
        if Path(src).resolve() == (REPO / "src").resolve():
            return "this"
        return Path(src).parent.name[-8:] or src[-8:]

    def close(self) -> None:
        if self.args.json:
            Path(self.args.json).write_text(
                "\n".join(
                    json.dumps({**asdict(r), "ratio": r.ratio, "cpu_ratio": r.cpu_ratio})
                    for r in self.rows
                )
                + "\n"
            )
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default="claude,codex")
    parser.add_argument(
        "--sizes",
        help="sizes in MB (default: 100,300,1000 for Claude and "
        f"Codex, {OTHER_SIZES} for the others)",
    )
    parser.add_argument("--shape", choices=("real", "fat"), default="real")
    parser.add_argument(
        "--src",
        nargs="+",
        default=[str(REPO / "src")],
        help="passdown source trees to compare (PYTHONPATH of the export)",
    )
    parser.add_argument("--runs", type=int, default=1, help="export runs per file")
    parser.add_argument(
        "--pick",
        choices=("best", "median"),
        default="best",
        help="which run (by wall time) a row shows",
    )
    parser.add_argument("--json", help="also write the rows as JSON lines to this file")
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    bench = Bench(args)
    try:
        bench.run()
    finally:
        bench.close()


if __name__ == "__main__":
    main()
