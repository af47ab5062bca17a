"""A session whose first records are larger than the head discovery reads (a 300 KB
paste in the first prompt) is found, listed with its workspace and handed off; one that
still cannot be placed is listed with its workspace unknown, and when it is the newest,
`export` exits 3 naming it instead of handing off an older session of the workspace.

Sessions are laid out as the real CLIs write them: for Claude Code the first prompt
goes into a queue record and into the first user record, whose `cwd` comes after the
message (so a 300 KB prompt puts the first `cwd` about 600 KB into the file).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from passdown.agents import _record_fields
from passdown.agents.claude import encode_cwd
from passdown.cli import main

BIG = 300 * 1024  # the pasted first prompt


def claude_session(home: Path, cwd: Path, session_id: str, task: str, age: float) -> Path:
    """A Claude Code session of `cwd` whose first prompt is `task`, modified `age`
    seconds ago, in the record layout of Claude Code 2.1."""
    folder = home / ".claude" / "projects" / encode_cwd(str(cwd))
    folder.mkdir(parents=True, exist_ok=True)
    stamp = "2026-12-01T10:00:00.000Z"
    user, reply = f"{session_id[:8]}-0000-4000-8000-000000000001", f"{session_id[:8]}-0002"
    records: list[dict[str, Any]] = [
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": stamp,
            "sessionId": session_id,
            "content": task,
        },
        {"type": "queue-operation", "operation": "dequeue", "timestamp": stamp},
        {
            "parentUuid": None,
            "isSidechain": False,
            "type": "user",
            "message": {"role": "user", "content": task},
            "uuid": user,
            "timestamp": stamp,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": session_id,
            "version": "2.1.197",
        },
        {
            "parentUuid": user,
            "isSidechain": False,
            "type": "assistant",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Working on it."}],
                "stop_reason": "end_turn",
            },
            "uuid": reply,
            "timestamp": stamp,
            "cwd": str(cwd),
            "sessionId": session_id,
        },
    ]
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    when = time.time() - age
    os.utime(path, (when, when))
    return path


def big_task(label: str) -> str:
    """A first prompt of about 300 KB that starts with `label`."""
    line = "traceback line: File 'app.py', line 12, in main\n"
    return f"{label}\n" + line * (BIG // len(line))


OLD_ID = "0a0a0a0a-0000-4000-8000-000000000000"
NEW_ID = "0b0b0b0b-0000-4000-8000-000000000000"


@pytest.fixture
def home(isolated_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):  # Qwen Code's store: under HOME
        monkeypatch.delenv(var, raising=False)
    return isolated_homes


@pytest.fixture
def two_sessions(home: Path, workspace: Path) -> tuple[Path, Path]:
    """An older session with a short prompt and a newer one with a 300 KB prompt."""
    old = claude_session(home, workspace, OLD_ID, "OLDER TASK: rename greet()", age=600)
    new = claude_session(home, workspace, NEW_ID, big_task("NEWER TASK: fix the crash"), age=10)
    assert new.stat().st_size > 2 * BIG  # its first cwd lies past the 256 KiB head
    return old, new


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err, err
    return code, out, err


def test_sessions_lists_the_big_session_with_its_workspace(
    two_sessions: tuple[Path, Path], workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "sessions", "--from", "claude", "--json")
    assert code == 0
    listed = {row["session_id"]: row for row in json.loads(out)}
    assert set(listed) == {OLD_ID, NEW_ID}
    assert listed[NEW_ID]["cwd"] == str(workspace)
    assert listed[NEW_ID]["unplaced"] is None
    # the table too: newest first, its workspace shown, not "?"
    code, out, _ = run(capsys, "sessions", "--from", "claude")
    rows = out.splitlines()[1:]
    assert NEW_ID in rows[0] and rows[0].endswith(str(workspace))


def test_export_hands_off_the_newer_big_session_not_an_older_one(
    two_sessions: tuple[Path, Path],
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run(
        capsys,
        "export",
        "--from",
        "claude",
        "--workspace",
        str(workspace),
        "--out",
        str(out_dir),
        "--no-store",
        "--json",
    )
    assert code == 0, err
    handoff = json.loads((out_dir / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["source"]["session_id"] == NEW_ID
    markdown = (out_dir / "HANDOFF.md").read_text(encoding="utf-8")
    assert "NEWER TASK: fix the crash" in markdown
    assert "OLDER TASK" not in markdown


def test_the_session_is_placed_with_every_record_far_past_the_head(
    home: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first record of 3 MB with its cwd at its very end, after nested content that
    holds a `cwd` key of another folder: the record's own, top-level cwd places it."""
    folder = home / ".claude" / "projects" / encode_cwd(str(workspace))
    folder.mkdir(parents=True)
    blocks = [{"type": "text", "text": "x" * 1000, "cwd": "/elsewhere"}] * 3000
    record = {"type": "user", "message": {"role": "user", "content": blocks}}
    record |= {"uuid": "u1", "parentUuid": None, "cwd": str(workspace), "timestamp": "t"}
    (folder / f"{NEW_ID}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "sessions", "--from", "claude", "--json")
    assert code == 0
    [row] = json.loads(out)
    assert row["cwd"] == str(workspace)


@pytest.fixture
def unplaceable(
    two_sessions: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """The newer session cannot be placed: discovery reads no further than 200 KB,
    before any record names its cwd."""
    monkeypatch.setattr(_record_fields, "MAX_SCAN_BYTES", 200 * 1024)
    return two_sessions


def test_an_unplaceable_newest_session_is_exit_3_naming_it(
    unplaceable: tuple[Path, Path],
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, new = unplaceable
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys, "export", "--from", "claude", "--workspace", str(workspace), "--out", str(out_dir)
    )
    assert code == 3
    assert str(new) in err
    assert "--session" in err  # the way out: name the session to hand off
    # nothing older was handed off in its place
    assert not out_dir.exists()
    assert not (workspace / ".agent-handoff").exists()
    code, out, _ = run(capsys, "find", "--json")
    assert OLD_ID not in out


def test_an_unplaceable_session_is_listed_with_its_workspace_unknown(
    unplaceable: tuple[Path, Path], workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, new = unplaceable
    code, out, err = run(capsys, "sessions", "--from", "claude", "--json")
    assert code == 0
    listed = {row["session_id"]: row for row in json.loads(out)}
    assert set(listed) == {OLD_ID, NEW_ID}
    assert listed[NEW_ID]["cwd"] is None
    assert "nothing in its first 200 KB names its working directory" in listed[NEW_ID]["unplaced"]
    assert listed[OLD_ID]["cwd"] == str(workspace)
    assert f"workspace unknown for {new}" in err
    code, out, _ = run(capsys, "sessions", "--from", "claude")
    rows = out.splitlines()[1:]
    assert NEW_ID in rows[0] and rows[0].endswith("?")


def test_the_unplaceable_session_is_still_handed_off_by_name(
    unplaceable: tuple[Path, Path],
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, new = unplaceable
    out_dir = tmp_path / "out"
    code, _, err = run(
        capsys,
        "export",
        "--from",
        "claude",
        "--session",
        str(new),
        "--workspace",
        str(workspace),
        "--out",
        str(out_dir),
        "--no-store",
    )
    assert code == 0, err
    handoff = json.loads((out_dir / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["source"]["session_id"] == NEW_ID


def test_an_older_unplaceable_session_does_not_block_the_newest(
    home: Path,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    claude_session(home, workspace, OLD_ID, big_task("OLDER TASK: big"), age=600)
    claude_session(home, workspace, NEW_ID, "NEWER TASK: small", age=10)
    monkeypatch.setattr(_record_fields, "MAX_SCAN_BYTES", 200 * 1024)
    out_dir = tmp_path / "out"
    code, _, err = run(
        capsys, "export", "--from", "claude", "--out", str(out_dir), "--no-store", "--json"
    )
    assert code == 0, err
    handoff = json.loads((out_dir / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["source"]["session_id"] == NEW_ID


# -- Qwen Code: the first record is the first prompt, its cwd before the message -------
def qwen_session(home: Path, cwd: Path, session_id: str, task: str, age: float) -> Path:
    """A Qwen Code 0.24 session of `cwd` whose first prompt is `task` (under ~/.qwen)."""
    from passdown.agents.qwen import encode_project

    chats = home / ".qwen" / "projects" / encode_project(str(cwd)) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    common = {"sessionId": session_id, "timestamp": "2026-12-01T10:00:00.000Z"}
    common |= {"cwd": str(cwd), "version": "0.24.4"}
    records = [
        {"uuid": "u1", "parentUuid": None, **common, "type": "user"}
        | {"message": {"role": "user", "parts": [{"text": task}]}},
        {"uuid": "u2", "parentUuid": "u1", **common, "type": "assistant"}
        | {"message": {"role": "model", "parts": [{"text": "Working on it."}]}},
    ]
    path = chats / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    when = time.time() - age
    os.utime(path, (when, when))
    return path


def test_qwen_hands_off_the_newer_big_session_and_lists_it(
    home: Path, workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qwen_session(home, workspace, OLD_ID, "OLDER TASK: rename greet()", age=600)
    qwen_session(home, workspace, NEW_ID, big_task("NEWER TASK: fix the crash"), age=10)
    code, out, _ = run(capsys, "sessions", "--from", "qwen", "--json")
    listed = {row["session_id"]: row["cwd"] for row in json.loads(out)}
    assert listed == {OLD_ID: str(workspace), NEW_ID: str(workspace)}
    out_dir = tmp_path / "out"
    code, _, err = run(
        capsys, "export", "--from", "qwen", "--out", str(out_dir), "--no-store", "--json"
    )
    assert code == 0, err
    handoff = json.loads((out_dir / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["source"]["session_id"] == NEW_ID
    assert "NEWER TASK: fix the crash" in (out_dir / "HANDOFF.md").read_text(encoding="utf-8")


def test_qwen_unplaceable_newest_session_is_exit_3_naming_it(
    home: Path,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    qwen_session(home, workspace, OLD_ID, "OLDER TASK: rename greet()", age=600)
    new = qwen_session(home, workspace, NEW_ID, big_task("NEWER"), age=10)
    # no record names its cwd within the 200 KB discovery reads here (none does at all)
    text = new.read_text(encoding="utf-8")
    new.write_text(text.replace(f'"cwd": "{workspace}", ', ""), encoding="utf-8")
    monkeypatch.setattr(_record_fields, "MAX_SCAN_BYTES", 200 * 1024)
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "export", "--from", "qwen", "--out", str(out_dir))
    assert code == 3 and str(new) in err
    assert not out_dir.exists()


# -- Auggie: one document per session, the first request (twice) before the cwd -------
def auggie_session(home: Path, cwd: Path, session_id: str, task: str, age: float) -> Path:
    """An Auggie 0.36 session document of `cwd` whose first request is `task`."""
    folder = home / ".augment" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    terminal = {"terminal_id": 0, "current_working_directory": str(cwd)}
    ide = {"id": 2, "type": 4, "ide_state_node": {"current_terminal": terminal}}
    exchange = {
        "request_message": task,
        "response_text": "Working on it.",
        "request_id": "r1",
        "request_nodes": [{"id": 1, "type": 0, "text_node": {"content": task}}, ide],
        "response_nodes": [{"id": 1, "type": 0, "content": "Working on it."}],
    }
    doc = {
        "sessionId": session_id,
        "created": "2026-12-01T10:00:00.000Z",
        "modified": "2026-12-01T10:05:00.000Z",
        "chatHistory": [{"exchange": exchange, "completed": True, "sequenceId": 1}],
    }
    path = folder / f"{session_id}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    when = time.time() - age
    os.utime(path, (when, when))
    return path


@pytest.fixture
def auggie_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PASSDOWN_AUGGIE_DIR", raising=False)  # Auggie's store: ~/.augment
    return home


def huge_task(label: str) -> str:
    """A first request of 2.5 MB: written twice before the cwd, past 4 MB."""
    return label + "\n" + "y" * (5 * 1024 * 1024 // 2)


def test_auggie_hands_off_the_newer_session_whose_cwd_lies_past_4_mb(
    auggie_home: Path, workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    auggie_session(auggie_home, workspace, OLD_ID, "OLDER TASK: rename greet()", age=600)
    auggie_session(auggie_home, workspace, NEW_ID, huge_task("NEWER TASK: fix the crash"), age=10)
    code, out, _ = run(capsys, "sessions", "--from", "auggie", "--json")
    listed = {row["session_id"]: row["cwd"] for row in json.loads(out)}
    assert listed == {OLD_ID: str(workspace), NEW_ID: str(workspace)}
    out_dir = tmp_path / "out"
    code, _, err = run(
        capsys, "export", "--from", "auggie", "--out", str(out_dir), "--no-store", "--json"
    )
    assert code == 0, err
    handoff = json.loads((out_dir / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["source"]["session_id"] == NEW_ID


def test_auggie_unplaceable_newest_session_is_exit_3_naming_it(
    auggie_home: Path,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    auggie_session(auggie_home, workspace, OLD_ID, "OLDER TASK: rename greet()", age=600)
    new = auggie_session(auggie_home, workspace, NEW_ID, big_task("NEWER"), age=10)
    monkeypatch.setattr(_record_fields, "MAX_SCAN_BYTES", 200 * 1024)
    code, out, err = run(capsys, "sessions", "--from", "auggie", "--json")
    listed = {row["session_id"]: row["cwd"] for row in json.loads(out)}
    assert listed == {OLD_ID: str(workspace), NEW_ID: None}
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "export", "--from", "auggie", "--out", str(out_dir))
    assert code == 3 and str(new) in err
    assert not out_dir.exists()


# -- Codex: the session_meta record comes first, read whole up to a bound --------------
def test_codex_unplaceable_newest_rollout_is_exit_3_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rollout whose first record (session_meta, with the instructions) runs past what
    discovery reads of it names no workspace: with no folder per workspace it is listed
    everywhere with its workspace unknown, and when it is the newest, export says so."""
    from passdown.agents import codex
    from test_unreadable_discovery import newer_copy, relocate

    older, workspace = relocate("codex", tmp_path, monkeypatch)
    newer = newer_copy(older)
    first, rest = newer.read_bytes().split(b"\n", 1)
    padded = first.replace(
        b'"base_instructions":{"text":"', b'"base_instructions":{"text":"' + b"z" * BIG, 1
    )
    assert len(padded) > BIG
    newer.write_bytes(padded + b"\n" + rest)
    os.utime(newer, (time.time(), time.time()))
    monkeypatch.setattr(codex, "_FIRST_LINE_LIMIT", 128 * 1024)
    code, out, err = run(capsys, "sessions", "--from", "codex", "--json")
    listed = {row["path"]: row["cwd"] for row in json.loads(out)}
    assert listed == {str(older): str(workspace), str(newer): None}
    code, _, err = run(capsys, "export", "--from", "codex", "--out", str(tmp_path / "out"))
    assert code == 3 and str(newer) in err
    assert not (tmp_path / "out").exists()


# -- Cline CLI: the first prompt is kept in the session's manifest, after its cwd ------
def cline_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prompt: str, *, placed: bool = True
) -> Path:
    """Cline CLI's recorded session in a fresh workspace (the current folder), its
    manifest's prompt replaced by `prompt` (and without a cwd unless `placed`); returns
    the workspace."""
    from test_unreadable_discovery import relocate

    messages, workspace = relocate("cline", tmp_path, monkeypatch)
    manifest = messages.with_name(messages.name.replace(".messages.json", ".json"))
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["prompt"] = prompt
    if not placed:
        data["cwd"] = data["workspace_root"] = None
    manifest.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert manifest.stat().st_size > 4 * 1024 * 1024  # more than discovery decodes whole
    return workspace


def test_cline_session_with_a_manifest_past_4_mb_is_found_and_handed_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = cline_session(tmp_path, monkeypatch, huge_task("BIG TASK") * 2)
    code, out, _ = run(capsys, "sessions", "--from", "cline", "--json")
    [row] = json.loads(out)
    assert row["cwd"] == str(workspace)
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "export", "--from", "cline", "--out", str(out_dir), "--no-store")
    assert code == 0, err
    assert (out_dir / "handoff.json").is_file()


def test_cline_unplaceable_session_is_listed_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cline_session(tmp_path, monkeypatch, huge_task("BIG") * 2, placed=False)
    monkeypatch.setattr(_record_fields, "MAX_SCAN_BYTES", 1024 * 1024)
    code, out, err = run(capsys, "sessions", "--from", "cline", "--json")
    [row] = json.loads(out)
    assert row["cwd"] is None and row["unplaced"]
    code, _, err = run(capsys, "export", "--from", "cline", "--out", str(tmp_path / "out"))
    assert code == 3 and row["path"] in err
