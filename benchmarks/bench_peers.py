"""passdown against its peers on one real-shaped Claude Code session (200 MB by default).

The peers are installed from PyPI at pinned versions into a scratch virtualenv (never a
dependency of passdown): session-handover, harness-distill, baton-agents (the `baton`
CLI; the PyPI package named `baton` is an unrelated wrapper) and claude-handoff. A peer
that cannot be installed fails the benchmark (exit 1): a comparison missing a peer
would claim more than it measured.

The session is the recorded Claude fixture grown by realshape.py, placed under a scratch
HOME as ~/.claude/projects/<workspace>/<id>.jsonl with its task files, and each tool is
run on it the way its help says, in a child process: wall time, CPU time and peak RSS,
plus what its output carries of the session (first request, last progress message, the
plan's three tasks, the three files touched) and whether it leaked the planted AWS key.
The floor (`wc -l; cat`) is measured in the same run. Every passdown run is a first read.
The tools run interleaved (run 1 of every tool, then run 2, ...), so a shared machine's
load weighs on all alike; wall and CPU time are the medians of `--runs` runs (at least
5). `--before DIR` adds a row for another passdown source tree (e.g. an older checkout's
`src`) in the same run, and the verdict line compares passdown with it (target: within
1.05x) and with every peer (target: ahead of each).

`--kind plan` grows it by repeating only its plan operations instead (growslice.py): the
three TaskCreate calls and a TaskUpdate, the task ids "1", "2", "3" reused in every copy
as a forked session reuses them.

Usage: python benchmarks/bench_peers.py [--size 200] [--kind middle|plan|...]
       [--venv /tmp/passdown-peers-venv] [--runs 5] [--src DIR] [--before DIR] [--keep]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import growslice
import realshape
from bench_export import MB, floor_seconds

REPO = Path(__file__).resolve().parents[1]
PEERS = {  # PyPI package -> CLI it installs
    "session-handover": "session-handover",
    "harness-distill": "harness-distill",
    "baton-agents": "baton",
    "claude-handoff": "claude-handoff",
}
PINS = {  # the versions compared (the newest on PyPI on 2026-12-06)
    "session-handover": "0.5.0",
    "harness-distill": "0.1.1",
    "baton-agents": "0.1.0",
    "claude-handoff": "0.20.0",
}
MIN_RUNS = 5
BEFORE_TARGET = 1.05
RECORDED_WS = "/tmp/passdown-rec/claude-full"
# What a handoff of this session must carry, as strings its output must contain.
CONTENT = {
    "first request": ["Create calc.py with an add() function and a unittest"],
    "last progress": ["Working on the README Usage section now"],
    "plan": [
        "Write calc.py with add() and its test",
        "Make greet() say Hi",
        "Add a Usage section to README.md",
    ],
    "files": ["calc.py", "greet.py", "test_calc.py"],
}
SECRET = "AKIAQ4XJ7PASSDOWN5ZT"  # planted in the first request; must not leave redacted


@dataclass
class Result:
    tool: str
    wall: float
    cpu: float
    rss_mb: float
    output: str
    error: str = ""


# argv: STDOUT_FILE COMMAND...; prints "exit wall cpu maxrss_kb" of COMMAND
_WRAPPER = (
    "import resource,subprocess,sys,time;t=time.perf_counter();"
    "p=subprocess.run(sys.argv[2:],capture_output=True,stdin=subprocess.DEVNULL);"
    "w=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN);"
    "open(sys.argv[1],'wb').write(p.stdout);"
    "sys.stderr.buffer.write(p.stderr[-3000:]);"
    "print(p.returncode, w, r.ru_utime+r.ru_stime, r.ru_maxrss)"
)


def timed(
    tool: str, argv: list[str], env: dict[str, str], cwd: Path, outputs: list[Path], scratch: Path
) -> Result:
    """Run one tool; its output is what it wrote to `outputs` plus its stdout."""
    for out in outputs:
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
    stdout_file = scratch / f"{tool}.stdout"
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(stdout_file), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    code, wall, cpu, rss_kb = proc.stdout.split()
    text = stdout_file.read_text(errors="replace")
    for out in outputs:
        files = [out] if out.is_file() else sorted(out.rglob("*")) if out.is_dir() else []
        text += "".join(f.read_text(errors="replace") for f in files if f.is_file())
    error = "" if code == "0" else f"exit {code}: {proc.stderr.strip()[-300:]}"
    return Result(tool, float(wall), float(cpu), int(rss_kb) / 1024, text, error)


def content_report(text: str) -> tuple[str, bool]:
    missing = [key for key, needles in CONTENT.items() if not all(n in text for n in needles)]
    complete = "complete" if not missing else "missing " + ", ".join(missing)
    return complete, SECRET in text


def ensure_venv(venv: Path) -> None:
    """Every peer at its pinned version, or exit 1 naming those that would not install."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    failed: list[str] = []
    for package in PEERS:
        pinned = f"{package}=={PINS[package]}"
        proc = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", pinned], capture_output=True, text=True
        )
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if "ERROR" in ln]
            failed.append(f"{pinned}: {lines[-1] if lines else 'pip failed'}")
    if failed:
        raise SystemExit("peers that could not be installed:\n  " + "\n  ".join(failed))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=200, help="session size in MB")
    parser.add_argument(
        "--kind",
        default="middle",
        choices=("middle", "plan", "failing", "edits", "compactions", "prompts"),
        help="what repeats (growslice.py): the whole middle with fresh ids (default), or "
        "one kind of slice, e.g. plan: the three TaskCreate calls, their task ids reused",
    )
    parser.add_argument(
        "--venv", default=os.path.join(tempfile.gettempdir(), "passdown-peers-venv")
    )
    parser.add_argument("--runs", type=int, default=MIN_RUNS)
    parser.add_argument(
        "--src", default=str(REPO / "src"), help="the passdown source tree to run (PYTHONPATH)"
    )
    parser.add_argument(
        "--before", help="another passdown source tree to run too (rows marked 'before')"
    )
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.runs < MIN_RUNS:
        parser.error(f"--runs: at least {MIN_RUNS} (the medians of fewer are noise here)")
    venv = Path(args.venv)
    # byte-compiled, as an installed package is: pip compiles the peers on install, and
    # with PYTHONDONTWRITEBYTECODE set every run would compile passdown's modules again
    for src in (args.src, args.before):
        if src:
            compileall.compile_dir(src, quiet=1)
    ensure_venv(venv)
    work = Path(tempfile.mkdtemp(prefix="passdown-peers-"))
    try:
        if not run(args, venv, work):
            raise SystemExit(1)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, venv: Path, work: Path) -> bool:
    """Every tool timed; True when passdown met both targets."""
    home, ws, out = work / "home", work / "ws", work / "out"
    ws.mkdir(parents=True)
    out.mkdir()
    fixture = realshape.fixtures()["claude"]
    claude_dir = home / ".claude"
    session = realshape.install(fixture, claude_dir)
    folder = claude_dir / "projects" / "".join(c if c.isalnum() else "-" for c in str(ws))
    session.parent.rename(folder)
    session = folder / session.name

    def here(raw: bytes) -> bytes:
        return raw.replace(RECORDED_WS.encode(), str(ws).encode())

    grower = realshape.Grower(fixture, here)
    if args.kind != "middle":
        source = growslice.fixture("claude")
        lines = here((source.root / source.session).read_bytes()).splitlines()
        grower = growslice.SliceGrower(
            source, growslice.slice_window("claude", args.kind, lines), here
        )
    grower.write(session, int(args.size * MB))
    session_id = session.stem
    size = session.stat().st_size
    floor, floor_cpu = floor_seconds(session)
    print(
        f"session {size / 1e6:.0f} MB ({args.kind}), {session_id}; floor {floor:.2f} s wall, "
        f"{floor_cpu:.2f} s CPU; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(claude_dir),
        "PASSDOWN_DATA_DIR": str(work / "data"),
        "PYTHONPATH": args.src,
        "NO_COLOR": "1",
    }
    bin_dir = venv / "bin"
    export = [sys.executable, "-m", "passdown", "export", "--from", "claude"]
    export += ["--session", str(session), "--out", str(out / "passdown"), "--no-store", "--quiet"]
    passdowns: dict[str, tuple[list[str], list[Path], dict[str, str]]] = {
        "passdown": (export, [out / "passdown"], {}),
    }
    if args.before:
        passdowns["passdown before"] = (export, [out / "passdown"], {"PYTHONPATH": args.before})
    commands: dict[str, tuple[list[str], list[Path], dict[str, str]]] = {
        **passdowns,
        "session-handover": (
            [
                str(bin_dir / "session-handover"),
                "make",
                "--session",
                session_id,
                "--out",
                str(out / "sh.md"),
            ],
            [out / "sh.md"],
            {},
        ),
        "harness-distill": (
            [
                str(bin_dir / "harness-distill"),
                "harvest",
                str(ws),
                "--source",
                "claude",
                "--out",
                str(out / "hd.md"),
            ],
            [out / "hd.md"],
            {},
        ),
        "baton-agents": (
            [
                str(bin_dir / "baton"),
                "move",
                "--from",
                "claude",
                "--to",
                "codex",
                "--session",
                session_id,
                "--dry-run",
                "-y",
            ],
            [],
            {},
        ),
        "claude-handoff": (
            [str(bin_dir / "claude-handoff"), str(session), "-o", str(out / "ch.md"), "--no-cache"],
            [out / "ch.md"],
            {},
        ),
    }
    print(
        f"{'tool':26} {'wall':>7} {'x floor':>7} {'CPU':>7} {'x passdown':>10} "
        f"{'RSS MB':>7}  content; secret"
    )
    runs: dict[str, list[Result]] = {tool: [] for tool in commands}
    for _ in range(args.runs):  # interleaved: run n of every tool, then run n + 1
        for tool, (argv, outputs, extra) in commands.items():
            # every passdown run is a first read, as the peers' are (claude-handoff runs
            # with --no-cache): its checkpoint from the run before would make it resume
            shutil.rmtree(work / "data", ignore_errors=True)
            runs[tool].append(timed(tool, argv, {**env, **extra}, ws, outputs, work))
    walls: dict[str, float] = {}
    for tool, results in runs.items():
        failed = next((r for r in results if r.error), None)
        if failed is not None:
            print(f"{tool:26} failed: {failed.error}")
            continue
        wall = statistics.median(r.wall for r in results)
        cpu = statistics.median(r.cpu for r in results)
        walls[tool] = wall
        complete, leaked = content_report(results[-1].output)
        print(
            f"{tool:26} {wall:6.2f}s {wall / floor:7.1f} {cpu:6.2f}s "
            f"{wall / walls.get('passdown', wall):10.2f} {max(r.rss_mb for r in results):7.0f}  "
            f"{complete}; {'LEAKS the AWS key' if leaked else 'redacted'}",
            flush=True,
        )
    argv, outputs, _ = commands["passdown"]
    print(resumed_row(argv, env, ws, outputs[0], work))
    return _verdict(walls, args.runs)


def _verdict(walls: dict[str, float], runs: int) -> bool:
    """The targets: within BEFORE_TARGET of the --before tree, ahead of every peer."""
    ours = walls.get("passdown")
    if ours is None:
        print("verdict: passdown failed")
        return False
    ok = True
    before = walls.get("passdown before")
    if before is not None:
        ratio = ours / before
        ok = ratio <= BEFORE_TARGET
        print(f"passdown / before = {ratio:.3f} (target <= {BEFORE_TARGET}, medians of {runs})")
    peers = {tool: wall for tool, wall in walls.items() if not tool.startswith("passdown")}
    behind = [tool for tool, wall in peers.items() if wall <= ours]
    missing = [tool for tool in PEERS if tool not in peers]
    ok = ok and not behind and not missing
    print(
        f"verdict: {'PASS' if ok else 'FAIL'}"
        + (f"; peers as fast or faster: {', '.join(behind)}" if behind else "")
        + (f"; peers that failed: {', '.join(missing)}" if missing else "")
    )
    return ok


def resumed_row(argv: list[str], env: dict[str, str], ws: Path, out: Path, work: Path) -> str:
    """passdown's second export of the unchanged session, from its checkpoint (what a
    hook after each turn costs); the peers have no such path."""
    shutil.rmtree(work / "data", ignore_errors=True)
    timed("passdown", argv, env, ws, [out], work)
    again = timed("passdown", argv, env, ws, [out], work)
    return f"{'passdown, resumed':26} {again.wall:6.2f}s {'':7} {again.cpu:6.2f}s"


if __name__ == "__main__":
    main()
