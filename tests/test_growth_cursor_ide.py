"""The growth harness of tests/test_growth_bounded.py for Cursor's editor chats: one chat
grown by repeating a slice (edits to new files, failing and passing commands, todo
merges, user turns) to thousands of messages, and a checklist and edited-file map far
past every budget. The handoff stays inside its budgets, what it leaves out is counted,
and the first request, the open plan items and the last failure survive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cursor_ide_home import T0, Chat, CursorHome, assistant_bubble, folder_uri, tool, user_bubble
from passdown.handoff import Limits

LIMITS = Limits()
MAX_JSON_BYTES = 256 * 1024
COPIES = 400  # slices: 400 x 6 messages
TODOS = 3_000


def _grown_chat(folder: str) -> Chat:
    bubbles: list[dict[str, Any]] = [
        user_bubble("first", "Port the billing module to the new API", T0, "gpt-5")
    ]
    for n in range(COPIES):
        at = T0 + 1000 * (n + 1)
        fails = n == COPIES - 1 or n % 3 == 0
        result = {"output": f"FAILED tests/test_bill.py::test_{n} - KeyError", "exitCode": 1}
        bubbles += [
            user_bubble(f"u{n}", f"Continue with step {n}", at),
            assistant_bubble(
                f"e{n}",
                at + 1,
                tool=tool("edit_file", {"target_file": f"{folder}/src/bill_{n}.py"}, {}),
            ),
            assistant_bubble(
                f"c{n}",
                at + 2,
                tool=tool(
                    "run_terminal_cmd",
                    {"command": f"pytest -q tests/test_bill.py::test_{n}"},
                    result if fails else {"output": "1 passed", "exitCode": 0},
                    status="error" if fails else "completed",
                ),
            ),
            assistant_bubble(
                f"t{n}",
                at + 3,
                tool=tool(
                    "todo_write",
                    {"merge": True, "todos": [{"id": f"s{n}", "status": "completed"}]},
                    {},
                ),
            ),
            assistant_bubble(f"a{n}", at + 4, f"Step {n} done; tests run."),
        ]
    todos = [
        {
            "id": f"s{n}",
            "content": f"Port step {n}",
            "status": "completed" if n < COPIES else "pending",
        }
        for n in range(TODOS)
    ]
    composer = {
        "_v": 10,
        "status": "completed",
        "createdAt": T0,
        "lastUpdatedAt": T0 + 1000 * (COPIES + 1),
        "fullConversationHeadersOnly": [
            {"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles
        ],
        "originalFileStates": {folder_uri(f"{folder}/src/bill_{n}.py"): {} for n in range(COPIES)},
        "todos": todos,
    }
    return Chat("grown-chat-0001", bubbles, composer, updated=T0 + 1000 * (COPIES + 1))


@pytest.fixture
def exported(isolated_homes: Path, tmp_path: Path) -> dict[str, Any]:
    project = tmp_path / "proj"
    project.mkdir()
    cursor = CursorHome(isolated_homes)
    cursor.workspace("a1b2c3", str(project))
    cursor.add("a1b2c3", _grown_chat(str(project)))
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "APPDATA")}
    done = subprocess.run(
        [sys.executable, "-m", "passdown", "export", "--from", "cursor-ide", "--no-store"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = project / ".agent-handoff"
    data: dict[str, Any] = json.loads((out / "handoff.json").read_text())
    data["_markdown"] = (out / "HANDOFF.md").read_text()
    data["_json_bytes"] = (out / "handoff.json").stat().st_size
    return data


def test_grown_chat_stays_in_budget_and_counts_what_it_left_out(exported: dict[str, Any]) -> None:
    state, task, omitted = exported["state"], exported["task"], exported["state"]["omitted"]
    assert exported["_json_bytes"] < MAX_JSON_BYTES
    assert len(exported["_markdown"]) <= LIMITS.max_doc_chars
    assert len(state["plan"]) <= LIMITS.max_plan_items
    assert len(state["commands"]) <= LIMITS.max_commands
    assert len(state["files_touched"]) <= LIMITS.max_files
    assert len(task["transcript"]) <= 24 + 1  # --max-messages default, and the first request
    # left out, and counted
    assert state["commands_total"] == COPIES
    assert omitted["commands"] == COPIES - len(state["commands"])
    assert omitted["files_touched"] + len(state["files_touched"]) >= COPIES
    assert omitted["plan"] + omitted["plan_set_aside"] + len(state["plan"]) >= TODOS - 1000
    assert task["messages_omitted"] > 0


def test_grown_chat_keeps_what_the_next_agent_needs(exported: dict[str, Any]) -> None:
    state, task = exported["state"], exported["task"]
    assert task["original_request"] == "Port the billing module to the new API"
    assert task["latest_user_message"] == f"Continue with step {COPIES - 1}"
    subjects = [p["subject"] for p in state["plan"]]
    assert f"Port step {COPIES}" in subjects  # the first open item
    assert all(p["status"] == "pending" for p in state["plan"] if p["subject"] != "")
    last = state["last_failure"]
    assert last["command"] == f"pytest -q tests/test_bill.py::test_{COPIES - 1}"
    assert "KeyError" in last["error"]
    assert f"src/bill_{COPIES - 1}.py" in {f["path"] for f in state["files_touched"]}
    assert "Port the billing module to the new API" in exported["_markdown"]
