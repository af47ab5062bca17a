"""Aider as it really writes: the pinned `aider-chat` (PyPI) runs twice in a git workspace
against a scripted chat-completions server on 127.0.0.1, edits a file through its "whole"
edit format, and passdown hands the last run off from the history file it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv
from e2e.checks import load_handoff, ok
from e2e.pyagents import PYAGENT_VERSIONS, pyagent
from e2e.servers import ChatCompletionsServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

FIRST = "Create hello.txt with a greeting."
SECOND = "Add a second line saying goodbye."
COMMIT = "feat: greet and part"


def _reply(body: dict[str, Any]) -> str:
    """Aider sends no tools: its edit is a file name line and a fenced block; a request for
    a commit message gets one line."""
    text = json.dumps(body.get("messages", []))
    if "commit message" in text.lower():
        return COMMIT
    if SECOND in text:
        return "hello.txt\n```\nHello, world!\nGoodbye!\n```\nNext: add a farewell test."
    return "hello.txt\n```\nHello, world!\n```\nThe greeting is written."


def _aider(env: dict[str, str], ws: Path, prompt: str, *extra: str) -> None:
    argv = [
        str(pyagent("aider")),
        *("--model", "openai/scripted-model", "--edit-format", "whole", "--yes-always"),
        *("--no-stream", "--no-check-update", "--analytics-disable", "--no-gitignore"),
        *("--no-pretty", "--no-show-release-notes", "--map-tokens", "0"),
        *("--no-show-model-warnings", *extra, "--message", prompt, "hello.txt"),
    ]
    proc = subprocess.run(
        argv, cwd=ws, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    ok(proc, f"aider {prompt!r}")


def test_aider_handoff_from_its_real_history(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    with ChatCompletionsServer(aux=_reply) as server:
        env = {
            **agent_env.environ(),
            "OPENAI_API_BASE": f"{server.url}/v1",
            # litellm would fetch its model price map from the network at import
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "AIDER_ANALYTICS": "false",
        }
        _aider(env, workspace, FIRST)
        _aider(env, workspace, SECOND, "--restore-chat-history")
    history = (workspace / ".aider.chat.history.md").read_text(encoding="utf-8")
    assert history.count("# aider chat started at") == 2
    assert f"#### {SECOND}  " in history  # aider's own two trailing spaces

    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "export", "--from", "aider", "--no-store"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    ok(proc, "passdown export --from aider")
    md, data = load_handoff(workspace)
    source, task, state = data["source"], data["task"], data["state"]
    assert source["session_id"].endswith("#2")
    assert source["agent_version"] == PYAGENT_VERSIONS["aider"]
    assert source["models"] == ["openai/scripted-model"]
    assert task["original_request"] == SECOND  # no trailing spaces
    assert task["latest_user_message"] == SECOND
    assert "Goodbye!" in (task["latest_progress"] or "")
    touched = {f["path"] for f in state["files_touched"]}
    assert "hello.txt" in touched
    every_path = touched | {f["path"] for f in state["workspace_changes"]}
    assert not [p for p in every_path if p.startswith(".aider")], every_path
    # git's own status may list them; the task's files and the changes meanwhile do not
    files_section = md.split("## Files touched", 1)[1].split("\n## ", 1)[0]
    assert "hello.txt" in files_section
    assert ".aider" not in files_section
    assert "add a farewell test" in " ".join(state["next_steps"])
