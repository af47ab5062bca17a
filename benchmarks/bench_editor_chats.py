"""The editors' chats (issue 24) and the one-document sessions (issue 20): does an export
stay linear in time and flat in memory whatever the session repeats?

For each agent and slice kind of KINDS (copilot-chat: a .jsonl log of pushed requests, of
one field set again and again (`mutations`: ~60 bytes a line, so 16 MB is ~250,000
mutations), or of failed requests, and a `.json` document of repeated requests (`json`,
its creationDate and customTitle after the requests as VS Code writes them); cline-ext and
roo: a ui_messages.json repeating its middle, its plan messages or its failures; auggie: its
one JSON document of repeated turns (benchmarks/growdoc.py), agentState and rootTaskUuid
after the history), the session is grown to sizes 4x apart (2/8/32 MB by default) and
exported by `passdown export --session ... --no-store` in a child process with its own
HOME. Each row prints wall and CPU seconds, `x prev` (CPU time over the size before: 4x
the bytes, at most 4.5x passes), the child's peak RSS (at most 10 MB over the smallest
size passes), and the handoff's size.

`--before SRC` exports each grown session with a second source tree too (for example
main's `src`, unpacked by `git archive main src | tar -x -C /tmp/main`), in the same run
and on the same files: a `before` row under each `after` row, so the ratios compare on a
machine that is loaded alike.

Usage: python benchmarks/bench_editor_chats.py [--agents copilot-chat,roo]
       [--kinds middle,json] [--sizes 2,8,32] [--before /tmp/main/src] [--keep]
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
import growdoc
import growslice

REPO = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
RSS_GROWTH_MB = 10.0  # the most the peak RSS may grow from the smallest to the largest size
KINDS: dict[str, tuple[str, ...]] = {
    **growslice.EDITOR_KINDS,
    "copilot-chat": (*growslice.EDITOR_KINDS["copilot-chat"], "json"),
    "auggie": ("doc",),
}
# Runs the export as its own child and reports that child's peak RSS (KB) and CPU seconds.
_MEASURED = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(use.ru_maxrss, use.ru_utime + use.ru_stime, file=sys.stderr)\n"
    "sys.exit(done.returncode)\n"
)


def grow(agent: str, kind: str, size: int, target: Path) -> growslice.Grown:
    """A session of `agent` grown to about `size` bytes under `target` (the workspace is
    `target/ws`)."""
    if agent == "copilot-chat" and kind == "json":
        return _grow_copilot_json(size, target)
    if agent == "auggie":
        return _grow_auggie(size, target)
    return growslice.grow_editor(agent, kind, size, target)


def _grow_copilot_json(size: int, target: Path) -> growslice.Grown:
    grown = growslice.grow_editor("copilot-chat", "middle", 0, target)
    sys.path.insert(0, str(REPO / "tests"))
    import editor_chats as ec

    session = ec.copilot_session(target / "ws")
    first, last = session.pop("requests")
    one = len(json.dumps(first, indent=2))
    copies = max(size // one, 1)
    requests = [first]
    for n in range(copies):
        fresh = json.loads(json.dumps(first))
        fresh["requestId"] = f"request_grown_{n}"
        fresh["message"] = {"text": f"and again, round {n}", "parts": []}
        requests.append(fresh)
    path = grown.session.with_suffix(".json")
    grown.session.unlink()
    path.write_text(json.dumps({"version": 3, "requests": [*requests, last], **session}, indent=2))
    return growslice.Grown("copilot-chat", "json", grown.root, grown.env_var, path, copies)


def _grow_auggie(size: int, target: Path) -> growslice.Grown:
    turn = len(json.dumps(growdoc.auggie_document(10), indent=2)) // 10
    turns = max(size // turn, 1)
    document = {**growdoc.auggie_document(turns), "rootTaskUuid": "grown-root"}
    (target / "ws").mkdir(parents=True, exist_ok=True)
    path = target / "augment" / "sessions" / "grown.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document, indent=2))
    return growslice.Grown("auggie", "doc", target / "augment", "PASSDOWN_AUGGIE_DIR", path, turns)


def export(
    grown: growslice.Grown, work: Path, src: Path = REPO / "src"
) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS bytes, handoff.json bytes) of one export in a child that
    imports passdown from `src`."""
    workspace = grown.root.parent / "ws"
    env = {
        **os.environ,
        "HOME": str(work / "home"),
        "PASSDOWN_DATA_DIR": str(work / "data"),
        grown.env_var: str(grown.root),
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
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


class Series:
    """One tree's exports of one agent and kind at growing sizes, and its verdict."""

    def __init__(self, label: str, src: Path) -> None:
        self.label, self.src = label, src
        self.cpu: list[float] = []
        self.rss: list[int] = []
        self.failures: list[str] = []

    def measure(self, grown: growslice.Grown, work: Path, size: int) -> str:
        shutil.rmtree(work / "home", ignore_errors=True)
        shutil.rmtree(work / "data", ignore_errors=True)
        (work / "home").mkdir(parents=True)
        wall, cpu, rss, json_bytes = export(grown, work, self.src)
        ratio = cpu / self.cpu[-1] if self.cpu else float("nan")
        if self.cpu and ratio > 4.5:
            self.failures.append(f"x{ratio:.1f} at {size} MB")
        self.cpu.append(cpu)
        self.rss.append(rss)
        return (
            f"{self.label:6} {grown.size / MB:6.1f} {grown.copies:8} {wall:7.2f} {cpu:7.2f} "
            f"{ratio:6.2f} {rss / MB:8.1f} {json_bytes / 1024:7.1f}"
        )

    def verdict(self) -> str:
        growth = (self.rss[-1] - self.rss[0]) / MB
        failures = list(self.failures)
        if growth > RSS_GROWTH_MB:
            failures.append(f"peak RSS +{growth:.1f} MB")
        return f"{self.label:6} " + ("PASS" if not failures else "FAIL: " + "; ".join(failures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(KINDS))
    parser.add_argument("--kinds", default="")
    parser.add_argument("--sizes", default="2,8,32")
    parser.add_argument("--before", type=Path, help="a second source tree to compare with")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    wanted = set(args.kinds.split(",")) - {""}
    work = Path(tempfile.mkdtemp(prefix="passdown-bench-editors-"))
    print(
        f"{'agent':13} {'kind':10} {'tree':6} {'MB':>6} {'copies':>8} {'wall s':>7} "
        f"{'cpu s':>7} {'x prev':>6} {'peak MB':>8} {'json KB':>7}"
    )
    try:
        for agent in args.agents.split(","):
            for kind in KINDS[agent]:
                if wanted and kind not in wanted:
                    continue
                trees = [Series("after", REPO / "src")]
                if args.before:
                    trees.append(Series("before", args.before.resolve()))
                for size in sizes:
                    target = work / f"{agent}-{kind}-{size}"
                    grown = grow(agent, kind, size * MB, target / "store")
                    for tree in trees:
                        print(f"{agent:13} {kind:10} " + tree.measure(grown, target, size))
                    if not args.keep:
                        shutil.rmtree(target, ignore_errors=True)
                for tree in trees:
                    print(f"{agent:13} {kind:10} " + tree.verdict())
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(json.dumps({"kept": str(work)}))


if __name__ == "__main__":
    main()
