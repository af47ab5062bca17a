"""Find agents through the `passdown.agents` entry-point group, lazily and once."""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import entry_points

from passdown.agents.base import Agent
from passdown.errors import UnknownAgent

ENTRY_POINT_GROUP = "passdown.agents"


def _load_path(dotted: str) -> type[Agent]:
    module_name, _, attr = dotted.partition(":")
    module = __import__(module_name, fromlist=[attr])
    agent_cls: type[Agent] = getattr(module, attr)
    return agent_cls


@cache
def load_agents() -> dict[str, Agent]:
    """All registered agents by name; `PASSDOWN_AGENTS=a,b` limits which load."""
    return _load(_wanted())


@cache
def every_agent() -> dict[str, Agent]:
    """Every registered agent, whatever `PASSDOWN_AGENTS` says: a hook limits the agents it
    loads to its own, but a concurrent session of any agent explains a change in the
    workspace (`pipeline._paths_of_concurrent_sessions`)."""
    limited = load_agents()
    if not _wanted():
        return limited
    return {**_load(frozenset()), **limited}  # the loaded ones stay the same objects


def _wanted() -> frozenset[str]:
    names = os.environ.get("PASSDOWN_AGENTS", "").split(",")
    return frozenset(n.strip() for n in names if n.strip())


def _load(wanted: frozenset[str]) -> dict[str, Agent]:
    found: dict[str, Agent] = {}
    # The built-in agents are registered in pyproject.toml like any plugin: one list.
    sources = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    for name, path in sources.items():
        if wanted and name not in wanted:
            continue
        try:
            agent_cls = _load_path(path)
            agent = agent_cls()
        except Exception as exc:  # a broken plugin must not break passdown
            import warnings

            warnings.warn(f"passdown: agent plugin {name!r} failed to load: {exc}", stacklevel=2)
            continue
        found[agent.name] = agent
    return found


def agent_names() -> list[str]:
    return sorted(load_agents())


def get_agent(name: str) -> Agent:
    agents = load_agents()
    try:
        return agents[name]
    except KeyError:
        known = ", ".join(sorted(agents)) or "none"
        raise UnknownAgent(f"unknown agent {name!r} (known: {known})") from None
