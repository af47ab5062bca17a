"""`passdown mcp` through the official MCP client of the same SDK, over stdio: the tools
and their schemas, each tool called, bad arguments, and scope isolation (a record of
another project asked for by id is "not found", exactly like a missing one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from passdown.records import default_project, record_to_dict
from passdown.store import open_store

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests/fixtures/sessions/claude/full/projects/-tmp-passdown-rec-claude-full"
TOOLS = {
    "store_record",
    "retrieve_record",
    "find_records",
    "prepare_handoff",
    "load_handoff",
    "mark_handoff",
}

pytestmark = pytest.mark.timeout(120)


def record(id: str, project: str, title: str, type: str = "task") -> dict[str, Any]:
    return {
        "id": id,
        "type": type,
        "title": title,
        "scope": {"project": project},
        "content": f"{title} body",
        "annotations": [{"kind": "next", "value": "ship it"}],
        "created_at": "2026-03-01T10:00:00Z",
        "provenance": {"agent": "test", "session": "s1"},
    }


def git_workspace(path: Path) -> Path:
    path.mkdir(parents=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    (path / "README.md").write_text("# alpha\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


def plant_claude_session(ws: Path) -> None:
    """The recorded real Claude Code session, moved to run in `ws`."""
    src = next(FIXTURE.glob("*.jsonl"))
    encoded = "".join(c if c.isalnum() else "-" for c in str(ws))
    dest = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / encoded / src.name
    dest.parent.mkdir(parents=True)
    text = src.read_text(encoding="utf-8").replace("/tmp/passdown-rec/claude-full", str(ws))
    dest.write_text(text, encoding="utf-8")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return git_workspace(tmp_path / "alpha")


@pytest.fixture
def seeded() -> None:
    with open_store() as store:
        store.store(record("alpha-1", "alpha", "Alpha migration plan"))
        store.store(record("beta-secret", "beta", "Beta migration secret"))


@asynccontextmanager
async def connect(cwd: Path, *args: str) -> AsyncIterator[Client]:
    env = {
        k: os.environ[k]
        for k in ("HOME", "PASSDOWN_DATA_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PATH")
    }
    env["PYTHONPATH"] = str(REPO / "src")
    env["PASSDOWN_AGENTS"] = "claude,codex"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "passdown", "mcp", *args], env=env, cwd=str(cwd)
    )
    async with Client(params, mode="legacy") as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, structured result or error text)."""
    result = await client.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        return True, text
    return (
        False,
        result.structured_content if result.structured_content is not None else json.loads(text),
    )


def run(coro_fn: Any) -> None:
    anyio.run(coro_fn)


def test_lists_every_tool_with_schema_and_description(ws: Path) -> None:
    async def main() -> None:
        async with connect(ws) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and len(tool.description) > 40, tool.name
                assert tool.input_schema["type"] == "object"
                assert (
                    "project" not in json.dumps(tool.input_schema["properties"])
                    or tool.name == "store_record"
                )
            assert tools["retrieve_record"].input_schema["required"] == ["id"]
            status = tools["mark_handoff"].input_schema["properties"]["status"]
            assert status["enum"] == ["claimed", "completed", "rejected"]
            assert set(tools["mark_handoff"].input_schema["required"]) == {"id", "status"}
            assert tools["find_records"].input_schema["properties"]["limit"]["maximum"] == 100

    run(main)


def test_store_retrieve_find_in_the_bound_project(ws: Path, seeded: None) -> None:
    async def main() -> None:
        async with connect(ws, "--project", "alpha") as client:
            new = record("alpha-2", "alpha", "Alpha rollout notes")
            del new["scope"]  # the server's project is filled in
            err, out = await call(client, "store_record", {"record": new})
            assert not err and out == {"id": "alpha-2", "project": "alpha"}
            err, got = await call(client, "retrieve_record", {"id": "alpha-2"})
            assert not err and got["scope"] == {"project": "alpha"}
            assert got["title"] == "Alpha rollout notes"
            err, found = await call(client, "find_records", {"text": "migration"})
            assert not err and [r["id"] for r in found["records"]] == ["alpha-1"]
            err, found = await call(client, "find_records", {"type": "task", "limit": 1})
            assert not err and len(found["records"]) == 1 and found["next_cursor"]
            err, more = await call(
                client, "find_records", {"type": "task", "cursor": found["next_cursor"]}
            )
            assert not err and len(more["records"]) == 1

    run(main)
    with open_store() as store:  # really stored, in alpha only
        assert store.retrieve("alpha", "alpha-2").scope.project == "alpha"
        assert not store.query("beta", text="rollout").records


def test_another_projects_record_is_not_found_without_a_hint(ws: Path, seeded: None) -> None:
    async def main() -> None:
        async with connect(ws, "--project", "alpha") as client:
            err, other = await call(client, "retrieve_record", {"id": "beta-secret"})
            err2, missing = await call(client, "retrieve_record", {"id": "no-such-record"})
            assert err and err2
            assert other.replace("beta-secret", "ID") == missing.replace("no-such-record", "ID")
            assert "beta" not in other.replace("beta-secret", "")
            err, found = await call(client, "find_records", {"text": "secret"})
            assert not err and found["records"] == []
            # A record claiming another scope is refused, never stored there.
            err, msg = await call(client, "store_record", {"record": record("x", "beta", "sneaky")})
            assert err and "scope.project must be 'alpha'" in msg
            err, msg = await call(
                client, "mark_handoff", {"id": "beta-secret", "status": "claimed"}
            )
            assert err and "no record 'beta-secret' in project 'alpha'" in msg
            err, msg = await call(client, "load_handoff", {"id": "beta-secret"})
            assert err and "beta" not in msg.replace("beta-secret", "")

    run(main)
    with open_store() as store:
        assert [r.id for r in store.query("beta").records] == ["beta-secret"]


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(ws: Path) -> None:
    async def main() -> None:
        async with connect(ws) as client:
            cases = [
                ("retrieve_record", {}, "id"),
                ("retrieve_record", {"id": ""}, "id"),
                ("find_records", {"limit": 0}, "limit"),
                ("find_records", {"type": "memo"}, "type"),
                ("find_records", {"since": "yesterday-ish"}, "since"),
                ("find_records", {"cursor": "garbage"}, "cursor"),
                ("mark_handoff", {"id": "h", "status": "done"}, "status"),
                ("store_record", {"record": {"id": "x"}}, "type"),
                ("store_record", {"record": "not an object"}, "record"),
                ("prepare_handoff", {"source": "nosuchagent"}, "nosuchagent"),
                ("load_handoff", {}, f"no handoff stored in project '{default_project(ws)}'"),
                ("no_such_tool", {}, "no_such_tool"),
            ]
            for tool, args, needle in cases:
                err, msg = await call(client, tool, args)
                assert err, (tool, args, msg)
                assert needle in msg, (tool, args, msg)
            err, out = await call(client, "find_records", {})
            assert not err and out["project"] == default_project(ws)

    run(main)


def test_prepare_load_and_mark_a_handoff(ws: Path) -> None:
    plant_claude_session(ws)

    async def main() -> None:
        async with connect(ws) as client:  # default scope: the workspace's project
            err, prepared = await call(
                client, "prepare_handoff", {"source": "claude", "target_agent": "codex"}
            )
            assert not err, prepared
            assert prepared["project"] == default_project(ws)
            assert Path(prepared["markdown_path"]) == ws / ".agent-handoff" / "HANDOFF.md"
            assert (
                Path(prepared["markdown_path"]).is_file() and Path(prepared["json_path"]).is_file()
            )
            hid = prepared["id"]
            err, loaded = await call(client, "load_handoff", {})
            assert not err
            assert loaded["id"] == hid and loaded["status"] == "published" and loaded["active"]
            assert loaded["markdown"] == Path(prepared["markdown_path"]).read_text()
            assert set(loaded["sections"]) >= {"what_i_did", "next", "blockers", "files_touched"}
            for status in ("claimed", "claimed", "completed"):  # a repeat is a no-op
                err, out = await call(client, "mark_handoff", {"id": hid, "status": status})
                assert not err and out["status"] == status, out
            err, msg = await call(client, "mark_handoff", {"id": hid, "status": "claimed"})
            assert err and "completed" in msg
        async with connect(ws) as other:  # another agent: sees the status, cannot re-claim
            err, loaded = await call(other, "load_handoff", {"id": hid})
            assert not err and loaded["status"] == "completed"

    run(main)
    with open_store() as store:
        assert store.retrieve(default_project(ws), prepared_id(store, ws)).type == "handoff"


def prepared_id(store: Any, ws: Path) -> str:
    return str(store.query(default_project(ws), type="handoff").records[0].id)


def test_a_claim_by_another_agent_is_refused(ws: Path) -> None:
    with open_store() as store:
        h = record("h-1", default_project(ws), "Handoff from claude", type="handoff")
        store.store(h)
        assert record_to_dict(store.retrieve(default_project(ws), "h-1"))["id"] == "h-1"

    async def main() -> None:
        async with connect(ws) as first, connect(ws) as second:
            err, out = await call(first, "mark_handoff", {"id": "h-1", "status": "claimed"})
            assert not err and out["status"] == "claimed"
            err, msg = await call(second, "mark_handoff", {"id": "h-1", "status": "claimed"})
            assert err and "already claimed" in msg
            err, loaded = await call(second, "load_handoff", {"id": "h-1"})
            assert not err and loaded["id"] == "h-1" and loaded["status"] == "claimed"
            assert not loaded["active"], (
                "a stored record never becomes the active handoff by itself"
            )

    run(main)
