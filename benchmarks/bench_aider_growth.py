"""Growth of Aider's chat history (`.aider.chat.history.md`), which growslice.py cannot
grow (Markdown, not JSON lines; the recording under tests/fixtures/sessions/aider/real has
no `full` scenario): the recorded turn's shape is written N times, two ways.

- `turns`: one run (`# aider chat started at ...`) whose first request is followed by N
  turns, each a request, a reply with a code fence, an applied edit, a commit and a
  failing `/run` with its output;
- `runs`: N runs of one such turn each, the last one starting with the first request
  (passdown reads the last run of the file: every earlier run is skipped, not held).

Each is exported at three sizes 4x apart by `python -m passdown export --from aider
--session ... --no-store --json` in a child process with its own HOME and data dir. Each
row prints the turns, the file's MB, wall and CPU seconds, `x prev` (CPU over the size
before: at most 4.5x passes), the child's peak RSS (at most 10 MB over the smallest
passes), and how many commands and files handoff.json lists (bounded). The last line per
kind says PASS or what failed.

Usage: python benchmarks/bench_aider_growth.py [--kinds turns,runs] [--turns 12000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RSS_GROWTH_MB = 10.0
FIRST = "the first request"


def _turn(k: int, prompt: str) -> str:
    return (
        f"#### {prompt}  \n\nhello.txt\n```\nHello, world!\nline {k}\n```\n"
        f"Line {k} is added.\n\n> Tokens: 1.5k sent, 50 received.  \n"
        f"> Applied edit to hello.txt  \n> Commit {k:07x} feat: line {k}  \n\n"
        f"#### /run ls missing-{k % 7}  \n\n"
        f"> ls: cannot access 'missing-{k % 7}': No such file or directory  \n"
        "> Add command output to the chat? (Y)es/(N)o [Yes]: y  \n\n"
    )


def _header(k: int) -> str:
    return f"\n# aider chat started at 2026-12-01 15:{k // 60 % 60:02d}:{k % 60:02d}\n\n"


def build(path: Path, kind: str, turns: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        if kind == "turns":
            out.write(_header(0) + _turn(0, FIRST))
            for k in range(1, turns):
                out.write(_turn(k, f"Add line {k} to hello.txt."))
        else:
            for k in range(1, turns):
                out.write(_header(k) + _turn(k, f"Run {k}: add line {k}."))
            out.write(_header(turns) + _turn(turns, FIRST))


def export(path: Path, home: Path) -> tuple[float, float, int, dict[str, object]]:
    ws = path.parent
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT / "src"),
        "PASSDOWN_DATA_DIR": str(home / "data"),
    }
    argv = [sys.executable, "-m", "passdown", "export", "--from", "aider", "--session", str(path)]
    argv += ["--no-store", "--json"]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(child.pid, 0)  # this export's own usage
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"aider: export failed: {err.read()[-2000:]!r}")
    data = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="turns,runs")
    parser.add_argument("--turns", type=int, default=12000, help="turns at the smallest size")
    args = parser.parse_args()
    failed = False
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for kind in args.kinds.split(","):
        print(f"\naider {kind}: turns, MB, wall s, cpu s, x prev (cpu), peak RSS MB, cmds/files")
        prev, first_rss, verdict = 0.0, 0, "PASS"
        for factor in (1, 4, 16):
            with tempfile.TemporaryDirectory(prefix="bench-aider-") as tmp:
                ws = Path(tmp) / "ws"
                ws.mkdir()
                subprocess.run(["git", "init", "-q", str(ws)], check=True)
                path = ws / ".aider.chat.history.md"
                turns = args.turns * factor
                build(path, kind, turns)
                size = path.stat().st_size
                wall, cpu, rss, data = export(path, Path(tmp) / "home")
            state = data["state"]
            assert isinstance(state, dict) and isinstance(data["task"], dict)
            ratio = cpu / prev if prev else 0.0
            counts = f"{len(state['commands'])}/{len(state['files_touched'])}"
            print(
                f"  {turns:>7} {size / 1e6:>7.1f} {wall:>7.2f} {cpu:>7.2f} {ratio:>6.2f}x "
                f"{rss / 1024:>7.0f} {counts}"
            )
            first_rss = first_rss or rss
            if prev and ratio > 4.5:
                verdict = f"FAIL: {ratio:.2f}x for 4x the turns"
            if (rss - first_rss) / 1024 > RSS_GROWTH_MB:
                verdict = f"FAIL: peak RSS +{(rss - first_rss) / 1024:.0f} MB"
            if data["task"]["original_request"] != FIRST:
                verdict = f"FAIL: the first request is {data['task']['original_request']!r}"
            prev = cpu
        print(f"  {verdict}")
        failed = failed or verdict != "PASS"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
