"""What an export and a hook load (issue 30, item 8): only what they use. The web view
(starlette, uvicorn, jinja2), the MCP server, rich and the PostgreSQL code never load on
those paths, and a hook event loads neither click nor tomlkit (it edits no config file).
Checked by what the process imported, in a fresh interpreter each time, never by how
long it took (benchmarks/bench_startup.py times it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "sessions"
NEVER = (
    "starlette",
    "uvicorn",
    "jinja2",
    "mcp",
    "rich",
    "psycopg",
    "passdown.web",
    "passdown.mcp",
    "passdown.store._postgres",
)
NOT_IN_A_HOOK = ("click", "tomlkit")
# runs the CLI as the console script does, then says what was imported
RUN = (
    "import json, sys\n"
    "from passdown.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


class World:
    """A workspace, a small Claude Code session and a small Codex session, in tmp_path."""

    def __init__(self, tmp_path: Path) -> None:
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        subprocess.run(["git", "init", "-q", str(self.ws)], check=True)
        shutil.copytree(FIXTURES / "claude" / "full", tmp_path / "claude")
        shutil.copytree(FIXTURES / "codex" / "full", tmp_path / "codex")
        self.claude = next((tmp_path / "claude" / "projects").glob("*/*.jsonl"))
        self.codex = next((tmp_path / "codex" / "sessions").rglob("*.jsonl"))
        self.data = tmp_path / "data"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PASSDOWN_")}
        self.env = {
            **env,
            "PYTHONPATH": str(REPO / "src"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
            "CODEX_HOME": str(tmp_path / "codex"),
            "PASSDOWN_DATA_DIR": str(self.data),
            "HOME": str(tmp_path),
        }

    def run(self, argv: list[str], stdin: str | None = None) -> set[str]:
        proc = subprocess.run(
            [sys.executable, "-c", RUN, *argv],
            input=stdin,
            cwd=self.ws,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return set(json.loads(proc.stderr.strip().splitlines()[-1]))

    def hook_log(self) -> str:
        log = self.data / "logs" / "hooks.log"
        return log.read_text() if log.exists() else ""


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_an_export_loads_no_web_mcp_rich_or_postgres(world: World) -> None:
    modules = world.run(
        ["export", "--from", "claude", "--session", str(world.claude), "--workspace",
         str(world.ws), "--quiet"]
    )  # fmt: skip
    assert (world.ws / ".agent-handoff" / "HANDOFF.md").is_file()
    assert "passdown.coordinator._doors" in modules  # the export ran its one path
    assert loaded(modules, NEVER) == []


@pytest.mark.parametrize(
    ("agent", "event"),
    [
        ("claude", "SessionEnd"),
        ("claude", "PreCompact"),
        ("codex", "Stop"),
        ("codex", "agent-turn-complete"),  # the notify form: the payload is an argument
    ],
)
def test_a_hook_event_loads_only_the_export_path(world: World, agent: str, event: str) -> None:
    session = world.claude if agent == "claude" else world.codex
    payload = {
        "hook_event_name": event,
        "session_id": session.stem,
        "transcript_path": str(session),
        "cwd": str(world.ws),
    }
    if event == "agent-turn-complete":
        thread = "-".join(session.stem.split("-")[-5:])  # rollout-<time>-<thread id>
        notify = {"type": event, "thread-id": thread, "cwd": str(world.ws)}
        modules = world.run(["hook", agent, json.dumps(notify)])
    else:
        modules = world.run(["hook", agent], json.dumps(payload))
    assert f"ok {agent} " in world.hook_log(), world.hook_log()  # the handoff was written
    assert "passdown.coordinator._doors" in modules
    assert loaded(modules, NEVER) == []
    assert loaded(modules, NOT_IN_A_HOOK) == []
