"""passdown's hooks as the real agents run them in a test: a `passdown` on PATH that logs
each call, the agents' environments with it and with passdown's hooks installed, and
what the hooks wrote (the hook log, the handoffs they stored)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from e2e.agents import AgentEnv, find_agent, run_passdown
from e2e.checks import ok


def passdown_on_path(
    root: Path, *, kill_session_end_at: str | None = None, log_exits: bool = False
) -> tuple[Path, Path]:
    """`passdown` for the agents' hooks: `python -m passdown` from this checkout, logging
    each call so the test sees what the agents ran. Returns (its folder, the call log).
    `kill_session_end_at`: a SessionEnd hook's export dies at that step
    (`PASSDOWN_TEST_CRASH_AT`), as when the agent kills the hook at its timeout.
    `log_exits` (implied by it): each hook's payload and stderr are kept in files, and
    how it ended goes to the call log (`exit CODE PAYLOAD`; a hook killed from outside
    leaves no such line)."""
    bindir = root / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    calls = root / "passdown-calls.log"
    src = Path(__file__).resolve().parents[2] / "src"
    wrapper = bindir / "passdown"
    path = f'PYTHONPATH="{src}${{PYTHONPATH:+:$PYTHONPATH}}"'
    run = f'"{sys.executable}" -m passdown "$@"'
    hook = ""
    if kill_session_end_at or log_exits:
        crash = (
            f'if grep -q SessionEnd "$p"; then export PASSDOWN_TEST_CRASH_AT={kill_session_end_at}; fi; '
            if kill_session_end_at
            else ""
        )
        hook = (
            f'if [ "$1" = hook ]; then p=$(mktemp "{root}/payload.XXXXXX"); cat > "$p"; '
            f'{crash}{path} {run} < "$p" 2> "$p.stderr"; code=$?; '
            f'echo "exit $code $p" >> "{calls}"; exit $code; fi\n'
        )
    wrapper.write_text(
        f'#!/bin/sh\necho "$*" >> "{calls}"\n{hook}{path} exec {run}\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)
    return bindir, calls


def with_hooks(
    env: dict[str, str], bindir: Path, ws: Path, agent: str, *install_args: str
) -> dict[str, str]:
    """`env` with the logging `passdown` first on PATH, after `passdown install AGENT`
    (its hooks, in the HOME of `env`)."""
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["PASSDOWN_COMMAND"] = str(bindir / "passdown")  # the hooks run the logging one
    ok(run_passdown(env, ws, "install", agent, *install_args), f"passdown install {agent}")
    return env


def hook_log(agent_env: AgentEnv) -> str:
    path = agent_env.passdown_data / "logs" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else "(no hook log)"


def handoff_json(ws: Path) -> dict[str, Any]:
    return dict(json.loads((ws / ".agent-handoff" / "handoff.json").read_text(encoding="utf-8")))


def stored_by(agent_env: AgentEnv, agent: str, event: str, wait: float = 0) -> list[str]:
    """The ids of the handoffs the hook stored for `event` (passdown's name for it, as
    the hook log has it: `ok AGENT EVENT stored=ID`), waiting up to `wait` seconds for a
    first one (hooks that export in the background)."""
    marker = f" ok {agent} {event} stored="
    deadline = time.monotonic() + wait
    while True:
        ids = [
            line.split(marker, 1)[1].strip()
            for line in hook_log(agent_env).splitlines()
            if marker in line
        ]
        if ids or time.monotonic() >= deadline:
            return ids
        time.sleep(0.5)


def without_passdown(path: str) -> str:
    """`path` less every folder holding a `passdown` (the test's, the developer's)."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if not (Path(d) / "passdown").exists())


def agent_cli(
    agent: str,
    env: dict[str, str],
    cwd: Path,
    *args: str,
    timeout: float = 120,
    with_stderr: bool = False,
) -> str:
    """`AGENT ARGS` (its plugin or extension commands): what it printed (on stdout, and
    `with_stderr` on stderr after it), or the test fails."""
    proc = subprocess.run(
        [str(find_agent(agent)), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return ok(proc, f"{agent} {' '.join(args[:3])}") + (proc.stderr if with_stderr else "")


def agent_extensions(agent: str, env: dict[str, str], cwd: Path, *args: str) -> str:
    """`AGENT extensions ARGS` (Gemini CLI, Qwen Code): what it printed on both streams."""
    return agent_cli(agent, env, cwd, "extensions", *args, with_stderr=True)
