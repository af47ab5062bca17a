"""Issue 32, done means (first bullet): a handoff travels between two clones through git,
with the real Claude Code and Codex CLIs against the scripted model servers.

A Claude Code session in clone A ends; its SessionEnd hook writes the handoff. The user's
own `git push` (clone A opted in with `passdown install git`) hands the handoff refs to
the pre-push hook's background push. Clone B, at another path with another HOME, opted
in too, starts a Codex session: its SessionStart hook pulls first, picks the handoff up
and claims it; the pointer reaches Codex's first request, and the task itself reaches
Codex when it reads the HANDOFF.md the pointer names. The claim is pushed in the
background; a new Claude session in clone A, whose start pulls it, does not take the
handoff over again.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import AgentEnv, run_claude, run_codex, run_passdown
from e2e.checks import ok
from e2e.hooked import handoff_json, hook_log, passdown_on_path
from e2e.record import seed_workspace
from e2e.servers import AnthropicServer, OpenAIResponsesServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

POINTER = "passdown: an unfinished task was handed over from"
TASK = "Write usage notes for the greeter in NOTES.md"
NEXT = "Next step: document the greet() edge cases in NOTES.md."


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def _env(agent_env: AgentEnv, bindir: Path, **urls: str) -> dict[str, str]:
    env = agent_env.environ(anthropic_url=urls.get("anthropic"), openai_url=urls.get("openai"))
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["PASSDOWN_COMMAND"] = str(bindir / "passdown")  # the hooks run the logging one
    return env


def _remote_refs(bare: Path) -> dict[str, str]:
    lines = git(bare, "for-each-ref", "--format=%(refname) %(objectname)", "refs/passdown/")
    return dict(line.split() for line in lines.splitlines())


def _wait_for(what: str, check: Any, clone: Path, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    log = clone / ".git" / "passdown-share.log"
    state = clone / ".git" / "passdown-share.json"
    pytest.fail(
        f"{what} did not happen within {timeout:g} s\nlog: "
        f"{log.read_text() if log.exists() else '-'}\nstate: "
        f"{state.read_text() if state.exists() else '-'}"
    )


def _claimed_on_remote(bare: Path) -> bool:
    for ref in _remote_refs(bare):
        tree = git(bare, "ls-tree", "-r", "--name-only", ref)
        if any(name.endswith("claimed.json") for name in tree.splitlines()):
            return True
    return False


def test_a_handoff_travels_to_another_clone_and_is_claimed_once(
    tmp_path: Path, agent_bin: Path
) -> None:
    seed = seed_workspace(tmp_path / "seed")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    home_a, home_b = AgentEnv.create(tmp_path / "a-home"), AgentEnv.create(tmp_path / "b-home")
    clone_a, clone_b = tmp_path / "machine-a" / "project", tmp_path / "machine-b" / "work" / "p"
    git(tmp_path, "clone", "-q", str(bare), str(clone_a))
    bindir, calls = passdown_on_path(tmp_path / "tools")

    # clone A: a Claude Code session ends; its SessionEnd hook writes the handoff
    steps = [
        Step(
            text=f"Writing the notes file. {NEXT}",
            tool="Write",
            input={"file_path": str(clone_a / "NOTES.md"), "content": "usage notes\n"},
        ),
        Step(text=f"NOTES.md has a first draft. {NEXT}"),
    ]
    with AnthropicServer(steps) as anthropic:
        env_a = _env(home_a, bindir, anthropic=anthropic.url)
        ok(run_passdown(env_a, clone_a, "install", "claude"), "passdown install claude")
        ok(run_passdown(env_a, clone_a, "install", "git"), "passdown install git (A)")
        proc = run_claude(env_a, clone_a, TASK)
        assert proc.returncode == 0, proc.stderr[-2000:]
    handoff = handoff_json(clone_a)
    assert handoff["source"]["agent"] == "claude", hook_log(home_a)
    assert handoff["task"]["original_request"] == TASK
    handoff_id = handoff["id"]

    # the user's own push: the pre-push hook hands the handoff to a background push
    git(clone_a, "add", "NOTES.md", env=env_a)
    git(clone_a, "commit", "-qm", "notes", env=env_a)
    started = time.monotonic()
    git(clone_a, "push", "-q", "origin", "HEAD", env=env_a)
    push_took = time.monotonic() - started
    assert "hook git pre-push" in calls.read_text()
    _wait_for("the handoff push", lambda: _remote_refs(bare), clone_a)
    assert push_took < 10, push_took

    # clone B, at another path with another HOME: a Codex session starts, pulls, claims
    git(tmp_path, "clone", "-q", str(bare), str(clone_b))
    read = Step(tool="exec_command", input={"cmd": "cat .agent-handoff/HANDOFF.md"})
    with OpenAIResponsesServer([read, Step(text="Continuing with the notes.")]) as openai:
        env_b = _env(home_b, bindir, openai=openai.url)
        ok(run_passdown(env_b, clone_b, "install", "codex"), "passdown install codex")
        ok(run_passdown(env_b, clone_b, "install", "git"), "passdown install git (B)")
        proc = run_codex(env_b, clone_b, "Continue where the last session stopped")
        assert proc.returncode == 0, proc.stderr[-2000:]
        requests = openai.step_requests()
    assert requests, "Codex never reached its model server"
    first = requests[0].text()
    assert POINTER in first, (first[-3000:], hook_log(home_b))
    assert "document the greet() edge cases" in first  # the next step
    assert str(clone_b / ".agent-handoff" / "HANDOFF.md") in first  # B's own path
    assert str(clone_a) not in first
    # the pulled HANDOFF.md Codex read (its own hooks write B's next one after)
    assert any(TASK in r.text() for r in requests[1:]), "the task never reached Codex"
    assert f"pickup codex claimed {handoff_id}" in hook_log(home_b), hook_log(home_b)

    # B's claim travels in the background; A, whose next start pulls, does not take it
    _wait_for("the claim push", lambda: _claimed_on_remote(bare), clone_b)
    source = f"claude session {handoff['source']['session_id']}"
    with AnthropicServer([Step(text="Starting fresh.")]) as anthropic:
        env_a = _env(home_a, bindir, anthropic=anthropic.url)
        proc = run_claude(env_a, clone_a, "What is next?")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert anthropic.step_requests(), "the second Claude session never ran"
        # (B's own later handoff, if its push carried one, may be offered: not A's)
        assert all(source not in r.text() for r in anthropic.requests), hook_log(home_a)
    log_a = hook_log(home_a)
    assert f"pickup claude claimed {handoff_id}" not in log_a, log_a
    statuses = json.loads(
        ok(run_passdown(env_a, clone_a, "find", "--type", "status", "--json"), "find")
    )["records"]
    claims = [r for r in statuses if r["title"] == f"{handoff_id} claimed"]
    assert len(claims) == 1 and claims[0]["provenance"]["agent"].startswith("codex:"), claims
