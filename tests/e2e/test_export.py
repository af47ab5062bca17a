"""Issue 3, tests 1-2: a real agent session -> `passdown export` -> a correct handoff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e import record
from e2e.agents import AgentEnv, run_passdown
from e2e.checks import assert_handoff_matches, load_handoff, ok

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def _recorded(agent: str, name: str, tmp_path: Path, agent_env: AgentEnv) -> record.Ctx:
    """Run a recorder scenario live, in this test's own HOME and workspace."""
    ctx = record.new_ctx(agent, name, tmp_path / "ws", agent_env)
    record.SCENARIOS[f"{agent}/{name}"][0](ctx)
    ctx.expected["agent"] = agent
    return ctx


def test_claude_session_export(tmp_path: Path, agent_env: AgentEnv) -> None:
    ctx = _recorded("claude", "full", tmp_path, agent_env)
    env = agent_env.environ()
    out = ok(run_passdown(env, ctx.workspace, "export", "--from", "claude"), "passdown export")
    assert ".agent-handoff" in out
    assert_handoff_matches(ctx.workspace, ctx.expected, out)
    _md, data = load_handoff(ctx.workspace)
    # The compaction summary is kept as prior context.
    assert data["task"]["compactions"] >= 1
    assert ctx.expected["compaction"]["summary_contains"] in (
        data["task"]["compaction_summary"] or ""
    )
    # The latest real user message, not a /compact command or a synthetic continuation.
    assert data["task"]["latest_user_message"] == ctx.expected["latest_user_message"]


def test_codex_session_export(tmp_path: Path, agent_env: AgentEnv) -> None:
    ctx = _recorded("codex", "full", tmp_path, agent_env)
    env = agent_env.environ()
    out = ok(
        run_passdown(env, ctx.workspace, "export", "--from", "codex", "--json"),
        "passdown export --json",
    )
    json.loads(out)  # --json prints one JSON document
    assert_handoff_matches(ctx.workspace, ctx.expected, out)
    _md, data = load_handoff(ctx.workspace)
    # greet.py changed only through `sed -i` in exec_command: git state must reveal it.
    by_path = {Path(f["path"]).name: f for f in data["state"]["files_touched"]}
    assert "greet.py" in by_path
    assert "git" in by_path["greet.py"].get("source", "git")
    # The user prompt is not duplicated and injected context is not the request.
    assert "<environment_context>" not in json.dumps(data["task"])
    users = [e["text"] for e in data["task"]["transcript"] if e["role"] == "user"]
    assert len(users) == len(ctx.expected["turns"]), users


def test_export_out_dir_and_permissions(tmp_path: Path, agent_env: AgentEnv) -> None:
    ctx = _recorded("claude", "todowrite", tmp_path, agent_env)
    out_dir = tmp_path / "elsewhere"
    env = agent_env.environ()
    out = ok(
        run_passdown(env, ctx.workspace, "export", "--from", "claude", "--out", str(out_dir)),
        "passdown export --out",
    )
    assert str(out_dir) in out
    assert (out_dir / "HANDOFF.md").is_file() and (out_dir / "handoff.json").is_file()
    data = json.loads((out_dir / "handoff.json").read_text())
    plan = {p["subject"]: p["status"] for p in data["state"]["plan"]}
    assert plan == {p["subject"]: p["status"] for p in ctx.expected["plan"]}
    # The default location stays private and out of git.
    ok(run_passdown(env, ctx.workspace, "export", "--from", "claude"), "passdown export")
    folder = ctx.workspace / ".agent-handoff"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "HANDOFF.md").stat().st_mode & 0o777 == 0o600
    exclude = (ctx.workspace / ".git" / "info" / "exclude").read_text()
    assert ".agent-handoff" in exclude
