"""Issue 10, "One export path": every door turns one session into the same handoff.

A recorded real session (Claude Code, Codex) is moved into a git workspace that also
holds a PROGRESS.md, then handed off through each door in turn: `passdown inspect
--json` (prepare only), `passdown export`, the agent hook (`passdown hook`), the MCP
`prepare_handoff` tool (over stdio, through the official client) and the Python API
(`HandoffCoordinator.prepare_handoff_sync` + `export_sync`). The handoffs must be equal
apart from their id and creation time, and every door must carry PROGRESS.md's next
step (inspect used to skip the project files that export read).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from passdown.coordinator import HandoffCoordinator
from passdown.store import open_store
from recorded import Recorded, scenarios
from test_coordinator_fixtures import commit_all, git
from test_mcp import call, connect

pytestmark = pytest.mark.timeout(300)

PROGRESS = "# Progress\n\n## Next steps\n- Write the release notes for calc.py\n"
PROGRESS_STEP = "Write the release notes for calc.py"
RECORDED = {
    r.agent: r for r in scenarios() if r.scenario == "full" and r.agent in ("claude", "codex")
}


def passdown(
    args: list[str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def plant(rec: Recorded, ws: Path) -> Path:
    """The recorded store, moved so that the session ran in `ws`; returns the session file."""
    env = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}[rec.agent]
    home = Path(os.environ[env])
    old = rec.expected["workspace"]
    for rel in rec.session_files():
        text = (rec.root / rel).read_text(encoding="utf-8").replace(old, str(ws))
        dest = home / rel.replace(
            "".join(c if c.isalnum() else "-" for c in old),
            "".join(c if c.isalnum() else "-" for c in str(ws)),
        )
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    tasks = rec.root / "tasks"
    if tasks.is_dir():
        shutil.copytree(tasks, home / "tasks", dirs_exist_ok=True)
    main = rec.session_files()[0]
    return home / main.replace(
        "".join(c if c.isalnum() else "-" for c in old),
        "".join(c if c.isalnum() else "-" for c in str(ws)),
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "alpha"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    for name in ("README.md", "greet.py"):
        (ws / name).write_text(f"# {name}\n")
    commit_all(ws, "initial")
    (ws / "PROGRESS.md").write_text(PROGRESS)  # untracked, as a harness leaves it
    return ws


def comparable(handoff: dict[str, Any]) -> dict[str, Any]:
    """The handoff without what must differ between two exports: its id and its time."""
    out = json.loads(json.dumps(handoff))
    del out["id"], out["created_at"]
    return out


def read_written(ws: Path) -> dict[str, Any]:
    return json.loads((ws / ".agent-handoff" / "handoff.json").read_text())


def hook_payload(rec: Recorded, session: Path, ws: Path) -> tuple[list[str], str | None]:
    if rec.agent == "claude":
        return [], json.dumps(
            {
                "hook_event_name": "SessionEnd",
                "session_id": rec.expected["session_id"],
                "transcript_path": str(session),
                "cwd": str(ws),
            }
        )
    return [
        json.dumps(
            {"type": "agent-turn-complete", "thread-id": rec.expected["session_id"], "cwd": str(ws)}
        )
    ], None


def mcp_prepare(ws: Path, agent: str) -> dict[str, Any]:
    result: dict[str, Any] = {}

    async def main() -> None:
        async with connect(ws) as client:
            err, prepared = await call(client, "prepare_handoff", {"source": agent})
            assert not err, prepared
            result.update(prepared)
            err, loaded = await call(client, "load_handoff", {})
            assert not err and loaded["id"] == prepared["id"] and loaded["active"], loaded

    anyio.run(main)
    return json.loads(Path(result["json_path"]).read_text())


@pytest.mark.parametrize("agent", sorted(RECORDED))
def test_every_door_gives_the_same_handoff(agent: str, workspace: Path) -> None:
    rec = RECORDED[agent]
    session = plant(rec, workspace)
    ws = workspace
    handoffs: dict[str, dict[str, Any]] = {}

    proc = passdown(["inspect", "--from", agent, "--json"], ws)
    assert proc.returncode == 0, proc.stderr
    handoffs["inspect"] = json.loads(proc.stdout)
    assert not (ws / ".agent-handoff").exists(), "inspect writes nothing"

    proc = passdown(["export", "--from", agent, "--json"], ws)
    assert proc.returncode == 0, proc.stderr
    handoffs["export"] = read_written(ws)
    assert json.loads(proc.stdout)["record_id"] == handoffs["export"]["id"]

    # the hook on the unchanged session hands off what export did: no new version, and
    # the files it finds missing are written again
    for name in ("HANDOFF.md", "handoff.json"):
        (ws / ".agent-handoff" / name).unlink()
    args, stdin = hook_payload(rec, session, ws)
    assert passdown(["hook", agent, *args], ws, stdin=stdin).returncode == 0
    log = Path(os.environ["PASSDOWN_DATA_DIR"], "logs", "hooks.log").read_text()
    assert f" stored={handoffs['export']['id']}" in log, log
    handoffs["hook"] = read_written(ws)
    assert handoffs["hook"]["id"] == handoffs["export"]["id"]

    handoffs["mcp"] = mcp_prepare(ws, agent)
    assert handoffs["mcp"]["id"] == handoffs["export"]["id"], "unchanged: no new version"

    with HandoffCoordinator(ws) as coordinator:
        package = coordinator.prepare_handoff_sync(agent, handoff_type="agent")
        written = coordinator.export_sync(package)
        handoffs["api"] = json.loads(written.json_path.read_text())
        assert coordinator.load_handoff().id == package.id, "the API's export is the active handoff"

    reference = comparable(handoffs["inspect"])
    assert PROGRESS_STEP in reference["state"]["next_steps"], (
        "inspect reads PROGRESS.md like export"
    )
    assert reference["source"]["session_id"] == rec.expected["session_id"]
    assert reference["task"]["original_request"]
    for door, handoff in handoffs.items():
        assert comparable(handoff) == reference, f"{door} differs from inspect"

    # export published through the lifecycle, the hook and MCP found it unchanged, and
    # the API's export_sync (which publishes every package) superseded it
    with open_store() as store:
        from passdown.coordinator._lifecycle import Lifecycle
        from passdown.records import default_project

        scope = default_project(ws)
        ids = [handoffs[d]["id"] for d in ("export", "api")]
        lc = Lifecycle(store, store_scope(scope))
        assert lc.active() == ids[-1]
        statuses = [lc.current(i).status for i in ids]  # type: ignore[union-attr]
        assert statuses == ["superseded", "published"]


def store_scope(project: str) -> Any:
    from passdown.records import Scope

    return Scope(project=project)
