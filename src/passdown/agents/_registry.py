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
    if not _wanted():
        return load_agents()
    return _load(frozenset())  # those loaded already are the same objects (`_instances`)


def _wanted() -> frozenset[str]:
    names = os.environ.get("PASSDOWN_AGENTS", "").split(",")
    return frozenset(n.strip() for n in names if n.strip())


@cache
def _sources() -> dict[str, str]:
    # The built-in agents are registered in pyproject.toml like any plugin: one list.
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


_instances: dict[str, Agent] = {}  # by entry-point name: every load gives the same object


def _instance(name: str, path: str) -> Agent | None:
    agent = _instances.get(name)
    if agent is None:
        try:
            agent = _load_path(path)()
        except Exception as exc:  # a broken plugin must not break passdown
            import warnings

            warnings.warn(f"passdown: agent plugin {name!r} failed to load: {exc}", stacklevel=3)
            return None
        _instances[name] = agent
    return agent


def _load(wanted: frozenset[str]) -> dict[str, Agent]:
    found: dict[str, Agent] = {}
    for name, path in _sources().items():
        if wanted and name not in wanted:
            continue
        agent = _instance(name, path)
        if agent is not None:
            found[agent.name] = agent
    return found


def agent_names() -> list[str]:
    return sorted(load_agents())


def get_agent(name: str) -> Agent:
    """The agent named; only its own module is imported when it is registered under its
    name (an export reads one agent's session: the other modules would cost start-up)."""
    wanted = _wanted()
    path = _sources().get(name)
    if path is not None and (not wanted or name in wanted):
        agent = _instance(name, path)
        if agent is not None and agent.name == name:
            return agent
    agents = load_agents()
    try:
        return agents[name]
    except KeyError:
        known = ", ".join(sorted(agents)) or "none"
        raise UnknownAgent(f"unknown agent {name!r} (known: {known})") from None
