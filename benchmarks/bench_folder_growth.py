"""Growth of the stores that are folders of documents: Mistral Vibe's content-addressed
context chunks (the context as a JSON array cut into chunks sealed past 64 KiB, as Vibe's
`_storage.py` pools them: only the open tail is rewritten per turn), and
OpenHands' folder of one JSON file per event. Neither is lines a slice can be repeated in
(benchmarks/growslice.py leaves them out), so the recorded turn's shape is written N
times: a plan write, a file write and a failing command per turn.

Each agent is exported at three sizes 4x apart by `python -m passdown export --session ...
--no-store --json` in a child process with its own HOME and data dir. Each row prints the
turns, the bytes on disk, wall and CPU seconds, `x prev` (CPU time over the size before:
at most 4.5x passes, linear), the child's peak RSS (at most 10 MB over the smallest size
passes: flat), and how many plan items, commands and files handoff.json lists (bounded). The last line per agent says PASS or what failed.

Usage: python benchmarks/bench_folder_growth.py [--agents vibe,openhands] [--turns 500]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WS = "/tmp/bench-folder-ws"
VIBE_CHUNK_BYTES = 64 * 1024
RSS_GROWTH_MB = 10.0  # the most the peak RSS may grow from the smallest to the largest size
ENTRY_POINTS = {
    "vibe": "passdown.agents.vibe:MistralVibe",
    "openhands": "passdown.agents.openhands:OpenHandsCLI",
}


def _vibe(home: Path, turns: int) -> Path:
    folder = home / ".vibe" / "logs" / "session" / "unified" / "s1"
    gen = folder / "generations" / "0000000000000001"
    gen.mkdir(parents=True)
    (folder / "chunks").mkdir()
    (folder / "journal").mkdir()
    context: list[object] = [_vibe_message("user", "the first request")]
    for n in range(turns):
        todos = [{"id": str(n), "content": f"task {n}", "status": "in_progress"}]
        context += [
            _vibe_call(f"t{n}", "todo", {"action": "write", "todos": todos}),
            _vibe_result(f"t{n}", "todo", '{"verb": "Updated"}'),
            _vibe_call(f"w{n}", "write_file", {"path": f"f{n}.py", "content": "x = 1\n" * 20}),
            _vibe_result(f"w{n}", "write_file", '{"bytes_written": 120}'),
            _vibe_call(f"c{n}", "bash", {"command": f"pytest -k t{n}"}),
            _vibe_result(
                f"c{n}", "bash", json.dumps({"returncode": 1, "stderr": "E   boom\n" * 5})
            ),
            _vibe_message("assistant", f"turn {n} done; next: task {n + 1}"),
        ]
    digests = _vibe_chunks(folder / "chunks", context)
    (gen / "manifest.json").write_text(json.dumps({"checkpoint": {"chunks": digests}}))
    (gen / "checkpoint.json").write_text(
        '{"turn": {"type": "terminal", "outcome": {"type": "completed"}}}'
    )
    (folder / "CURRENT").write_text('{"generation": "0000000000000001", "snapshot_sequence": 1}')
    (folder / "meta.json").write_text(json.dumps({"environment": {"working_directory": WS}}))
    (folder / "journal" / "0000000000000002.jsonl").write_text("")
    return folder / "CURRENT"


def _vibe_chunks(root: Path, context: list[object]) -> list[str]:
    """The context as Vibe pools it: a chunk is sealed once its contents pass 64 KiB
    (`_CHUNK_TARGET_BYTES` in its `_storage.py`), so a long context is many small chunks."""
    digests: list[str] = []
    chunk: list[object] = []
    size = 0
    for entry in [*context, None]:
        if entry is not None:
            chunk.append(entry)
            size += len(json.dumps(entry))
        if chunk and (size > VIBE_CHUNK_BYTES or entry is None):
            body = json.dumps(chunk)
            digest = hashlib.sha256(body.encode()).hexdigest()
            (root / f"{digest}.json").write_text(body)
            digests.append(digest)
            chunk, size = [], 0
    return digests


def _vibe_message(role: str, text: str) -> dict[str, object]:
    return {"message": {"role": role, "content": [{"type": "text", "text": text}]}}


def _vibe_call(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    raw = json.dumps(args)
    part = {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": {"raw": raw, "value": args},
    }
    return {"message": {"role": "assistant", "content": [part]}}


def _vibe_result(call_id: str, name: str, text: str) -> dict[str, object]:
    content = [{"type": "text", "text": text}]
    return {
        "message": {
            "role": "tool",
            "name": name,
            "tool_call_id": call_id,
            "outcome": "success",
            "content": content,
        }
    }


def _openhands(home: Path, turns: int) -> Path:
    folder = home / ".openhands" / "conversations" / "c1"
    events = folder / "events"
    events.mkdir(parents=True)
    state = {"workspace": {"working_dir": WS}, "execution_status": "finished"}
    (folder / "base_state.json").write_text(json.dumps(state))
    written = [_oh_user("the first request")]
    for n in range(turns):
        plan = {"command": "plan", "task_list": [{"title": f"task {n}", "status": "in_progress"}]}
        written += [
            _oh_action(f"t{n}", "task_tracker", plan),
            _oh_seen(f"t{n}", "ok"),
            _oh_action(f"w{n}", "file_editor", {"command": "create", "path": f"{WS}/f{n}.py"}),
            _oh_seen(f"w{n}", "File created"),
            _oh_action(f"c{n}", "terminal", {"command": f"pytest -k t{n}"}),
            _oh_seen(f"c{n}", "E   boom\n" * 5, exit_code=1),
        ]
    for n, event in enumerate(written):
        (events / f"event-{n:05d}-00000000-0000-0000-0000-{n:012d}.json").write_text(
            json.dumps(event)
        )
    return folder / "base_state.json"


def _oh_user(text: str) -> dict[str, object]:
    return {
        "kind": "MessageEvent",
        "source": "user",
        "llm_message": {"content": [{"type": "text", "text": text}]},
    }


def _oh_action(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    call = {"name": name, "arguments": json.dumps(args)}
    return {
        "kind": "ActionEvent",
        "source": "agent",
        "thought": [{"type": "text", "text": "working"}],
        "tool_name": name,
        "tool_call_id": call_id,
        "tool_call": call,
    }


def _oh_seen(call_id: str, text: str, **more: object) -> dict[str, object]:
    return {
        "kind": "ObservationEvent",
        "tool_call_id": call_id,
        "observation": {"content": [{"type": "text", "text": text}], **more},
    }


BUILD = {"vibe": _vibe, "openhands": _openhands}


def _build(agent: str, home: Path, turns: int) -> tuple[Path, int]:
    """Build in a child process: a child forked from a large parent would count the
    parent's pages in its own peak RSS (ru_maxrss survives exec); so is the size on disk
    (walking 48,000 files grows this process)."""
    argv = [sys.executable, __file__, "--build", agent, str(home), str(turns)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=900)
    session, size = out.stdout.strip().rsplit(" ", 1)
    return Path(session), int(size)


def _site(root: Path) -> str:
    dist = root / "site" / "passdown_bench_folders-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-bench-folders\nVersion: 0\n"
    )
    lines = "".join(f"{k} = {v}\n" for k, v in ENTRY_POINTS.items())
    (dist / "entry_points.txt").write_text(f"[passdown.agents]\n{lines}")
    return os.pathsep.join([str(root / "site"), str(ROOT / "src")])


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _export(
    agent: str, session: Path, home: Path, site: str
) -> tuple[float, float, int, dict[str, object]]:
    ws = Path(WS)
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": site,
        "PASSDOWN_DATA_DIR": str(home / "data"),
    }
    start = time.perf_counter()
    argv = [sys.executable, "-m", "passdown", "export", "--from", agent, "--session", str(session)]
    argv += ["--workspace", WS, "--no-store", "--json"]
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(child.pid, 0)  # this export's own usage, not others'
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{agent}: export failed ({child.returncode}): {err.read()[-2000:]!r}")
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss
    data = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())
    return wall, cpu, rss, data


def main() -> int:
    if sys.argv[1:2] == ["--build"]:
        agent, home, turns = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
        print(BUILD[agent](home, turns), _bytes(home))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="vibe,openhands")
    parser.add_argument("--turns", type=int, default=500, help="turns at the smallest size")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-folders-") as tmp:
        site = _site(Path(tmp))
        for agent in args.agents.split(","):
            print(
                f"\n{agent}: turns, MB, wall s, cpu s, x prev (cpu), peak RSS MB, plan/commands/files"
            )
            prev = None
            verdict = "PASS"
            smallest_rss = None
            for factor in (1, 4, 16):
                home = Path(tmp) / f"{agent}-{factor}"
                turns = args.turns * factor
                session, size = _build(agent, home, turns)
                wall, cpu, rss, data = _export(agent, session, home, site)
                state = data["state"]
                ratio = cpu / prev if prev else 0.0
                counts = (
                    f"{len(state['plan'])}/{len(state['commands'])}/{len(state['files_touched'])}"
                )
                print(
                    f"  {turns:>7} {size / 1e6:>7.1f} {wall:>7.2f} {cpu:>7.2f} {ratio:>6.2f}x {rss / 1024:>7.0f} {counts}"
                )
                if prev and ratio > 4.5:
                    verdict = f"FAIL: {ratio:.2f}x for 4x the turns"
                smallest_rss = smallest_rss or rss
                if (rss - smallest_rss) / 1024 > RSS_GROWTH_MB:
                    verdict = f"FAIL: peak RSS +{(rss - smallest_rss) / 1024:.0f} MB"
                if data["task"]["original_request"] != "the first request":
                    verdict = "FAIL: the first request was lost"
                prev = cpu
                shutil.rmtree(home)
            print(f"  {verdict}")
            failed = failed or verdict != "PASS"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
