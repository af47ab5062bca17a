"""One chat per editor laid out as the editor's own source writes it (not from our other
fixtures), exported through the CLI with HOME in tmp_path (issue 30, item 9): a failed
command is a failure with its exit code (Cline and Roo state it only in the result the
model was sent next), the session starts at its first message (the task index's `ts` is
the last activity), Roo's request is the user's, a Copilot Chat `.json` cut inside its
first response keeps the request and says it was cut, and a Roo task with no message is
the empty-session exit (5) the README documents.

Each layout names the source files it follows: github.com/cline/cline at 864419d8b0 (the
last classic extension before the SDK migration, `apps/vscode/src/...`),
github.com/RooCodeInc/Roo-Code at cb83656718, github.com/microsoft/vscode's
`src/vs/workbench/contrib/chat/common/model/chatModel.ts`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import editor_chats as ec

WS_DETAILS = "<environment_details>\n# Current Time\n12/1/2025\n</environment_details>"
TEST_OUTPUT = (
    "F                                                                        [100%]\n"
    "___________________________ test_verbose ___________________________\n"
    "E   AssertionError: verbose not set\n"
    "FAILED tests/test_cli.py::test_verbose - AssertionError: verbose not set\n"
    "1 failed in 0.05s"
)
ERROR_LINE = "FAILED tests/test_cli.py::test_verbose - AssertionError: verbose not set"


def _iso(millis: int) -> str:
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    return home, workspace


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON.stringify with no indentation, as the extensions and VS Code write their files
    path.write_text(data if isinstance(data, str) else json.dumps(data, separators=(",", ":")))
    return path


def _export(agent: str, home: Path, workspace: Path) -> tuple[dict[str, Any], str]:
    done = ec.run_cli(
        ["export", "--from", agent, "--workspace", str(workspace), "--no-store", "--json"],
        home,
        cwd=workspace,
    )
    assert done.returncode == 0, done.stderr
    folder = workspace / ".agent-handoff"
    handoff = json.loads((folder / "handoff.json").read_text())
    return handoff, (folder / "HANDOFF.md").read_text()


def _listed(agent: str, home: Path, workspace: Path) -> dict[str, Any]:
    done = ec.run_cli(["sessions", "--from", agent, "--json"], home, cwd=workspace)
    assert done.returncode == 0, done.stderr
    [ref] = json.loads(done.stdout)
    return dict(ref)


# -- Cline ----------------------------------------------------------------------------------
# Follows github.com/cline/cline (864419d8b0^ `apps/vscode/src/`):
# - the task id: `Date.now().toString()` (`core/controller/index.ts` initTask);
# - `ui_messages.json`: `say:task` first (`core/task/index.ts` startTask), then
#   `say:api_req_started` `{request}` (the user content as markdown,
#   `formatContentBlockToMarkdown`, `core/task/index.ts` recursivelyMakeClineRequests);
#   the command asked for approval `ask:command`
#   (`core/task/tools/handlers/ExecuteCommandToolHandler.ts`), its output as
#   `ask:command_output` chunks (`integrations/terminal/CommandOrchestrator.ts`
#   flushBuffer): the terminal's lines only; the result "Command failed with exit code
#   1.\nOutput:\n..." (`CommandOrchestrator.ts`, completed) pushed as "[execute_command for
#   'CMD'] Result:\n..." (`core/task/tools/utils/ToolResultUtils.ts` pushToolResult) and
#   shown in the next `api_req_started`'s `request`;
# - `api_conversation_history.json`: the same user content, each message with a `ts`
#   (`core/task/message-state.ts` addToApiConversationHistory);
# - `state/taskHistory.json`: `ts` = the last message's (`message-state.ts`
#   saveClineMessagesAndUpdateHistoryInternal: lastRelevantMessage.ts).
CLINE_TASK = ec.T0  # the task id: when it was created


def _cline_result() -> str:
    return (
        f"[execute_command for '{ec.FAILING}'] Result:\n"
        f"Command failed with exit code 1.\nOutput:\n{TEST_OUTPUT}"
    )


def write_cline_task(user: Path, workspace: Path) -> Path:
    root = user / "globalStorage" / "saoudrizwan.claude-dev"
    task_id = str(CLINE_TASK)
    t = CLINE_TASK + 40  # the first message: a few ms after the task was created
    request = f"<task>\n{ec.REQUEST}\n</task>"
    messages = [
        {"ts": t, "type": "say", "say": "task", "text": ec.REQUEST, "images": [], "files": []},
        {
            "ts": t + 10,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps(
                {"request": f"{request}\n\n{WS_DETAILS}", "tokensIn": 900, "cost": 0.01}
            ),
            "conversationHistoryIndex": -1,
        },
        {"ts": t + 2000, "type": "say", "say": "text", "text": "I'll run the tests first."},
        {"ts": t + 2100, "type": "ask", "ask": "command", "text": ec.FAILING, "partial": False},
        {"ts": t + 4000, "type": "ask", "ask": "command_output", "text": TEST_OUTPUT},
        {
            "ts": t + 4100,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"request": f"{_cline_result()}\n\n{WS_DETAILS}"}),
            "conversationHistoryIndex": 1,
        },
        {"ts": t + 9000, "type": "say", "say": "text", "text": ec.FINAL},
    ]
    last = messages[-1]["ts"]
    _write(
        root / "state" / "taskHistory.json",
        [
            {
                "id": task_id,
                "ulid": "01JDX7R5ZV4M8K2Q3N6P9T0W1Y",
                "ts": last,
                "task": ec.REQUEST,
                "tokensIn": 1800,
                "tokensOut": 120,
                "totalCost": 0.02,
                "size": 4096,
                "cwdOnTaskInitialization": str(workspace),
                "isFavorited": False,
                "modelId": "claude-sonnet-4-5",
            }
        ],
    )
    task = root / "tasks" / task_id
    _write(
        task / "api_conversation_history.json",
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": request},
                    {"type": "text", "text": WS_DETAILS},
                ],
                "ts": t + 10,
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "I'll run the tests first.\n\n<execute_command>\n"
                        f"<command>{ec.FAILING}</command>\n"
                        "<requires_approval>false</requires_approval>\n</execute_command>",
                    }
                ],
                "ts": t + 2050,
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": _cline_result()},
                    {"type": "text", "text": WS_DETAILS},
                ],
                "ts": t + 4100,
            },
            {"role": "assistant", "content": [{"type": "text", "text": ec.FINAL}], "ts": last},
        ],
    )
    return _write(task / "ui_messages.json", messages)


def _assert_failed_command(handoff: dict[str, Any], markdown: str) -> None:
    [command] = handoff["state"]["commands"]
    assert command["command"] == ec.FAILING
    assert (command["ok"], command["exit_code"]) == (False, 1)
    assert command["error"].startswith(ERROR_LINE)  # and the runner's verdict after it
    failure = handoff["state"]["last_failure"]
    assert failure is not None
    assert (failure["command"], failure["exit_code"]) == (ec.FAILING, 1)
    assert failure["error"] == command["error"]
    assert handoff["state"]["commands_failed"] == 1
    assert ERROR_LINE in markdown


def test_cline_failed_command_as_clines_source_writes_it(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    write_cline_task(ec.user_dir(home, "linux"), workspace)
    handoff, markdown = _export("cline-ext", home, workspace)
    _assert_failed_command(handoff, markdown)
    assert handoff["task"]["original_request"] == ec.REQUEST


def test_cline_starts_when_the_task_was_created_not_at_its_last_activity(
    tmp_path: Path,
) -> None:
    home, workspace = _home(tmp_path)
    path = write_cline_task(ec.user_dir(home, "linux"), workspace)
    last = json.loads(path.read_text())[-1]["ts"]
    handoff, markdown = _export("cline-ext", home, workspace)
    # started when the task was created (its id); the history's ts is its last activity
    assert handoff["source"]["started_at"] == _iso(CLINE_TASK)
    assert handoff["source"]["updated_at"] == _iso(last)
    assert f"Started: {_iso(CLINE_TASK)}; last activity: {_iso(last)}" in markdown
    assert _listed("cline-ext", home, workspace)["started_at"] == _iso(CLINE_TASK)


def test_cline_exit_code_from_the_api_history_alone(tmp_path: Path) -> None:
    """A task whose `api_req_started` messages carry no request text (cleared, or never
    written by the build): the result the model was sent is in the API history."""
    home, workspace = _home(tmp_path)
    path = write_cline_task(ec.user_dir(home, "linux"), workspace)
    messages = json.loads(path.read_text())
    for message in messages:
        if message.get("say") == "api_req_started":
            message["text"] = json.dumps({"tokensIn": 900, "cost": 0.01})
    _write(path, messages)
    handoff, markdown = _export("cline-ext", home, workspace)
    _assert_failed_command(handoff, markdown)


# -- Roo Code -------------------------------------------------------------------------------
# Follows github.com/RooCodeInc/Roo-Code (cb83656718):
# - the task id: `crypto.randomUUID()` (`src/core/task/Task.ts` constructor);
# - `ui_messages.json`: the request said as `say:text` first (`Task.ts` startTask:
#   `this.say("text", task, images)`); `say:api_req_started` `{apiProtocol}` (no request
#   text since #8696); `ask:command` (`src/core/tools/ExecuteCommandTool.ts`
#   askApproval), `say:command_output` partial while it runs, `ask:command_output` ""
#   (the "proceed while running" ask), the final `say:command_output` (the compressed
#   output, partial false);
# - `api_conversation_history.json`: the request as `<user_message>` text, the
#   `execute_command` `tool_use`, answered by a `tool_result` "Command executed in terminal
#   within working directory '...'. Command execution was not successful, inspect the
#   cause and adjust as needed.\nExit code: 1\nOutput:\n..."
#   (`ExecuteCommandTool.ts` executeCommandInTerminal,
#   `src/core/assistant-message/presentAssistantMessage.ts` pushToolResult);
# - `history_item.json` (`src/core/task-persistence/taskMetadata.ts`): `ts` = the last
#   message's, `task` = the first message's text; "Task #N (No messages)" when there is
#   none (`src/i18n/locales/en/common.json` tasks.no_messages).
ROO_TASK = "8f1c2d3e-4b5a-4c6d-9e7f-0a1b2c3d4e5f"


def write_roo_task(user: Path, workspace: Path) -> Path:
    root = user / "globalStorage" / "rooveterinaryinc.roo-cline"
    task = root / "tasks" / ROO_TASK
    t = ec.T0
    messages = [
        {"ts": t, "type": "say", "say": "text", "text": ec.REQUEST, "images": []},
        {
            "ts": t + 30,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"apiProtocol": "anthropic", "tokensIn": 900, "cost": 0.01}),
        },
        {"ts": t + 2000, "type": "say", "say": "text", "text": "I'll run the tests first."},
        {"ts": t + 2100, "type": "ask", "ask": "command", "text": ec.FAILING, "partial": False},
        {
            "ts": t + 2300,
            "type": "say",
            "say": "command_output",
            "text": "F",
            "partial": True,
        },
        {"ts": t + 2301, "type": "ask", "ask": "command_output", "text": ""},
        {
            "ts": t + 4000,
            "type": "say",
            "say": "command_output",
            "text": TEST_OUTPUT,
            "partial": False,
        },
        {
            "ts": t + 4100,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"apiProtocol": "anthropic", "tokensIn": 1200, "cost": 0.01}),
        },
        {"ts": t + 9000, "type": "say", "say": "text", "text": ec.FINAL, "partial": False},
    ]
    result = (
        f"Command executed in terminal within working directory '{workspace.as_posix()}'. "
        "Command execution was not successful, inspect the cause and adjust as needed.\n"
        f"Exit code: 1\nOutput:\n{TEST_OUTPUT}"
    )
    _write(
        task / "api_conversation_history.json",
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"<user_message>\n{ec.REQUEST}\n</user_message>"},
                    {"type": "text", "text": WS_DETAILS},
                ],
                "ts": t + 30,
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll run the tests first."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01RooCmd",
                        "name": "execute_command",
                        "input": {"command": ec.FAILING},
                    },
                ],
                "ts": t + 2050,
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01RooCmd", "content": result},
                    {"type": "text", "text": WS_DETAILS},
                ],
                "ts": t + 4100,
            },
            {"role": "assistant", "content": [{"type": "text", "text": ec.FINAL}], "ts": t + 9000},
        ],
    )
    item = {
        "id": ROO_TASK,
        "number": 1,
        "ts": messages[-1]["ts"],
        "task": ec.REQUEST,
        "tokensIn": 2100,
        "tokensOut": 150,
        "cacheWrites": 0,
        "cacheReads": 0,
        "totalCost": 0.02,
        "size": 4096,
        "workspace": str(workspace),
        "mode": "code",
        "status": "active",
    }
    _write(task / "history_item.json", item)
    _write(
        root / "tasks" / "_index.json", {"version": 1, "updatedAt": item["ts"], "entries": [item]}
    )
    return _write(task / "ui_messages.json", messages)


def test_roo_failed_command_as_roos_source_writes_it(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    write_roo_task(ec.user_dir(home, "linux"), workspace)
    handoff, markdown = _export("roo", home, workspace)
    _assert_failed_command(handoff, markdown)


def test_roo_request_is_the_users_said_once(tmp_path: Path) -> None:
    """Roo says the task as its first `say:text`: the user's request, never the
    assistant's (the history item's `task` is the same text)."""
    home, workspace = _home(tmp_path)
    write_roo_task(ec.user_dir(home, "linux"), workspace)
    handoff, _ = _export("roo", home, workspace)
    task = handoff["task"]
    assert task["original_request"] == ec.REQUEST
    said = [(e["role"], e["text"]) for e in task["transcript"]]
    assert said[0] == ("user", ec.REQUEST)
    assert ("assistant", ec.REQUEST) not in said
    assert [text for _, text in said].count(ec.REQUEST) == 1
    assert task["latest_progress"] == ec.FINAL


def test_roo_starts_at_its_first_message_not_at_its_last_activity(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    path = write_roo_task(ec.user_dir(home, "linux"), workspace)
    last = json.loads(path.read_text())[-1]["ts"]
    handoff, markdown = _export("roo", home, workspace)
    assert handoff["source"]["started_at"] == _iso(ec.T0)  # its first message
    assert handoff["source"]["updated_at"] == _iso(last)
    assert f"Started: {_iso(ec.T0)}; last activity: {_iso(last)}" in markdown
    assert _listed("roo", home, workspace)["started_at"] == _iso(ec.T0)


def test_roo_task_with_no_message_is_the_empty_session_exit(tmp_path: Path) -> None:
    """`taskMetadata` with no messages: the index says "Task #1 (No messages)"; the task
    folder's ui_messages.json is `[]` (and so is the API history). Nothing is handed off:
    exit 5, as the README's exit-code table says for a session with no record."""
    home, workspace = _home(tmp_path)
    path = write_roo_task(ec.user_dir(home, "linux"), workspace)
    _write(path, [])
    _write(path.parent / "api_conversation_history.json", [])
    item = json.loads((path.parent / "history_item.json").read_text())
    item.update(task="Task #1 (No messages)", ts=ec.T0)
    _write(path.parent / "history_item.json", item)
    done = ec.run_cli(
        ["export", "--from", "roo", "--workspace", str(workspace), "--no-store"],
        home,
        cwd=workspace,
    )
    assert done.returncode == 5, done.stderr
    assert "ui_messages.json" in done.stderr and "nothing was handed off" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (workspace / ".agent-handoff" / "handoff.json").exists()


# -- VS Code Copilot Chat -------------------------------------------------------------------
# Follows github.com/microsoft/vscode `src/vs/workbench/contrib/chat/common/model/`:
# `chatSessionStore.ts` writeSession (a `.json` under workspaceStorage/<id>/chatSessions/,
# JSON.stringify of the model), `chatModel.ts` ChatModel.toJSON: `{version: 3,
# ...toExport(), sessionId, creationDate, customTitle, inputState}`, toExport:
# `{responderUsername, initialLocation, requests: [{requestId, message: {text, parts},
# variableData, response: [...], shouldBeRemovedOnSend, agent, timestamp, ...,
# ...response.toJSON()}]}`: a request's message is written before its response, and
# the session's creationDate after all its requests.
COPILOT_REQUEST = "Why does test_verbose fail? Fix it."


def copilot_session(workspace: Path) -> str:
    request = {
        "requestId": "request_8d7c6b5a",
        "message": {
            "text": COPILOT_REQUEST,
            "parts": [
                {
                    "range": {"start": 0, "endExclusive": len(COPILOT_REQUEST)},
                    "editorRange": {
                        "startLineNumber": 1,
                        "startColumn": 1,
                        "endLineNumber": 1,
                        "endColumn": len(COPILOT_REQUEST) + 1,
                    },
                    "text": COPILOT_REQUEST,
                    "kind": "text",
                }
            ],
        },
        "variableData": {"variables": []},
        "response": [
            {
                "value": "The test expects `--verbose` to set the log level, but the "
                "option is parsed after logging is configured. I'll move the call",
                "supportThemeIcons": False,
                "supportHtml": False,
            },
            {
                "kind": "toolInvocationSerialized",
                "invocationMessage": "Running tests",
                "isConfirmed": {"type": 1},
                "isComplete": True,
                "toolCallId": "call_1",
                "toolId": "run_in_terminal",
            },
        ],
        "agent": {"id": "github.copilot.editsAgent", "name": "agent"},
        "timestamp": ec.T0,
        "modelId": "copilot/gpt-4.1",
        "responseId": "response_1",
        "result": {"timings": {"totalElapsed": 900}},
        "modelState": {"value": 1},
    }
    session = {
        "version": 3,
        "responderUsername": "GitHub Copilot",
        "initialLocation": "panel",
        "requests": [request],
        "sessionId": "6a1f-chat",
        "creationDate": ec.T0 - 5000,
        "customTitle": "Verbose test",
    }
    return json.dumps(session, separators=(",", ":"))


def test_copilot_chat_json_cut_inside_the_first_response(tmp_path: Path) -> None:
    home, workspace = _home(tmp_path)
    text = copilot_session(workspace)
    cut = text[: text.index("I'll move the call")]  # the editor was writing the answer
    folder = ec.workspace_storage(ec.user_dir(home, "linux"), workspace) / "chatSessions"
    _write(folder / "6a1f-chat.json", cut)
    handoff, markdown = _export("copilot-chat", home, workspace)
    assert handoff["task"]["original_request"] == COPILOT_REQUEST
    assert handoff["ended"]["reason"] == "interrupted"
    assert "cut" in handoff["ended"]["message"]
    assert f"**Goal:** {COPILOT_REQUEST}" in markdown
    assert "normally" not in markdown
    assert any("ends early" in w for w in handoff["warnings"])


def test_a_result_read_past_waits_for_its_command(tmp_path: Path) -> None:
    """The API history is read forward as the UI messages ask: a result passed while
    looking for another command's is still found for its own, in both of Cline's forms
    (text, and a `tool_result` naming its use) and Roo's (`tool_result` by id)."""
    from passdown.agents._ui_messages import CommandResults

    path = _write(
        tmp_path / "api_conversation_history.json",
        [
            {"role": "user", "content": [{"type": "text", "text": "<task>\ngo\n</task>"}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "[execute_command for 'npm test'] Result:\n"
                        "The user denied this operation.",
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t2", "name": "execute_command", "input": {}},
                    {
                        "type": "tool_use",
                        "id": "t3",
                        "name": "execute_command",
                        "input": {"command": "make &amp;&amp; make test"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t3",
                        "content": [
                            {"type": "text", "text": "Exit code: 2\nOutput:\nExit code: 0"}
                        ],
                    }
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": _cline_result()}]},
        ],
    )
    results = CommandResults(path)
    assert results.find(ec.FAILING) == "Command failed with exit code 1."
    assert results.find("make && make test") == "Exit code: 2"  # Roo unescapes it for the UI
    assert results.find("npm test") == "The user denied this operation."
    assert results.find("npm test") is None and results.find("ls") is None
