"""Exporting again (issue 30): a re-export of an unchanged session adds no version and
keeps the active handoff's status; `--out` leaves the user's folder's mode alone and
names what it could not create."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from passdown.cli import main

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}
LAST_UUID = "e7a65205-6251-4c8b-86cd-73082d6c8033"  # the example session's last message


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, env={**os.environ, **GIT_ENV}, check=True)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "greeter"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "greet.py").write_text("def greet():\n    return 'hi'\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(ws)
    return ws


@pytest.fixture
def session(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example Claude Code session shipped with passdown, laid out for `workspace`."""
    from passdown._demo import _lay_out_session

    claude_home = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home))
    return _lay_out_session(claude_home, workspace)


def export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["export", "--from", "claude", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def handoffs(capsys: pytest.CaptureFixture[str]) -> tuple[list[str], dict[str, str]]:
    """The ids of the project's handoff records, newest first, and their statuses."""
    assert main(["find", "--type", "handoff", "--json", "--limit", "100"]) == 0
    found = json.loads(capsys.readouterr().out)
    return [r["id"] for r in found["records"]], found["statuses"]


def continue_session(session: Path) -> None:
    """One more assistant message in the session (a session that moved on)."""
    record = {
        "parentUuid": LAST_UUID,
        "isSidechain": False,
        "type": "assistant",
        "uuid": "0f5d5b1e-0000-4000-8000-0000000000aa",
        "timestamp": "2026-11-29T21:20:00.000Z",
        "cwd": str(Path.cwd()),
        "sessionId": session.stem,
        "version": "2.1.197",
        "message": {
            "id": "msg_000000000000000000000010",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": [{"type": "text", "text": "The test for shout() is written too."}],
            "stop_reason": "end_turn",
        },
    }
    with session.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


@pytest.mark.usefixtures("session")
def test_reexport_of_an_unchanged_session_adds_no_version(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = export(capsys)
    assert code == 0, out
    (first,), _ = handoffs(capsys)
    assert f"stored record {first}" in out
    for _ in range(3):
        code, out, err = export(capsys)
        assert code == 0, err
        assert out.startswith(f"unchanged since {first}"), out
        assert "stored record" not in out
    ids, statuses = handoffs(capsys)
    assert ids == [first], "one record, however often the unchanged session is exported"
    assert statuses == {first: "published"}
    code, out, _ = export(capsys, "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["unchanged_since"] == first and summary["record_id"] == first
    assert summary["handoff_id"] == first


def test_unchanged_export_keeps_a_claimed_handoff_claimed(
    session: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from passdown.coordinator import HandoffCoordinator

    assert export(capsys)[0] == 0
    (first,), _ = handoffs(capsys)
    with HandoffCoordinator(workspace) as coordinator:
        coordinator.claim(first, by="codex")
    code, out, _ = export(capsys)
    assert code == 0 and out.startswith(f"unchanged since {first}")
    ids, statuses = handoffs(capsys)
    assert ids == [first] and statuses[first] == "claimed"


@pytest.mark.usefixtures("session")
def test_unchanged_export_writes_missing_files_again(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert export(capsys)[0] == 0
    (first,), _ = handoffs(capsys)
    folder = workspace / ".agent-handoff"
    (folder / "HANDOFF.md").unlink()
    (folder / "handoff.json").unlink()
    code, out, _ = export(capsys)
    assert code == 0 and out.startswith(f"unchanged since {first}")
    assert f"wrote {folder / 'HANDOFF.md'}" in out
    assert json.loads((folder / "handoff.json").read_text())["id"] == first
    assert first in (folder / "HANDOFF.md").read_text()
    code, out, _ = export(capsys)  # now they are there: kept as they are
    assert f"kept {folder / 'HANDOFF.md'}" in out
    assert handoffs(capsys)[0] == [first]


def test_a_session_or_workspace_that_moved_on_adds_a_version(
    session: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert export(capsys)[0] == 0
    continue_session(session)
    code, out, _ = export(capsys)
    assert code == 0 and "unchanged" not in out
    assert len(handoffs(capsys)[0]) == 2
    assert export(capsys)[1].startswith("unchanged since")
    (workspace / "greet.py").write_text("def greet():\n    return 'HI'\n")  # dirty now
    code, out, _ = export(capsys)
    assert code == 0 and "unchanged" not in out
    ids, statuses = handoffs(capsys)
    assert len(ids) == 3 and statuses[ids[0]] == "published"
    assert export(capsys)[1].startswith(f"unchanged since {ids[0]}")


@pytest.mark.usefixtures("session")
def test_out_leaves_an_existing_folder_as_it_is_and_says_it_is_open(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    code, _, err = export(capsys, "--out", str(shared), "--no-store")
    assert code == 0, err
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755, "not passdown's folder: left as it is"
    for name in ("HANDOFF.md", "handoff.json"):
        assert stat.S_IMODE((shared / name).stat().st_mode) == 0o600
    warned = [line for line in err.splitlines() if "readable by others" in line]
    assert len(warned) == 1 and str(shared) in warned[0] and "0755" in warned[0]
    assert err.startswith("passdown: warning: ")


@pytest.mark.usefixtures("session")
def test_out_dot_keeps_the_project_root_mode(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace.chmod(0o755)
    code, _, err = export(capsys, "--out", ".")
    assert code == 0, err
    assert stat.S_IMODE(workspace.stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace / "HANDOFF.md").stat().st_mode) == 0o600


@pytest.mark.usefixtures("session")
def test_folders_passdown_creates_are_private(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new" / "handoff"
    code, _, err = export(capsys, "--out", str(out), "--no-store")
    assert code == 0 and "readable by others" not in err
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert stat.S_IMODE(out.parent.stat().st_mode) == 0o700
    own = workspace / ".agent-handoff"
    own.mkdir(mode=0o755)
    own.chmod(0o755)
    assert export(capsys, "--no-store")[0] == 0
    assert stat.S_IMODE(own.stat().st_mode) == 0o700, "passdown's own folder is kept private"


@pytest.mark.usefixtures("session")
def test_out_under_a_file_says_what_it_could_not_create(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    code, _, err = export(capsys, "--out", str(notes / "sub"), "--no-store")
    assert code == 8
    first = err.splitlines()[0]
    assert first == (
        f"passdown: error: cannot create folder {notes / 'sub'}: {notes} is a file, not a folder"
    )
    assert "cannot read" not in err
    assert notes.read_text() == "mine\n"
