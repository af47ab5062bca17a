"""Issue 6, done means: agents use passdown themselves.

After `passdown install claude` and `passdown install codex` in a temp HOME, a real Claude
Code session that ends leaves a handoff in the store (its SessionEnd hook), and a real Codex
session started next reads it through the passdown MCP server: the scripted model makes
Codex discover the tool (`tool_search`, Codex 0.171 defers MCP tools) and call
`load_handoff`; the call reaches passdown and its answer, which Codex sends back to the
model, carries the handoff.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, run_claude, run_codex, run_passdown
from e2e.checks import ok
from e2e.hooked import passdown_on_path, with_hooks
from e2e.servers import AnthropicServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TOOL_SEARCH = "tool_search"
MCP_NAMESPACE = "mcp__passdown"


class ToolSearchServer(OpenAIResponsesServer):
    """The scripted Responses server, plus the two item shapes Codex 0.171 uses for MCP
    tools: a client-executed `tool_search_call`, and a `function_call` in a namespace
    (Step.tool "namespace/name")."""

    search_retries = 20

    def _items(self, step: Step) -> list[dict[str, Any]]:
        if step.tool == TOOL_SEARCH:
            items = super()._items(Step(text=step.text)) if step.text else []
            items.append(
                {
                    "type": "tool_search_call",
                    "id": self._new_id("ts"),
                    "call_id": self._new_id("call"),
                    "status": "completed",
                    "execution": "client",
                    "arguments": step.input,
                }
            )
            return items
        if step.tool and "/" in step.tool:
            namespace, name = step.tool.split("/", 1)
            items = super()._items(Step(text=step.text, tool=name, input=step.input))
            for item in items:
                if item["type"] == "function_call":
                    item["namespace"] = namespace
            return items
        return super()._items(step)

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        # Codex starts MCP servers in the background; a search made before the server is
        # up finds nothing. Search again (a real model would too) until it answers.
        if isinstance(body, dict) and body.get("tools") and self._empty_search(body):
            with self._lock:
                if self._cursor > 0 and self.search_retries > 0:
                    self.search_retries -= 1
                    self._cursor -= 1
            time.sleep(0.3)
        super().handle(h, method, body)

    @staticmethod
    def _empty_search(body: dict[str, Any]) -> bool:
        items = body.get("input") or []
        last = items[-1] if items else {}
        return (
            isinstance(last, dict)
            and last.get("type") == "tool_search_output"
            and not last.get("tools")
        )


def _find_handoffs(env: dict[str, str], ws: Path) -> list[dict[str, Any]]:
    out = ok(run_passdown(env, ws, "find", "--type", "handoff", "--json"), "passdown find")
    return list(json.loads(out)["records"])


def _function_outputs(server: OpenAIResponsesServer) -> list[str]:
    outputs = []
    for req in server.step_requests():
        for item in req.body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                outputs.append(json.dumps(item.get("output"), ensure_ascii=False))
    return outputs


def test_claude_session_end_hook_then_codex_reads_it_over_mcp(
    tmp_path: Path, agent_env: AgentEnv, workspace: Path
) -> None:
    bindir, calls = passdown_on_path(tmp_path)

    # 1. Claude: install, then one real session that ends.
    claude_steps = [
        Step(
            text="Writing the notes file.",
            tool="Write",
            input={"file_path": str(workspace / "NOTES.md"), "content": "usage notes\n"},
        ),
        Step(text="NOTES.md is written; next: document the add() edge cases."),
    ]
    with AnthropicServer(claude_steps) as anthropic:
        env = with_hooks(
            agent_env.environ(anthropic_url=anthropic.url), bindir, workspace, "claude"
        )
        proc = run_claude(env, workspace, "Write usage notes for the calculator")
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hook claude" in calls.read_text(), "Claude's SessionEnd hook never ran passdown"
    handoffs = _find_handoffs(env, workspace)
    assert len(handoffs) == 1, handoffs
    handoff = handoffs[0]
    assert handoff["provenance"]["agent"] == "claude"
    assert "Write usage notes for the calculator" in handoff["title"]

    # 2. Codex, next, in the same project: reads the handoff through the MCP server.
    codex_steps = [
        Step(
            text="Looking for the passdown tools.",
            tool=TOOL_SEARCH,
            input={"query": "passdown load handoff"},
        ),
        Step(text="Loading the latest handoff.", tool=f"{MCP_NAMESPACE}/load_handoff", input={}),
        Step(
            text="Claiming it.",
            tool=f"{MCP_NAMESPACE}/mark_handoff",
            input={"id": handoff["id"], "status": "claimed"},
        ),
        Step(text="I have the handoff and will continue from its next steps."),
    ]
    with ToolSearchServer(codex_steps) as openai:
        # environ writes Codex's provider config, install adds passdown's MCP and hooks
        env = with_hooks(agent_env.environ(openai_url=openai.url), bindir, workspace, "codex")
        proc = run_codex(env, workspace, "Continue the previous agent's work")
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert openai.remaining == 0, "Codex did not get through the scripted tool calls"
    log = calls.read_text()
    assert "mcp" in log.split(), f"Codex never started `passdown mcp`:\n{log}"

    outputs = _function_outputs(openai)
    loaded = [o for o in outputs if handoff["id"] in o and "markdown" in o]
    assert loaded, f"no load_handoff answer carried the handoff: {outputs}"
    assert "NOTES.md" in loaded[0]  # the handoff's content, not only its id
    assert "Write usage notes for the calculator" in loaded[0]
    assert any("claimed" in o and "Error" not in o for o in outputs), outputs
    # Codex's hooks ran passdown, which stored Codex's own handoffs: at the turn's end
    # (`Stop`) and as `codex exec` ends its session (`SessionEnd`)
    assert "hook codex" in calls.read_text(), "Codex's hooks never ran passdown"
    # an older Codex starts `notify` and does not wait for it: give the hook time to finish
    deadline = time.monotonic() + 60
    while (
        len(agents := [h["provenance"]["agent"] for h in _find_handoffs(env, workspace)]) < 3
        and time.monotonic() < deadline
    ):
        time.sleep(0.5)
    assert sorted(agents) == ["claude", "codex", "codex"], agents
