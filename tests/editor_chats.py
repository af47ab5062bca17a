"""Stores of VS Code Copilot Chat and the Cline and Roo Code extensions, built from the
shapes in the editors' public sources (the editors cannot run here), laid out in a HOME
as each platform lays it out; and a way to run the CLI as if on that platform.

The shapes: github.com/microsoft/vscode `common/model/chatModel.ts` (ISerializableChatData
v3), `common/chatService/chatService.ts` (response parts), `common/model/
objectMutationLog.ts` (the .jsonl log); github.com/cline/cline `src/shared/
ExtensionMessage.ts`, `src/shared/HistoryItem.ts`; github.com/RooCodeInc/Roo-Code
`packages/types/src/history.ts`, `src/shared/todo.ts`.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PLATFORM_USER = {
    "linux": ".config/{name}/User",
    "darwin": "Library/Application Support/{name}/User",
    "win32": "AppData/Roaming/{name}/User",
}
T0 = 1764590000000  # ms

REQUEST = "Add a --verbose flag to the CLI and make the tests pass"
FINAL = "The flag is in; `pytest` still fails on test_cli_verbose."
FAILING = "pytest -q tests/test_cli.py"
SECRET = "ghp_" + "Q" * 36  # planted in the chats: must never leave redacted


def user_dir(home: Path, platform: str, name: str = "Code") -> Path:
    return home / PLATFORM_USER[platform].format(name=name)


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def workspace_storage(user: Path, workspace: Path, storage_id: str = "a1b2c3") -> Path:
    folder = user / "workspaceStorage" / storage_id
    _write(folder / "workspace.json", {"folder": workspace.as_uri()})
    return folder


# -- Copilot Chat ---------------------------------------------------------------------
def _uri(path: Path) -> dict[str, Any]:
    """A serialized URI as `URI.toJSON` writes one whose fsPath was never asked for: the
    path only, a Windows drive as "/C:/..."."""
    posix = path.as_posix()
    return {"$mid": 1, "scheme": "file", "path": posix if posix.startswith("/") else "/" + posix}


def copilot_session(workspace: Path, session_id: str = "5e55-10n") -> dict[str, Any]:
    app = workspace / "src" / "cli.py"
    first = {
        "requestId": "request_1",
        "timestamp": T0,
        "message": {"text": REQUEST, "parts": [{"text": REQUEST, "kind": "text"}]},
        "variableData": {"variables": []},
        "modelId": "copilot/gpt-4.1",
        "response": [
            {"value": "I'll plan this first.", "supportThemeIcons": False},
            {
                "kind": "toolInvocationSerialized",
                "toolId": "manage_todo_list",
                "toolCallId": "call_todo_1",
                "invocationMessage": "Updating the todo list",
                "isConfirmed": {"type": 1},
                "isComplete": True,
                "toolSpecificData": {
                    "kind": "todoList",
                    "todoList": [
                        {"id": "1", "title": "Add the --verbose option", "status": "completed"},
                        {"id": "2", "title": "Make the tests pass", "status": "in-progress"},
                    ],
                },
            },
            {"kind": "textEditGroup", "uri": _uri(app), "edits": [[]], "done": True},
            {
                "kind": "toolInvocationSerialized",
                "toolId": "run_in_terminal",
                "toolCallId": "call_term_1",
                "invocationMessage": "Running tests",
                "isComplete": True,
                "toolSpecificData": {
                    "kind": "terminal",
                    "commandLine": {"original": FAILING},
                    "language": "sh",
                    "terminalCommandState": {"exitCode": 1},
                    "terminalCommandOutput": {
                        "text": f"E   AssertionError: verbose not set token={SECRET}\n1 failed"
                    },
                },
            },
            {"kind": "markdownContent", "content": {"value": FINAL}},
        ],
        "result": {"timings": {"totalElapsed": 900}},
        "modelState": {"value": 1, "completedAt": T0 + 900},
    }
    second = {
        "requestId": "request_2",
        "timestamp": T0 + 60_000,
        "message": {"text": "continue", "parts": []},
        "editedFileEvents": [{"uri": _uri(workspace / "README.md"), "eventKind": 3}],
        "response": [],
        "result": {
            "errorDetails": {
                "message": "Sorry, you have been rate-limited. Please wait a moment.",
                "isRateLimited": True,
            }
        },
        "modelState": {"value": 3},
    }
    return {
        "version": 3,
        "sessionId": session_id,
        "creationDate": T0,
        "customTitle": "Verbose flag",
        "initialLocation": "panel",
        "requesterUsername": "dev",
        "responderUsername": "GitHub Copilot",
        "requests": [first, second],
    }


def copilot_log(session: dict[str, Any]) -> str:
    """The same session as VS Code's newer .jsonl log: the first request in the initial
    object, then pushes and sets as the editor appends them."""
    initial = copy.deepcopy(session)
    first, second = initial["requests"]
    parts = first["response"]
    first["response"] = parts[:1]
    first["modelState"] = {"value": 0}
    initial["requests"] = [first]
    lines = [{"kind": 0, "v": initial}]
    lines.append({"kind": 2, "k": ["requests", 0, "response"], "v": parts[1:3]})
    lines.append({"kind": 2, "k": ["requests", 0, "response"], "v": parts[3:]})
    lines.append({"kind": 1, "k": ["requests", 0, "modelState"], "v": {"value": 1}})
    lines.append(
        {"kind": 2, "k": ["requests"], "v": [dict(second, result={}, modelState={"value": 0})]}
    )
    lines.append({"kind": 1, "k": ["requests", 1, "result"], "v": second["result"]})
    lines.append({"kind": 1, "k": ["requests", 1, "modelState"], "v": second["modelState"]})
    lines.append({"kind": 3, "k": ["inputState"]})
    return "".join(json.dumps(line) + "\n" for line in lines)


def write_copilot(
    user: Path, workspace: Path, *, jsonl: bool, session_id: str = "5e55-10n"
) -> Path:
    folder = workspace_storage(user, workspace) / "chatSessions"
    session = copilot_session(workspace, session_id)
    if jsonl:
        return _write(folder / f"{session_id}.jsonl", copilot_log(session))
    return _write(folder / f"{session_id}.json", json.dumps(session, indent=2))


# -- Cline and Roo Code --------------------------------------------------------------------
def _say(ts: int, say: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {"ts": T0 + ts, "type": "say", "say": say, "text": text, **extra}


def _ask(ts: int, ask: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {"ts": T0 + ts, "type": "ask", "ask": ask, "text": text, **extra}


def task_messages(workspace: Path, *, roo: bool) -> list[dict[str, Any]]:
    tool = json.dumps
    messages = [
        _say(0, "task", REQUEST),
        _say(1, "api_req_started", tool({"request": "...", "tokensIn": 10, "cost": 0.01})),
        _say(2, "text", "I'll plan this first."),
    ]
    if roo:
        todos = [
            {"id": "t1", "content": "Add the --verbose option", "status": "completed"},
            {"id": "t2", "content": "Make the tests pass", "status": "in_progress"},
        ]
        messages.append(_ask(3, "tool", tool({"tool": "updateTodoList", "todos": todos})))
    else:
        messages.append(
            _say(3, "task_progress", "- [x] Add the --verbose option\n- [ ] Make the tests pass")
        )
    messages += [
        _say(4, "tool", tool({"tool": "editedExistingFile", "path": "src/cli.py", "diff": "+x"})),
        _say(
            5,
            "tool",
            tool({"tool": "newFileCreated", "path": "tests/test_verbose.py", "content": "x"}),
        ),
        _ask(6, "command", FAILING),
        _say(7, "command_output", f"E   AssertionError: verbose not set token={SECRET}\n"),
        _say(8, "command_output", "1 failed\nCommand exited with code 1"),
        _say(9, "user_feedback", "keep going"),
        _say(10, "text", FINAL),
        _say(
            11,
            "api_req_started",
            tool(
                {
                    "request": "...",
                    "cancelReason": "streaming_failed",
                    "streamingFailedMessage": "429 Too Many Requests: rate limit exceeded",
                }
            ),
        ),
        _ask(12, "api_req_failed", "429 Too Many Requests: rate limit exceeded"),
    ]
    return messages


def write_cline(user: Path, workspace: Path, task_id: str = "1764590000000") -> Path:
    root = user / "globalStorage" / "saoudrizwan.claude-dev"
    history = [
        {
            "id": task_id,
            "ts": T0,
            "task": REQUEST,
            "tokensIn": 10,
            "tokensOut": 5,
            "totalCost": 0.01,
            "cwdOnTaskInitialization": str(workspace),
            "modelId": "claude-sonnet-4-5",
        },
    ]
    _write(root / "state" / "taskHistory.json", history)
    task = root / "tasks" / task_id
    _write(
        task / "api_conversation_history.json",
        [
            {"role": "user", "content": [{"type": "text", "text": f"<task>\n{REQUEST}\n</task>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": FINAL}]},
        ],
    )
    _write(
        task / "task_metadata.json",
        {
            "files_in_context": [
                {"path": "src/cli.py", "record_state": "active", "record_source": "cline_edited"},
                {"path": "docs/usage.md", "record_state": "active", "record_source": "user_edited"},
                {"path": "setup.cfg", "record_state": "active", "record_source": "read_tool"},
            ],
            "model_usage": [],
        },
    )
    _write(
        task / f"focus_chain_taskid_{task_id}.md",
        "# Focus chain\n- [x] Add the --verbose option\n- [x] Make the tests pass\n- [ ] Update the docs\n",
    )
    return _write(task / "ui_messages.json", task_messages(workspace, roo=False))


def write_roo(user: Path, workspace: Path, task_id: str = "0b5e-roo-task") -> Path:
    root = user / "globalStorage" / "rooveterinaryinc.roo-cline"
    task = root / "tasks" / task_id
    item = {
        "id": task_id,
        "number": 1,
        "ts": T0,
        "task": REQUEST,
        "workspace": str(workspace),
        "mode": "code",
        "status": "active",
        "tokensIn": 10,
        "tokensOut": 5,
        "totalCost": 0.01,
    }
    _write(task / "history_item.json", item)
    _write(root / "tasks" / "_index.json", {"version": 1, "updatedAt": T0, "entries": [item]})
    _write(
        task / "task_metadata.json",
        {
            "files_in_context": [
                {"path": "src/cli.py", "record_state": "active", "record_source": "roo_edited"}
            ]
        },
    )
    return _write(task / "ui_messages.json", task_messages(workspace, roo=True))


# -- running the CLI as if on a platform ------------------------------------------------
_AS_PLATFORM = """
import sys, types
from passdown.agents import _editors
platform = sys.argv.pop(1)
_editors._platform = types.SimpleNamespace(
    is_windows=lambda: platform == "win32", is_macos=lambda: platform == "darwin")
from passdown.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_cli(
    args: list[str],
    home: Path,
    *,
    platform: str = "linux",
    cwd: Path | None = None,
    prelude: str = "",
    path: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`passdown ARGS` in its own process with HOME=home, the editors' folders looked up
    as on `platform` (the rest of passdown runs as on this machine); `prelude` is Python
    run first (a smaller bound to meet)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("APPDATA", "XDG_CONFIG_HOME", "PASSDOWN_EDITOR_USER_DIRS")
    }
    env.update(HOME=str(home), PASSDOWN_DATA_DIR=str(home / ".passdown-data"), NO_COLOR="1")
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-c", prelude + _AS_PLATFORM, platform, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home,
        timeout=120,
    )
