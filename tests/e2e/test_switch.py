"""Issue 3, tests 3-5: `passdown switch` launches the real other agent with the handoff."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from e2e import record
from e2e.agents import AgentEnv, find_agent, run_passdown
from e2e.checks import (
    anthropic_user_texts,
    assert_no_secrets,
    flag_in_help,
    ok,
    openai_user_texts,
)
from e2e.servers import AnthropicServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

TAKEOVER_REPLY = "Read the handoff; continuing from the next step."


def _worked(agent: str, name: str, tmp_path: Path, agent_env: AgentEnv) -> record.Ctx:
    ctx = record.new_ctx(agent, name, tmp_path / "ws", agent_env)
    record.SCENARIOS[f"{agent}/{name}"][0](ctx)
    return ctx


def _next_step_phrase(ctx: record.Ctx) -> str:
    # Both scenarios end with "... next step is/Next step: append a Usage heading ...".
    assert "append a Usage heading" in ctx.expected["final_assistant_message"]
    return "append a Usage heading"


def test_switch_claude_to_codex(
    tmp_path: Path, agent_env: AgentEnv, openai_server: OpenAIResponsesServer
) -> None:
    ctx = _worked("claude", "full", tmp_path, agent_env)
    openai_server.set_script([Step(text=TAKEOVER_REPLY)])
    env = agent_env.environ(openai_url=openai_server.url)
    out = ok(
        run_passdown(
            env, ctx.workspace, "switch", "--from", "claude", "--to", "codex", "--non-interactive"
        ),
        "passdown switch claude->codex",
    )
    steps = openai_server.step_requests()
    assert steps, "the real codex exec never reached the scripted OpenAI server"
    user = "\n".join(openai_user_texts(steps[0]))
    assert ctx.expected["original_request"].split(". ")[0] in user
    assert _next_step_phrase(ctx) in user
    assert "HANDOFF.md" in user
    assert_no_secrets(ctx.expected["secrets"], codex_request=steps[0].text(), stdout=out)
    rollouts = list((agent_env.codex_home / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1, rollouts
    meta = json.loads(rollouts[0].read_text().splitlines()[0])["payload"]
    assert meta["cwd"] == str(ctx.workspace)


def test_switch_codex_to_claude(
    tmp_path: Path, agent_env: AgentEnv, anthropic_server: AnthropicServer
) -> None:
    ctx = _worked("codex", "full", tmp_path, agent_env)
    anthropic_server.set_script([Step(text=TAKEOVER_REPLY)])
    env = agent_env.environ(anthropic_url=anthropic_server.url)
    before = set((agent_env.claude_dir / "projects").glob("*/*.jsonl"))
    out = ok(
        run_passdown(
            env, ctx.workspace, "switch", "--from", "codex", "--to", "claude", "--non-interactive"
        ),
        "passdown switch codex->claude",
    )
    steps = anthropic_server.step_requests()
    assert steps, "the real claude -p never reached the scripted Anthropic server"
    user = "\n".join(anthropic_user_texts(steps[0]))
    assert ctx.expected["original_request"].split(". ")[0] in user
    assert _next_step_phrase(ctx) in user
    assert "HANDOFF.md" in user
    assert_no_secrets(ctx.expected["secrets"], claude_request=steps[0].text(), stdout=out)
    new = set((agent_env.claude_dir / "projects").glob("*/*.jsonl")) - before
    assert len(new) == 1, new
    cwds = {json.loads(line).get("cwd") for line in next(iter(new)).read_text().splitlines()}
    assert str(ctx.workspace) in cwds


def _help(target: str, argv: list[str]) -> str:
    """--help of the installed CLI for the (sub)command the argv uses."""
    binary = str(find_agent(target))
    sub = [a for a in argv[1:3] if a in ("exec", "resume")]
    proc = subprocess.run(
        [binary, *sub, "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("interactive", [False, True], ids=["non-interactive", "interactive"])
@pytest.mark.parametrize(("source", "target"), [("claude", "codex"), ("codex", "claude")])
def test_switch_dry_run_argv_is_accepted(
    source: str,
    target: str,
    interactive: bool,
    tmp_path: Path,
    agent_env: AgentEnv,
    anthropic_server: AnthropicServer,
    openai_server: OpenAIResponsesServer,
) -> None:
    # A short real source session (TodoWrite for Claude, the full one for Codex).
    _worked(source, "todowrite" if source == "claude" else "full", tmp_path, agent_env)
    ws = tmp_path / "ws"
    env = agent_env.environ(anthropic_url=anthropic_server.url, openai_url=openai_server.url)
    n_anthropic, n_openai = len(anthropic_server.requests), len(openai_server.requests)
    args = ["switch", "--from", source, "--to", target, "--dry-run", "--json"]
    if not interactive:
        args.append("--non-interactive")
    out = ok(run_passdown(env, ws, *args), "passdown switch --dry-run --json")
    argv = json.loads(out)["argv"]
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
    # Dry run launches nothing.
    assert len(anthropic_server.requests) == n_anthropic
    assert len(openai_server.requests) == n_openai
    assert Path(argv[0]).name == target
    assert sum(len(a.encode()) for a in argv) < 128 * 1024
    assert any("HANDOFF.md" in a for a in argv), argv

    help_text = _help(target, argv)
    for arg in argv[1:]:
        if arg == "--":
            break  # everything after it is the prompt
        if arg.startswith("-") and not any(c.isspace() for c in arg):
            flag = arg.split("=", 1)[0]
            assert flag_in_help(flag, help_text), f"{target} does not accept {flag}: {argv}"

    if interactive:
        return  # an interactive TUI needs a terminal; its flags were checked above
    # The non-interactive argv really runs against the scripted server.
    server = openai_server if target == "codex" else anthropic_server
    server.set_script([Step(text=TAKEOVER_REPLY)])
    proc = subprocess.run(
        argv,
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    ok(proc, f"dry-run argv {argv[:3]}...")
    assert server.step_requests(), "the printed argv did not reach the model server"
