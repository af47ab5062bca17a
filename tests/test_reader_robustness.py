"""Regression tests for the classes of reader defects the fuzzing found (issue 11,
"Readers under fuzzing"): deep nesting, fields of the wrong type, unreadable files and
folders, special files, decompression bombs, SQLite side files, slow paths, Aider run
numbering. Each builds the hostile input from a real recorded session and runs the CLI
in process, asserting the exit code, the message and what the handoff still carries."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard

import passdown._jsonl as jsonl
from passdown._redact import redact
from passdown.cli import main
from passdown.transcript import Diagnostics
from recorded import scenarios
from test_fuzz_readers import _deadline, _snapshot

DEEP = "[" * 1500 + "]" * 1500
DEEP_FIELD = '{"a":' * 1500 + "1" + "}" * 1500


# -- set-up ----------------------------------------------------------------------------
def _recorded(agent: str) -> Any:
    return next(r for r in scenarios(agent) if r.scenario == "full")


def install(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Any]:
    """The agent's recorded store copied under tmp_path, the agent pointed at it, and the
    current folder an empty workspace. Returns (session file, store root, recording)."""
    rec = _recorded(agent)
    store = tmp_path / "store"
    path = rec.install(store, monkeypatch)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    return path, store, rec


def export(
    capsys: pytest.CaptureFixture[str], agent: str, session: str | None = None, timeout: int = 60
) -> tuple[int, dict[str, Any] | None, str]:
    argv = ["export", "--from", agent, "--no-store", "--json"]
    if session is not None:
        argv += ["--session", session, "--workspace", "."]
    capsys.readouterr()
    with _deadline(timeout, f"export --from {agent}"):
        code = main(argv)
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in out + err, err
    handoff = None
    if code == 0:
        written = json.loads(out)
        handoff = json.loads(Path(written["json"]).read_text())
    return code, handoff, err


def warnings_of(handoff: dict[str, Any]) -> str:
    return " | ".join(handoff.get("warnings") or [])


def insert_lines(path: Path, at: int, *lines: str) -> None:
    existing = path.read_text().splitlines()
    existing[at:at] = list(lines)
    path.write_text("\n".join(existing) + "\n")


# -- deep nesting ------------------------------------------------------------------------
JSONL_AGENTS = ["claude", "codex", "gemini", "qwen", "pi", "copilot"]


@pytest.mark.parametrize("agent", JSONL_AGENTS)
def test_deep_nesting_is_an_unreadable_line(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """msgspec raises RecursionError (not DecodeError) past its depth limit: a whole line
    nested 1,500 deep and a record with one field nested that deep are both skipped as
    unreadable lines, the rest of the session is still read (also during discovery)."""
    path, _, rec = install(agent, tmp_path, monkeypatch)
    # the same record shape the agent writes, with one field nested too deep
    first = json.loads(path.read_text().splitlines()[0])
    field = next(k for k, v in first.items() if isinstance(v, (str, dict)) and k not in ("type",))
    deep_record = json.dumps({**first, field: "MARK"}).replace('"MARK"', DEEP_FIELD)
    insert_lines(path, 1, DEEP, deep_record)
    insert_lines(path, 0, DEEP)  # discovery reads the head too
    code, handoff, err = export(capsys, agent, str(path))
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    assert "unreadable line" in warnings_of(handoff)
    capsys.readouterr()
    assert main(["sessions", "--from", agent, "--all", "--json"]) == 0
    assert rec.expected["session_id"] in capsys.readouterr().out


def test_deep_nesting_in_an_opencode_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _, rec = install("opencode", tmp_path, monkeypatch)
    with sqlite3.connect(db) as conn:
        part = conn.execute("SELECT id FROM part ORDER BY id DESC LIMIT 1").fetchone()[0]
        conn.execute("UPDATE part SET data = ? WHERE id = ?", (DEEP, part))
        conn.execute("UPDATE session SET revert = ?", (DEEP_FIELD,))
    conn.close()
    code, handoff, err = export(capsys, "opencode", str(db))
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    assert "unreadable line" in warnings_of(handoff)


# -- wrong types ---------------------------------------------------------------------------
def _rewrite_records(path: Path, change: Any) -> int:
    """Apply `change(record)` to every JSON line; returns how many it changed."""
    lines, changed = [], 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if change(record):
            changed += 1
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return changed


def test_qwen_subtype_and_type_of_the_wrong_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _, rec = install("qwen", tmp_path, monkeypatch)
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    lines += [
        json.dumps({**last, "uuid": "x1", "type": "system", "subtype": ["rewind"]}),
        json.dumps({**last, "uuid": "x2", "parentUuid": "x1", "type": {"user": 1}}),
    ]
    path.write_text("\n".join(lines) + "\n")
    code, handoff, err = export(capsys, "qwen", str(path))
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    assert "2 unreadable line(s)" in warnings_of(handoff)


def test_gemini_message_type_and_set_ids_of_the_wrong_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _, rec = install("gemini", tmp_path, monkeypatch)
    insert_lines(
        path,
        10_000,
        json.dumps({"id": "m-wrong", "type": ["gemini"], "content": "x"}),
        json.dumps({"$set": {"messages": [{"id": {"a": 1}, "type": "user", "content": "y"}]}}),
    )
    code, handoff, err = export(capsys, "gemini", str(path))
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    assert "2 unreadable line(s)" in warnings_of(handoff)


def test_codex_plan_and_goal_status_of_the_wrong_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _, _ = install("codex", tmp_path, monkeypatch)
    stamp = "2026-11-29T21:12:40.000Z"

    def call(name: str, args: dict[str, Any], call_id: str) -> str:
        payload = {
            "type": "function_call",
            "name": name,
            "arguments": json.dumps(args),
            "call_id": call_id,
        }
        return json.dumps({"timestamp": stamp, "type": "response_item", "payload": payload})

    insert_lines(
        path,
        10_000,
        call("update_goal", {"status": {"complete": True}}, "g1"),
        call(
            "update_plan",
            {
                "plan": [
                    {"step": ["a"], "status": ["completed"]},
                    {"step": "keep me", "status": {"x": 1}},
                ]
            },
            "p1",
        ),
    )
    code, handoff, err = export(capsys, "codex", str(path))
    assert code == 0, err
    plan = handoff["state"]["plan"]
    assert [(p["subject"], p["status"]) for p in plan][-1] == ("keep me", "pending")


def test_opencode_columns_of_the_wrong_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _, rec = install("opencode", tmp_path, monkeypatch)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE session SET time_updated = 'yesterday', title = x'00ff', version = x'01'"
        )
    conn.close()
    capsys.readouterr()
    assert main(["sessions", "--from", "opencode", "--all", "--json"]) == 0
    assert rec.expected["session_id"] in capsys.readouterr().out
    code, handoff, err = export(capsys, "opencode", str(db))
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    assert handoff["source"]["agent_version"] is None


# -- unreadable files and folders ------------------------------------------------------------
@pytest.fixture
def deny(monkeypatch: pytest.MonkeyPatch) -> Any:
    """What chmod 000 does to a non-root user, for tests that run as root: listing a
    denied folder, or stat/open of anything inside it, or opening a denied file, fails
    with EACCES."""
    denied: list[tuple[str, bool]] = []  # (path, is_folder)
    real_stat, real_open, real_listdir, real_scandir = os.stat, os.open, os.listdir, os.scandir

    def check(path: Any, *, listing: bool = False, opening: bool = False) -> None:
        if isinstance(path, int):
            return
        text = os.path.abspath(os.fsdecode(path))
        for where, folder in denied:
            inside = text.startswith(where + os.sep)
            if (folder and (inside or (text == where and listing))) or (
                not folder and text == where and opening
            ):
                raise PermissionError(errno.EACCES, "Permission denied", text)

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        check(path)
        return real_stat(path, *args, **kwargs)

    def open_(path: Any, *args: Any, **kwargs: Any) -> Any:
        check(path, opening=True)
        return real_open(path, *args, **kwargs)

    def listdir(path: Any = ".") -> Any:
        check(path, listing=True)
        return real_listdir(path)

    def scandir(path: Any = ".") -> Any:
        check(path, listing=True)
        return real_scandir(path)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "scandir", scandir)

    def add(path: Path) -> None:
        denied.append((str(path), path.is_dir()))

    return add


def test_session_path_in_an_unreadable_folder_is_exit_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], deny: Any
) -> None:
    path, _, _ = install("pi", tmp_path, monkeypatch)
    deny(path.parent)
    code, _, err = export(capsys, "pi", str(path))
    assert code == 5
    assert "cannot read" in err and str(path.parent) in err


@pytest.mark.parametrize(
    "agent", ["copilot", "gemini", "qwen", "pi", "opencode", "codex", "claude"]
)
def test_an_unreadable_store_is_exit_5_naming_it(
    agent: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    deny: Any,
) -> None:
    """Before: the store's listing failed silently and the answer was 3 (no session)."""
    _, store, _ = install(agent, tmp_path, monkeypatch)
    from passdown.agents import get_agent

    root = get_agent(agent).store_roots()[0]
    assert root.is_relative_to(store)
    deny(root)
    code, _, err = export(capsys, agent)
    assert code == 5, err
    assert str(root) in err


def test_an_unreadable_cursor_store_and_aider_history_are_exit_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], deny: Any
) -> None:
    from test_documented_agents import AIDER_HISTORY

    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    cursor_projects = Path(os.environ["CURSOR_CONFIG_DIR"]) / "projects"
    cursor_projects.mkdir(parents=True)
    deny(cursor_projects)
    code, _, err = export(capsys, "cursor")
    assert code == 5 and str(cursor_projects) in err
    history = workspace / ".aider.chat.history.md"
    history.write_text(AIDER_HISTORY)
    deny(history)  # chmod 000 on the file
    code, _, err = export(capsys, "aider")
    assert code == 5 and str(history) in err


# -- special files -----------------------------------------------------------------------------
def test_a_fifo_session_file_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _, _ = install("codex", tmp_path, monkeypatch)
    path.unlink()
    os.mkfifo(path)
    code, _, err = export(capsys, "codex", str(path), timeout=20)
    assert code == 5, err  # a FIFO is no session file: never opened for reading
    assert "not a regular file" in err and str(path) in err
    code, _, err = export(capsys, "codex", None, timeout=20)
    assert code == 3, err


@pytest.mark.parametrize("agent", ["claude", "codex", "copilot", "gemini", "qwen", "pi"])
def test_a_folder_named_as_the_session_is_exit_5_not_3(
    agent: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: `--session PATH` naming a folder said "session file not found" (exit 3),
    though the path is there: it cannot be read, which README's exit 5 says."""
    path, _, _ = install(agent, tmp_path, monkeypatch)
    folder = path.with_name("folder-" + path.name)
    folder.mkdir()
    code, _, err = export(capsys, agent, str(folder), timeout=20)
    assert code == 5, err
    assert "not a regular file" in err and str(folder) in err
    code, _, err = export(capsys, agent, str(path.with_name("missing-" + path.name)))
    assert code == 3, err


@pytest.mark.parametrize(
    ("agent", "side"),
    [
        ("copilot", "workspace.yaml"),
        ("gemini", ".project_root"),
        ("gemini", "projects.json"),
        ("qwen", "todos"),
        ("claude", "tasks"),
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/dev/urandom"])
def test_special_side_files_are_skipped(
    agent: str,
    side: str,
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A FIFO blocked open() forever; /dev/zero or /dev/urandom spun or grew to 1.5 GB."""
    path, store, rec = install(agent, tmp_path, monkeypatch)
    targets = [p for p in store.rglob(side) if p.is_file()]
    if side in ("todos", "tasks"):
        targets = [p for p in store.rglob("*.json") if side in p.parts]
    assert targets, f"no {side} in the recording"
    for target in targets:
        target.unlink()
        if kind == "fifo":
            os.mkfifo(target)
        else:
            target.symlink_to(kind)
    code, handoff, err = export(capsys, agent, str(path), timeout=30)
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_session_file_linked_to_a_device_is_exit_5(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cursor lists flat transcripts by name: one linked to a device was read forever."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    from passdown.agents.cursor import workspace_slugs

    slug = sorted(workspace_slugs(workspace))[0]
    folder = Path(os.environ["CURSOR_CONFIG_DIR"]) / "projects" / slug / "agent-transcripts"
    folder.mkdir(parents=True)
    (folder / "old.jsonl").symlink_to(device)
    code, _, err = export(capsys, "cursor", timeout=20)
    assert code == 5, err
    assert "not a regular file" in err


def test_cursor_transcript_fifo_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    from passdown.agents.cursor import workspace_slugs

    slug = sorted(workspace_slugs(workspace))[0]
    folder = Path(os.environ["CURSOR_CONFIG_DIR"]) / "projects" / slug / "agent-transcripts"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "old.jsonl")
    code, _, err = export(capsys, "cursor", timeout=20)
    assert code in (3, 5), err


# -- decompression bombs ---------------------------------------------------------------------------
def _bomb(path: Path, head: list[str], tail: list[str], line_bytes: int) -> None:
    """A .zst file: the given lines, one line of `line_bytes` bytes, then more lines."""
    with open(path, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
        out.write(("\n".join(head) + "\n").encode())
        chunk = b"A" * (8 * 1024 * 1024)
        left = line_bytes
        while left > 0:
            out.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
        out.write(("\n" + "\n".join(tail) + "\n").encode())


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_a_decompression_bomb_costs_bounded_memory(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few KB of .jsonl.zst inflating to one 250 MB line took Codex to 1 GB RSS and
    Claude to 1.5 GB: the line bound now holds on the decompressed stream."""
    path, _, rec = install(agent, tmp_path, monkeypatch)
    lines = path.read_text().splitlines()
    bomb = path.with_name(path.name + ".zst")
    _bomb(bomb, lines[:3], lines[3:], 250 * 1024 * 1024)
    path.unlink()
    assert bomb.stat().st_size < 200_000
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent (a
    # big pytest process), VmHWM is the peak of this program's own memory
    probe = (
        "import re, sys; from passdown.cli import main; code = main(sys.argv[1:]);"
        "status = open('/proc/self/status').read();"
        "print('RSS', re.search(r'VmHWM:\\s+(\\d+)', status).group(1)); sys.exit(code)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(jsonl.__file__).parents[1])}
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            "export",
            "--from",
            agent,
            "--session",
            str(bomb),
            "--workspace",
            ".",
            "--no-store",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    rss_mb = int(done.stdout.rsplit("RSS", 1)[1]) / 1024
    assert rss_mb < 350, f"peak RSS {rss_mb:.0f} MB"
    handoff = json.loads(Path(json.loads(done.stdout.rsplit("RSS", 1)[0])["json"]).read_text())
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    assert "oversized line" in warnings_of(handoff)
    assert elapsed < 240


def test_a_zstd_stream_inflating_past_the_ratio_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 1024 * 1024)
    monkeypatch.setattr(jsonl, "MAX_ZSTD_RATIO", 10)
    path = tmp_path / "s.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b'{"n": 1}\n' * 2_000_000))
    diag = Diagnostics()
    lines = list(jsonl.LineReader(path, diag).forward())
    assert 0 < len(lines) < 2_000_000
    assert any("inflates to more than 10 times" in w for w in diag.warnings)


# -- SQLite: nothing created next to another program's database ----------------------------------
def _wal_copy(db: Path) -> None:
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.close()  # the last connection checkpoints and removes -wal and -shm


def test_opencode_wal_database_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _, rec = install("opencode", tmp_path, monkeypatch)
    _wal_copy(db)
    before = sorted(os.listdir(db.parent))
    assert before == ["opencode.db"]
    code, handoff, err = export(capsys, "opencode", str(db))
    assert code == 0, err
    assert handoff["task"]["original_request"] == redact(rec.expected["original_request"])
    capsys.readouterr()
    assert main(["sessions", "--from", "opencode", "--all", "--json"]) == 0
    assert sorted(os.listdir(db.parent)) == before


def test_opencode_wal_database_in_use_is_read_live_without_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While opencode runs it holds -wal and -shm open; a change it has not checkpointed
    yet is read, and nothing new appears in its folder."""
    db, _, _ = install("opencode", tmp_path, monkeypatch)
    _wal_copy(db)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE session SET title = 'renamed while running'")
        before = sorted(os.listdir(db.parent))
        assert before == ["opencode.db", "opencode.db-shm", "opencode.db-wal"]
        code, handoff, err = export(capsys, "opencode", str(db))
        assert code == 0, err
        assert handoff["source"]["title"] == "renamed while running"
        assert sorted(os.listdir(db.parent)) == before
    finally:
        writer.close()


def test_copilot_wal_todo_database_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, store, rec = install("copilot", tmp_path, monkeypatch)
    _wal_copy(path.parent / "session.db")
    before = _snapshot(store, store / "none")
    code, handoff, err = export(capsys, "copilot", str(path))
    assert code == 0, err
    assert [p["subject"] for p in handoff["state"]["plan"]] == [
        p["subject"] for p in rec.expected["plan"]
    ]
    assert _snapshot(store, store / "none") == before


# -- slow paths --------------------------------------------------------------------------------------
def test_a_20_mb_record_type_costs_little(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 20 MB `type` in one Codex record took 17.6 s (the name was carried into the
    warnings and redacted, rendered and printed)."""
    path, _, _ = install("codex", tmp_path, monkeypatch)
    insert_lines(
        path,
        3,
        json.dumps(
            {"timestamp": "2026-11-29T21:12:25.000Z", "type": "t" * 20_000_000, "payload": {}}
        ),
    )
    started = time.monotonic()
    code, handoff, err = export(capsys, "codex", str(path))
    elapsed = time.monotonic() - started
    assert code == 0, err
    assert len(warnings_of(handoff)) < 1000 and len(err) < 2000
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_a_copilot_output_full_of_shell_markers_costs_little(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `<shellId: N>` suffix was stripped with a regex over the whole output: an
    output of 2 MB of unclosed markers took minutes (quadratic)."""
    path, _, _ = install("copilot", tmp_path, monkeypatch)
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines):
        event = json.loads(line)
        result = (event.get("data") or {}).get("result")
        if (
            event["type"] == "tool.execution_complete"
            and isinstance(result, dict)
            and "content" in result
        ):
            result["content"] = "<shellId: " * 200_000  # never closed
            lines[n] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    code, _, err = export(capsys, "copilot", str(path))
    assert code == 0, err
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("agent", ["pi", "gemini", "aider"])
def test_long_runs_of_one_character_cost_linear_time(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Patterns that rescanned a run at every position (quadratic: 40,000 backslashes
    took 5.7 s in Gemini's surrogate repair; pi's exit-line strip on a run of newlines
    and Aider's header match on a run of spaces were alike)."""
    run = 200_000
    if agent == "aider":
        workspace = tmp_path / "ws"
        workspace.mkdir()
        monkeypatch.chdir(workspace)
        (workspace / ".aider.chat.history.md").write_text(
            "# aider chat started at 2026-11-01" + " " * run + "x\n\n#### the request\n"
            "> Applied edit to"
            + " " * run
            + "x\n> ## SearchReplaceNoExactMatch: a"
            + " in" * run
            + "\n"
        )
        session = None
    else:
        path, _, _ = install(agent, tmp_path, monkeypatch)
        session = str(path)
        if agent == "pi":

            def change(record: dict[str, Any]) -> bool:  # every tool becomes a command
                message = record.get("message") or {}
                for block in message.get("content") or ():
                    if isinstance(block, dict) and block.get("type") == "toolCall":
                        block["name"], block["arguments"] = "bash", {"command": "make"}
                if message.get("role") == "toolResult":
                    message["toolName"] = "bash"
                    message["content"] = [{"type": "text", "text": "x" + "\n" * run + "y"}]
                    return True
                return False

            assert _rewrite_records(path, change)
        else:
            # a lone surrogate escape sends the line through the surrogate repair, then a
            # long run of escaped backslashes before a `\u` escape that is no surrogate
            content = "\\ud83d " + "\\\\" * run + "\\u0041"
            insert_lines(
                path, 10_000, '{"id": "m-slash", "type": "gemini", "content": "' + content + '"}'
            )
    started = time.monotonic()
    code, _, err = export(capsys, agent, session)
    assert code == 0, err
    assert time.monotonic() - started < 15


def test_a_line_spanning_many_chunks_is_read_backwards_in_linear_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backward reader copied the growing line once per chunk (quadratic)."""
    monkeypatch.setattr(jsonl, "CHUNK", 1024)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * (16 * 1024 * 1024) + b"\n" + b'{"b": 2}\n')
    started = time.monotonic()
    lines = list(jsonl.LineReader(path, Diagnostics()).backward())
    assert [len(line) for _, line in lines] == [8, 16 * 1024 * 1024, 8]
    assert time.monotonic() - started < 10


# -- Aider -------------------------------------------------------------------------------------------
def test_aider_text_before_the_first_header_is_run_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line before the first header shifted the runs: #2 showed run 1."""
    from passdown._extract import extract
    from passdown.agents import get_agent

    (tmp_path / ".aider.chat.history.md").write_text(
        "stray line before any header\n\n"
        "# aider chat started at 2026-11-01 09:00:00\n\n#### first run request\n\nok\n\n"
        "# aider chat started at 2026-11-02 10:00:00\n\n#### second run request\n\ndone\n"
    )
    agent = get_agent("aider")
    refs = {r.session_id.rsplit("#", 1)[1]: r for r in agent.sessions(tmp_path)}
    assert sorted(refs) == ["1", "2", "3"]
    assert refs["2"].started_at == "2026-11-01 09:00:00"

    def request(run: str) -> str | None:
        return extract(
            agent.read(refs[run]).events(), workspace=str(tmp_path)
        ).task.original_request

    assert request("2") == "first run request"
    assert request("3") == "second run request"
    monkeypatch.chdir(tmp_path)
    code, handoff, err = export(capsys, "aider")
    assert code == 0, err
    assert handoff["task"]["original_request"] == "second run request"
