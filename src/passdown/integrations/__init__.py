"""Per-agent hook integrations: where an agent's hooks are configured, which events it
has, how its payload names the session, and how it takes injected context.

Each agent module names its integration at its end (`Agent.integration = "module:Class"`),
so `passdown install`, `passdown hook` and `passdown run` work for any agent that has one
and wiring a new agent touches only its own files.
"""

from __future__ import annotations

from passdown.errors import UsageError
from passdown.integrations._base import HookIntegration, InstallTarget, Plan

__all__ = ["HookIntegration", "InstallTarget", "Plan", "integrated_agents", "integration_for"]

# What each built-in agent module names as its integration (`Agent.integration`, the one
# place it is decided: tests/test_pickup_fast.py holds this copy to it). A hook finds its
# integration here without importing the agent's module (its reader, pydantic, the
# entry-point scan), which a session start would wait for. Plugin agents go through the
# registry.
BUILTIN: dict[str, str] = {
    "auggie": "passdown.integrations._auggie:AuggieHooks",
    "claude": "passdown.integrations._claude:ClaudeHooks",
    "cline": "passdown.integrations._cline:ClineHooks",
    "codex": "passdown.integrations._codex:CodexHooks",
    "copilot": "passdown.integrations._copilot:CopilotHooks",
    "droid": "passdown.integrations._droid:DroidHooks",
    "gemini": "passdown.integrations._settings_json:GeminiHooks",
    "gptme": "passdown.integrations._gptme:GptmeHooks",
    "hermes": "passdown.integrations._hermes:HermesHooks",
    "kilo": "passdown.integrations._kilo:KiloHooks",
    "kimi": "passdown.integrations._kimi:KimiHooks",
    "opencode": "passdown.integrations._opencode:OpenCodeHooks",
    "pi": "passdown.integrations._pi:PiHooks",
    "qwen": "passdown.integrations._settings_json:QwenHooks",
    "vibe": "passdown.integrations._vibe:VibeHooks",
    "openhands": "passdown.integrations._openhands:OpenHandsHooks",
}


def integration_for(agent_name: str) -> HookIntegration:
    """The hook integration of `agent_name`; `UsageError` when it has none."""
    dotted = BUILTIN.get(agent_name)
    if dotted is None:
        from passdown.agents._registry import get_agent

        agent = get_agent(agent_name)
        dotted = getattr(agent, "integration", None)
        if not dotted:
            known = ", ".join(integrated_agents()) or "none"
            raise UsageError(
                f"{agent.display_name} has no hook integration (agents with one: {known})"
            )
    module_name, _, attr = str(dotted).partition(":")
    module = __import__(module_name, fromlist=[attr])
    integration: HookIntegration = getattr(module, attr)()
    return integration


def integrated_agents() -> list[str]:
    from passdown.agents._registry import load_agents

    return sorted(
        name for name, agent in load_agents().items() if getattr(agent, "integration", None)
    )
