"""What `passdown --help` counts rather than states: the registered agents, by their
entry-point names, read from the installed packages' metadata. No agent module is
imported (nor `passdown.agents`, whose base module is most of an agent's import
cost), so `--help` stays fast and still names a plugin's agent."""

from __future__ import annotations

from importlib.metadata import entry_points

# passdown.agents._registry.ENTRY_POINT_GROUP, written out: importing the registry
# would import the agents' base module
AGENT_GROUP = "passdown.agents"
AGENTS_PLACEHOLDER = "{agents}"


def registered_agents() -> list[str]:
    """The names registered in the `passdown.agents` entry-point group (built-in agents
    and plugins alike), sorted, each once."""
    return sorted({ep.name for ep in entry_points(group=AGENT_GROUP)})


def with_agents(text: str) -> str:
    """`text` with `{agents}` replaced by the count and the names of the agents."""
    if AGENTS_PLACEHOLDER not in text:
        return text
    names = registered_agents()
    return text.replace(AGENTS_PLACEHOLDER, f"{len(names)} ({', '.join(names)})")
