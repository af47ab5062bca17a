"""Cursor's editor chats at scale: a generated global `state.vscdb` of ~500 MB holding
5,000 chats of one workspace (plus other workspaces' chats), read by `passdown sessions`
and `passdown export --from cursor-ide` in a child process each: wall time and peak RSS.

The database is laid out as Cursor lays it out (tests/cursor_ide_home.py's shapes):
split storage, `composerData:<id>` plus one `bubbleId:<id>:<bubble>` per message, each
workspace's `state.vscdb` listing its chats. Flat memory is shown by the same commands
on a database a tenth the size: peak RSS must not grow with the database.

The database is built once into --cache (about 20 s) and reused while its parameters
match. `--wal` turns the global database into WAL mode with a left-over `-wal` and no
`-shm` (Cursor killed), read through the private-index path. `--live` keeps an editor
process writing into the global database while every command runs (`Editor`): with
`--wal` that is Cursor running in WAL mode (its `-shm` there), without it a
rollback-journal owner whose commits wait on our SHARED locks.

Usage: python benchmarks/bench_vscdb.py [--mb 500] [--chats 5000] [--runs 3]
       [--cache /tmp/passdown-bench-vscdb] [--wal] [--live]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
T0 = 1_764_590_000_000
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
    "CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
)
OTHER_WORKSPACES = 4
OTHER_CHATS = 250  # each
NEWEST_MESSAGES = 400  # the chat the export reads


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _bubble(rng: random.Random, cid: str, n: int, at: int, filler: int, folder: str) -> bytes:
    kind = 1 if n % 5 == 0 else 2
    bubble: dict[str, object] = {
        "_v": 3,
        "type": kind,
        "bubbleId": f"b{n:05d}",
        "text": f"message {n} of {cid}: " + "".join(rng.choices("abcdefgh ", k=filler)),
        "createdAt": f"2025-12-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
    }
    if kind == 2 and n % 5 == 2:
        bubble["toolFormerData"] = {
            "name": "edit_file",
            "rawArgs": json.dumps({"target_file": f"{folder}/src/mod{n % 40}.py"}),
            "status": "completed",
            "result": "{}",
        }
    elif kind == 2 and n % 5 == 3:
        bubble["toolFormerData"] = {
            "name": "run_terminal_cmd",
            "rawArgs": json.dumps({"command": f"pytest -q tests/test_{n % 9}.py"}),
            "status": "completed" if n % 3 else "error",
            "result": json.dumps(
                {"output": "1 failed" if n % 3 == 0 else "ok", "exitCode": 0 if n % 3 else 1}
            ),
        }
    return _dumps(bubble)


def _chat(
    conn: sqlite3.Connection,
    rng: random.Random,
    cid: str,
    messages: int,
    filler: int,
    updated: int,
    folder: str,
) -> dict[str, object]:
    ids = [f"b{n:05d}" for n in range(messages)]
    conn.executemany(
        "INSERT INTO cursorDiskKV VALUES (?, ?)",
        (
            (f"bubbleId:{cid}:{bid}", _bubble(rng, cid, n, updated, filler, folder))
            for n, bid in enumerate(ids)
        ),
    )
    composer = {
        "_v": 10,
        "composerId": cid,
        "name": f"chat {cid}",
        "createdAt": updated - 60_000,
        "lastUpdatedAt": updated,
        "status": "completed",
        "modelConfig": {"modelName": "claude-4.5-sonnet"},
        "fullConversationHeadersOnly": [
            {"bubbleId": bid, "type": 1 if n % 5 == 0 else 2} for n, bid in enumerate(ids)
        ],
        "originalFileStates": {f"file://{quote(folder)}/src/mod{n}.py": {} for n in range(8)},
        "todos": [{"id": str(n), "content": f"step {n}", "status": "pending"} for n in range(5)],
    }
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{cid}", _dumps(composer))
    )
    return {
        "composerId": cid,
        "name": composer["name"],
        "createdAt": updated - 60_000,
        "lastUpdatedAt": updated,
        "type": "head",
    }


def build(home: Path, target_mb: int, chats: int, wal: bool) -> Path:
    """A HOME with Cursor's User folder; returns the workspace folder of the 5,000 chats."""
    user = home / ".config" / "Cursor" / "User"
    glob = user / "globalStorage" / "state.vscdb"
    glob.parent.mkdir(parents=True)
    conn = sqlite3.connect(glob, isolation_level=None)
    conn.executescript(SCHEMA)
    conn.execute("PRAGMA synchronous=OFF")
    rng = random.Random(7)
    others = OTHER_WORKSPACES * OTHER_CHATS
    per_chat = target_mb * MB // (chats + others)
    messages = 10
    filler = max(per_chat // messages - 300, 20)
    workspaces = [("main0000", home / "proj", chats)] + [
        (f"other{n:03d}", home / f"other{n}", OTHER_CHATS) for n in range(OTHER_WORKSPACES)
    ]
    for storage_id, folder, count in workspaces:
        folder.mkdir()
        conn.execute("BEGIN")
        heads = []
        for n in range(count):
            cid = f"{storage_id}-{n:05d}-0000-4000-8000-000000000000"
            newest = storage_id == "main0000" and n == count - 1
            heads.append(
                _chat(
                    conn,
                    rng,
                    cid,
                    NEWEST_MESSAGES if newest else messages,
                    filler,
                    T0 + n * 1000,
                    str(folder),
                )
            )
        conn.execute("COMMIT")
        storage = user / "workspaceStorage" / storage_id
        storage.mkdir(parents=True)
        (storage / "workspace.json").write_text(
            json.dumps({"folder": "file://" + quote(str(folder))})
        )
        ws = sqlite3.connect(storage / "state.vscdb", isolation_level=None)
        ws.executescript(SCHEMA)
        ws.execute(
            "INSERT INTO ItemTable VALUES ('composer.composerData', ?)",
            (json.dumps({"allComposers": heads, "selectedComposerIds": []}),),
        )
        ws.close()
    conn.close()
    if wal:
        _leave_wal(glob)
    return home / "proj"


def _leave_wal(db: Path) -> None:
    """WAL mode, a tenth of the main workspace's chats rewritten into the log (a space
    appended to their JSON), the owner killed: a left-over `-wal` and no `-shm`."""
    code = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute(\"UPDATE cursorDiskKV SET value = value || ' ' WHERE key LIKE 'composerData:main0000-____9-%'\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    os.remove(f"{db}-shm")


class Editor:
    """Cursor writing while passdown reads: a process with node-sqlite3's settings (a
    1 s busy timeout) that commits one 10 KB bubble every 10 ms, cycling over 200 keys
    of a chat of its own (the database does not grow); it counts its commits, the ones
    that failed (SQLITE_BUSY: locked out) and its slowest commit."""

    SCRIPT = (
        "import sqlite3, sys, time\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=1.0)\n"
        "n = failed = 0; slowest = 0.0\n"
        "import select\n"
        "while not select.select([sys.stdin], [], [], 0.01)[0]:\n"
        "    t = time.perf_counter()\n"
        "    try:\n"
        "        conn.execute('BEGIN IMMEDIATE')\n"
        "        conn.execute('INSERT INTO cursorDiskKV VALUES (?, ?)',\n"
        "                     (f'bubbleId:live:{n % 200}', b'{}' + b' ' * 10_000))\n"
        "        conn.execute('COMMIT')\n"
        "        n += 1\n"
        "    except sqlite3.OperationalError:\n"
        "        failed += 1\n"
        "        conn.execute('ROLLBACK') if conn.in_transaction else None\n"
        "    slowest = max(slowest, time.perf_counter() - t)\n"
        "print(n, failed, slowest)\n"
    )

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.SCRIPT, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)  # open, and (WAL) its -shm made, before the first read

    def stop(self) -> str:
        out, _ = self.proc.communicate("stop\n", timeout=60)
        commits, failed, slowest = out.split()
        return (
            f"{commits} commits, {failed} locked out, slowest commit {float(slowest) * 1000:.0f} ms"
        )


def measure(argv: list[str], home: Path, cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one passdown
    command in a child process."""
    env = {**os.environ, "HOME": str(home), "PASSDOWN_DATA_DIR": str(home / "data")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    for name in ("XDG_CONFIG_HOME", "PASSDOWN_EDITOR_USER_DIRS"):
        env.pop(name, None)
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t\n"
        "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(p.returncode, wall, use.ru_utime + use.ru_stime, use.ru_maxrss / 1024)\n"
        "print(p.stderr[-500:], file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "passdown", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code_s, wall, cpu, rss = done.stdout.split()
    if code_s != "0":
        raise SystemExit(f"passdown {' '.join(argv)} exited {code_s}: {done.stderr}")
    return float(wall), float(cpu), float(rss)


def cached(cache: Path, mb: int, chats: int, wal: bool) -> tuple[Path, Path]:
    key = cache / f"mb{mb}-chats{chats}{'-wal' if wal else ''}"
    home, proj = key / "home", key / "home" / "proj"
    glob = home / ".config/Cursor/User/globalStorage/state.vscdb"
    if wal and not Path(f"{glob}-wal").exists():  # a --live editor checkpointed it away
        (key / "done").unlink(missing_ok=True)
    if not (key / "done").exists():
        shutil.rmtree(key, ignore_errors=True)
        home.mkdir(parents=True)
        started = time.perf_counter()
        build(home, mb, chats, wal)
        print(f"built {key} in {time.perf_counter() - started:.1f} s", flush=True)
        (key / "done").write_text("")
    return home, proj


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--chats", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/passdown-bench-vscdb"))
    parser.add_argument("--wal", action="store_true")
    parser.add_argument(
        "--live", action="store_true", help="an editor writing all along (see Editor)"
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores; best of {args.runs} runs")
    sizes = [(args.mb, args.chats), (max(args.mb // 10, 1), max(args.chats // 10, 1))]
    rows = []
    for mb, chats in sizes:
        home, proj = cached(args.cache, mb, chats, args.wal)
        glob = home / ".config/Cursor/User/globalStorage/state.vscdb"
        size = glob.stat().st_size / MB
        editor = Editor(glob) if args.live else None
        print(f"{size:.0f} MB: {_opened_as(glob)}")
        for label, argv in (
            ("sessions (this workspace)", ["sessions", "--from", "cursor-ide"]),
            ("sessions --all", ["sessions", "--from", "cursor-ide", "--all"]),
            ("export newest chat", ["export", "--from", "cursor-ide", "--no-store", "--quiet"]),
        ):
            best = min((measure(argv, home, proj) for _ in range(args.runs)), key=lambda r: r[0])
            rows.append((f"{size:.0f} MB, {chats} chats", label, *best))
        if editor is not None:
            print(f"{size:.0f} MB, the editor meanwhile: {editor.stop()}")
        handoff = json.loads((proj / ".agent-handoff" / "handoff.json").read_text())
        assert handoff["task"]["original_request"].startswith("message 0 of main0000")
        assert len(handoff["state"]["files_touched"]) > 0
        rows.append(
            (
                f"{size:.0f} MB, {chats} chats",
                "in process: find + read + build",
                *_in_process(home, proj),
            )
        )
    print(f"{'database':22} {'command':32} {'wall s':>7} {'CPU s':>6} {'peak RSS MB':>12}")
    for db, label, wall, cpu, rss in rows:
        print(f"{db:22} {label:32} {wall:7.2f} {cpu:6.2f} {rss:12.1f}")
    home, proj = cached(args.cache, *sizes[1], args.wal)
    floor = measure(["--version"], home, proj)
    print(
        f"{'(interpreter + CLI floor: passdown --version)':55} {floor[0]:7.2f} {floor[1]:6.2f} {floor[2]:12.1f}"
    )


def _opened_as(db: Path) -> str:
    """How `_sqlite_readonly` opens the global database, and the files beside it."""
    sys.path.insert(0, str(REPO / "src"))
    from passdown.agents._sqlite_readonly import open_readonly

    opened = open_readonly(db)
    opened.close()
    beside = sorted(p.name for p in db.parent.iterdir() if p.name != db.name)
    wal = Path(f"{db}-wal")
    log = f", -wal {wal.stat().st_size / MB:.1f} MB" if wal.exists() else ""
    return f"opened {opened.how}; beside it: {beside or 'nothing'}{log}"


def _in_process(home: Path, proj: Path) -> tuple[float, float, float]:
    """The reader's own share, past the interpreter's start and passdown's imports:
    discovery of the workspace's chats, reading the newest, building its handoff."""
    code = (
        "import resource, sys, time\n"
        "from pathlib import Path\n"
        "from passdown._pipeline import Selection, build_handoff\n"
        "from passdown.agents.cursor_ide import CursorIDE\n"
        "agent = CursorIDE(); ws = Path.cwd()\n"
        "t = time.perf_counter(); c = time.process_time()\n"
        "ref = agent.newest(ws)\n"
        "build_handoff(Selection(agent=agent, ref=ref, workspace=ws))\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(time.perf_counter() - t, time.process_time() - c, rss)\n"
    )
    env = {**os.environ, "HOME": str(home), "PASSDOWN_DATA_DIR": str(home / "data")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    for name in ("XDG_CONFIG_HOME", "PASSDOWN_EDITOR_USER_DIRS"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=proj, env=env, capture_output=True, text=True, check=True
    )
    wall, cpu, rss = done.stdout.split()
    return float(wall), float(cpu), float(rss)


if __name__ == "__main__":
    main()
