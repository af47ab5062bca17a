"""Growth of the two agents with no recording under tests/fixtures/sessions/ for
growslice.py to grow: Aider's chat history (`.aider.chat.history.md`, Markdown) and
Cursor's agent CLI transcript (`~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`,
written from its documented format: no real cursor-agent runs here). Each kind writes one
turn's shape N times:

- aider `turns`: one run (`# aider chat started at ...`) whose first request is followed
  by N turns, each a request, a reply with a code fence, an applied edit, a commit and a
  failing `/run` with its output;
- aider `runs`: N runs of one such turn each, the last one starting with the first request
  (passdown hands off the last run: the earlier ones are skipped, not listed or held);
- cursor `middle`: the first request, then N turns of a request, a reply, a write, a
  shell command and a todo list; cursor `prompts`: the same request N times; cursor
  `plan`: the todo list written N times (same ids).

Each is exported at three sizes 4x apart by `python -m passdown export --from AGENT
--session ... --no-store --json` in a child process with its own HOME and data dir. Each
row prints the turns, the file's MB, wall and CPU seconds, `x prev` (CPU over the size
before: at most 4.5x passes), the child's peak RSS (at most 10 MB over the smallest
passes), and how many plan items, commands and files handoff.json lists (bounded). The
last line per kind says PASS or what failed.

Usage: python benchmarks/bench_unrecorded_growth.py [--kinds aider:turns,cursor:middle]
       [--turns 12000]
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


def _cursor_turn(k: int, prompt: str, kind: str) -> str:
    user = {
        "role": "user",
        "message": {"content": [{"type": "text", "text": f"<user_query>{prompt}</user_query>"}]},
    }
    todos = [
        {"id": str(i), "content": f"step {i}", "status": "completed" if i < 2 else "pending"}
        for i in range(1, 4)
    ]
    plan = {"type": "tool_use", "name": "todo_write", "input": {"todos": todos}}
    blocks: list[dict[str, object]] = [{"type": "text", "text": f"Turn {k}: done."}]
    if kind == "middle":
        blocks += [
            {"type": "tool_use", "name": "write", "input": {"path": f"src/file{k % 5}.py"}},
            {"type": "tool_use", "name": "shell", "input": {"command": f"pytest -k case{k % 9}"}},
            plan,
        ]
    elif kind == "plan":
        blocks = [plan]
    reply = {"role": "assistant", "message": {"content": blocks}}
    lines = [reply] if kind == "plan" and k else [user, reply]
    return "".join(json.dumps(line) + "\n" for line in lines)


def build_cursor(path: Path, kind: str, turns: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write(_cursor_turn(0, FIRST, "middle"))
        for k in range(1, turns):
            prompt = FIRST if kind == "prompts" else f"Add case {k}."
            out.write(_cursor_turn(k, prompt, kind))


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


def export(
    agent: str, path: Path, ws: Path, home: Path
) -> tuple[float, float, int, dict[str, object]]:
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT / "src"),
        "PASSDOWN_DATA_DIR": str(home / "data"),
    }
    argv = [sys.executable, "-m", "passdown", "export", "--from", agent, "--session", str(path)]
    argv += ["--no-store", "--json"]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(child.pid, 0)  # this export's own usage
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{agent}: export failed: {err.read()[-2000:]!r}")
    data = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, data


def _place(agent: str, kind: str, turns: int, tmp: Path) -> tuple[Path, Path]:
    """The grown session in a fresh workspace (a git repository) and HOME."""
    ws = tmp / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    if agent == "aider":
        path = ws / ".aider.chat.history.md"
        build(path, kind, turns)
    else:
        slug = str(ws).lstrip("/").replace("/", "-")
        folder = tmp / "home" / ".cursor" / "projects" / slug / "agent-transcripts" / "grown"
        folder.mkdir(parents=True)
        path = folder / "grown.jsonl"
        build_cursor(path, kind, turns)
    return ws, path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kinds = "aider:turns,aider:runs,cursor:middle,cursor:prompts,cursor:plan"
    parser.add_argument("--kinds", default=kinds)
    parser.add_argument("--turns", type=int, default=12000, help="turns at the smallest size")
    args = parser.parse_args()
    failed = False
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for spec in args.kinds.split(","):
        agent, kind = spec.split(":")
        print(f"\n{agent} {kind}: turns, MB, wall s, cpu s, x prev (cpu), RSS MB, plan/cmds/files")
        prev, first_rss, verdict = 0.0, 0, "PASS"
        for factor in (1, 4, 16):
            with tempfile.TemporaryDirectory(prefix="bench-unrecorded-") as tmp:
                turns = args.turns * factor
                ws, path = _place(agent, kind, turns, Path(tmp))
                size = path.stat().st_size
                wall, cpu, rss, data = export(agent, path, ws, Path(tmp) / "home")
            state, task = data["state"], data["task"]
            assert isinstance(state, dict) and isinstance(task, dict)
            ratio = cpu / prev if prev else 0.0
            counts = f"{len(state['plan'])}/{len(state['commands'])}/{len(state['files_touched'])}"
            print(
                f"  {turns:>7} {size / 1e6:>7.1f} {wall:>7.2f} {cpu:>7.2f} {ratio:>6.2f}x "
                f"{rss / 1024:>7.0f} {counts}"
            )
            first_rss = first_rss or rss
            if prev and ratio > 4.5:
                verdict = f"FAIL: {ratio:.2f}x for 4x the turns"
            if (rss - first_rss) / 1024 > RSS_GROWTH_MB:
                verdict = f"FAIL: peak RSS +{(rss - first_rss) / 1024:.0f} MB"
            if task["original_request"] != FIRST:
                verdict = f"FAIL: the first request is {task['original_request']!r}"
            prev = cpu
        print(f"  {verdict}")
        failed = failed or verdict != "PASS"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
