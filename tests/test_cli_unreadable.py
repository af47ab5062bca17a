"""A session file that cannot be read (exit 5) creates no store file, through every door
that shares the export path: `export`, `switch`, a hook, `HandoffCoordinator` (issue 14).

The tests run as root, for whom `chmod 000` changes nothing, so the file is made
unreadable where passdown opens it: `os.open` of that one path fails with EACCES, what
a normal user meets on a mode-000 file (every session read, the checkpointed one
included, goes through `os.open`). A readable control run proves the same setup does
create the store, so the assertions can fail.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from passdown.cli import main
from passdown.errors import SessionReadError
from recorded import scenarios


def recorded_session(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    recorded = next(r for r in scenarios(agent) if r.scenario == "full")
    return recorded.install(tmp_path / f"{agent}-home", monkeypatch)


def make_unreadable(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open: Callable[..., int] = os.open

    def guarded(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(name) == os.fspath(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(name))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


def store_files() -> list[Path]:
    return sorted(Path(os.environ["PASSDOWN_DATA_DIR"]).glob("store.db*"))


@pytest.fixture
def unreadable_claude(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    session = recorded_session("claude", tmp_path, monkeypatch)
    make_unreadable(session, monkeypatch)
    return session


DOORS = {
    "export": ["export"],
    "switch": ["switch", "--to", "codex"],
    "switch-dry-run": ["switch", "--to", "codex", "--dry-run"],
}


@pytest.mark.parametrize("agent", ["claude", "codex", "copilot"])
@pytest.mark.parametrize("door", list(DOORS))
def test_unreadable_session_exits_5_and_creates_no_store_file(
    agent: str,
    door: str,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = recorded_session(agent, tmp_path, monkeypatch)
    make_unreadable(session, monkeypatch)
    args = [*DOORS[door], "--from", agent, "--session", str(session), "--workspace", "."]
    assert main(args) == 5
    err = capsys.readouterr().err
    assert err.startswith(f"passdown: error: cannot read {session}") and "Permission denied" in err
    assert store_files() == [], "a store file was created"
    assert not (workspace / ".agent-handoff").exists()


def test_the_same_export_readable_does_create_the_store(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = recorded_session("codex", tmp_path, monkeypatch)
    assert main(["export", "--from", "codex", "--session", str(session), "--workspace", "."]) == 0
    assert [p.name for p in store_files()][:1] == ["store.db"]


def test_coordinator_and_doors_create_no_store_file(
    workspace: Path, unreadable_claude: Path
) -> None:
    from passdown.coordinator import HandoffCoordinator
    from passdown.coordinator import _doors as doors

    session = unreadable_claude
    with (
        HandoffCoordinator(workspace) as coordinator,
        pytest.raises(SessionReadError, match="Permission denied"),
    ):
        coordinator.prepare_handoff_sync("claude", session=str(session), require_session=True)
    request = doors.HandoffRequest(source="claude", session=str(session), workspace=workspace)
    with pytest.raises(SessionReadError):
        doors.export(request, workspace)
    assert store_files() == []


def test_hook_on_an_unreadable_session_logs_and_creates_no_store_file(
    workspace: Path, unreadable_claude: Path
) -> None:
    from passdown.integrations._hooks import run_hook

    session = unreadable_claude
    payload = {
        "hook_event_name": "SessionEnd",
        "session_id": session.stem,
        "transcript_path": str(session),
        "cwd": str(workspace),
    }
    assert run_hook("claude", [], json.dumps(payload)) == 0  # a hook never fails
    log = Path(os.environ["PASSDOWN_DATA_DIR"]) / "logs" / "hooks.log"
    assert "Permission denied" in log.read_text()
    assert store_files() == []


@pytest.mark.parametrize("agent", ["codex", "copilot"])
def test_a_failed_export_creates_no_checkpoints_folder(
    agent: str,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: the checkpoint's folder was made before the session was opened, so an
    unreadable session left an empty `checkpoints/` in the data folder. It now comes
    with the first checkpoint written (0700, the file 0600)."""
    data = Path(os.environ["PASSDOWN_DATA_DIR"])
    assert main(["export", "--from", agent]) == 3  # no session at all
    session = recorded_session(agent, tmp_path, monkeypatch)
    args = ["export", "--from", agent, "--session", str(session), "--workspace", "."]
    with monkeypatch.context() as denied:
        make_unreadable(session, denied)
        assert main(args) == 5
    assert not data.exists(), sorted(p.name for p in data.rglob("*"))
    capsys.readouterr()
    assert main(args) == 0  # readable again: the checkpoint and its folder appear
    checkpoints = data / "checkpoints"
    assert checkpoints.stat().st_mode & 0o777 == 0o700
    [saved] = checkpoints.glob(f"{agent}-*.msgpack")
    assert saved.stat().st_mode & 0o777 == 0o600
