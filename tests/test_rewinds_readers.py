"""Rewinds, read from small files shaped like what the real CLIs wrote in
tests/e2e/test_rewinds.py (Qwen Code 0.24.4 after Esc Esc -> "Restore conversation only").

Qwen keeps the final todo list in `<runtime>/todos/<sessionId>.json`, written by whichever
todo_write ran last, on any branch: after a rewind it is the abandoned branch's list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import extract
from passdown.agents.qwen import QwenCode, encode_project

WS = "/tmp/passdown-rewind/ws"
SID = "f6cf309c-1280-4619-8cd7-e8195f846c69"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("QWEN_HOME", "QWEN_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _todo_args(*items: tuple[str, str]) -> dict[str, Any]:
    return {
        "todos": [{"id": str(i), "content": c, "status": s} for i, (c, s) in enumerate(items, 1)]
    }


class QwenChat:
    """Records chained by parentUuid like the CLI writes them (ui_telemetry omitted)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None

    def add(self, kind: str, parent: str | None = None, **extra: Any) -> str:
        uid = f"r{len(self.records):03d}"
        self.records.append(
            {
                "uuid": uid,
                "parentUuid": parent if parent is not None else self.last,
                "sessionId": SID,
                "timestamp": f"2026-11-30T19:20:{len(self.records):02d}.000Z",
                "type": kind,
                "cwd": WS,
                "version": "0.24.4",
                "gitBranch": "main",
                **extra,
            }
        )
        self.last = uid
        return uid

    def user(self, text: str) -> str:
        return self.add("user", message={"role": "user", "parts": [{"text": text}]})

    def reply(self, text: str) -> str:
        return self.add(
            "assistant",
            model="scripted-model",
            message={"role": "model", "parts": [{"text": text}]},
        )

    def tool(self, cid: str, name: str, args: dict[str, Any]) -> None:
        self.add(
            "assistant",
            model="scripted-model",
            message={
                "role": "model",
                "parts": [{"functionCall": {"id": cid, "name": name, "args": args}}],
            },
        )
        self.add(
            "tool_result",
            message={
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": cid, "name": name, "response": {"output": "ok"}}}
                ],
            },
            toolCallResult={"callId": cid, "status": "success", "resultDisplay": ""},
        )

    def write(self, todo_file: dict[str, Any] | None) -> Path:
        chats = self.home / ".qwen" / "projects" / encode_project(WS) / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        path = chats / f"{SID}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        if todo_file is not None:
            todos = self.home / ".qwen" / "todos"
            todos.mkdir(parents=True, exist_ok=True)
            (todos / f"{SID}.json").write_text(json.dumps(todo_file))
        return path


def _plan(path: Path) -> list[tuple[str, str]]:
    agent = QwenCode()
    state = extract(agent.read(agent.ref_for_path(path)).events(), workspace=WS).state
    return [(p.subject, p.status) for p in state.plan]


def _first_turn(chat: QwenChat) -> str:
    chat.user("Write a.txt")
    chat.tool("c1", "todo_write", _todo_args(("Write a.txt", "in_progress")))
    chat.tool("c2", "write_file", {"file_path": f"{WS}/a.txt", "content": "a\n"})
    return chat.reply("a.txt written. Next step: review a.txt.")


def test_qwen_rewind_plan_is_the_active_branchs_not_the_todo_file(home: Path) -> None:
    chat = QwenChat(home)
    turn1_end = _first_turn(chat)
    chat.user("Now write b.txt")
    abandoned = _todo_args(("Write a.txt", "completed"), ("Abandoned task B", "in_progress"))
    chat.tool("c3", "todo_write", abandoned)
    chat.reply("b.txt written.")
    chat.add("system", parent=turn1_end, subtype="rewind", systemPayload={"truncatedCount": 4})
    chat.user("Instead write c.txt")
    chat.tool("c4", "write_file", {"file_path": f"{WS}/c.txt", "content": "c\n"})
    chat.reply("c.txt written.")
    # the CLI's todo file still holds the abandoned branch's list
    assert _plan(chat.write(abandoned)) == [("Write a.txt", "in_progress")]


def test_qwen_todo_file_still_wins_in_a_session_without_a_rewind(home: Path) -> None:
    """Without a dead branch the file is the session's own final list (it can hold
    statuses the transcript lost), so it keeps winning."""
    chat = QwenChat(home)
    _first_turn(chat)
    done = _todo_args(("Write a.txt", "completed"))
    assert _plan(chat.write(done)) == [("Write a.txt", "completed")]
