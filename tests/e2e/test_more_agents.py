"""Smoke tests for the five agents of issue 7: each real, pinned CLI runs once against its
scripted model server in an isolated HOME, runs a real write tool, and writes its session
store where the fixtures in tests/fixtures/sessions/<agent>/full say it does."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from e2e.agents import (
    CHAT_MODEL,
    GEMINI_MODEL,
    VERSIONS,
    AgentEnv,
    copilot_cache_dir,
    find_agent,
    run_copilot,
    run_gemini,
    run_opencode,
    run_pi,
    run_qwen,
)
from e2e.checks import ok
from e2e.servers import ChatCompletionsServer, GeminiServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

PROMPT = "Write out.txt saying scripted."
FINAL = "Finished: out.txt is written."


def _write_script(tool: str, args: dict[str, object]) -> list[Step]:
    return [Step(text="Writing out.txt.", tool=tool, input=args), Step(text=FINAL)]


@pytest.mark.parametrize("agent", ["gemini", "qwen", "opencode", "pi", "copilot"])
def test_pinned_version_installed(agent_bin: Path, tmp_path: Path, agent: str) -> None:
    env = {
        "PATH": f"{agent_bin}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(copilot_cache_dir()),
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
    }
    proc = subprocess.run(
        [str(find_agent(agent)), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    # pi prints its version on stderr
    assert VERSIONS[agent] in proc.stdout + proc.stderr, (agent, proc.stdout, proc.stderr)


def _assert_step_requests(srv: ChatCompletionsServer | GeminiServer, tool: str) -> None:
    steps = srv.step_requests()
    assert len(steps) == 2 and srv.remaining == 0, [r.path for r in srv.requests]
    assert PROMPT in steps[0].text()
    assert tool in steps[0].text()  # the agent offered the tool the script calls


def test_gemini_writes_session(
    agent_env: AgentEnv, workspace: Path, gemini_server: GeminiServer
) -> None:
    out = workspace / "out.txt"
    gemini_server.set_script(
        _write_script("write_file", {"file_path": str(out), "content": "scripted\n"})
    )
    env = agent_env.gemini_environ(gemini_server.url)
    assert FINAL in ok(run_gemini(env, workspace, PROMPT, timeout=90), "gemini")
    assert out.read_text() == "scripted\n"
    _assert_step_requests(gemini_server, "write_todos")
    step = gemini_server.step_requests()[0]
    assert f"/models/{GEMINI_MODEL}:streamGenerateContent" in step.path
    assert step.headers.get("x-goog-api-key")
    chats = list((agent_env.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    assert len(chats) == 1
    lines = [json.loads(line) for line in chats[0].read_text().splitlines()]
    assert "sessionId" in lines[0]
    calls = [c for rec in lines if rec.get("type") == "gemini" for c in rec.get("toolCalls", [])]
    assert any(c["name"] == "write_file" and c["status"] == "success" for c in calls)


def test_qwen_writes_session(
    agent_env: AgentEnv, workspace: Path, chat_server: ChatCompletionsServer
) -> None:
    out = workspace / "out.txt"
    chat_server.set_script(
        _write_script("write_file", {"file_path": str(out), "content": "scripted\n"})
    )
    env = agent_env.qwen_environ(chat_server.url)
    assert FINAL in ok(run_qwen(env, workspace, PROMPT, timeout=90), "qwen")
    assert out.read_text() == "scripted\n"
    _assert_step_requests(chat_server, "todo_write")
    # Like Claude Code: every non-alphanumeric character becomes "-" (lossy)
    encoded = re.sub(r"[^A-Za-z0-9]", "-", str(workspace))
    chats = list((agent_env.home / ".qwen" / "projects" / encoded / "chats").glob("*.jsonl"))
    assert len(chats) == 1
    records = [json.loads(line) for line in chats[0].read_text().splitlines()]
    assert {"user", "assistant", "tool_result"} <= {r["type"] for r in records}
    assert all(r["cwd"] == str(workspace) for r in records)


def test_opencode_writes_session(
    agent_env: AgentEnv, workspace: Path, chat_server: ChatCompletionsServer
) -> None:
    out = workspace / "out.txt"
    chat_server.set_script(_write_script("write", {"filePath": str(out), "content": "scripted\n"}))
    env = agent_env.opencode_environ(chat_server.url)
    ok(run_opencode(env, workspace, PROMPT, timeout=90), "opencode")
    assert out.read_text() == "scripted\n"
    _assert_step_requests(chat_server, "todowrite")
    assert not (agent_env.home / ".npm").exists(), "opencode reached for the npm registry"
    db = agent_env.home / ".local" / "share" / "opencode" / "opencode.db"
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        sessions = con.execute("SELECT id, directory FROM session").fetchall()
        tools = [
            json.loads(d)["tool"]
            for (d,) in con.execute(
                "SELECT data FROM part WHERE json_extract(data, '$.type') = 'tool'"
            )
        ]
    assert [d for _, d in sessions] == [str(workspace)]
    assert tools == ["write"]


def test_pi_writes_session(
    agent_env: AgentEnv, workspace: Path, chat_server: ChatCompletionsServer
) -> None:
    out = workspace / "out.txt"
    chat_server.set_script(_write_script("write", {"path": str(out), "content": "scripted\n"}))
    env = agent_env.pi_environ(chat_server.url)
    assert FINAL in ok(run_pi(env, workspace, PROMPT, timeout=90), "pi")
    assert out.read_text() == "scripted\n"
    _assert_step_requests(chat_server, '"write"')
    assert chat_server.step_requests()[0].body["model"] == CHAT_MODEL
    encoded = "--" + str(workspace).strip("/").replace("/", "-") + "--"
    files = list((agent_env.home / ".pi" / "agent" / "sessions" / encoded).glob("*.jsonl"))
    assert len(files) == 1
    first = json.loads(files[0].read_text().splitlines()[0])
    assert first["type"] == "session" and first["cwd"] == str(workspace)


def test_copilot_writes_session(
    agent_env: AgentEnv, workspace: Path, chat_server: ChatCompletionsServer
) -> None:
    out = workspace / "out.txt"
    chat_server.set_script(_write_script("create", {"path": str(out), "file_text": "scripted\n"}))
    env = agent_env.copilot_environ(chat_server.url)
    assert FINAL in ok(run_copilot(env, workspace, PROMPT, timeout=120), "copilot")
    assert out.read_text() == "scripted\n"
    _assert_step_requests(chat_server, '"sql"')
    # The unpacked runtime comes from the shared cache, not this test's HOME.
    assert not (agent_env.home / ".cache" / "copilot").exists()
    events = list((agent_env.home / ".copilot" / "session-state").glob("*/events.jsonl"))
    assert len(events) == 1
    lines = [json.loads(line) for line in events[0].read_text().splitlines()]
    types = [ev["type"] for ev in lines]
    assert types[0] == "session.start"
    assert lines[0]["data"]["context"]["cwd"] == str(workspace)
    assert {"user.message", "tool.execution_complete", "assistant.message"} <= set(types)
