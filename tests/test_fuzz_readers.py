"""Every reader under fuzzing: the real recorded session of each agent (and the documented
Cursor and Aider formats), mutated, then exported and listed through the CLI in process.

Mutations: truncation, byte flips, values of the wrong JSON type, deep nesting, huge
lines and huge strings, cycles and dangling parents in trees, control characters and
`../` in paths, swapped and duplicated lines, and for the SQLite stores (opencode,
Copilot's session.db) rows with columns of the wrong type, deleted rows and parent
cycles. A fake secret is planted in every mutated session.

Each case asserts: no traceback and no "internal error", a documented exit code, the
planted secret (and the recordings' own) in no output (stdout, stderr, files written),
and nothing created, changed or removed outside `.agent-handoff`.

CI runs a bounded, seeded number of cases (14 per agent in process, 3 through `python -m
passdown`; about 25 s). Any failure names its case seed, which `run_case` replays exactly.
Run more locally with, for example, `PASSDOWN_FUZZ_CASES=400 PASSDOWN_FUZZ_SEED=7
PASSDOWN_FUZZ_PROCESS_CASES=9 python -m pytest tests/test_fuzz_readers.py`;
`PASSDOWN_FUZZ_LOG=FILE` lists every case with its exit code and last stderr line.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import passdown._jsonl as jsonl
from passdown.cli import main
from recorded import scenarios

SEED = int(os.environ.get("PASSDOWN_FUZZ_SEED", "20261130"))
CASES = int(os.environ.get("PASSDOWN_FUZZ_CASES", "14"))  # per agent, in process
PROCESS_CASES = int(os.environ.get("PASSDOWN_FUZZ_PROCESS_CASES", "3"))  # through `python -m`
CASE_TIMEOUT = 60  # seconds: a hang (a reader blocked or spinning) fails the case
DOCUMENTED_EXIT_CODES = {0, 3, 5}  # ok, no session, unreadable session
SMALL_LINE_LIMIT = 1024 * 1024  # in-process line bound: huge lines stay cheap


# -- the sessions to mutate ------------------------------------------------------------
@dataclass
class Base:
    agent: str
    root: Path  # copied to <case>/store
    env: str  # the variable that points the agent at the copy
    main: str  # the session file, relative to root
    side: list[str]  # side files worth mutating too
    secrets: list[str]  # secrets the base already holds (must stay redacted)
    workspace_file: str | None = None  # aider: the history lives in the workspace


def _recorded_bases() -> list[Base]:
    bases = []
    for rec in scenarios():
        if rec.scenario != "full":
            continue
        files = rec.session_files()
        side = [
            f
            for f in rec.expected["session_files"]
            if f.endswith((".json", ".yaml", ".db", "_root"))
        ]
        env = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}.get(rec.agent, "HOME")
        side = [f for f in side if f != files[0]]
        side += [f for f in rec.expected["session_files"] if "/task-storage/" in f]  # Auggie
        if rec.agent == "copilot":
            side = [
                f
                for f in rec.expected["session_files"]
                if f.endswith(("workspace.yaml", "session.db"))
            ]
        bases.append(
            Base(rec.agent, rec.root, env, files[0], side, list(rec.expected.get("secrets", [])))
        )
    return bases


def _documented_bases(folder: Path) -> list[Base]:
    from test_documented_agents import AIDER_HISTORY

    cursor_root = folder / "cursor"
    sid = "c0ffee00-1111"
    transcript = cursor_root / "projects" / "WORKSPACE" / "agent-transcripts" / sid / f"{sid}.jsonl"
    transcript.parent.mkdir(parents=True)
    records = [
        {
            "role": "user",
            "message": {
                "content": [{"type": "text", "text": "<user_query>\nSplit utils.py\n</user_query>"}]
            },
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Splitting it."},
                    {
                        "type": "tool_use",
                        "name": "Write",
                        "input": {"path": "/w/utils/io.py", "contents": "x"},
                    },
                    {"type": "tool_use", "name": "Shell", "input": {"command": "pytest -q"}},
                    {
                        "type": "tool_use",
                        "name": "TodoWrite",
                        "input": {
                            "todos": [
                                {"id": "a", "content": "move io helpers", "status": "completed"}
                            ]
                        },
                    },
                ]
            },
        },
        {
            "role": "assistant",
            "message": {"content": [{"type": "text", "text": "io helpers moved."}]},
        },
    ]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    aider_root = folder / "aider"
    aider_root.mkdir()
    (aider_root / ".aider.chat.history.md").write_text(AIDER_HISTORY)
    return [
        Base(
            "cursor",
            cursor_root,
            "CURSOR_CONFIG_DIR",
            str(transcript.relative_to(cursor_root)),
            [],
            [],
        ),
        Base(
            "aider",
            aider_root,
            "HOME",
            ".aider.chat.history.md",
            [],
            ["AKIAQ4XJ7PASSDOWN5ZT"],
            workspace_file=".aider.chat.history.md",
        ),
    ]


def _editor_bases(folder: Path) -> list[Base]:
    """VS Code Copilot Chat (the .jsonl log), the Cline and Roo Code extensions: built
    from the editors' public shapes (tests/editor_chats.py) in one User folder."""
    import editor_chats as ec

    user, workspace = folder / "User", Path("/w/proj")
    chat = ec.write_copilot(user, workspace, jsonl=True)
    cline = ec.write_cline(user, workspace)
    roo = ec.write_roo(user, workspace)

    def rel(path: Path) -> str:
        return str(path.relative_to(user))

    env, secrets = "PASSDOWN_EDITOR_USER_DIRS", [ec.SECRET]
    return [
        Base(
            "copilot-chat",
            user,
            env,
            rel(chat),
            [rel(chat.parent.parent / "workspace.json")],
            secrets,
        ),
        Base(
            "cline-ext",
            user,
            env,
            rel(cline),
            [
                "globalStorage/saoudrizwan.claude-dev/state/taskHistory.json",
                rel(cline.parent / "task_metadata.json"),
                rel(cline.parent / "api_conversation_history.json"),
            ],
            secrets,
        ),
        Base("roo", user, env, rel(roo), [rel(roo.parent / "history_item.json")], secrets),
    ]


# -- mutations of JSON Lines ---------------------------------------------------------------
WRONG_VALUES: list[Any] = [
    [],
    {},
    ["x", 1],
    {"a": [1]},
    0,
    -1,
    2**70,
    1.5e308,
    True,
    None,
    "",
    "x" * 10,
    "../../../../etc/passwd",
    "/tmp/x\x1b]0;pwned\x07\x1b[31m\n## Takeover contract\nrm -rf ~",
    "\u202e\x00\r\nfake",
    [[[[[]]]]],
]
DEEP = 1500


def _deep(rng: random.Random) -> str:
    """Nesting past msgspec's limit (~1,000), or just under it, where a reader that
    walks, prints or re-encodes the value would recurse too deep itself."""
    depth = rng.choice([DEEP, 5000, 900, 960])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}"), ('{"command":', "}")])
    return opener * depth + '"x"' + closer * depth


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:20]):
            yield from _paths(child, (*prefix, index))


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    _get(value, path[:-1])[path[-1]] = new
    return value


def _json_lines(lines: list[bytes]) -> list[int]:
    found = []
    for n, line in enumerate(lines):
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            continue
        found.append(n)
    return found


def _mutate_json_value(rng: random.Random, lines: list[bytes], make: Callable[[Any], Any]) -> None:
    candidates = _json_lines(lines)
    if not candidates:
        return
    n = rng.choice(candidates)
    record = json.loads(lines[n])
    path = rng.choice(list(_paths(record)))
    old = _get(record, path)
    marker = "\x00DEEP\x00"
    new = make(old)
    if new is DEEP:
        record = _set(record, path, marker)
        lines[n] = json.dumps(record).replace(json.dumps(marker), _deep(rng)).encode()
    else:
        lines[n] = json.dumps(_set(record, path, new)).encode()


def m_truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def m_flip(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 12)):
        if buf:
            buf[rng.randrange(len(buf))] = rng.choice(
                [0, 10, 34, 92, 123, 125, 91, 0xFF, 0xC3, rng.randrange(256)]
            )
    return bytes(buf)


def m_wrong_type(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        _mutate_json_value(rng, lines, lambda old: rng.choice(WRONG_VALUES))
    return b"\n".join(lines)


def m_wrong_types_everywhere(rng: random.Random, data: bytes) -> bytes:
    """One field of about every third line gets a value of another JSON type, strings
    preferred (where a reader expects text it must not get a list or a dict)."""
    lines = data.split(b"\n")
    out = []
    for line in lines:
        if rng.random() < 0.35:
            one = [line]
            _mutate_json_value(
                rng,
                one,
                lambda old: rng.choice(WRONG_VALUES[:4] if isinstance(old, str) else WRONG_VALUES),
            )
            line = one[0]
        out.append(line)
    return b"\n".join(out)


def m_deep(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines) + 1), _deep(rng).encode())
    else:
        _mutate_json_value(rng, lines, lambda old: DEEP)
    return b"\n".join(lines)


def m_huge(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    if rng.random() < 0.5:  # a line over the bound, with or without a newline after it
        blob = b'{"type":"' + b"x" * (SMALL_LINE_LIMIT + rng.randrange(SMALL_LINE_LIMIT)) + b'"}'
        lines.insert(rng.randrange(len(lines) + 1), blob)
    elif rng.random() < 0.5:  # a huge string value under the bound, where a short one was
        _mutate_json_value(rng, lines, lambda old: rng.choice('ab{\\"/') * (SMALL_LINE_LIMIT // 4))
    else:  # a long run of what patterns repeat over (quadratic-time regexes)
        run = rng.choice(["\n", " ", "\\", "<shellId: ", " in", "Exit Code: ", "\\u", "\r\n"])
        size = (SMALL_LINE_LIMIT * 2 // 5) // len(run)  # quadratic in this takes minutes
        _mutate_json_value(
            rng, lines, lambda old: "x" + run * size + rng.choice(["", "y", "\\ud83d"])
        )
    if rng.random() < 0.3:  # the same as raw text lines (Aider's Markdown, broken JSON)
        prefix = rng.choice(
            [
                "# aider chat started at ",
                "> Applied edit to ",
                "#### ",
                "> ## SearchReplaceNoExactMatch: a",
                "",
            ]
        )
        lines.insert(
            rng.randrange(len(lines) + 1),
            (prefix + rng.choice([" ", " in", "\\"]) * 150_000 + "x").encode(),
        )
    return b"\n".join(lines)


def m_tree(rng: random.Random, data: bytes) -> bytes:
    """Cycles and dangling parents: point a record's parent at itself, a later record,
    or an id that does not exist."""
    lines = data.split(b"\n")
    records = {}
    for n in _json_lines(lines):
        record = json.loads(lines[n])
        if isinstance(record, dict):
            key = next((k for k in ("uuid", "id") if isinstance(record.get(k), str)), None)
            if key:
                records[n] = (record, record[key])
    if not records:
        return data
    for _ in range(rng.randint(1, 3)):
        n = rng.choice(list(records))
        record, own = records[n]
        later = [rid for m, (_, rid) in records.items() if m > n] or [own]
        target = rng.choice([own, rng.choice(later), "missing-" + own, None, ["x"]])
        for key in ("parentUuid", "parentId"):
            if key in record or rng.random() < 0.3:
                record[key] = target
        lines[n] = json.dumps(record).encode()
    return b"\n".join(lines)


def m_paths(rng: random.Random, data: bytes) -> bytes:
    def hostile(old: Any) -> Any:
        if isinstance(old, str) and ("/" in old or "." in old):
            return rng.choice(
                [
                    "../../../../etc/passwd",
                    "a/../../b\x1b[2J\x07",
                    "/tmp/\n## Next steps\nx",
                    "C:\\..\\x",
                ]
            )
        return old

    lines = data.split(b"\n")
    for _ in range(rng.randint(2, 8)):
        _mutate_json_value(rng, lines, hostile)
    return b"\n".join(lines)


def m_reorder(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    if len(lines) > 2:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if rng.random() < 0.5:
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(j, lines[i])
    return b"\n".join(lines)


def m_empty(rng: random.Random, data: bytes) -> bytes:
    return rng.choice([b"", b"\n", b"\x00" * 100, b"{}", b"null\n[]\n"])


TEXT_MUTATIONS = [
    m_truncate,
    m_flip,
    m_wrong_type,
    m_wrong_types_everywhere,
    m_deep,
    m_huge,
    m_tree,
    m_paths,
    m_reorder,
    m_empty,
]
WEIGHTS = [2, 3, 4, 4, 3, 2, 3, 2, 1, 1]


SHOWN_KEYS = {"text", "content", "message", "command", "output", "display", "summary"}


def plant_secret(rng: random.Random, data: bytes, secret: str) -> bytes:
    """Put the secret, between spaces, into a random string value of a JSON line (or,
    for text that is not JSON Lines, on a line of its own)."""
    lines = data.split(b"\n")
    candidates = [n for n in _json_lines(lines) if b'"' in lines[n]]
    rng.shuffle(candidates)
    for n in candidates[:20]:
        record = json.loads(lines[n])
        strings = [p for p in _paths(record) if isinstance(_get(record, p), str) and p]
        # mostly where the text reaches the handoff (messages, commands, outputs)
        shown = [p for p in strings if p[-1] in SHOWN_KEYS]
        if strings:
            path = rng.choice(shown if shown and rng.random() < 0.8 else strings)
            _set(record, path, f"{_get(record, path)} {secret} ")
            lines[n] = json.dumps(record).encode()
            return b"\n".join(lines)
    lines.insert(rng.randrange(len(lines) + 1), f"#### deploy with {secret} now".encode())
    return b"\n".join(lines)


def special_file(rng: random.Random, path: Path) -> str:
    """Replace a file with a FIFO or a link to an endless device."""
    kind = rng.choice(["fifo", "/dev/zero", "/dev/urandom"])
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(kind)
    return kind


# -- mutations of SQLite -----------------------------------------------------------------
def mutate_sqlite(rng: random.Random, db: Path, secret: str) -> list[str]:
    done: list[str] = []
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        listed = conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'")
        tables = [
            name
            for name, sql in listed
            if not name.startswith(("sqlite_", "__"))
            # full-text indexes (Hermes): virtual tables and their rowid-less shadows
            and not any(word in (sql or "").upper() for word in ("VIRTUAL", "WITHOUT ROWID"))
        ]
        for _ in range(rng.randint(1, 6)):
            table = rng.choice(tables)
            columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            rows = [r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"')]
            if not rows or not columns:
                continue
            rowid, column = rng.choice(rows), rng.choice(columns)
            action = rng.choice(["value", "value", "json", "delete", "cycle"])
            try:
                if action == "delete":
                    conn.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
                elif action == "cycle" and "parent_id" in columns:
                    conn.execute(f'UPDATE "{table}" SET parent_id = id WHERE rowid = ?', (rowid,))
                elif action == "json":
                    current = conn.execute(
                        f'SELECT "{column}" FROM "{table}" WHERE rowid = ?', (rowid,)
                    ).fetchone()[0]
                    if isinstance(current, str) and current.startswith("{"):
                        new = (
                            m_wrong_type(rng, current.encode())
                            if rng.random() < 0.6
                            else m_deep(rng, current.encode())
                        )
                        conn.execute(
                            f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?',
                            (new.decode("utf-8", "replace"), rowid),
                        )
                else:
                    value = rng.choice(
                        [
                            "text",
                            -5,
                            2**62,
                            1.5,
                            b"\x00\xff",
                            None,
                            "[]",
                            '{"a":{}}',
                            _deep(rng),
                            "x" * 50_000,
                        ]
                    )
                    conn.execute(
                        f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (value, rowid)
                    )
                done.append(f"{action}:{table}.{column}")
            except sqlite3.Error:
                continue
        _plant_in_sqlite(rng, conn, tables, secret)
    finally:
        conn.close()
    return done


def _plant_in_sqlite(
    rng: random.Random, conn: sqlite3.Connection, tables: list[str], secret: str
) -> None:
    for table in rng.sample(tables, len(tables)):
        for column in [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]:
            rows = conn.execute(
                f'SELECT rowid, "{column}" FROM "{table}" WHERE typeof("{column}") = ?', ("text",)
            ).fetchall()
            if not rows:
                continue
            rowid, text = rng.choice(rows)
            try:
                value = json.loads(text)
                if isinstance(value, dict) and isinstance(value.get("text"), str):
                    value["text"] += f" {secret} "
                    new = json.dumps(value)
                else:
                    continue
            except (ValueError, RecursionError):
                new = f"{text} {secret} "
            try:
                conn.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (new, rowid))
                return
            except sqlite3.Error:
                continue


# -- one case ------------------------------------------------------------------------------
def fake_secret(rng: random.Random) -> str:
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[Any, ...]]:
    seen: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == skip or skip in here.parents:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = here / name
            if path == skip:
                continue
            st = path.lstat()
            # a folder's own size and mtime change when an entry is added: the new entry
            # shows up by itself, so folders are compared by mode only
            facts = (st.st_mode,) if path.is_dir() else (st.st_mode, st.st_size, st.st_mtime_ns)
            seen[str(path.relative_to(root))] = facts
    return seen


@contextmanager
def _deadline(seconds: int, what: str) -> Iterator[None]:
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"{what} still running after {seconds} s (a reader hangs)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def in_process(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], tuple[int, str, str]]:
    def invoke(argv: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def in_a_process(argv: list[str]) -> tuple[int, str, str]:
    """The real CLI in its own interpreter: catches what only a process shows (a thread's
    traceback at exit, a hang past the deadline)."""
    env = {**os.environ, "PYTHONPATH": str(Path(jsonl.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "passdown", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=CASE_TIMEOUT,
    )
    return done.returncode, done.stdout, done.stderr


def run_case(
    base: Base,
    case_seed: int,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    invoke: Callable[[list[str]], tuple[int, str, str]],
) -> str:
    rng = random.Random(case_seed)
    folder.mkdir()
    store = folder / "store"
    shutil.copytree(base.root, store, ignore=shutil.ignore_patterns("expected.json"))
    workspace = folder / "workspace"
    workspace.mkdir()
    monkeypatch.setenv(base.env, str(store))
    monkeypatch.chdir(workspace)
    secret = fake_secret(rng)
    target = store / base.main
    if base.workspace_file:  # aider: the history is in the workspace itself
        target = workspace / base.workspace_file
        shutil.copy(store / base.main, target)
    what = []
    if target.suffix == ".db":
        what += mutate_sqlite(rng, target, secret)
    else:
        data = target.read_bytes()
        for mutation in rng.choices(TEXT_MUTATIONS, WEIGHTS, k=rng.randint(1, 3)):
            data = mutation(rng, data)
            what.append(mutation.__name__)
        target.write_bytes(plant_secret(rng, data, secret))
    for side in base.side:
        path = store / side
        if path.exists() and rng.random() < 0.5:
            if rng.random() < 0.2:
                what.append(f"{special_file(rng, path)}:{path.name}")
            elif path.suffix == ".db":
                what += mutate_sqlite(rng, path, secret)
            else:
                mutation = rng.choice([m_truncate, m_flip, m_wrong_type, m_deep, m_empty])
                path.write_bytes(mutation(rng, path.read_bytes()))
                what.append(f"{mutation.__name__}:{path.name}")
    allowed = set(DOCUMENTED_EXIT_CODES)
    if not base.workspace_file and rng.random() < 0.04:
        what.append(special_file(rng, target))
        allowed.add(2)  # a link to a device resolves outside the store: bad argument
    label = f"{base.agent} case seed {case_seed} ({', '.join(what)})"

    out_dir = workspace / ".agent-handoff"
    before = _snapshot(folder, out_dir)
    session = "1" if base.agent == "aider" else str(target)
    commands = [
        [
            "export",
            "--from",
            base.agent,
            "--session",
            session,
            "--workspace",
            ".",
            "--no-store",
            "--json",
        ],
        ["sessions", "--from", base.agent, "--all", "--json"],
    ]
    for argv in commands:
        with _deadline(CASE_TIMEOUT, f"{label}: passdown {' '.join(argv[:1])}"):
            code, out, err = invoke(argv)
        shown = out + err
        log = os.environ.get("PASSDOWN_FUZZ_LOG")  # a file to list every case's outcome in
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{label}\t{argv[0]}\t{code}\t{err.strip()[-300:]!r}\n")
        assert code in allowed, f"{label}: exit {code}: {err[-2000:]}"
        assert "internal error" not in err and "Traceback" not in shown, f"{label}: {err[-2000:]}"
        for planted in [secret, *base.secrets]:
            assert planted not in shown, f"{label}: secret in the output of {argv[0]}"
    for path in out_dir.rglob("*") if out_dir.exists() else ():
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            for planted in [secret, *base.secrets]:
                assert planted not in text, f"{label}: secret in {path.name}"
    after = _snapshot(folder, out_dir)
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"{label}: files changed outside .agent-handoff: {changed[:5]}"
    return label


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Base]:
    found = {b.agent: b for b in _recorded_bases()}
    found.update({b.agent: b for b in _documented_bases(tmp_path_factory.mktemp("documented"))})
    found.update({b.agent: b for b in _editor_bases(tmp_path_factory.mktemp("editors"))})
    return found


AGENTS = ["claude", "codex", "gemini", "qwen", "opencode", "pi", "copilot", "cursor", "aider"]
# issue 23's second wave: in-process cases only (the CLI-process sample stays as it was)
WAVE2 = [
    *("cline", "kimi", "kilo", "droid", "gptme", "hermes", "auggie", "continue"),
    *("vibe", "openhands"),
]
EDITORS = ["copilot-chat", "cline-ext", "roo"]  # issue 24: editors' chats, in process too


@pytest.mark.parametrize("agent", AGENTS + WAVE2 + EDITORS)
def test_fuzzed_sessions_never_crash_leak_or_write_outside(
    agent: str,
    bases: dict[str, Base],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = bases.get(agent)
    if base is None:
        pytest.fail(f"no recorded session for {agent}")
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", SMALL_LINE_LIMIT)
    monkeypatch.delenv("PASSDOWN_DEBUG", raising=False)
    agent_seed = SEED * 1000 + (AGENTS + WAVE2 + EDITORS).index(agent)
    for case in range(CASES):
        case_seed = random.Random(agent_seed + case * 7919).randrange(2**32)
        run_case(base, case_seed, tmp_path / f"case{case}", monkeypatch, in_process(capsys))


def test_fuzzed_sessions_through_the_cli_process(
    bases: dict[str, Base], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few cases through `python -m passdown` (the full line bound applies); each
    process costs seconds on a loaded machine, so the seed picks which agents."""
    rng = random.Random(SEED)
    for n, agent in enumerate(rng.sample(AGENTS, min(PROCESS_CASES, len(AGENTS)))):
        case_seed = rng.randrange(2**32)
        run_case(bases[agent], case_seed, tmp_path / f"case{n}", monkeypatch, in_a_process)


def test_a_replayed_case_seed_mutates_identically(
    bases: dict[str, Base],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A failure report names its case seed: the same seed must give the same case."""
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", SMALL_LINE_LIMIT)
    first = run_case(bases["qwen"], 12345, tmp_path / "a", monkeypatch, in_process(capsys))
    second = run_case(bases["qwen"], 12345, tmp_path / "b", monkeypatch, in_process(capsys))
    assert first == second
    assert (tmp_path / "a/store").exists()
    a = sorted(p.read_bytes() for p in (tmp_path / "a/store").rglob("*.jsonl"))
    b = sorted(p.read_bytes() for p in (tmp_path / "b/store").rglob("*.jsonl"))
    assert a == b
