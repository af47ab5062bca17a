"""Issue 7: every `--dry-run` argv is checked against the installed CLI's own `--help`.

For every registered agent with a pinned real CLI, `passdown switch --to AGENT --dry-run
--json` (interactive and `--non-interactive`) prints an argv whose every option (and every
option value, and the subcommand) appears in that CLI's `--help` of the installed version.
The non-interactive argv is then run as printed against the agent's scripted server with a
script that writes a file through the agent's own write tool: the takeover received the
handoff and may edit the disposable workspace without a person there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from e2e.agents import VERSIONS, AgentEnv, find_agent, run_passdown, target_environ
from e2e.checks import flag_in_help, ok
from e2e.record import PROFILES, seed_workspace
from e2e.servers import Step
from e2e.terminal import answer_first_run_questions, stop_codex_daemons
from e2e.test_switch_matrix import expected, install_source, server_for, session_arg, user_texts
from passdown.agents import get_agent

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

# issue 23's Cline CLI and Kimi CLI: their launch argv runs for real in test_cline_kimi_switch.py;
# Auggie's and Continue's (pin `cn`) in test_auggie_real.py and test_continue_cn_real.py
RUN_ELSEWHERE = {"cline", "kimi", "auggie", "cn"}
# issue 23's gptme and Hermes Agent (PyPI): test_gptme_real.py runs gptme's argv for real,
# both modules check a switch to Claude Code; their CLIs are pinned in .ci/pyagent-pins.txt
RUN_ELSEWHERE |= {"gptme", "hermes"}
# Mistral Vibe and OpenHands (PyPI): theirs in test_vibe_real.py and test_openhands_real.py
RUN_ELSEWHERE |= {"vibe", "openhands"}
PINNED = sorted(
    set(VERSIONS) - RUN_ELSEWHERE
)  # the agents whose real CLI install-agents.sh installs
# registered, no pinned CLI: covered by fixture tests (the editors' chats are sources only)
FIXTURE_ONLY = {"cursor", "aider", "cursor-ide", "copilot-chat", "cline-ext", "roo"}
SUBCOMMANDS = {"exec", "run"}  # codex exec, opencode run
WRITTEN = "takeover.txt"
CONTENT = "written by the takeover\n"


def test_every_builtin_agent_is_pinned_or_fixture_only() -> None:
    import tomllib

    from e2e.agents import REPO_ROOT

    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    builtins = pyproject["project"]["entry-points"]["passdown.agents"]
    # Continue CLI is pinned by its program's name, `cn`
    assert set(builtins) == (set(PINNED) | FIXTURE_ONLY | RUN_ELSEWHERE) - {"cn"} | {"continue"}


def _help(target: str, sub: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(
        [str(find_agent(target)), *sub, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "--help" in text, (target, sub, text[-2000:])
    return text


def _value_in_help(value: str, help_text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", help_text) is not None


def check_argv_against_help(target: str, argv: list[str], env: dict[str, str]) -> list[str]:
    """Assert every option, option value and subcommand of `argv` is in the CLI's --help;
    return the options checked (for the test to show it checked something)."""
    assert Path(argv[0]).name == target, argv
    prompts = [i for i, a in enumerate(argv) if "HANDOFF.md" in a]
    assert len(prompts) == 1, f"the prompt must be exactly one argument: {argv}"
    sub = [argv[1]] if len(argv) > 1 and argv[1] in SUBCOMMANDS else []
    if sub:
        assert flag_in_help(sub[0], _help(target, [], env)), f"{target} has no {sub[0]}"
    help_text = _help(target, sub, env)
    checked: list[str] = []
    args = argv[1 + len(sub) :]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            # Only the prompt may follow the end of options.
            assert args[i + 1 :] == [argv[prompts[0]]], argv
            break
        if arg.startswith("-") and "HANDOFF.md" not in arg:
            flag, _, value = arg.partition("=")
            assert flag_in_help(flag, help_text), f"{target} does not accept {flag}: {argv}"
            checked.append(flag)
            if value:
                assert _value_in_help(value, help_text), f"{target} {flag}: bad value {value}"
            elif (
                i + 1 < len(args)
                and not args[i + 1].startswith("-")
                and "HANDOFF.md" not in args[i + 1]
            ):
                value = args[i + 1]  # e.g. --permission-mode acceptEdits
                assert _value_in_help(value, help_text), f"{target} {flag}: bad value {value}"
                i += 1
        elif arg.startswith("-"):
            # --prompt=<the prompt>: the option must exist and take a value.
            flag = arg.partition("=")[0]
            assert arg.partition("=")[1] == "=", f"a prompt glued to {flag} needs '=': {argv}"
            assert flag_in_help(flag, help_text), f"{target} does not accept {flag}: {argv}"
            checked.append(flag)
        else:
            assert "HANDOFF.md" in arg, f"unexpected positional {arg!r} in {argv}"
        i += 1
    return checked


def dry_run(
    target: str, interactive: bool, tmp_path: Path, agent_env: AgentEnv, url: str
) -> tuple[Path, dict[str, str], dict[str, Any]]:
    """`passdown switch --dry-run --json` from a recorded session (Claude's; Codex's for
    the target Claude) in a fresh workspace; returns workspace, target env, the JSON."""
    source = "codex" if target == "claude" else "claude"
    session = install_source(source, agent_env)
    ws = seed_workspace(tmp_path / "ws")
    env = target_environ(agent_env, target, url)
    args = [
        "switch",
        "--from",
        source,
        "--to",
        target,
        "--session",
        session_arg(source, session),
        "--workspace",
        str(ws),
        "--dry-run",
        "--json",
    ]
    if not interactive:
        args.append("--non-interactive")
    out = json.loads(ok(run_passdown(env, ws, *args), f"passdown switch --to {target} --dry-run"))
    assert out["target"] == target and out["cwd"] == str(ws)
    assert not (ws / ".agent-handoff").exists(), "a dry run writes nothing"
    for secret in expected(source)["secrets"]:
        assert secret not in json.dumps(out)
    return ws, env, out


@pytest.mark.parametrize("target", PINNED)
def test_interactive_argv_matches_help(target: str, tmp_path: Path, agent_env: AgentEnv) -> None:
    with server_for(target) as srv:
        _ws, env, out = dry_run(target, True, tmp_path, agent_env, srv.url)
        check_argv_against_help(target, out["argv"], env)
        assert not srv.requests, "--dry-run launched the agent"


# The interactive argv, run as printed in a real terminal (tmux): the TUI starts and sends
# the handoff prompt to its scripted server. A person has already answered each agent's
# first-run questions for this folder on a real machine; `answer_first_run_questions`
# writes the same answers (for Codex 0.171 also the model-migration notice it shows first).
# Droid's TUI asks for a Factory login before anything else (offline it cannot have one).
TUI_AGENTS = [a for a in PINNED if a != "droid"]


@pytest.mark.parametrize("target", TUI_AGENTS)
def test_interactive_argv_starts_the_tui_on_the_handoff(
    target: str, tmp_path: Path, agent_env: AgentEnv
) -> None:
    tmux = shutil.which("tmux")
    assert tmux, "tmux is needed to run the agents' interactive argv in a terminal"
    with server_for(target) as srv:
        ws, env, out = dry_run(target, True, tmp_path, agent_env, srv.url)
        answer_first_run_questions(target, agent_env, ws, env)
        srv.set_script([Step(text="Taking over.")])
        argv = [str(find_agent(target)), *out["argv"][1:]]
        env = {**env, "TERM": "xterm-256color"}
        socket = f"passdown-e2e-{uuid.uuid4().hex[:8]}"  # our own tmux server, no other
        env_args = [x for k, v in env.items() for x in ("-e", f"{k}={v}")]
        subprocess.run(
            [
                tmux,
                "-L",
                socket,
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "50",
                "-c",
                str(ws),
                *env_args,
                shlex.join(argv),
            ],
            check=True,
            env=env,
            timeout=30,
        )
        try:
            # Kilo first builds its snapshot of the workspace, which under load takes it
            # past a minute ("It is taking a long time to initialize the snapshot system")
            deadline = time.monotonic() + 120
            while not srv.step_requests() and time.monotonic() < deadline:
                time.sleep(0.25)
            screen = subprocess.run(
                [tmux, "-L", socket, "capture-pane", "-p"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
        finally:
            subprocess.run(
                [tmux, "-L", socket, "kill-server"],
                env=env,
                capture_output=True,
                timeout=30,
                check=False,
            )
            if target == "codex":
                stop_codex_daemons(agent_env.codex_home)
        steps = srv.step_requests()
        assert steps, f"{target}'s TUI sent no model request; its screen:\n{screen}"
        assert str(ws / ".agent-handoff" / "HANDOFF.md") in "\n".join(user_texts(target, steps[0]))


def _write_step(target: str, path: Path) -> Step:
    if target == "claude":
        return Step(
            text="Writing.", tool="Write", input={"file_path": str(path), "content": CONTENT}
        )
    if target == "codex":
        patch = f"*** Begin Patch\n*** Add File: {path.name}\n+{CONTENT}*** End Patch\n"
        return Step(text="Writing.", tool="apply_patch", input=patch)
    if target == "droid":
        return Step(
            text="Writing.", tool="Create", input={"file_path": str(path), "content": CONTENT}
        )
    step = PROFILES[target].write(path, CONTENT)
    step.text = "Writing."
    return step


@pytest.mark.parametrize("target", PINNED)
def test_non_interactive_argv_matches_help_and_runs(
    target: str, tmp_path: Path, agent_env: AgentEnv
) -> None:
    with server_for(target) as srv:
        ws, env, out = dry_run(target, False, tmp_path, agent_env, srv.url)
        argv: list[str] = out["argv"]
        check_argv_against_help(target, argv, env)
        assert not srv.requests, "--dry-run launched the agent"
        # The printed argv, run as is: it reaches the server with the handoff, and the
        # takeover may write in the workspace unattended.
        written = ws / WRITTEN
        srv.set_script([_write_step(target, written), Step(text="Done.")])
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
        ok(proc, f"{target} dry-run argv")
        steps = srv.step_requests()
        assert steps, "the printed argv never reached the scripted server"
        assert str(ws / ".agent-handoff" / "HANDOFF.md") in "\n".join(user_texts(target, steps[0]))
        assert written.is_file(), (
            f"{target} did not write in the workspace\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
        assert written.read_text(encoding="utf-8") == CONTENT
        assert srv.remaining == 0


# Cursor's agent CLI and Aider have no pinned CLI here (their formats come from public
# sources): their dry-run argv is checked as passdown prints it, not against a --help.
FIXTURE_ONLY_ARGV = {
    ("cursor", True): lambda prompt, md: ["cursor-agent", "--", prompt],
    ("cursor", False): lambda prompt, md: ["cursor-agent", "-p", "--force", "--", prompt],
    ("aider", True): lambda prompt, md: ["aider", "--read", md],
    ("aider", False): lambda prompt, md: ["aider", "--yes-always", "--message", prompt],
}


@pytest.mark.parametrize(("target", "interactive"), sorted(FIXTURE_ONLY_ARGV))
def test_fixture_only_agents_dry_run_argv(
    target: str, interactive: bool, tmp_path: Path, agent_env: AgentEnv
) -> None:
    session = install_source("claude", agent_env)
    ws = seed_workspace(tmp_path / "ws")
    args = [
        "switch",
        "--from",
        "claude",
        "--to",
        target,
        "--session",
        str(session),
        "--workspace",
        str(ws),
        "--dry-run",
        "--json",
    ]
    if not interactive:
        args.append("--non-interactive")
    # a dry run fails like the real switch when the target is missing: these two have no
    # pinned CLI here, so a stub of the program stands in on PATH
    stubs = tmp_path / "bin"
    stubs.mkdir()
    program = stubs / get_agent(target).program
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    env = agent_env.environ()
    env["PATH"] = f"{stubs}{os.pathsep}{env['PATH']}"
    out = json.loads(ok(run_passdown(env, ws, *args), "passdown --dry-run"))
    argv: list[str] = out["argv"]
    prompt = next((a for a in argv if a.startswith("You are taking over")), "")
    md = str(ws / ".agent-handoff" / "HANDOFF.md")
    assert argv == FIXTURE_ONLY_ARGV[target, interactive](prompt, md), argv
    assert md in " ".join(argv)
