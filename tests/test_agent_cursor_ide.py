"""Cursor's editor chats (`cursor-ide`) through the CLI: listing per workspace, export of
the request, plan, files, commands and ending, the three platforms' layouts, malformed
values, and the source-only launch. Fixtures: tests/cursor_ide_home.py (public shapes)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cursor_ide_home import T0, Chat, CursorHome, assistant_bubble, full_chat, tool, user_bubble

ROOT = Path(__file__).resolve().parents[1]


def run(
    args: list[str], cwd: Path, home: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "APPDATA")}
    env.pop("PASSDOWN_EDITOR_USER_DIRS", None)
    env.update(HOME=str(home), PASSDOWN_DATA_DIR=str(home / "passdown-data"), **(extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def home(isolated_homes: Path) -> Path:
    return isolated_homes


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


def _cursor(home: Path, project: Path, platform: str = "linux") -> CursorHome:
    cursor = CursorHome(home, platform)
    cursor.workspace("a1b2c3", str(project))
    cursor.add("a1b2c3", full_chat(str(project)))
    return cursor


def _handoff(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((project / ".agent-handoff" / "handoff.json").read_text())
    return data


def _assert_full_handoff(data: dict[str, Any]) -> None:
    task, state = data["task"], data["state"]
    assert task["original_request"] == "Add a --json flag to the report command"
    assert task["latest_user_message"] == "Keep the old text output as the default"
    assert [(p["subject"], p["status"]) for p in state["plan"]] == [
        ("Add the --json flag to report", "completed"),
        ("Write a test for the JSON output", "in_progress"),
        ("Document the flag in README", "pending"),
    ]
    files = {f["path"]: f["actions"] for f in state["files_touched"]}
    assert files["src/report.py"] == ["edit"]
    assert files["tests/test_report.py"] == ["write"]
    assert all(f["confirmed"] for f in state["files_touched"])
    (command,) = state["commands"]
    assert command["command"] == "pytest -q tests/test_report.py"
    assert command["exit_code"] == 1
    assert "FAILED tests/test_report.py::test_json" in state["last_failure"]["error"]
    assert data["ended"]["reason"] == "error"
    assert "status: error" in data["ended"]["message"]
    assert data["source"]["models"] == ["claude-4.5-sonnet"]
    assert data["source"]["agent"] == "cursor-ide"


def test_export_newest_chat_of_the_workspace(home: Path, project: Path) -> None:
    _cursor(home, project)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    _assert_full_handoff(_handoff(project))
    markdown = (project / ".agent-handoff" / "HANDOFF.md").read_text()
    assert "Write a test for the JSON output" in markdown


def test_sessions_all_lists_each_chat_with_its_workspace(
    home: Path, project: Path, tmp_path: Path
) -> None:
    cursor = _cursor(home, project)
    other = tmp_path / "other"
    other.mkdir()
    cursor.workspace("ffee00", str(other))
    second = full_chat(str(other), "other-chat-0002")
    cursor.add("ffee00", second)
    draft = Chat("draft-never-sent", [], {"_v": 10, "fullConversationHeadersOnly": []})
    cursor.add("a1b2c3", draft)  # opened, never sent: no session
    done = run(["sessions", "--all", "--json", "--from", "cursor-ide"], project, home)
    assert done.returncode == 0, done.stderr
    listed = {s["session_id"]: s for s in json.loads(done.stdout)}
    assert set(listed) == {"c1d2e3f4-aaaa-4bbb-8ccc-000000000001", "other-chat-0002"}
    assert listed["other-chat-0002"]["cwd"] == str(other)
    assert listed["c1d2e3f4-aaaa-4bbb-8ccc-000000000001"]["cwd"] == str(project)
    # without --all: only this workspace's chat
    here = run(["sessions", "--json", "--from", "cursor-ide"], project, home)
    assert [s["session_id"] for s in json.loads(here.stdout)] == [
        "c1d2e3f4-aaaa-4bbb-8ccc-000000000001"
    ]


def test_the_newest_chat_is_the_one_cursor_updated_last(home: Path, project: Path) -> None:
    cursor = _cursor(home, project)
    later = Chat(
        "later-chat-0003",
        [user_bubble("u1", "Rename the module to reports", T0 + 900_000)],
        {"_v": 10, "fullConversationHeadersOnly": [{"bubbleId": "u1", "type": 1}]},
        updated=T0 + 900_000,
    )
    cursor.add("a1b2c3", later)
    done = run(["export", "--from", "cursor-ide", "--no-store", "--json"], project, home)
    assert done.returncode == 0, done.stderr
    assert _handoff(project)["task"]["original_request"] == "Rename the module to reports"
    by_id = run(
        ["export", "--from", "cursor-ide", "--session", "c1d2e3f4", "--no-store"], project, home
    )
    assert by_id.returncode == 0, by_id.stderr
    _assert_full_handoff(_handoff(project))


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_macos_and_windows_layouts(
    platform: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The User folder where Cursor keeps it on macOS and Windows, found by the platform's
    rule (in process: this Linux cannot be the other platform in a subprocess)."""
    from passdown import _platform
    from passdown.cli import main

    folder = "C:\\Users\\dev\\proj" if platform == "win32" else "/Users/dev/proj"
    cursor = CursorHome(home, platform)
    cursor.workspace("0a0b", folder)
    cursor.add("0a0b", full_chat(folder))
    for name in ("APPDATA", "XDG_CONFIG_HOME", "PASSDOWN_EDITOR_USER_DIRS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_platform, "is_windows", lambda: platform == "win32")
    monkeypatch.setattr(_platform, "is_macos", lambda: platform == "darwin")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    out = tmp_path / "out.json"
    with open(out, "w") as handle, pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdout", handle)
        code = main(["sessions", "--all", "--json", "--from", "cursor-ide"])
    assert code == 0
    (listed,) = json.loads(out.read_text())
    expected = "c:/Users/dev/proj" if platform == "win32" else folder
    assert listed["cwd"] == expected
    assert listed["path"].startswith(str(cursor.user))
    ws = tmp_path / "ws"
    ws.mkdir()
    code = main(
        ["export", "--from", "cursor-ide", "--session", listed["session_id"], "--workspace",
         str(ws), "--no-store", "--quiet"]
    )  # fmt: skip
    assert code == 0
    data = _handoff(ws)
    assert data["task"]["original_request"] == "Add a --json flag to the report command"
    assert len(data["state"]["plan"]) == 3
    assert data["ended"]["reason"] == "error"


def test_switch_launches_a_cli_agent_on_the_handoff(
    home: Path, project: Path, tmp_path: Path
) -> None:
    _cursor(home, project)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "claude-args.json"
    stub = bin_dir / "claude"
    stub.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n"
    )
    stub.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    done = run(
        ["switch", "--from", "cursor-ide", "--to", "claude", "--non-interactive", "--no-store"],
        project,
        home,
        {"PATH": path},
    )
    assert done.returncode == 0, done.stderr
    argv = json.loads(record.read_text())
    assert any(".agent-handoff" in a and "HANDOFF.md" in a for a in argv), argv
    _assert_full_handoff(_handoff(project))


def test_switch_to_cursor_ide_says_it_is_a_source_only(home: Path, project: Path) -> None:
    _cursor(home, project)
    (project / "x").mkdir()
    done = run(
        ["switch", "--from", "cursor-ide", "--to", "cursor-ide", "--no-store"], project, home
    )
    assert done.returncode == 7
    assert "source only" in done.stderr
    assert "--to cursor" in done.stderr
    assert not (project / ".agent-handoff").exists()


# -- malformed values -------------------------------------------------------------------
def _global(cursor: CursorHome) -> sqlite3.Connection:
    return sqlite3.connect(cursor.global_db, isolation_level=None)


def test_text_values_read_like_blobs(home: Path, project: Path) -> None:
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    cursor.add("a1b2c3", full_chat(str(project)), blob=False)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    _assert_full_handoff(_handoff(project))


def test_torn_and_missing_bubbles_are_skipped_and_counted(home: Path, project: Path) -> None:
    cursor = _cursor(home, project)
    cid = "c1d2e3f4-aaaa-4bbb-8ccc-000000000001"
    with _global(cursor) as conn:
        conn.execute("DELETE FROM cursorDiskKV WHERE key = ?", (f"bubbleId:{cid}:b02",))
        conn.execute(
            "UPDATE cursorDiskKV SET value = ? WHERE key = ?",
            (b'{"_v":3,"type":2,"text":"half', f"bubbleId:{cid}:b07"),
        )
        conn.execute("UPDATE cursorDiskKV SET value = 12 WHERE key = ?", (f"bubbleId:{cid}:b04",))
    done = run(["export", "--from", "cursor-ide", "--no-store", "--json"], project, home)
    assert done.returncode == 0, done.stderr
    data = _handoff(project)
    assert data["task"]["original_request"] == "Add a --json flag to the report command"
    assert data["task"]["latest_user_message"] == "Keep the old text output as the default"
    warnings = " ".join(data["warnings"])
    assert "2 message(s) the chat lists are missing" in warnings  # b02 gone, b04 a number
    assert "1 unreadable line(s)" in warnings  # b07 torn
    # the edit's bubble is gone, but the editor's own record still names the file
    assert "src/report.py" in {f["path"] for f in data["state"]["files_touched"]}


def test_torn_composer_is_an_unreadable_session(home: Path, project: Path) -> None:
    cursor = _cursor(home, project)
    with _global(cursor) as conn:
        conn.execute(
            "UPDATE cursorDiskKV SET value = ? WHERE key LIKE 'composerData:%'",
            (b'{"_v":10,"status":"compl',),
        )
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 5, done.stderr
    assert "Traceback" not in done.stderr
    assert not (project / ".agent-handoff").exists()


def test_unknown_version_and_shapes_are_read_as_far_as_they_match(
    home: Path, project: Path
) -> None:
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    chat = full_chat(str(project))
    chat.composer["_v"] = 99
    chat.composer["todos"] = "not a list"
    chat.composer["originalFileStates"] = ["not", "a", "map"]
    chat.composer["modelConfig"] = "gpt-9"
    chat.bubbles[0]["_v"] = 7
    chat.bubbles.append({"_v": 3, "type": 30, "bubbleId": "odd", "text": "?"})
    chat.composer["fullConversationHeadersOnly"].append({"bubbleId": "odd", "type": 30})
    cursor.add("a1b2c3", chat)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    data = _handoff(project)
    warnings = " ".join(data["warnings"])
    assert "_v 99" in warnings
    assert "bubble _v 7" in warnings and "bubble type 30" in warnings
    # the plan from the todo_write call stands where composerData's list is unreadable
    assert len(data["state"]["plan"]) == 3
    assert data["task"]["original_request"] == "Add a --json flag to the report command"


def test_older_inline_conversation(home: Path, project: Path) -> None:
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    bubbles = [
        user_bubble("i1", "Fix the flaky login test", T0),
        assistant_bubble(
            "i2",
            T0 + 1,
            tool=tool("run_terminal_cmd", {"command": "npm test"}, {"output": "ok", "exitCode": 0}),
        ),
        assistant_bubble("i3", T0 + 2, "Fixed by waiting for the form."),
    ]
    composer = {"_v": 2, "composerId": "old-1", "conversation": bubbles, "status": "completed"}
    cursor.add("a1b2c3", Chat("old-1", [], composer))
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    data = _handoff(project)
    assert data["task"]["original_request"] == "Fix the flaky login test"
    assert data["state"]["commands"][0]["command"] == "npm test"
    assert data["state"]["commands"][0]["exit_code"] == 0
    assert data["ended"]["reason"] == "normal"


def test_a_chat_cursor_is_still_generating_says_so(home: Path, project: Path) -> None:
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    chat = full_chat(str(project))
    chat.composer["status"] = "generating"
    cursor.add("a1b2c3", chat)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    ended = _handoff(project)["ended"]
    assert ended["reason"] == "interrupted"
    assert "still generating" in ended["message"]


def test_no_cursor_at_all_is_no_session(home: Path, project: Path) -> None:
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr


def test_reading_creates_nothing_in_cursors_folders(home: Path, project: Path) -> None:
    cursor = _cursor(home, project)
    with _global(cursor) as conn:
        conn.execute("PRAGMA journal_mode=WAL")  # Cursor's global database is WAL
    before = sorted(p.name for p in cursor.global_db.parent.iterdir())
    assert run(["sessions", "--all"], project, home).returncode == 0
    assert run(["export", "--from", "cursor-ide", "--no-store"], project, home).returncode == 0
    after = sorted(p.name for p in cursor.global_db.parent.iterdir())
    assert before == after == ["state.vscdb"]
    _assert_full_handoff(_handoff(project))


def test_todo_merges_update_the_plan_item_by_item(home: Path, project: Path) -> None:
    """Without composerData's `todos` (older builds), the plan is the todo_write calls
    replayed: a merge changes only the items it names, each of them."""
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    items = [{"id": str(n), "content": f"step {n}", "status": "pending"} for n in (1, 2, 3)]
    merge = [{"id": "1", "status": "completed"}, {"id": "3", "status": "in_progress"}]
    bubbles = [
        user_bubble("u", "Do the three steps", T0),
        assistant_bubble(
            "t1", T0 + 1, tool=tool("todo_write", {"merge": False, "todos": items}, {})
        ),
        assistant_bubble(
            "t2", T0 + 2, tool=tool("todo_write", {"merge": True, "todos": merge}, {})
        ),
    ]
    headers = [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles]
    composer = {"_v": 10, "fullConversationHeadersOnly": headers, "status": "completed"}
    cursor.add("a1b2c3", Chat("merge-chat", bubbles, composer))
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    plan = {p["subject"]: p["status"] for p in _handoff(project)["state"]["plan"]}
    assert plan == {"step 1": "completed", "step 2": "pending", "step 3": "in_progress"}
    assert _handoff(project)["state"]["plan_source"] == "todo_write"


def test_windows_layout_through_the_cli_process(home: Path, tmp_path: Path) -> None:
    """`python -m passdown` under the Windows simulation of tests/simwin (sys.platform
    "win32", no POSIX modules): the User folder under %APPDATA%, a drive-letter folder."""
    folder = "C:\\Users\\dev\\proj"
    cursor = CursorHome(home, "win32")
    cursor.workspace("0a0b", folder)
    cursor.add("0a0b", full_chat(folder))
    simwin = str(Path(__file__).resolve().parent / "simwin")
    extra = {
        "PYTHONPATH": os.pathsep.join([simwin, os.environ.get("PYTHONPATH", "")]),
        "PASSDOWN_SIMULATE_WINDOWS": "1",
        "APPDATA": str(home / "AppData" / "Roaming"),
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    done = run(["sessions", "--all", "--json", "--from", "cursor-ide"], ws, home, extra)
    assert done.returncode == 0, done.stderr
    (listed,) = json.loads(done.stdout)
    assert listed["cwd"] == "c:/Users/dev/proj"
    done = run(
        ["export", "--from", "cursor-ide", "--session", listed["session_id"], "--workspace",
         str(ws), "--no-store"], ws, home, extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = _handoff(ws)
    assert data["task"]["original_request"] == "Add a --json flag to the report command"
    # file:///c%3A/... URIs and C:\\ paths alike, relative to the chat's folder
    files = {f["path"].replace("\\", "/") for f in data["state"]["files_touched"]}
    assert files == {"src/report.py", "tests/test_report.py"}


def test_an_unreadable_chat_database_is_exit_5_naming_it(home: Path, project: Path) -> None:
    cursor = _cursor(home, project)
    cursor.global_db.write_bytes(b"\x00not sqlite\xff" * 400)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 5
    assert "Cursor's chat database" in done.stderr and str(cursor.global_db) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (project / ".agent-handoff").exists()


def test_an_unreadable_list_of_chats_is_reported_not_skipped(home: Path, project: Path) -> None:
    cursor = _cursor(home, project)
    listing = cursor.user / "workspaceStorage" / "a1b2c3" / "state.vscdb"
    listing.write_bytes(b"torn" * 1000)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 5
    assert f"cannot read {listing}: its list of chats cannot be read" in done.stderr
    listed = run(["sessions", "--from", "cursor-ide"], project, home)
    assert str(listing) in listed.stderr  # named by `sessions` too


def test_a_message_with_only_rich_text_is_read_from_it(home: Path, project: Path) -> None:
    cursor = CursorHome(home)
    cursor.workspace("a1b2c3", str(project))
    rich = {
        "root": {
            "children": [
                {"type": "paragraph", "children": [{"text": "Bump the "}, {"text": "parser"}]},
                {"type": "paragraph", "children": [{"text": "then rerun CI"}]},
            ]
        }
    }
    bubble = {"_v": 3, "type": 1, "bubbleId": "r1", "text": "", "richText": json.dumps(rich)}
    composer = {"_v": 10, "fullConversationHeadersOnly": [{"bubbleId": "r1", "type": 1}]}
    cursor.add("a1b2c3", Chat("rich-chat", [bubble], composer))
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    assert _handoff(project)["task"]["original_request"] == "Bump the parser\nthen rerun CI"


def test_a_content_table_without_its_key_index_is_still_read(home: Path, project: Path) -> None:
    """Without the UNIQUE key (an index) a per-chat probe would scan the whole table:
    the chats are listed unprobed, and the newest is read as usual."""
    from cursor_ide_home import USER_DIRS

    glob = home / USER_DIRS["linux"] / "globalStorage" / "state.vscdb"
    glob.parent.mkdir(parents=True)
    with sqlite3.connect(glob) as conn:
        conn.execute("CREATE TABLE cursorDiskKV (key TEXT, value BLOB)")
    conn.close()
    _cursor(home, project)
    done = run(["export", "--from", "cursor-ide", "--no-store"], project, home)
    assert done.returncode == 0, done.stderr
    _assert_full_handoff(_handoff(project))
