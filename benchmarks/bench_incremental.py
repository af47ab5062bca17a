"""Incremental export: what a hook that runs after every turn costs on a long session.

A real-shaped Codex session (fatshape.generate_codex) of 500 MB is exported once
(which writes its checkpoint); then 1 MB of further turns is appended and it is
exported again, as the hook after the next turn would: only the appended bytes are
read. That is compared, in the same run, with the export of a 5 MB session (no
checkpoint: its full cost, what a hook pays on a typical session today). Target: the
resumed export within 1.5x of the 5 MB one. The full read of the 501 MB file
(`PASSDOWN_NO_CHECKPOINT=1`) is printed for reference.

Each export is `passdown export --from AGENT --session PATH` in a fresh process (as a
hook runs it), storing into SQLite in a temp data folder; the workspace is a git repo.

`--agent claude|qwen|pi|gemini` measures that agent's recorded session grown by
realshape.py instead (its middle repeated with fresh ids; for a tree-shaped session each
copy chained onto the one before), and the appended megabyte more such copies (chained
onto the current leaf), as the agent's next turns would be.

`--simulate-windows` runs every export in the simulated native Windows of `tests/simwin`
(no `os.pread`, no `fcntl`), with `ctypes` unimportable too: checkpoints use neither, so
the resumed export reads only the appended bytes there as on Linux. Each resumed export's
`--json` figures (`read`: checkpoint, offset, bytes) are checked to say so, and the
resumed export is compared with the first read (target: under 0.4x). The simulation's
own start-up (it imports what must load before the platform changes: asyncio, the MCP
client, click, ...) costs half a second that native Windows does not pay; each export's
own process says when the simulation was ready (`PASSDOWN_SIMULATE_READY_FILE`, on the
clock every process shares), and the ratio is given with that start-up taken off each
export as well as raw.

Usage: python benchmarks/bench_incremental.py [--agent codex] [--big-mb 500] [--small-mb 5]
       [--append-mb 1] [--runs 7] [--simulate-windows]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realshape
from fatshape import WORKSPACE, generate_codex

REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.5
TARGET_OF_FIRST = 0.4  # a resumed export against the first read of the same session
FIRST_READS = 5  # first exports of the big session; their median is the first read
SIMWIN = REPO / "tests" / "simwin"
MB = 1024 * 1024


def _git_workspace(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.invalid",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.invalid",
    }
    (path / "README.md").write_text("# bench\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)


LAST_READ: dict[str, object] = {}  # the `read` figures of the last export's --json
STARTUPS: list[float] = []  # each simulated export's start-up: spawn to the simulation ready


def _export(path: Path, env: dict[str, str], agent: str, *, checkpoint: bool = True) -> float:
    argv = [
        sys.executable,
        "-m",
        "passdown",
        "export",
        "--from",
        agent,
        "--session",
        str(path),
        "--json",
    ]
    if agent != "codex":  # the recording's own cwd is gone: hand off into the bench's
        argv += ["--workspace", WORKSPACE]
    run_env = dict(env)
    if not checkpoint:
        run_env["PASSDOWN_NO_CHECKPOINT"] = "1"
    ready = Path(env["PASSDOWN_DATA_DIR"]) / "simulation-ready"
    simulated = env.get("PASSDOWN_SIMULATE_WINDOWS") == "1"
    if simulated:
        ready.parent.mkdir(parents=True, exist_ok=True)
        ready.unlink(missing_ok=True)
        run_env["PASSDOWN_SIMULATE_READY_FILE"] = str(ready)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=WORKSPACE, env=run_env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"export failed ({proc.returncode}): {proc.stderr}")
    if simulated:  # perf_counter is CLOCK_MONOTONIC here: one clock for both processes
        STARTUPS.append(float(ready.read_text()) - start)
    LAST_READ.clear()
    LAST_READ.update(json.loads(proc.stdout)["read"])
    return elapsed


def _first_read(path: Path, env: dict[str, str], agent: str) -> float:
    """A first export: the session's checkpoint is removed before (then written anew)."""
    shutil.rmtree(Path(env["PASSDOWN_DATA_DIR"]) / "checkpoints", ignore_errors=True)
    return _export(path, env, agent)


def _read_and_extract(path: Path, agent_name: str, *, checkpoint: bool) -> float:
    """Seconds to read and extract the session (no redaction, git or store)."""
    from passdown import _pipeline as pipeline
    from passdown.agents import get_agent

    agent = get_agent(agent_name)
    selection = pipeline.Selection(
        agent=agent, ref=agent.ref_for_path(path), workspace=Path(WORKSPACE)
    )
    if checkpoint:
        os.environ.pop("PASSDOWN_NO_CHECKPOINT", None)
    else:
        os.environ["PASSDOWN_NO_CHECKPOINT"] = "1"
    start = time.perf_counter()
    pipeline._read_and_extract(selection, pipeline.ExportOptions())
    return time.perf_counter() - start


class _Appender:
    """Further copies of a grown session's middle, with fresh ids; a tree session's
    chained onto its current leaf."""

    def __init__(self, grower: realshape.Grower, path: Path, copies: int) -> None:
        self.grower = grower
        self.copy = copies + 1
        self.leaf = b""
        if grower.fixture.tree is None:
            return
        key = grower.fixture.tree[0]
        with open(path, "rb") as handle:  # the newest tree record is the leaf
            handle.seek(max(0, path.stat().st_size - 256 * 1024))
            for line in handle.read().splitlines():
                record = realshape._record(line)
                if record and record.get(key) and record.get("type") != "session":
                    self.leaf = str(record[key]).encode()

    def chunk(self, size: int) -> bytes:
        out: list[bytes] = []
        written = 0
        while written < size:
            block, mapping = self.grower._copy(self.copy)
            self.copy += 1
            if self.grower.entry is not None:
                pattern, exit_token = self.grower.entry
                parent = pattern.rsplit(b":", 1)[0]
                block = block.replace(pattern, parent + b':"' + self.leaf + b'"', 1)
                self.leaf = mapping.get(exit_token, exit_token)
            out.append(block)
            written += len(out[-1])
        return b"".join(out)


def _tree_sessions(
    agent: str, tmp: Path, args: argparse.Namespace, base: dict[str, str]
) -> tuple[Path, Path, list[bytes], dict[str, str], dict[str, str]]:
    fixture = realshape.fixtures()[agent]
    grower = realshape.Grower(fixture)
    small = realshape.install(fixture, tmp / "small")
    grower.write(small, args.small_mb * MB)
    big = realshape.install(fixture, tmp / "big")
    copies = grower.write(big, args.big_mb * MB)
    appender = _Appender(grower, big, copies)
    appends = [appender.chunk(int(args.append_mb * MB)) for _ in range(args.runs * 2)]
    small_env = {
        **base,
        fixture.env_var: str(tmp / "small"),
        "PASSDOWN_DATA_DIR": str(tmp / "data-small"),
    }
    big_env = {**base, fixture.env_var: str(tmp / "big")}
    return small, big, appends, small_env, big_env


def _turns(size: int, seed: int, folder: Path) -> bytes:
    """`size` bytes of further real-shaped turns (a generated session without its header)."""
    scratch = folder / f"turns-{seed}.jsonl"
    generate_codex(scratch, size, seed=seed)
    data = scratch.read_bytes()
    scratch.unlink()
    return data[data.index(b"\n") + 1 :]


def _folder(codex_home: Path) -> Path:
    folder = codex_home / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True)
    return folder


def _session(folder: Path, size: int, seed: int) -> Path:
    path = folder / f"rollout-2026-11-29T10-00-00-{uuid.uuid4()}.jsonl"
    generate_codex(path, size, seed=seed)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--big-mb", type=int, default=500)
    parser.add_argument("--small-mb", type=int, default=5)
    parser.add_argument("--append-mb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--agent", default="codex", choices=["codex", "claude", "qwen", "pi", "gemini"]
    )
    parser.add_argument("--simulate-windows", action="store_true")
    args = parser.parse_args()
    agent = args.agent
    _git_workspace(Path(WORKSPACE))
    tmp = Path(tempfile.mkdtemp(prefix="passdown-bench-inc-"))
    base = {
        **os.environ,
        "PASSDOWN_DATA_DIR": str(tmp / "data"),
        "CLAUDE_CONFIG_DIR": str(tmp / "claude"),
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    base.pop("PASSDOWN_STORE", None)
    if args.simulate_windows:
        base["PYTHONPATH"] = str(SIMWIN) + os.pathsep + base["PYTHONPATH"]
        base["PASSDOWN_SIMULATE_WINDOWS"] = "1"
        base["PASSDOWN_SIMULATE_NO_CTYPES"] = "1"
    # one Codex home per session: an export also reads the workspace's other sessions
    # that ran at the same time (to leave their edits out), which would mix the two
    # (and its own data folder: the two stores never mix)
    try:
        if agent == "codex":
            small_env = {
                **base,
                "CODEX_HOME": str(tmp / "small"),
                "PASSDOWN_DATA_DIR": str(tmp / "data-small"),
            }
            big_env = {**base, "CODEX_HOME": str(tmp / "big")}
            small = _session(_folder(tmp / "small"), args.small_mb * MB, seed=3)
            big = _session(_folder(tmp / "big"), args.big_mb * MB, seed=5)
            appends = [_turns(int(args.append_mb * MB), 100 + n, tmp) for n in range(args.runs)]
            appends += [_turns(int(args.append_mb * MB), 200 + n, tmp) for n in range(args.runs)]
        else:
            small, big, appends, small_env, big_env = _tree_sessions(agent, tmp, args, base)
        # full reads, each writing the checkpoint; the resumed exports start from the last
        firsts = []
        for _ in range(FIRST_READS):
            firsts.append(_first_read(big, big_env, agent))
        first_startups = STARTUPS[:]
        first = statistics.median(firsts)
        _export(small, small_env, agent, checkpoint=False)  # warm-up: the store is created
        # interleaved, so the load of a shared machine weighs on both alike
        small_times, resumed_times = [], []
        resumed_startups: list[float] = []
        for chunk in appends[: args.runs]:
            small_times.append(_export(small, small_env, agent, checkpoint=False))
            before = big.stat().st_size
            with open(big, "ab") as handle:
                handle.write(chunk)
            STARTUPS.clear()
            resumed_times.append(_export(big, big_env, agent))
            resumed_startups += STARTUPS
            wanted = {"checkpoint": "resumed", "offset": before, "bytes": len(chunk)}
            if wanted != LAST_READ:
                raise SystemExit(f"the resumed export read {LAST_READ}, not {wanted}")
        full = min(_export(big, big_env, agent, checkpoint=False) for _ in range(2))
        # the part a checkpoint changes, in this process: reading and extracting
        os.environ["PASSDOWN_DATA_DIR"] = base["PASSDOWN_DATA_DIR"]
        os.environ.update({k: v for k, v in small_env.items() if k != "PASSDOWN_DATA_DIR"})
        small_read = [_read_and_extract(small, agent, checkpoint=False) for _ in range(args.runs)]
        os.environ.update({k: v for k, v in big_env.items() if k != "PASSDOWN_DATA_DIR"})
        resumed_read = []
        for chunk in appends[args.runs :]:
            with open(big, "ab") as handle:
                handle.write(chunk)
            resumed_read.append(_read_and_extract(big, agent, checkpoint=True))
        small_s = statistics.median(small_times)
        resumed_s = statistics.median(resumed_times)
        big_mb = big.stat().st_size / MB
        print(
            f"export of a {small.stat().st_size / MB:.0f} MB session (full read)  "
            f"median {small_s:.3f}s  ({', '.join(f'{t:.3f}' for t in small_times)})"
        )
        print(
            f"first export of the {args.big_mb} MB session (full read + checkpoint)  "
            f"median of {FIRST_READS} {first:.3f}s"
        )
        print(
            f"export after appending {args.append_mb:g} MB (checkpoint)  median {resumed_s:.3f}s  "
            f"({', '.join(f'{t:.3f}' for t in resumed_times)})"
        )
        print(f"full read of the {big_mb:.0f} MB session (PASSDOWN_NO_CHECKPOINT=1)  {full:.3f}s")
        ratio = resumed_s / small_s
        verdict = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
        print(f"ratio resumed / small = {ratio:.2f}x (target <= {TARGET_RATIO}x): {verdict}")
        print(f"resumed / full read = {resumed_s / full:.3f}")
        if args.simulate_windows:
            raw = resumed_s / first
            startups = first_startups + resumed_startups
            print(
                f"the simulation's start-up median {statistics.median(startups):.3f}s "
                f"({', '.join(f'{t:.3f}' for t in startups)}); resumed / first read raw "
                f"{raw:.3f}, without it (each export less its own process's start-up):"
            )
            first = statistics.median(t - u for t, u in zip(firsts, first_startups, strict=True))
            resumed_s = statistics.median(
                t - u for t, u in zip(resumed_times, resumed_startups, strict=True)
            )
        of_first = resumed_s / first
        verdict = "ok" if of_first < TARGET_OF_FIRST else "OVER TARGET"
        where = "simulated Windows, no ctypes" if args.simulate_windows else sys.platform
        print(
            f"resumed / first read = {of_first:.3f} (target < {TARGET_OF_FIRST}; {where}; "
            f"every resumed export read only the appended bytes): {verdict}"
        )
        saved = list((Path(big_env["PASSDOWN_DATA_DIR"]) / "checkpoints").glob("*.msgpack"))
        print(
            f"checkpoint of the {big_mb:.0f} MB session: {sum(p.stat().st_size for p in saved)} bytes"
        )
        print(
            f"read + extract only (in process): {small.stat().st_size / MB:.0f} MB session "
            f"{statistics.median(small_read) * 1000:.0f} ms, after appending "
            f"{args.append_mb:g} MB to the {big_mb:.0f} MB one "
            f"{statistics.median(resumed_read) * 1000:.0f} ms"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
