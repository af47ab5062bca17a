"""The fuzz test of tests/test_fuzz_readers.py for Cursor's editor chats (`cursor-ide`):
the public-shape fixture (tests/cursor_ide_home.py) mutated at the SQLite level (values
of the wrong type, torn JSON, deleted rows, deep nesting, huge values; BLOB and TEXT
values both), or at the byte level (a truncated or bit-flipped database file, a
workspace.json torn), then exported and listed through the CLI, in process and in a
`python -m passdown` process. Each case asserts what the other readers' cases assert:
no traceback, a documented exit code, the planted secret in no output, and nothing
created, changed or removed outside `.agent-handoff` (SQLite's side files included)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import passdown._jsonl as jsonl
from cursor_ide_home import CursorHome, full_chat
from test_fuzz_readers import (
    CASE_TIMEOUT,
    CASES,
    DOCUMENTED_EXIT_CODES,
    SEED,
    SMALL_LINE_LIMIT,
    _deadline,
    _snapshot,
    fake_secret,
    in_process,
    m_flip,
    m_truncate,
    m_wrong_type,
    mutate_sqlite,
)

GLOBAL = ".config/Cursor/User/globalStorage/state.vscdb"
WORKSPACE_DB = ".config/Cursor/User/workspaceStorage/a1b2c3/state.vscdb"
WORKSPACE_JSON = ".config/Cursor/User/workspaceStorage/a1b2c3/workspace.json"


def in_a_process(argv: list[str]) -> tuple[int, str, str]:
    """`python -m passdown` with this tree first on the path, the rest kept (where a
    worktree's entry points are registered)."""
    src = str(Path(jsonl.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "passdown", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=CASE_TIMEOUT,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("cursor-base")
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", "/w/proj")
    cursor.add("a1b2c3", full_chat("/w/proj"), blob=False)  # TEXT values: JSON mutations
    second = full_chat("/w/proj", "c1d2e3f4-aaaa-4bbb-8ccc-000000000002")
    second.updated -= 1
    cursor.add("a1b2c3", second)  # BLOB values
    return home


def run_case(
    base: Path,
    case_seed: int,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    invoke: Callable[[list[str]], tuple[int, str, str]],
) -> str:
    rng = random.Random(case_seed)
    folder.mkdir()
    home = folder / "home"
    shutil.copytree(base, home)
    workspace = folder / "workspace"
    workspace.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("PASSDOWN_EDITOR_USER_DIRS", raising=False)
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(folder / "data"))
    monkeypatch.chdir(workspace)
    secret = fake_secret(rng)
    what = mutate_sqlite(rng, home / GLOBAL, secret)
    if rng.random() < 0.3:
        what += mutate_sqlite(rng, home / WORKSPACE_DB, secret)
    for rel in (GLOBAL, WORKSPACE_DB, WORKSPACE_JSON):
        if rng.random() < 0.12:
            path = home / rel
            mutation = rng.choice([m_truncate, m_flip, m_wrong_type])
            path.write_bytes(mutation(rng, path.read_bytes()))
            what.append(f"{mutation.__name__}:{path.name}")
    label = f"cursor-ide case seed {case_seed} ({', '.join(what)})"
    out_dir = workspace / ".agent-handoff"
    before = _snapshot(folder, out_dir)
    commands = [
        ["export", "--from", "cursor-ide", "--session", str(home / GLOBAL), "--workspace", ".",
         "--no-store", "--json"],
        ["export", "--from", "cursor-ide", "--session", "c1d2e3f4", "--workspace", ".",
         "--no-store", "--json"],
        ["sessions", "--from", "cursor-ide", "--all", "--json"],
    ]  # fmt: skip
    allowed = DOCUMENTED_EXIT_CODES | {4}  # the id prefix names both chats
    for argv in commands:
        with _deadline(CASE_TIMEOUT, f"{label}: passdown {argv[0]}"):
            code, out, err = invoke(argv)
        shown = out + err
        log = os.environ.get("PASSDOWN_FUZZ_LOG")  # a file to list every case's outcome in
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{label}\t{argv[0]}\t{code}\t{err.strip()[-300:]!r}\n")
        assert code in allowed, f"{label}: exit {code}: {err[-2000:]}"
        assert "internal error" not in err and "Traceback" not in shown, f"{label}: {err[-2000:]}"
        assert secret not in shown, f"{label}: secret in the output of {argv[0]}"
    for path in out_dir.rglob("*") if out_dir.exists() else ():
        if path.is_file():
            assert secret not in path.read_bytes().decode("utf-8", "replace"), label
    after = _snapshot(folder, out_dir)
    after.pop("data", None)
    changed = sorted(set(before.items()) ^ set(after.items()))
    changed = [c for c in changed if not c[0].startswith("data")]
    assert not changed, f"{label}: files changed outside .agent-handoff: {changed[:5]}"
    return label


def test_fuzzed_cursor_chats_never_crash_leak_or_write_outside(
    base: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", SMALL_LINE_LIMIT)
    monkeypatch.delenv("PASSDOWN_DEBUG", raising=False)
    for case in range(CASES):
        case_seed = random.Random(SEED * 1000 + 24 + case * 7919).randrange(2**32)
        run_case(base, case_seed, tmp_path / f"case{case}", monkeypatch, in_process(capsys))


def test_fuzzed_cursor_chats_through_the_cli_process(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case_seed = random.Random(SEED + 24).randrange(2**32)
    run_case(base, case_seed, tmp_path / "case", monkeypatch, in_a_process)


def test_unmutated_base_exports_the_chat(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base the mutations start from is a full chat: a fuzz run starts from content."""
    home = tmp_path / "home"
    shutil.copytree(base, home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    code, _out, _err = in_process(capsys)(
        ["export", "--from", "cursor-ide", "--session", str(home / GLOBAL), "--workspace", ".",
         "--no-store", "--json"]
    )  # fmt: skip
    assert code == 0
    assert (
        "Add a --json flag to the report command"
        in (tmp_path / ".agent-handoff" / "HANDOFF.md").read_text()
    )
