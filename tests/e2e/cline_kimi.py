"""Run Cline CLI (from npm) and Kimi CLI (from PyPI) against a scripted chat-completions
server on 127.0.0.1 in an isolated HOME.

Cline 3 ignores SIGTERM (a run with an unfinished team task loops on "[SYSTEM] You still
have team obligations"): every run is under `timeout -k 5`, which then kills it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from e2e.agents import CHAT_MODEL, FAKE_KEY, AgentEnv, find_agent
from e2e.pyagents import pyagent


def _run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["timeout", "-k", "5", str(int(timeout)), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


# -- Cline CLI ---------------------------------------------------------------------------
def cline_environ(agent_env: AgentEnv, chat_url: str, cwd: Path) -> dict[str, str]:
    """Cline pointed at the server: `cline auth` writes providers.json (a hand-written
    one is ignored); local session backend (no hub daemon), no auto-update."""
    env = {
        **agent_env.environ(),
        "CLINE_SESSION_BACKEND_MODE": "local",
        "CLINE_NO_AUTO_UPDATE": "1",
    }
    auth = [str(find_agent("cline")), "auth", "-p", "openai", "-k", FAKE_KEY, "-m", CHAT_MODEL]
    proc = _run([*auth, "-b", f"{chat_url}/v1"], env, cwd, 60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return env


def run_cline(
    env: dict[str, str], cwd: Path, prompt: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`cline --json PROMPT` (act mode, auto-approve): one task, then exit."""
    return _run([str(find_agent("cline")), "--json", "--", prompt], env, cwd, timeout)


# -- Kimi CLI ----------------------------------------------------------------------------
def kimi_environ(agent_env: AgentEnv, chat_url: str) -> dict[str, str]:
    """Kimi 1.51 with an `openai_legacy` (chat completions) provider in config.toml."""
    kimi_dir = agent_env.home / ".kimi"
    kimi_dir.mkdir(parents=True, exist_ok=True)
    (kimi_dir / "config.toml").write_text(
        'default_model = "scripted"\n'
        "telemetry = false\n"
        "[providers.scripted]\n"
        'type = "openai_legacy"\n'
        f'base_url = "{chat_url}/v1"\n'
        f'api_key = "{FAKE_KEY}"\n'
        "[models.scripted]\n"
        'provider = "scripted"\n'
        f'model = "{CHAT_MODEL}"\n'
        "max_context_size = 200000\n",
        encoding="utf-8",
    )
    return {**agent_env.environ(), "KIMI_DISABLE_TELEMETRY": "1"}


def run_kimi(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`kimi --print -p PROMPT` (1.51.0 only: never a bare `kimi` of 1.52, which curls
    an installer); `-C` continues the workspace's last session."""
    return _run([str(pyagent("kimi")), "--print", *extra, "-p", prompt], env, cwd, timeout)
