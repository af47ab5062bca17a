"""Coding agents passdown can read from and launch.

Each agent is one module holding everything about it (where its sessions live, how
to parse them, how to launch it) behind the small `Agent` interface. Built-in agents
register through the same entry-point group as third-party ones (`passdown.agents`),
so adding an agent is one module plus its tests.
"""

from __future__ import annotations

from passdown.agents._registry import agent_names, get_agent, load_agents
from passdown.agents.base import Agent, LaunchSpec

__all__ = ["Agent", "LaunchSpec", "agent_names", "get_agent", "load_agents"]
