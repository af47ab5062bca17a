"""Cursor's editor storage laid out as Cursor lays it out, built from the public
(reverse-engineered) shapes: the editor cannot run here. See src/passdown/agents/cursor_ide.py
for the sources; every shape below is one of theirs.

    <User>/workspaceStorage/<id>/workspace.json      {"folder": "file:///..."}
    <User>/workspaceStorage/<id>/state.vscdb         ItemTable composer.composerData
    <User>/globalStorage/state.vscdb                 cursorDiskKV composerData:<id>, bubbleId:<id>:<bubble>

`<User>` per platform, under a fake HOME: `.config/Cursor/User` (Linux),
`Library/Application Support/Cursor/User` (macOS), `AppData/Roaming/Cursor/User` (Windows).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

USER_DIRS = {
    "linux": ".config/Cursor/User",
    "darwin": "Library/Application Support/Cursor/User",
    "win32": "AppData/Roaming/Cursor/User",
}
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
    "CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
)
T0 = 1_764_590_000_000  # ms: 2025-12-01


def folder_uri(folder: str) -> str:
    """VS Code's URI of a folder: `file:///home/dev/proj`, `file:///c%3A/Users/dev/proj`."""
    if len(folder) >= 2 and folder[1] == ":":  # a Windows drive
        return "file:///" + folder[0].lower() + "%3A" + quote(folder[2:].replace("\\", "/"))
    return "file://" + quote(folder)


def open_db(path: Path, *, wal: bool = False) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA)
    return conn


def put(conn: sqlite3.Connection, table: str, key: str, value: Any, *, blob: bool = True) -> None:
    """A value as Cursor stores it: JSON as a BLOB (or TEXT), or raw bytes/str as given."""
    if not isinstance(value, bytes | str):
        value = json.dumps(value, separators=(",", ":"))  # as JSON.stringify writes it
    if isinstance(value, str) and blob:
        value = value.encode()
    conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, value))


@dataclass
class Chat:
    composer_id: str
    bubbles: list[dict[str, Any]]
    composer: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    created: int = T0
    updated: int = T0 + 60_000


def user_bubble(bid: str, text: str, at: int, model: str | None = None) -> dict[str, Any]:
    bubble: dict[str, Any] = {
        "_v": 3,
        "type": 1,
        "bubbleId": bid,
        "text": text,
        "richText": json.dumps(
            {"root": {"children": [{"type": "paragraph", "children": [{"text": text}]}]}}
        ),
        "createdAt": _iso(at),
    }
    if model:
        bubble["modelInfo"] = {"modelName": model}
    return bubble


def assistant_bubble(
    bid: str, at: int, text: str = "", tool: dict[str, Any] | None = None
) -> dict[str, Any]:
    bubble: dict[str, Any] = {
        "_v": 3,
        "type": 2,
        "bubbleId": bid,
        "text": text,
        "createdAt": _iso(at),
        "tokenCount": {"inputTokens": 10, "outputTokens": 5},
    }
    if tool is not None:
        bubble["toolFormerData"] = tool
    return bubble


def tool(name: str, args: dict[str, Any], result: Any, status: str = "completed") -> dict[str, Any]:
    return {
        "tool": 5,
        "name": name,
        "rawArgs": json.dumps(args),
        "params": json.dumps(args),
        "result": json.dumps(result) if result is not None else None,
        "status": status,
        "additionalData": {},
    }


def _iso(millis: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(millis / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def full_chat(folder: str, composer_id: str = "c1d2e3f4-aaaa-4bbb-8ccc-000000000001") -> Chat:
    """One chat with all a handoff needs: the request, a plan, edits, a failed command,
    a later instruction, and an ending in error."""
    t = T0
    sep = "\\" if folder[1:2] == ":" else "/"
    report = f"{folder}{sep}src{sep}report.py"
    test_file = f"{folder}{sep}tests{sep}test_report.py"
    todos = [
        {"id": "1", "content": "Add the --json flag to report", "status": "completed"},
        {"id": "2", "content": "Write a test for the JSON output", "status": "in_progress"},
        {"id": "3", "content": "Document the flag in README", "status": "pending"},
    ]
    bubbles = [
        user_bubble("b01", "Add a --json flag to the report command", t, "claude-4.5-sonnet"),
        assistant_bubble("b02", t + 1000, "I'll plan this first."),
        assistant_bubble(
            "b03", t + 2000, tool=tool("todo_write", {"merge": False, "todos": todos}, {})
        ),
        assistant_bubble(
            "b04",
            t + 3000,
            tool=tool(
                "edit_file",
                {"target_file": report, "instructions": "add flag", "code_edit": "..."},
                {"diff": {"chunks": []}},
            ),
        ),
        assistant_bubble(
            "b05",
            t + 4000,
            tool=tool(
                "run_terminal_cmd",
                {"command": "pytest -q tests/test_report.py", "is_background": False},
                {
                    "output": "F\nFAILED tests/test_report.py::test_json - AssertionError: "
                    "expected dict\n1 failed in 0.12s",
                    "exitCode": 1,
                },
                status="error",
            ),
        ),
        user_bubble("b06", "Keep the old text output as the default", t + 5000),
        assistant_bubble("b07", t + 6000, "Understood: text stays the default."),
    ]
    composer = {
        "_v": 10,
        "composerId": composer_id,
        "name": "Report JSON flag",
        "createdAt": t,
        "lastUpdatedAt": t + 6000,
        "status": "error",
        "unifiedMode": "agent",
        "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
        "fullConversationHeadersOnly": [
            {"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles
        ],
        "conversationMap": {},
        "originalFileStates": {folder_uri(report): {"content": "old", "firstEditBubbleId": "b04"}},
        "newlyCreatedFiles": [{"uri": {"fsPath": test_file, "path": test_file, "scheme": "file"}}],
        "todos": todos,
        "createdOnBranch": "feature/json",
        "context": {},
    }
    return Chat(composer_id, bubbles, composer, "Report JSON flag", t, t + 6000)


class CursorHome:
    """A Cursor User folder under a fake HOME, for one platform's layout."""

    def __init__(self, home: Path, platform: str = "linux", *, wal: bool = False) -> None:
        self.user = home / USER_DIRS[platform]
        self.wal = wal
        self.global_db = self.user / "globalStorage" / "state.vscdb"
        conn = open_db(self.global_db, wal=wal)
        conn.close()

    def workspace(self, storage_id: str, folder: str) -> Path:
        storage = self.user / "workspaceStorage" / storage_id
        storage.mkdir(parents=True, exist_ok=True)
        (storage / "workspace.json").write_text(json.dumps({"folder": folder_uri(folder)}))
        open_db(storage / "state.vscdb").close()
        return storage / "state.vscdb"

    def add(self, storage_id: str, chat: Chat, *, blob: bool = True, listed: bool = True) -> None:
        db = self.user / "workspaceStorage" / storage_id / "state.vscdb"
        if listed:
            self.list_chats(db, [chat])
        conn = open_db(self.global_db, wal=self.wal)
        try:
            conn.execute("BEGIN")
            if chat.composer:
                put(
                    conn,
                    "cursorDiskKV",
                    f"composerData:{chat.composer_id}",
                    chat.composer,
                    blob=blob,
                )
            for bubble in chat.bubbles:
                key = f"bubbleId:{chat.composer_id}:{bubble['bubbleId']}"
                put(conn, "cursorDiskKV", key, bubble, blob=blob)
            conn.execute("COMMIT")
        finally:
            conn.close()

    def list_chats(self, db: Path, chats: list[Chat]) -> None:
        conn = open_db(db)
        try:
            row = conn.execute(
                "SELECT value FROM ItemTable WHERE key = 'composer.composerData'"
            ).fetchone()
            index = json.loads(row[0]) if row else {"allComposers": [], "selectedComposerIds": []}
            for chat in chats:
                head: dict[str, Any] = {
                    "type": "head",
                    "composerId": chat.composer_id,
                    "createdAt": chat.created,
                    "lastUpdatedAt": chat.updated,
                    "unifiedMode": "agent",
                }
                if chat.name:
                    head["name"] = chat.name
                index["allComposers"].append(head)
            put(conn, "ItemTable", "composer.composerData", index, blob=False)
        finally:
            conn.close()
