"""The CLI as a person meets it (issue 14, CLI section): --json everywhere, `find` one
row per handoff, the `agents` table, short "searched" lists, no store file from a
failed export, the --new-version hint, and progress only on a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from passdown.agents import load_agents
from recorded import scenarios

CODEX = next(r for r in scenarios("codex") if r.scenario == "full")
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
# every registered agent, named briefly in entry-point (name) order
_AGENTS = sorted(load_agents())
SEARCHED_ALL = f"(searched: {', '.join(_AGENTS[:3])}, … ({len(_AGENTS)} agents))"
ISO_SECOND = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        input=stdin,
        timeout=120,
    )


def record(
    record_id: str, type_: str = "task", title: str = "a task", at: str = "2026-11-30T10:00:00Z"
) -> dict[str, Any]:
    return {
        "id": record_id,
        "type": type_,
        "title": title,
        "content": "c",
        "created_at": at,
        "scope": {"project": "p"},
        "provenance": {"agent": "test", "session": "s"},
    }


# -- --json on store, delete, token --------------------------------------------------------


def test_store_and_delete_print_json(tmp_path: Path) -> None:
    batch = json.dumps([record("r1"), record("r2")])
    stored = run(["store", "-", "--json"], tmp_path, stdin=batch)
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout) == {"ids": ["r1", "r2"]}
    deleted = run(["delete", "r1", "--project", "p", "--json"], tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout) == {"deleted": "r1", "project": "p"}
    assert run(["retrieve", "r1", "--project", "p"], tmp_path).returncode == 10  # gone


def test_conflict_hint_names_the_cli_flag_only(tmp_path: Path) -> None:
    assert run(["store", "-"], tmp_path, stdin=json.dumps(record("r1"))).returncode == 0
    changed = json.dumps(record("r1", title="changed"))
    proc = run(["store", "-"], tmp_path, stdin=changed)
    assert proc.returncode == 11
    hint = proc.stderr.splitlines()[1]
    assert hint.startswith("hint: ") and "--new-version" in hint
    assert "new_version" not in proc.stderr
    as_json = json.loads(run(["store", "-", "--json"], tmp_path, stdin=changed).stderr)
    assert as_json["code"] == 11 and "--new-version" in as_json["hint"]
    replaced = run(["store", "-", "--new-version", "--json"], tmp_path, stdin=changed)
    assert json.loads(replaced.stdout) == {"ids": ["r1"]}


def test_token_create_and_revoke_print_json(tmp_path: Path) -> None:
    created = run(
        ["token", "create", "--project", "alpha", "--new", "--label", "ci", "--json"], tmp_path
    )
    assert created.returncode == 0, created.stderr
    data = json.loads(created.stdout)
    assert data["project"] == "alpha" and data["label"] == "ci"
    assert data["token"].startswith("pdt_") and len(data["token"]) > 40
    revoked = run(["token", "revoke", data["token"], "--json"], tmp_path)
    assert revoked.returncode == 0 and json.loads(revoked.stdout) == {"revoked": True}
    again = run(["token", "revoke", data["token"], "--json"], tmp_path)
    assert again.returncode == 2 and json.loads(again.stderr)["error"] == "no such token"


# -- find ----------------------------------------------------------------------------------


@pytest.fixture
def lifecycle_store(tmp_path: Path) -> Path:
    """Two handoffs (one claimed: prepared, published, claimed status records behind it)
    and a task, in project p of the isolated default store."""
    from passdown.coordinator._lifecycle import Lifecycle
    from passdown.records import Scope
    from passdown.store import open_store

    long_title = "Fix the flaky login test on CI and then rewrite the session cache so it never grows past its limit again"
    with open_store() as store:
        store.store(record("h-old", "handoff", long_title, "2026-11-30T10:00:00.250+01:00"))
        store.store(record("h-new", "handoff", "Ship the parser", "2026-11-30T11:00:00Z"))
        store.store(record("t1", "task", "a task", "2026-11-30T08:00:00Z"))
        lifecycle = Lifecycle(store, Scope(project="p"))
        for status in ("prepared", "published", "claimed"):
            lifecycle.transition("h-old", status, by="codex")  # type: ignore[arg-type]
    return tmp_path


def test_find_shows_one_aligned_row_per_handoff_with_its_status(lifecycle_store: Path) -> None:
    proc = run(["find", "--project", "p"], lifecycle_store, env={"COLUMNS": "90"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, "no status records of their own: one row per handoff or task"
    cells = [line.split() for line in lines]
    assert [(c[1], c[2], c[3]) for c in cells] == [
        ("handoff", "h-new", "published"),  # stored without the lifecycle: published, as MCP says
        ("handoff", "h-old", "claimed"),
        ("task", "t1", "-"),
    ]
    assert [c[0] for c in cells] == [
        "2026-11-30T11:00:00Z",
        "2026-11-30T09:00:00Z",
        "2026-11-30T08:00:00Z",
    ]
    assert all(re.fullmatch(ISO_SECOND, c[0]) for c in cells)
    for column in (1, 2, 3):  # every column starts at the same place on every row
        assert (
            len({line.index(f"  {cell[column]}") for line, cell in zip(lines, cells, strict=True)})
            == 1
        )
    title = lines[1][lines[1].index("Fix") :]
    assert len(lines[1]) <= 90 and title.endswith("…")
    kept = title[:-1]
    full = "Fix the flaky login test on CI and then rewrite the session cache so it never grows past its limit again"
    assert full.startswith(kept) and full[len(kept)] == " ", "cut after a whole word"


def test_find_pages_through_handoffs_without_status_rows(lifecycle_store: Path) -> None:
    seen: list[str] = []
    cursor: list[str] = []
    for _ in range(5):
        proc = run(["find", "--project", "p", "--limit", "1", *cursor], lifecycle_store)
        assert proc.returncode == 0, proc.stderr
        seen += [line.split()[2] for line in proc.stdout.splitlines()]
        more = re.search(r"more: --cursor (\S+)", proc.stderr)
        if not more:
            break
        cursor = ["--cursor", more.group(1)]
    assert seen == ["h-new", "h-old", "t1"], "each row once, none lost to the folding"


def test_find_lists_status_records_when_asked(lifecycle_store: Path) -> None:
    proc = run(["find", "--project", "p", "--type", "status"], lifecycle_store)
    rows = [line.split()[1:4] for line in proc.stdout.splitlines()]
    assert sorted(rows) == sorted(
        [
            ["status", "h-old#claimed", "claimed"],
            ["status", "h-old#published", "published"],
            ["status", "h-old#prepared", "prepared"],
        ]
    )


def test_find_json_keeps_its_shape_and_adds_statuses(lifecycle_store: Path) -> None:
    proc = run(["find", "--project", "p", "--json"], lifecycle_store)
    data = json.loads(proc.stdout)
    assert set(data) == {"records", "statuses", "next_cursor"}
    assert len(data["records"]) == 6 and data["next_cursor"] is None  # status records too
    assert data["statuses"] == {"h-new": "published", "h-old": "claimed"}


def test_find_says_when_nothing_matched(lifecycle_store: Path) -> None:
    proc = run(["find", "--project", "p", "zebra"], lifecycle_store)
    assert proc.returncode == 0
    assert proc.stdout == ""
    assert proc.stderr == "passdown: no records in project 'p' matching 'zebra'\n"
    as_json = run(["find", "--project", "p", "zebra", "--json"], lifecycle_store)
    assert json.loads(as_json.stdout)["records"] == [] and as_json.stderr == ""


# -- agents --------------------------------------------------------------------------------


def test_agents_table_keeps_columns_for_long_names() -> None:
    from passdown.cli._handoff_cmds import _agents_table

    rows = [
        {
            "name": "claude",
            "display_name": "Claude Code",
            "installed": True,
            "path": "/usr/bin/claude",
        },
        {
            "name": "a-very-long-plugin-agent-name",
            "display_name": "An Agent With A Long Name",
            "installed": False,
            "path": None,
        },
    ]
    lines = _agents_table(rows)
    assert lines[0].split() == ["NAME", "AGENT", "INSTALLED", "PATH"]
    for header in ("AGENT", "INSTALLED", "PATH"):
        start = lines[0].index(header)
        assert all(line[start - 2 : start] == "  " and line[start] != " " for line in lines), header
    assert lines[1].split()[-2:] == ["yes", "/usr/bin/claude"]
    assert lines[2].split()[-2:] == ["no", "-"]


def test_agents_json_installed_is_a_boolean_plus_a_redacted_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / GITHUB_TOKEN / "bin"
    bin_dir.mkdir(parents=True)
    program = bin_dir / "codex"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    proc = run(["agents", "--json"], tmp_path, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    agents = {a["name"]: a for a in json.loads(proc.stdout)}
    assert agents["codex"]["installed"] is True and agents["codex"]["path"].endswith("/bin/codex")
    assert GITHUB_TOKEN not in proc.stdout
    assert agents["cursor"]["installed"] is False and agents["cursor"]["path"] is None
    text = run(["agents"], tmp_path, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert GITHUB_TOKEN not in text.stdout
    codex_row = next(line for line in text.stdout.splitlines() if line.startswith("codex "))
    assert codex_row.split()[3] == "yes" and codex_row.endswith("/bin/codex")


# -- sessions and "no session found" -------------------------------------------------------


def test_sessions_all_with_no_sessions_names_the_agents_searched(tmp_path: Path) -> None:
    proc = run(["sessions", "--all"], tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr == f"passdown: no sessions found in any workspace {SEARCHED_ALL}\n"
    assert run(["sessions", "--all", "--json"], tmp_path).stdout.strip() == "[]"


def test_no_session_found_lists_the_agents_searched_briefly(tmp_path: Path) -> None:
    proc = run(["inspect"], tmp_path)
    assert proc.returncode == 3
    first = proc.stderr.splitlines()[0]
    assert first == f"passdown: error: no session found for {tmp_path} {SEARCHED_ALL}"
    assert " or " not in first
    one = run(["inspect", "--from", "codex"], tmp_path)
    assert (
        one.stderr.splitlines()[0] == f"passdown: error: no Codex CLI session found for {tmp_path}"
    )


def test_failed_export_creates_no_store_file(tmp_path: Path) -> None:
    data = Path(os.environ["PASSDOWN_DATA_DIR"])
    assert not data.exists()
    proc = run(["export"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert not data.exists(), "no data folder, no store.db for an export that found nothing"
    assert not (tmp_path / ".agent-handoff").exists()


# -- progress ------------------------------------------------------------------------------


@pytest.fixture
def large_codex_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The recorded Codex session grown past 2 MB (padding events passdown skips);
    returns (session file, workspace)."""
    session = CODEX.install(tmp_path / "codex", monkeypatch)
    padding = json.dumps(
        {"timestamp": "2026-01-01T00:00:00Z", "type": "padding", "payload": {"x": "y" * 10_000}}
    )
    with session.open("a") as handle:
        handle.write((padding + "\n") * 220)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return session, workspace


def run_on_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run passdown with stderr on a pseudo-terminal and stdout on a pipe; returns
    (exit code, stdout, everything the terminal received)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
        stdin=subprocess.DEVNULL,
    )
    os.close(follower)
    terminal = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the follower closed: the process is done with the terminal
                break
            if not chunk:
                break
            terminal += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    return proc.wait(timeout=60), out, terminal.decode(errors="replace")


def test_export_of_a_large_session_shows_progress_on_a_terminal(
    large_codex_session: tuple[Path, Path],
) -> None:
    session, workspace = large_codex_session
    code, out, terminal = run_on_terminal(
        ["export", "--from", "codex", "--session", str(session), "--workspace", ".", "--no-store"],
        workspace,
    )
    assert code == 0, terminal
    assert f"reading {session.name}" in terminal
    assert re.search(r"\d+(\.\d+)?/\d+(\.\d+)? MB", terminal), "bytes read of the file size"
    assert "wrote " in out and "reading" not in out


def test_no_progress_off_a_terminal_or_with_json(large_codex_session: tuple[Path, Path]) -> None:
    session, workspace = large_codex_session
    piped = run(
        ["export", "--from", "codex", "--session", str(session), "--workspace", ".", "--no-store"],
        workspace,
    )
    assert piped.returncode == 0, piped.stderr
    assert "reading" not in piped.stderr and "\x1b" not in piped.stderr + piped.stdout
    code, out, terminal = run_on_terminal(
        [
            "export",
            "--from",
            "codex",
            "--session",
            str(session),
            "--workspace",
            ".",
            "--no-store",
            "--json",
        ],
        workspace,
    )
    assert code == 0, terminal
    assert json.loads(out)["source"]["agent"] == "codex"
    assert "reading" not in terminal and "\x1b[" not in terminal


def test_find_shows_progress_only_on_a_terminal(lifecycle_store: Path) -> None:
    code, out, terminal = run_on_terminal(["find", "--project", "p"], lifecycle_store)
    assert code == 0 and len(out.splitlines()) == 3
    assert "searching p" in terminal
    code, out, terminal = run_on_terminal(["find", "--project", "p", "--json"], lifecycle_store)
    assert code == 0 and json.loads(out)["statuses"]
    assert "searching" not in terminal
    assert "searching" not in run(["find", "--project", "p"], lifecycle_store).stderr


def test_help_does_not_load_the_progress_library(tmp_path: Path) -> None:
    code = "import sys; from passdown.cli import main; main(['--help']); print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pydantic')))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.stdout.splitlines()[-1] == "[]"


def test_the_reading_bar_is_redrawn_by_the_reading_not_by_a_thread(tmp_path: Path) -> None:
    """rich redraws a bar from a thread of its own unless told not to; the bar changes
    only as bytes are read, so the reading redraws it."""
    from passdown._jsonl import read_progress
    from passdown.cli._progress import session_reading

    session = tmp_path / "big.jsonl"
    session.write_bytes(b"{}\n" * 1_000_000)  # a bar is shown past 1 MB
    before = threading.active_count()
    with session_reading(True):
        hook = read_progress.get()
        assert hook is not None
        hook(session, 1_500_000)  # draws the bar
        assert threading.active_count() == before
