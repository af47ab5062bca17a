"""Issue 21, through the CLI in a subprocess:

- `inspect` and `switch --dry-run` write nothing anywhere (no checkpoint, no store
  file, no folder);
- `switch --dry-run` to an agent that is not installed exits 6, as the real switch does;
- a handoff too large for the store exits 15 (never "ok" with a warning);
- `--workspace DIR` works like `git -C DIR`, and a DIR that does not exist is exit 2
  with or without `--session`;
- a `--session` path outside an agent's store is refused with a hint naming the
  variable that points passdown at another store;
- `retrieve` takes an id prefix (an ambiguous one is exit 4);
- `sessions` prints a header, as `agents` does.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from test_doors import Session, passdown, repo, simple_session

SID = "c1c1c1c1-0000-4000-8000-0000000000c1"


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under `folder` (folders as None), for before/after comparisons."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


def data_dir() -> Path:
    return Path(os.environ["PASSDOWN_DATA_DIR"])


def path_without(tmp_path: Path, *programs: str) -> dict[str, str]:
    """An environment whose PATH holds git only (and `programs`, as stubs)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "git").exists():
        os.symlink(shutil.which("git") or "/usr/bin/git", bin_dir / "git")
    for program in programs:
        stub = bin_dir / program
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    return {**os.environ, "PATH": str(bin_dir)}


# -- inspect and dry runs write nothing --------------------------------------------------


def test_inspect_and_a_dry_run_write_nothing_anywhere(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    simple_session(SID, ws)
    home = Path(os.environ["HOME"])
    before_home, before_ws = tree(home), tree(ws)
    assert not data_dir().exists()

    proc = passdown(["inspect", "--from", "claude"], ws)
    assert proc.returncode == 0, proc.stderr
    assert "Add a usage section" in proc.stdout  # it did read the session
    env = path_without(tmp_path, "codex")
    proc = passdown(["switch", "--from", "claude", "--to", "codex", "--dry-run"], ws, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("codex ")

    assert not data_dir().exists(), f"wrote into the data folder: {tree(data_dir())}"
    assert tree(ws) == before_ws, "wrote into the workspace"
    assert tree(home) == before_home, "wrote under HOME"

    # the same session exported does write a checkpoint: the check above could fail
    assert passdown(["export", "--from", "claude"], ws).returncode == 0
    assert list((data_dir() / "checkpoints").iterdir())


def test_a_dry_run_to_an_agent_not_installed_fails_as_the_switch_does(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    simple_session(SID, ws)
    env = path_without(tmp_path)
    dry = passdown(["switch", "--from", "claude", "--to", "codex", "--dry-run", "--json"], ws, env)
    assert dry.returncode == 6, dry.stderr
    assert dry.stdout == ""
    assert not (ws / ".agent-handoff").exists() and not data_dir().exists()
    real = passdown(["switch", "--from", "claude", "--to", "codex", "--json"], ws, env)
    assert real.returncode == 6, real.stderr
    assert json.loads(dry.stderr) == json.loads(real.stderr)  # the same error, the same hint


# -- a handoff too large for the store ---------------------------------------------------------


def test_a_handoff_too_large_for_the_store_exits_15_and_changes_nothing(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    simple_session(SID, ws)
    first = passdown(["export", "--from", "claude", "--json"], ws)
    assert first.returncode == 0, first.stderr
    files = tree(ws / ".agent-handoff")

    (ws / "notes.txt").write_text("news\n")  # the workspace moved on: a new handoff to store
    env = {**os.environ, "PASSDOWN_MAX_RECORD_BYTES": "2048"}
    proc = passdown(["export", "--from", "claude"], ws, env)
    assert proc.returncode == 15, proc.stderr
    assert "too large for the store" in proc.stderr and "2,048" in proc.stderr
    assert "--no-store" in proc.stderr  # the hint says how to get the files anyway
    assert "warning" not in proc.stderr
    assert tree(ws / ".agent-handoff") == files

    found = passdown(["find", "--type", "handoff", "--json"], ws)
    records = json.loads(found.stdout)["records"]
    assert [r["id"] for r in records] == [json.loads(first.stdout)["record_id"]]

    # --no-store writes the files without the store, as the hint says
    proc = passdown(["export", "--from", "claude", "--no-store"], ws, env)
    assert proc.returncode == 0, proc.stderr
    assert tree(ws / ".agent-handoff") != files


# -- --workspace is git -C -------------------------------------------------------------------


def test_workspace_looks_for_sessions_there_like_git_c(tmp_path: Path) -> None:
    there, here = repo(tmp_path / "there"), repo(tmp_path / "here")
    simple_session(SID, there)
    assert passdown(["inspect", "--from", "claude"], here).returncode == 3  # none here

    proc = passdown(["inspect", "--from", "claude", "--workspace", str(there), "--json"], here)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"]["session_id"] == SID
    proc = passdown(["export", "--workspace", str(there)], here)
    assert proc.returncode == 0, proc.stderr
    assert (there / ".agent-handoff" / "HANDOFF.md").is_file()
    assert not (here / ".agent-handoff").exists()
    proc = passdown(["sessions", "--from", "claude"], here)
    assert SID not in proc.stdout  # only the flag moves passdown, not the export


@pytest.mark.parametrize("with_session", [False, True])
@pytest.mark.parametrize("command", ["inspect", "export", "switch"])
def test_a_workspace_that_does_not_exist_is_exit_2(
    command: str, with_session: bool, tmp_path: Path
) -> None:
    ws = repo(tmp_path / "ws")  # no session here: the folder is checked before any lookup
    missing = tmp_path / "no-such-folder"
    args = [command, "--workspace", str(missing), *(["--session", SID] if with_session else [])]
    args += ["--to", "codex"] if command == "switch" else []
    proc = passdown(args, ws)
    assert proc.returncode == 2, proc.stderr
    assert f"--workspace {missing}: no such folder" in proc.stderr
    assert not missing.exists() and not (ws / ".agent-handoff").exists()
    assert not data_dir().exists()


# -- a --session path outside the store ---------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "variable"),
    [("claude", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME"), ("gemini", "GEMINI_CLI_HOME")],
)
def test_a_session_outside_the_store_names_the_variable_that_moves_it(
    source: str, variable: str, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere" / "session.jsonl"
    outside.parent.mkdir()
    outside.write_text("{}\n")
    ws = repo(tmp_path / "ws")
    proc = passdown(["export", "--from", source, "--session", str(outside)], ws)
    assert proc.returncode == 2, proc.stderr
    assert "outside" in proc.stderr and f"${variable}" in proc.stderr


def test_a_session_outside_every_store_lists_the_variables(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "session.jsonl"
    outside.parent.mkdir()
    outside.write_text("{}\n")
    proc = passdown(["inspect", "--session", str(outside)], repo(tmp_path / "ws"))
    assert proc.returncode == 2, proc.stderr
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME"):
        assert f"${variable}" in proc.stderr


# -- retrieve by prefix ---------------------------------------------------------------------


def test_retrieve_takes_an_id_prefix(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    Session(SID, ws).user("First request").assistant("Done.").write()
    first = json.loads(passdown(["export", "--json"], ws).stdout)["record_id"]
    Session(SID, ws).user("First request").assistant("Done.").user("More").write()
    second = json.loads(passdown(["export", "--json"], ws).stdout)["record_id"]
    assert first != second

    # `handoff-<time>-<hex>`: the prefix up to the first hex digits names one handoff
    # (its own `#published` status record does not make it ambiguous)
    prefix = first[: len("handoff-20260101T000000-") + 4]
    proc = passdown(["retrieve", prefix], ws)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["id"] == first
    proc = passdown(["retrieve", f"{first}#superseded"], ws)  # a full id still works
    assert proc.returncode == 0, proc.stderr

    proc = passdown(["retrieve", "handoff-"], ws)
    assert proc.returncode == 4, proc.stderr
    assert "matches 2 records" in proc.stderr and first in proc.stderr and second in proc.stderr
    proc = passdown(["retrieve", "nothing-like-it"], ws)
    assert proc.returncode == 10, proc.stderr


# -- sessions has a header -----------------------------------------------------------------


def test_sessions_prints_a_header_like_agents(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    simple_session(SID, ws)
    proc = passdown(["sessions"], ws)
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()
    assert header.split() == ["AGENT", "UPDATED", "SESSION", "CWD"]
    assert row.split()[0] == "claude" and row.split()[2] == SID and row.endswith(str(ws))
    # the columns line up under their heading
    assert row.index(SID) == header.index("SESSION")
    assert row.index(str(ws)) == header.index("CWD")
    assert passdown(["agents"], ws).stdout.split()[:4] == ["NAME", "AGENT", "INSTALLED", "PATH"]
