"""Access to the session fixtures recorded from the real agent CLIs (tests/e2e/record.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
ENV_VAR = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "cursor": "CURSOR_CONFIG_DIR"}


@dataclass
class Recorded:
    agent: str
    scenario: str
    root: Path  # the agent's config dir as recorded
    expected: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.agent}-{self.scenario}"

    def session_files(self) -> list[str]:
        """The session's main file first (an explicit `session_path` wins)."""
        files = [f for f in self.expected["session_files"] if f.endswith((".jsonl", ".zst", ".db"))]
        main = self.expected.get("session_path")
        return [main, *[f for f in files if f != main]] if main else files

    def install(self, target: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """Copy the recorded store to `target` and point the agent at it: through its own
        env var (Claude, Codex, Cursor), or as HOME for agents whose fixtures are laid out
        relative to the home folder (~/.gemini, ~/.qwen, ~/.local/share/opencode, ...)."""
        shutil.copytree(self.root, target, ignore=shutil.ignore_patterns("expected.json"))
        monkeypatch.setenv(ENV_VAR.get(self.agent, "HOME"), str(target))
        return target / self.session_files()[0]


def scenarios(agent: str | None = None) -> list[Recorded]:
    """Recorded scenarios of the agents passdown has a module for (fixtures for an agent
    whose module is still being written are skipped until it lands)."""
    from passdown.agents import agent_names

    known = set(agent_names())
    found = []
    for expected_path in sorted(FIXTURES.glob("*/*/expected.json")):
        rec_agent = expected_path.parent.parent.name
        if (agent and rec_agent != agent) or rec_agent not in known:
            continue
        expected = json.loads(expected_path.read_text())
        found.append(Recorded(rec_agent, expected_path.parent.name, expected_path.parent, expected))
    return found


def params(agent: str | None = None) -> list[Any]:
    return [pytest.param(r, id=r.id) for r in scenarios(agent)]
