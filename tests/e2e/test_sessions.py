"""Issue 3, test 6: with several real sessions in several workspaces, the right one is
picked for each workspace, per agent and for `--from auto`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, init_git_workspace, run_claude, run_codex, run_passdown
from e2e.checks import ok
from e2e.servers import AnthropicServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

ALPHA_OLD = "5e551011-0000-4000-8000-0000000a0001"
ALPHA_NEW = "5e551011-0000-4000-8000-0000000a0002"
BETA_CLAUDE = "5e551011-0000-4000-8000-0000000b0001"


def _claude(env: dict[str, str], ws: Path, server: AnthropicServer, sid: str, task: str) -> None:
    server.set_script([Step(text=f"Done with {task}.")])
    ok(run_claude(env, ws, f"Please do {task}", "--session-id", sid), f"claude {task}")


def _codex(
    env: dict[str, str], codex_home: Path, ws: Path, server: OpenAIResponsesServer, task: str
) -> str:
    server.set_script([Step(text=f"Done with {task}.")])
    before = set((codex_home / "sessions").rglob("rollout-*.jsonl"))
    ok(run_codex(env, ws, f"Please do {task}"), f"codex {task}")
    (new,) = set((codex_home / "sessions").rglob("rollout-*.jsonl")) - before
    return str(json.loads(new.read_text().splitlines()[0])["payload"]["id"])


def _picked(env: dict[str, str], ws: Path, source: str) -> str:
    return ok(
        run_passdown(env, ws, "inspect", "--from", source, "--json"),
        f"passdown inspect --from {source}",
    )


def test_session_selection_across_workspaces(
    tmp_path: Path,
    agent_env: AgentEnv,
    anthropic_server: AnthropicServer,
    openai_server: OpenAIResponsesServer,
) -> None:
    ws_a = init_git_workspace(tmp_path / "alpha")
    ws_b = init_git_workspace(tmp_path / "beta")
    sub_b = ws_b / "pkg"  # a subfolder still belongs to the beta workspace (git root)
    sub_b.mkdir()
    env = agent_env.environ(anthropic_url=anthropic_server.url, openai_url=openai_server.url)

    # Order matters: within beta, Codex works last, so it is the newest session there.
    _claude(env, ws_a, anthropic_server, ALPHA_OLD, "alpha-old-task")
    _claude(env, ws_b, anthropic_server, BETA_CLAUDE, "beta-claude-task")
    beta_codex = _codex(env, agent_env.codex_home, ws_b, openai_server, "beta-codex-task")
    _claude(env, ws_a, anthropic_server, ALPHA_NEW, "alpha-new-task")
    ids = {ALPHA_OLD, ALPHA_NEW, BETA_CLAUDE, beta_codex}

    def only(out: str, want: str) -> None:
        assert want in out, f"expected session {want} in:\n{out[:2000]}"
        others = [i for i in ids - {want} if i in out]
        assert not others, f"other sessions {others} leaked into:\n{out[:2000]}"

    only(_picked(env, ws_a, "claude"), ALPHA_NEW)  # newest of two for this workspace
    only(_picked(env, ws_a, "auto"), ALPHA_NEW)  # Codex has nothing for alpha
    only(_picked(env, ws_b, "claude"), BETA_CLAUDE)
    only(_picked(env, ws_b, "codex"), beta_codex)
    only(_picked(env, ws_b, "auto"), beta_codex)  # the most recent agent in beta
    only(_picked(env, sub_b, "auto"), beta_codex)

    # --session picks an older one explicitly (by id prefix too).
    only(
        ok(
            run_passdown(
                env, ws_a, "inspect", "--from", "claude", "--session", ALPHA_OLD, "--json"
            ),
            "inspect --session",
        ),
        ALPHA_OLD,
    )

    listed = ok(run_passdown(env, ws_a, "sessions", "--from", "claude", "--json"), "sessions")
    assert ALPHA_OLD in listed and ALPHA_NEW in listed
    assert BETA_CLAUDE not in listed and beta_codex not in listed
    everything = ok(run_passdown(env, ws_a, "sessions", "--all", "--json"), "sessions --all")
    assert all(i in everything for i in ids), everything[:2000]

    # export writes the handoff of the chosen session into that workspace only.
    ok(run_passdown(env, ws_b, "export", "--from", "auto"), "export --from auto")
    data = json.loads((ws_b / ".agent-handoff" / "handoff.json").read_text())
    assert data["source"]["agent"] == "codex"
    assert data["source"]["session_id"] == beta_codex
    assert "beta-codex-task" in data["task"]["original_request"]
    assert not (ws_a / ".agent-handoff").exists()
