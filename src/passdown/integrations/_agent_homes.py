"""Where the agents whose plugins and hooks passdown installs keep their own settings,
as each agent reads it from its environment (one place for the installers and for the
plugin records they look at)."""

from __future__ import annotations

import os
from pathlib import Path


def claude_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def copilot_home() -> Path:
    from passdown.agents._common import env_path

    return env_path("COPILOT_HOME", Path.home() / ".copilot")


def gemini_home() -> Path:
    configured = os.environ.get("GEMINI_CLI_HOME")
    return (Path(configured).expanduser() if configured else Path.home()) / ".gemini"


def qwen_home() -> Path:
    configured = os.environ.get("QWEN_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".qwen"


def factory_home() -> Path:
    """Factory Droid's folder: `$FACTORY_HOME_OVERRIDE` replaces the home folder."""
    override = os.environ.get("FACTORY_HOME_OVERRIDE")
    return (Path(override).expanduser() if override else Path.home()) / ".factory"


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def pi_dir() -> Path:
    """pi's agent folder: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`."""
    from passdown.agents._common import env_path

    return env_path("PI_CODING_AGENT_DIR", Path.home() / ".pi" / "agent")
