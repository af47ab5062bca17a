"""Incremental export: what a hook that runs after every turn costs on a long session.

A real-shaped Codex session (bench_export.generate_codex) of 500 MB is exported once
(which writes its checkpoint); then 1 MB of further turns is appended and it is
exported again, as the hook after the next turn would: only the appended bytes are
read. That is compared, in the same run, with the export of a 5 MB session (no
checkpoint: its full cost, what a hook pays on a typical session today). Target: the
resumed export within 1.5x of the 5 MB one. The full read of the 501 MB file
(`PASSDOWN_NO_CHECKPOINT=1`) is printed for reference.

Each export is `passdown export --from codex --session PATH` in a fresh process (as a
hook runs it), storing into SQLite in a temp data folder; the workspace is a git repo.

Usage: python benchmarks/bench_incremental.py [--big-mb 500] [--small-mb 5] [--append-mb 1] [--runs 7]
"""

from __future__ import annotations

import argparse
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
from bench_export import WORKSPACE, generate_codex

REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.5
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


def _export(path: Path, env: dict[str, str], *, checkpoint: bool = True) -> float:
    argv = [
        sys.executable,
        "-m",
        "passdown",
        "export",
        "--from",
        "codex",
        "--session",
        str(path),
        "--quiet",
    ]
    run_env = dict(env)
    if not checkpoint:
        run_env["PASSDOWN_NO_CHECKPOINT"] = "1"
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=WORKSPACE, env=run_env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"export failed ({proc.returncode}): {proc.stderr}")
    return elapsed


def _read_and_extract(path: Path, *, checkpoint: bool) -> float:
    """Seconds to read and extract the session (no redaction, git or store)."""
    from passdown import pipeline
    from passdown.agents.codex import CodexCLI

    agent = CodexCLI()
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
    args = parser.parse_args()
    _git_workspace(Path(WORKSPACE))
    tmp = Path(tempfile.mkdtemp(prefix="passdown-bench-inc-"))
    base = {
        **os.environ,
        "PASSDOWN_DATA_DIR": str(tmp / "data"),
        "CLAUDE_CONFIG_DIR": str(tmp / "claude"),
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    base.pop("PASSDOWN_STORE", None)
    # one Codex home per session: an export also reads the workspace's other sessions
    # that ran at the same time (to leave their edits out), which would mix the two
    # (and its own data folder: the two stores never mix)
    small_env = {
        **base,
        "CODEX_HOME": str(tmp / "small"),
        "PASSDOWN_DATA_DIR": str(tmp / "data-small"),
    }
    big_env = {**base, "CODEX_HOME": str(tmp / "big")}
    try:
        small = _session(_folder(tmp / "small"), args.small_mb * MB, seed=3)
        big = _session(_folder(tmp / "big"), args.big_mb * MB, seed=5)
        appends = [_turns(int(args.append_mb * MB), 100 + n, tmp) for n in range(args.runs)]
        first = _export(big, big_env)  # full read; writes the checkpoint
        _export(small, small_env, checkpoint=False)  # warm-up: the store is created
        # interleaved, so the load of a shared machine weighs on both alike
        small_times, resumed_times = [], []
        for chunk in appends:
            small_times.append(_export(small, small_env, checkpoint=False))
            with open(big, "ab") as handle:
                handle.write(chunk)
            resumed_times.append(_export(big, big_env))
        full = min(_export(big, big_env, checkpoint=False) for _ in range(2))
        # the part a checkpoint changes, in this process: reading and extracting
        os.environ["PASSDOWN_DATA_DIR"] = base["PASSDOWN_DATA_DIR"]
        small_read = [_read_and_extract(small, checkpoint=False) for _ in range(args.runs)]
        resumed_read = []
        for chunk in appends:
            with open(big, "ab") as handle:
                handle.write(chunk)
            resumed_read.append(_read_and_extract(big, checkpoint=True))
        small_s = statistics.median(small_times)
        resumed_s = statistics.median(resumed_times)
        big_mb = big.stat().st_size / MB
        print(
            f"export of a {small.stat().st_size / MB:.0f} MB session (full read)  "
            f"median {small_s:.3f}s  ({', '.join(f'{t:.3f}' for t in small_times)})"
        )
        print(
            f"first export of the {args.big_mb} MB session (full read + checkpoint)  {first:.3f}s"
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
