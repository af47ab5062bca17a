"""Fixtures for the end-to-end tests: the pinned real agent CLIs, scripted model servers on
127.0.0.1, and a per-test HOME / CLAUDE_CONFIG_DIR / CODEX_HOME plus a temp git workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.agents import AgentEnv, AgentsMissing, ensure_agents
from e2e.record import seed_workspace
from e2e.servers import (
    AnthropicServer,
    ChatCompletionsServer,
    GeminiServer,
    OpenAIResponsesServer,
)


@pytest.fixture(scope="session")
def agent_bin() -> Path:
    """The npm bin folder holding `claude` and `codex`; installs them (cached) when missing.

    Never skips: without the real CLIs the e2e tests must fail loudly.
    """
    try:
        return ensure_agents()
    except AgentsMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def agent_env(tmp_path: Path, agent_bin: Path) -> AgentEnv:
    """An isolated HOME with its own CLAUDE_CONFIG_DIR and CODEX_HOME."""
    return AgentEnv.create(tmp_path / "agents")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A temp git repo seeded like the recorded scenarios (README, greet.py, .env.local)."""
    return seed_workspace(tmp_path / "ws")


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as srv:
        assert isinstance(srv, AnthropicServer)
        yield srv


@pytest.fixture
def openai_server() -> Iterator[OpenAIResponsesServer]:
    with OpenAIResponsesServer() as srv:
        assert isinstance(srv, OpenAIResponsesServer)
        yield srv


@pytest.fixture
def chat_server() -> Iterator[ChatCompletionsServer]:
    """OpenAI chat completions, as Qwen Code, opencode, pi and Copilot CLI speak it."""
    with ChatCompletionsServer() as srv:
        assert isinstance(srv, ChatCompletionsServer)
        yield srv


@pytest.fixture
def gemini_server() -> Iterator[GeminiServer]:
    with GeminiServer() as srv:
        assert isinstance(srv, GeminiServer)
        yield srv
