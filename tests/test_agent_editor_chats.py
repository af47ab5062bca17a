"""VS Code Copilot Chat, the Cline extension and the Roo Code extension as sources to hand
off from (issue 24), through the CLI in a subprocess with a fake HOME laid out as each
platform lays it out (tests/editor_chats.py builds the stores from the editors' public
shapes): listing, the handoff (request, plan or checklist, files, commands, how it ended),
both Copilot file formats, malformed stores, a huge ui_messages.json, and switching."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import editor_chats as ec

PLATFORMS = {"linux": "Code", "darwin": "Code - Insiders", "win32": "VSCodium"}


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    return home, workspace


def _export(agent: str, home: Path, workspace: Path, *extra: str) -> dict[str, Any]:
    done = ec.run_cli(
        ["export", "--from", agent, "--workspace", str(workspace), "--no-store", *extra],
        home,
        cwd=workspace,
    )
    assert done.returncode == 0, done.stderr
    assert ec.SECRET not in done.stdout + done.stderr
    text = (workspace / ".agent-handoff" / "handoff.json").read_text()
    assert ec.SECRET not in text
    assert ec.SECRET not in (workspace / ".agent-handoff" / "HANDOFF.md").read_text()
    handoff: dict[str, Any] = json.loads(text)
    return handoff


def _plan(handoff: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["subject"], p["status"]) for p in handoff["state"]["plan"]]


def _files(handoff: dict[str, Any]) -> set[str]:
    return {f["path"] for f in handoff["state"]["files_touched"]}


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_sessions_all_lists_every_editor_chat_per_platform(platform: str, tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    user = ec.user_dir(home, platform, PLATFORMS[platform])
    ec.write_copilot(user, workspace, jsonl=platform != "linux")
    ec.write_cline(user, workspace)
    ec.write_roo(user, workspace)
    done = ec.run_cli(["sessions", "--all", "--json"], home, platform=platform)
    assert done.returncode == 0, done.stderr
    sessions = json.loads(done.stdout)
    listed = {(s["agent"], s["session_id"], s["cwd"]) for s in sessions}
    # when each chat started: Copilot's creationDate (from the file's head), the history's ts
    assert {s["started_at"] for s in sessions} == {"2025-12-01T11:53:20.000Z"}
    assert {
        ("copilot-chat", "5e55-10n", str(workspace)),
        ("cline-ext", "1764590000000", str(workspace)),
        ("roo", "0b5e-roo-task", str(workspace)),
    } <= listed
    # and by workspace folder: the editors' own storage -> folder mapping
    here = ec.run_cli(
        ["sessions", "--from", "roo", "--json"], home, platform=platform, cwd=workspace
    )
    assert [s["session_id"] for s in json.loads(here.stdout)] == ["0b5e-roo-task"]
    elsewhere = ec.run_cli(
        ["sessions", "--from", "copilot-chat", "--json"], home, platform=platform
    )
    assert json.loads(elsewhere.stdout or "[]") == []


@pytest.mark.parametrize("jsonl", [False, True], ids=["json", "jsonl"])
def test_copilot_chat_handoff(jsonl: bool, tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    ec.write_copilot(ec.user_dir(home, "linux"), workspace, jsonl=jsonl)
    handoff = _export("copilot-chat", home, workspace)
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert handoff["task"]["latest_user_message"] == "continue"
    assert _plan(handoff) == [
        ("Add the --verbose option", "completed"),
        ("Make the tests pass", "in_progress"),
    ]
    assert _files(handoff) == {"src/cli.py", "README.md"}  # the edit group, the user's edit
    [command] = handoff["state"]["commands"]
    assert (command["command"], command["exit_code"]) == (ec.FAILING, 1)
    assert "AssertionError" in handoff["state"]["last_failure"]["error"]
    assert handoff["ended"]["reason"] == "rate_limit"
    assert "rate-limited" in handoff["ended"]["message"]
    said = [e["text"] for e in handoff["task"]["transcript"] if e["role"] == "assistant"]
    assert said[-1] == ec.FINAL
    assert handoff["source"]["models"] == ["copilot/gpt-4.1"]


def test_copilot_chat_cancelled_request_and_empty_window(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    user = ec.user_dir(home, "linux")
    session = ec.copilot_session(workspace, "no-folder")
    session["requests"][1].update(result={}, modelState={"value": 2})
    path = user / "globalStorage" / "emptyWindowChatSessions" / "no-folder.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(session))
    older = user / "workspaceStorage" / "no-workspace" / "chatSessions" / "older.json"
    older.parent.mkdir(parents=True)
    older.write_text(json.dumps(dict(session, sessionId="older")))
    listed = ec.run_cli(["sessions", "--from", "copilot-chat", "--all", "--json"], home)
    found = sorted((s["session_id"], s["cwd"]) for s in json.loads(listed.stdout))
    assert found == [("no-folder", None), ("older", None)]
    handoff = _export("copilot-chat", home, workspace, "--session", str(path))
    assert handoff["ended"]["reason"] == "interrupted"
    assert "cancelled" in handoff["ended"]["message"]


def test_copilot_jsonl_log_replays_sets_pushes_truncations_and_deletes(tmp_path: Path) -> None:
    """A log that rewrote the first answer (push with truncate), replaced the second
    request's text, then compacted (a second kind-0 line) and went on."""
    home, workspace = _home(tmp_path)
    folder = ec.workspace_storage(ec.user_dir(home, "linux"), workspace) / "chatSessions"
    folder.mkdir(parents=True)
    session = ec.copilot_session(workspace)
    lines = ec.copilot_log(session).splitlines()
    first_text = {"value": "a draft answer that was withdrawn"}
    extra = [
        {"kind": 2, "k": ["requests", 0, "response"], "v": [first_text]},
        {"kind": 2, "k": ["requests", 0, "response"], "i": 5},  # truncated back
        {"kind": 1, "k": ["requests", 1, "message", "text"], "v": "and update the docs"},
        {"kind": 1, "k": ["requests", 7, "message"], "v": "a path that leads nowhere"},
        {"kind": 3, "k": ["requests", 1, "editedFileEvents"]},
    ]
    path = folder / "5e55-10n.jsonl"
    path.write_text("\n".join(lines + [json.dumps(e) for e in extra]) + "\n{torn")
    handoff = _export("copilot-chat", home, workspace)
    assert handoff["task"]["latest_user_message"] == "and update the docs"
    said = " ".join(e["text"] for e in handoff["task"]["transcript"])
    assert "withdrawn" not in said
    assert _files(handoff) == {"src/cli.py"}  # the user's README edit was deleted
    warnings = " ".join(handoff["warnings"])
    assert "1 change(s)" in warnings and "skipped" in warnings

    # the editor compacted the log: a later kind-0 line starts over
    restart = dict(session, requests=[dict(session["requests"][0], message={"text": "start over"})])
    with path.open("a") as log:
        log.write("\n" + json.dumps({"kind": 0, "v": restart}) + "\n")
    handoff = _export("copilot-chat", home, workspace)
    assert handoff["task"]["original_request"] == "start over"


def test_cline_extension_handoff(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    ec.write_cline(ec.user_dir(home, "linux"), workspace)
    handoff = _export("cline-ext", home, workspace)
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert handoff["task"]["latest_user_message"] == "keep going"
    # the focus chain file as the task left it (the user ticked a step after the last
    # task_progress message and added one)
    assert _plan(handoff) == [
        ("Add the --verbose option", "completed"),
        ("Make the tests pass", "completed"),
        ("Update the docs", "pending"),
    ]
    # the tool messages, and task_metadata.json's files edited by Cline and by the user
    assert _files(handoff) == {"src/cli.py", "tests/test_verbose.py", "docs/usage.md"}
    [command] = handoff["state"]["commands"]
    assert (command["command"], command["exit_code"]) == (ec.FAILING, 1)
    assert handoff["ended"]["reason"] == "rate_limit"
    assert "429" in handoff["ended"]["message"]
    assert handoff["source"]["models"] == ["claude-sonnet-4-5"]


def test_roo_code_handoff(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    ec.write_roo(ec.user_dir(home, "darwin"), workspace)
    done = ec.run_cli(
        ["export", "--from", "roo", "--no-store", "--json"], home, platform="darwin", cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert _plan(handoff) == [
        ("Add the --verbose option", "completed"),
        ("Make the tests pass", "in_progress"),
    ]
    assert _files(handoff) == {"src/cli.py", "tests/test_verbose.py"}
    assert handoff["state"]["commands"][0]["exit_code"] == 1
    assert handoff["ended"]["reason"] == "rate_limit"


def test_roo_user_edited_todos_win_and_a_cancel_ends_it(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    path = ec.write_roo(ec.user_dir(home, "linux"), workspace)
    messages = json.loads(path.read_text())[:-2]
    edited = {
        "tool": "updateTodoList",
        "todos": [{"id": "t9", "content": "Ship it", "status": "pending"}],
    }
    messages.append(ec._say(20, "user_edit_todos", json.dumps(edited)))
    messages.append(ec._say(21, "api_req_started", json.dumps({"cancelReason": "user_cancelled"})))
    path.write_text(json.dumps(messages))
    handoff = _export("roo", home, workspace)
    assert _plan(handoff) == [("Ship it", "pending")]
    assert handoff["ended"]["reason"] == "interrupted"


# main read ui_messages.json whole up to MAX_UI_BYTES (64 MB) and past it only its tail:
# the prelude sets that bound to 64 KB there (a grown file in small); the stream has none.
_SMALL_UI_BOUND = "import passdown.agents._ui_messages as t; t.MAX_UI_BYTES = 64 * 1024\n"


def _export_cline(home: Path, workspace: Path) -> tuple[dict[str, Any], list[str]]:
    done = ec.run_cli(
        ["export", "--from", "cline-ext", "--no-store", "--json"],
        home,
        cwd=workspace,
        prelude=_SMALL_UI_BOUND,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    return handoff, json.loads(done.stdout)["warnings"]


def test_a_grown_ui_messages_is_read_from_its_first_message(tmp_path: Path) -> None:
    """The task's start (its request as first said, the first failing command) survives
    however long the task grew: the file streams from its first message."""
    home, workspace = _home(tmp_path)
    path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    messages = json.loads(path.read_text())
    messages[0]["text"] = "Add a --verbose flag, as first said"
    filler = [ec._say(100 + n, "text", f"step {n} " + "x" * 200) for n in range(2000)]
    path.write_text(json.dumps(messages[:9] + filler + messages[9:], separators=(",", ":")))
    handoff, warnings = _export_cline(home, workspace)
    assert handoff["task"]["original_request"] == "Add a --verbose flag, as first said"
    commands = [(c["command"], c["exit_code"]) for c in handoff["state"]["commands"]]
    assert commands == [(ec.FAILING, 1)]
    assert not [w for w in warnings if "ui_messages.json" in w], warnings
    assert handoff["ended"]["reason"] == "rate_limit"


def test_one_ui_message_larger_than_the_old_bound_is_read(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    giant = [ec._say(1, "task", "Rename the module " + "y" * 200_000)]
    path.write_text(json.dumps(giant, separators=(",", ":")))
    handoff, warnings = _export_cline(home, workspace)
    assert handoff["task"]["original_request"].startswith("Rename the module yyy")
    assert not [w for w in warnings if "ui_messages.json" in w], warnings


def test_a_ui_messages_cut_while_written_gives_the_messages_before_the_cut(
    tmp_path: Path,
) -> None:
    home, workspace = _home(tmp_path)
    path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    messages = json.loads(path.read_text())
    data = json.dumps(messages[:9] + messages[9:], separators=(",", ":")).encode()
    cut = data.index(b'"keep going"')  # the user's feedback is being written
    path.write_bytes(data[:cut])
    handoff, warnings = _export_cline(home, workspace)
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert [c["command"] for c in handoff["state"]["commands"]] == [ec.FAILING]
    assert any(w.startswith("ui_messages.json ends early") for w in warnings), warnings


def test_malformed_stores_never_crash(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    user = ec.user_dir(home, "linux")
    ec.write_copilot(user, workspace, jsonl=False)
    chats = user / "workspaceStorage" / "a1b2c3" / "chatSessions"
    (chats / "garbage.json").write_bytes(b"\xff\x00{not json")
    (chats / "wrong.json").write_text(
        json.dumps({"requests": [1, "x", {"message": 5, "response": {}}]})
    )
    (chats / "torn.jsonl").write_text('{"kind":1,"k":["x"],"v":1}\n[1,2]\n{"kind":0,')
    broken = user / "workspaceStorage" / "zz"
    broken.mkdir()
    (broken / "workspace.json").write_text("[]")
    (broken / "chatSessions").mkdir()
    (broken / "chatSessions" / "lost.json").write_text("{}")
    cline = user / "globalStorage" / "saoudrizwan.claude-dev"
    (cline / "state").mkdir(parents=True)
    (cline / "state" / "taskHistory.json").write_text('{"not": "a list"}')
    (cline / "tasks" / "1").mkdir(parents=True)
    (cline / "tasks" / "1" / "ui_messages.json").write_text(
        '[{"ts": "x", "type": 5}, 3, {"say": "tool", "type": "say", "text": "{\\"tool\\": 7}"}]'
    )
    (cline / "tasks" / "2").mkdir()  # no message file at all
    roo = user / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks"
    (roo / "r1").mkdir(parents=True)
    (roo / "r1" / "history_item.json").write_text('{"id": 5}')
    (roo / "r1" / "ui_messages.json").write_text("{}")
    (roo / "_index.json").write_text("[[[[")

    listed = ec.run_cli(["sessions", "--all", "--json"], home)
    assert listed.returncode == 0, listed.stderr
    found = {(s["agent"], s["session_id"]) for s in json.loads(listed.stdout)}
    assert ("copilot-chat", "garbage") in found and ("copilot-chat", "lost") not in found
    assert {("cline-ext", "1"), ("roo", "r1")} <= found and ("cline-ext", "2") not in found
    for agent, session in [
        ("copilot-chat", chats / "garbage.json"),
        ("copilot-chat", chats / "wrong.json"),
        ("copilot-chat", chats / "torn.jsonl"),
        ("cline-ext", cline / "tasks" / "1" / "ui_messages.json"),
        ("roo", roo / "r1" / "ui_messages.json"),
    ]:
        done = ec.run_cli(
            ["export", "--from", agent, "--session", str(session), "--no-store", "--json"],
            home,
            cwd=workspace,
        )
        # 5: "holds no readable record", the documented exit of a session with nothing in it
        assert done.returncode in (0, 3, 5), f"{session.name}: {done.stderr}"
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
        if done.returncode == 0:
            report = json.loads(done.stdout)
            assert report["warnings"], f"{session.name}: nothing said about what was skipped"
        else:
            assert session.name in done.stderr


@pytest.mark.skipif(os.name == "nt" or os.geteuid() == 0, reason="chmod 000 is no barrier")
def test_an_unreadable_chat_is_exit_5_not_a_crash(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    path = ec.write_copilot(ec.user_dir(home, "linux"), workspace, jsonl=True)
    path.chmod(0)
    try:
        done = ec.run_cli(["export", "--from", "copilot-chat", "--no-store"], home, cwd=workspace)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert done.returncode == 5, done.stderr
    assert "Traceback" not in done.stderr


def test_switch_launches_a_cli_agent_from_an_editor_chat(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    ec.write_cline(ec.user_dir(home, "linux"), workspace)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    done = ec.run_cli(
        ["switch", "--from", "cline-ext", "--to", "claude", "--dry-run", "--json"],
        home,
        cwd=workspace,
        path=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    assert done.returncode == 0, done.stderr
    planned = json.loads(done.stdout)
    assert planned["target"] == "claude" and planned["argv"][0] == "claude"
    assert "HANDOFF.md" in " ".join(planned["argv"])


@pytest.mark.parametrize("target", ["copilot-chat", "cline-ext", "roo"])
def test_an_editor_chat_is_no_launch_target(target: str, tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    ec.write_roo(ec.user_dir(home, "linux"), workspace)
    done = ec.run_cli(
        ["switch", "--from", "roo", "--to", target, "--no-store"], home, cwd=workspace
    )
    assert done.returncode == 2, done.stderr
    assert "not an agent passdown can start" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (workspace / ".agent-handoff" / "HANDOFF.md").exists()  # nothing written


def test_cline_shared_store_and_api_history_fallback(tmp_path: Path) -> None:
    """Newer Cline builds keep tasks in ~/.cline/data/tasks/ (shared with the CLI); a task
    whose ui_messages.json is gone is read from api_conversation_history.json."""
    home, workspace = _home(tmp_path)
    data = home / ".cline" / "data"
    path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    task = path.parent
    (data / "tasks").mkdir(parents=True)
    task.rename(data / "tasks" / task.name)
    (path.parents[2] / "state" / "taskHistory.json").rename(data / "tasks" / "taskHistory.json")
    (data / "tasks" / task.name / "ui_messages.json").unlink()
    listed = ec.run_cli(["sessions", "--from", "cline-ext", "--json"], home, cwd=workspace)
    [ref] = json.loads(listed.stdout)
    assert ref["path"].endswith(f".cline/data/tasks/{task.name}/api_conversation_history.json")
    handoff = _export("cline-ext", home, workspace)
    assert handoff["task"]["original_request"] == ec.REQUEST  # unwrapped from <task>
    assert handoff["task"]["latest_progress"] == ec.FINAL
    assert _files(handoff) == {"src/cli.py", "docs/usage.md"}  # task_metadata.json
    assert [s for s, _ in _plan(handoff)][-1] == "Update the docs"  # the focus chain file


def test_cline_task_left_unresumed_ends_interrupted(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    messages = json.loads(path.read_text())[:-2]
    messages.append(ec._ask(30, "command", "npm test"))  # asked, then the approval itself
    messages.append(ec._say(31, "command", "npm test"))  # said: one command, no output
    messages.append(ec._ask(32, "resume_task"))
    path.write_text(json.dumps(messages))
    handoff = _export("cline-ext", home, workspace)
    assert handoff["ended"]["reason"] == "interrupted"
    commands = [(c["command"], c["exit_code"]) for c in handoff["state"]["commands"]]
    assert commands == [(ec.FAILING, 1), ("npm test", None)]


def test_copilot_chat_undone_and_declined_edits_and_a_superseded_json(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    user = ec.user_dir(home, "linux")
    session = ec.copilot_session(workspace)
    second = session["requests"][1]
    second["editedFileEvents"][0]["eventKind"] = 2  # the user undid the README edit
    second["result"], second["modelState"] = {}, {"value": 1}
    second["response"] = [
        {
            "kind": "toolInvocationSerialized",
            "toolId": "copilot_createFile",
            "toolCallId": "call_create",
            "invocationMessage": {"value": "Creating [](file:///elsewhere/new.py)"},
            "isConfirmed": {"type": 0},  # declined by the user
            "isComplete": True,
        },
        {"kind": "markdownContent", "content": {"value": "Stopped: you declined it."}},
    ]
    folder = ec.workspace_storage(user, workspace) / "chatSessions"
    folder.mkdir(parents=True)
    (folder / "5e55-10n.jsonl").write_text(json.dumps({"kind": 0, "v": session}) + "\n")
    stale = dict(session, requests=[dict(session["requests"][0], message={"text": "stale"})])
    (folder / "5e55-10n.json").write_text(json.dumps(stale))  # an older build's copy
    listed = ec.run_cli(["sessions", "--from", "copilot-chat", "--json"], home, cwd=workspace)
    assert [s["path"].rsplit("/", 1)[1] for s in json.loads(listed.stdout)] == ["5e55-10n.jsonl"]
    handoff = _export("copilot-chat", home, workspace)
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert _files(handoff) == {"src/cli.py"}  # README undone; new.py declined
    [failed] = handoff["state"]["failed_edits"]
    assert failed["path"] == "/elsewhere/new.py" and "declined" in failed["error"]
    assert handoff["ended"]["reason"] in (None, "normal")


SIMULATED_WINDOWS = Path(__file__).resolve().parent / "simwin"


@pytest.mark.parametrize("agent", ["copilot-chat", "cline-ext", "roo"])
def test_a_windows_store_under_simulated_windows(agent: str, tmp_path: Path) -> None:
    """The stores as Windows writes them (`%APPDATA%\\Code\\User`, `file:///C:/...` folders,
    `C:\\...` paths), read by passdown running as on Windows (tests/simwin)."""
    from pathlib import PureWindowsPath

    home, workspace = _home(tmp_path)
    win = PureWindowsPath(r"C:\Users\dev\proj")
    appdata = home / "AppData" / "Roaming"
    user = appdata / "Code" / "User"
    write = {"copilot-chat": lambda: ec.write_copilot(user, win, jsonl=True)}
    write["cline-ext"] = lambda: ec.write_cline(user, win)
    write["roo"] = lambda: ec.write_roo(user, win)
    session = write[agent]()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SIMULATED_WINDOWS), os.environ.get("PYTHONPATH", "")]),
        "PASSDOWN_SIMULATE_WINDOWS": "1",
        "HOME": str(home),
        "APPDATA": str(appdata),
        "PASSDOWN_DATA_DIR": str(home / "data"),
    }
    env.pop("PASSDOWN_EDITOR_USER_DIRS", None)
    import subprocess
    import sys

    listed = subprocess.run(
        [sys.executable, "-m", "passdown", "sessions", "--from", agent, "--all", "--json"],
        env=env,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    [ref] = json.loads(listed.stdout)
    assert PureWindowsPath(ref["cwd"]) == win
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "export",
            "--from",
            agent,
            "--session",
            str(session),
            "--workspace",
            str(workspace),
            "--out",
            str(out),
            "--no-store",
        ],
        env=env,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    handoff = json.loads((out / "handoff.json").read_text(encoding="utf-8"))
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert handoff["state"]["commands"][0]["exit_code"] == 1
    files = {f["path"].replace("\\", "/") for f in handoff["state"]["files_touched"]}
    assert "src/cli.py" in files, files
    assert ec.SECRET not in json.dumps(handoff)


# -- a Copilot Chat .json document streams (issue 20) ---------------------------------------
# main read a .json chat whole up to MAX_DOCUMENT_BYTES (256 MB) and refused a larger one:
# the prelude sets that bound to 64 KB there (a grown chat in small); the stream has none.
_SMALL_CHAT_BOUND = "import passdown.agents._chat_log as t; t.MAX_DOCUMENT_BYTES = 64 * 1024\n"


def _grown_copilot_json(home: Path, workspace: Path, requests: int) -> Path:
    """A .json chat with `requests` more requests between its first and its last, its
    fields after its requests as VS Code writes them."""
    session = ec.copilot_session(workspace)
    first, last = session.pop("requests")
    filler = [
        {
            "requestId": f"request_grown_{n}",
            "timestamp": ec.T0 + 1000 + n,
            "message": {"text": f"and again, round {n}", "parts": []},
            "response": [{"kind": "markdownContent", "content": {"value": f"Round {n} " * 20}}],
            "modelState": {"value": 1},
        }
        for n in range(requests)
    ]
    document = {"version": 3, "requests": [first, *filler, last], **session}
    folder = ec.workspace_storage(ec.user_dir(home, "linux"), workspace) / "chatSessions"
    folder.mkdir(parents=True)
    path = folder / "5e55-10n.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def test_a_grown_copilot_chat_json_is_read_from_its_first_request(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    path = _grown_copilot_json(home, workspace, 1500)
    assert path.stat().st_size > 4 * 64 * 1024
    done = ec.run_cli(
        ["export", "--from", "copilot-chat", "--no-store", "--json"],
        home,
        cwd=workspace,
        prelude=_SMALL_CHAT_BOUND,
    )
    assert done.returncode == 0, done.stderr
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["task"]["original_request"] == ec.REQUEST
    [command] = handoff["state"]["commands"]
    assert (command["command"], command["exit_code"]) == (ec.FAILING, 1)
    assert handoff["ended"]["reason"] == "rate_limit"  # the last request, past the filler
    source = handoff["source"]
    assert source["title"] == "Verbose flag"  # customTitle, after the requests
    assert source["started_at"] == "2025-12-01T11:53:20.000Z"  # creationDate, likewise
    assert not json.loads(done.stdout)["warnings"]


def test_a_copilot_chat_json_cut_while_written_gives_the_requests_before_the_cut(
    tmp_path: Path,
) -> None:
    home, workspace = _home(tmp_path)
    path = _grown_copilot_json(home, workspace, 50)
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"round 30")])
    done = ec.run_cli(
        ["export", "--from", "copilot-chat", "--no-store", "--json"], home, cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    assert handoff["task"]["original_request"] == ec.REQUEST
    assert handoff["task"]["latest_user_message"] == "and again, round 29"
    warnings = json.loads(done.stdout)["warnings"]
    assert any(w.startswith("5e55-10n.json ends early") for w in warnings), warnings


def test_a_copilot_chat_json_is_parsed_once_its_fields_with_its_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pass over the document: the requests stream, and `creationDate` and
    `customTitle` (after them) come from the same pass, not a read of the whole file."""
    from passdown.agents.copilot_chat import CopilotChat
    from test_json_stream import _count_passes

    home, workspace = _home(tmp_path)
    path = _grown_copilot_json(home, workspace, 1500)
    passes = _count_passes(monkeypatch)
    transcript = CopilotChat().read(CopilotChat().ref_for_path(path))
    events = list(transcript.events())
    assert passes == ["requests.item"]
    users = [e.text for e in events if getattr(e, "role", None) == "user"]
    assert users[0] == ec.REQUEST and len(users) == 1502
    assert transcript.info.title == "Verbose flag"
    assert transcript.info.started_at == "2025-12-01T11:53:20.000Z"


MB = 1024 * 1024
# the first request as each file says it: a Copilot Chat request, a Cline UI message
_FIRST = {
    "copilot-chat": {"message": {"text": "the first request"}, "response": []},
    "cline-ext": {"ts": 5, "type": "say", "say": "user_feedback", "text": "the first request"},
}
_BAD_TAILS = {
    "utf8-torn-later": b', {"text": "\xff\xfe"}]',
    "deep": b", " + b"[" * 200_000,
    "truncated": b', {"text": "cut',
    "big-string": b', {"x": "' + b"y" * (50 * MB) + b'"}]',
}


@pytest.mark.parametrize("agent", ["copilot-chat", "cline-ext"])
@pytest.mark.parametrize("name", ["empty", "not-utf8", *_BAD_TAILS])
def test_a_bad_document_gives_a_partial_handoff_or_a_clear_error(
    agent: str, name: str, tmp_path: Path
) -> None:
    """Empty, not UTF-8 (at its start or past a point), nested past the bound, cut short,
    or holding a 50 MB string: what was read before it is handed off (with a warning for
    what was not), or the export says the file held nothing (exit 5); never a traceback."""
    home, workspace = _home(tmp_path)
    if agent == "copilot-chat":
        path = ec.write_copilot(ec.user_dir(home, "linux"), workspace, jsonl=False)
    else:
        path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    filler = [{"x": "z" * 70_000}]  # the bad part starts in a later piece than the first
    head = json.dumps([_FIRST[agent], *filler]).encode()[:-1]
    content = {"empty": b"", "not-utf8": b"\xff\xfe\x00{garbage"}.get(name)
    if content is None:
        content = head + _BAD_TAILS[name]
        if agent == "copilot-chat":
            content = b'{"requests": ' + content + (b"}" if content.endswith(b"]") else b"")
    path.write_bytes(content)
    done = ec.run_cli(
        ["export", "--from", agent, "--session", str(path), "--no-store", "--json"],
        home,
        cwd=workspace,
    )
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    if done.returncode == 5:
        assert name in ("empty", "not-utf8") and path.name in done.stderr
        return
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    if name != "big-string":
        assert any(w.startswith(path.name) for w in warnings), warnings
    if name not in ("empty", "not-utf8"):
        handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
        said = [e["text"] for e in handoff["task"]["transcript"] if e["role"] == "user"]
        assert "the first request" in said, said


def test_a_torn_api_history_gives_what_was_said_before_the_cut(tmp_path: Path) -> None:
    """A task whose ui_messages.json is gone is read from api_conversation_history.json;
    that file, cut while being written, gives the messages before the cut (main refused
    it whole: nothing said was handed off)."""
    home, workspace = _home(tmp_path)
    path = ec.write_cline(ec.user_dir(home, "linux"), workspace)
    path.unlink()
    history = path.with_name("api_conversation_history.json")
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"<task>\n{ec.REQUEST}\n</task>"}]},
        {"role": "assistant", "content": "Said before the cut."},
        {"role": "user", "content": [{"type": "text", "text": "<feedback>more</feedback>"}]},
    ]
    data = json.dumps(messages).encode()
    history.write_bytes(data[: data.index(b"<feedback>")])
    done = ec.run_cli(
        ["export", "--from", "cline-ext", "--no-store", "--json"], home, cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
    said = [e["text"] for e in handoff["task"]["transcript"] if e["role"] == "assistant"]
    assert said == ["Said before the cut."]
    warnings = json.loads(done.stdout)["warnings"]
    assert any(w.startswith("api_conversation_history.json ends early") for w in warnings)
