"""Web view page times over a project with many handoffs.

Exports the recorded Claude Code session once with `passdown export` (a real handoff
record, about 13 KB), stores N copies of it in one project of a fresh SQLite store (one
minute apart), then times each page through the ASGI app (no network), best of 3:
the timeline, a filtered timeline (agent: read on until the page is full), a search, a
handoff in the middle of the trail (prev/next links), compare and plan over time.

Usage: python benchmarks/bench_web.py [--sizes 100,500]
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sessions" / "claude" / "full"


def exported_record(tmp: Path) -> dict[str, Any]:
    """One handoff record written by a real `passdown export` of the recorded session."""
    from passdown.records import record_to_dict
    from passdown.store import open_store

    home, ws = tmp / "claude", tmp / "ws"
    shutil.copytree(FIXTURE, home, ignore=shutil.ignore_patterns("expected.json"))
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    session = next(home.glob("projects/*/*.jsonl"))
    env = {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(home),
        "PASSDOWN_DATA_DIR": str(tmp / "data"),
        "PYTHONPATH": str(ROOT / "src"),
    }
    subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "export",
            "--from",
            "claude",
            "--session",
            str(session),
            "--quiet",
        ],
        cwd=ws,
        env=env,
        check=True,
    )
    with open_store(f"sqlite://{tmp / 'data' / 'store.db'}") as store:
        return record_to_dict(store.query("ws", type="handoff", limit=1).records[0])


def run(size: int, record: dict[str, Any], tmp: Path) -> None:
    from starlette.testclient import TestClient

    from passdown.store import open_store
    from passdown.web import local_app

    start = datetime(2026, 1, 1, tzinfo=UTC)
    copies = []
    for i in range(size):
        data = json.loads(json.dumps(record))
        data["id"] = data["passdown_handoff"]["id"] = f"handoff-bench-{i:05d}"
        data["created_at"] = (start + timedelta(minutes=i)).isoformat()
        copies.append(data)
    with open_store(f"sqlite://{tmp / f'bench-{size}.db'}") as store:
        began = time.perf_counter()
        store.store_many(copies)
        print(
            f"{size} handoffs of {len(json.dumps(record)) // 1024} KB stored in {time.perf_counter() - began:.2f} s"
        )
        client = TestClient(local_app(store, "ws"), base_url="http://127.0.0.1:8000")
        middle = f"handoff-bench-{size // 2:05d}"
        for name, path in (
            ("timeline", "/p/ws/"),
            ("timeline ?agent=codex", "/p/ws/?agent=codex"),
            ("search", "/p/ws/?q=usage"),
            ("handoff (middle)", f"/p/ws/h/{middle}"),
            ("compare (middle)", f"/p/ws/compare?b={middle}"),
            ("plan over time", "/p/ws/plan"),
        ):
            client.get(path)
            best = min(_timed(client, path) for _ in range(3))
            print(f"  {name:24s} {best * 1000:6.0f} ms")


def _timed(client: Any, path: str) -> float:
    began = time.perf_counter()
    answer = client.get(path)
    assert answer.status_code == 200, (path, answer.status_code)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    with tempfile.TemporaryDirectory(prefix="passdown-bench-web-") as folder:
        tmp = Path(folder)
        record = exported_record(tmp)
        for size in (int(s) for s in args.sizes.split(",")):
            run(size, record, tmp)


if __name__ == "__main__":
    main()
