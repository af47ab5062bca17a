"""The session-start pickup on its light path (issue 12): `passdown hook AGENT` goes to
the hook before click, finds a built-in integration without the agent's module, reads
the active handoff from SQLite as JSON and only loads the store's models to claim it.
The decisions are the ones `pickup` always made (tests/test_continuity.py), and what it
reads is what the package says, for SQLite, for a store it cannot peek at, and for
PostgreSQL."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from passdown.integrations import _continuity as continuity
from passdown.integrations._continuity import Candidate, pickup
from test_continuity import (  # noqa: F401  (fixtures)
    claude_session,
    git,
    hook,
    stop_failure,
    workspace,
)

REPO = Path(__file__).resolve().parents[1]
# what the light path must not load: the CLI framework, the agents' readers, the
# pipeline and the handoff/package models
HEAVY = (
    "click",
    "msgspec",
    "passdown.agents",
    "passdown._pipeline",
    "passdown._extract",
    "passdown.handoff",
    "passdown.coordinator._core",
    "passdown._handoff_package",
    "passdown._workspace",
)
MODELS = ("pydantic", "passdown.records", "passdown.coordinator._lifecycle")


def start_payload(ws: Path, session: str = "new-session") -> dict[str, str]:
    return {
        "hook_event_name": "SessionStart",
        "session_id": session,
        "cwd": str(ws),
        "source": "startup",
    }


def run_hook_process(ws: Path, payload: dict[str, str]) -> tuple[str, set[str]]:
    """`passdown hook claude` in a fresh interpreter, as the agent runs it: what it
    printed, and every module it imported."""
    code = (
        "import json, sys\n"
        "from passdown.cli import main\n"
        "code = main(['hook', 'claude'])\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(payload),
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, set(json.loads(proc.stderr.strip().splitlines()[-1]))


def loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def hook_log() -> str:
    return (Path(os.environ["PASSDOWN_DATA_DIR"]) / "logs" / "hooks.log").read_text()


def test_the_session_start_hook_loads_only_what_it_needs(
    claude_session: Path,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    out, modules = run_hook_process(empty, start_payload(empty))
    assert out == "" and hook_log().splitlines()[-1].endswith("pickup claude none")
    assert loaded(modules, HEAVY + MODELS) == []

    hook("claude", stop_failure(claude_session, workspace), capsys)
    out, modules = run_hook_process(workspace, start_payload(workspace))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert f"from claude session {claude_session.stem}, which ended on a rate limit" in context
    assert hook_log().splitlines()[-1].split()[1:4] == ["pickup", "claude", "claimed"]
    assert loaded(modules, HEAVY) == []  # the claim needs the store's models, nothing more

    out, modules = run_hook_process(workspace, start_payload(workspace, "third"))
    assert out == "" and hook_log().splitlines()[-1].endswith("pickup claude already-claimed")
    assert loaded(modules, HEAVY + MODELS) == []


@pytest.mark.parametrize(
    ("args", "fast"),
    [
        (["hook", "claude"], ("claude", [])),
        (
            ["hook", "codex", '{"type": "agent-turn-complete"}'],
            ("codex", ['{"type": "agent-turn-complete"}']),
        ),
        (["hook", "pi", "session_start", "{}"], ("pi", ["session_start", "{}"])),
        (["hook", "--help"], None),
        (["hook", "claude", "--help"], None),
        (["hook"], None),
        (["export", "hook"], None),
    ],
)
def test_which_command_lines_skip_click(
    args: list[str], fast: tuple[str, list[str]] | None
) -> None:
    from passdown.cli import _hook_args

    assert _hook_args(args) == fast


def test_hook_help_still_comes_from_click(capsys: pytest.CaptureFixture[str]) -> None:
    from passdown.cli import main

    assert main(["hook", "--help"]) == 0
    assert "Run by agent hooks" in capsys.readouterr().out


def test_builtin_integrations_are_what_the_agent_modules_name() -> None:
    from passdown.agents._registry import every_agent
    from passdown.integrations import BUILTIN

    named = {
        name: agent.integration  # type: ignore[attr-defined]
        for name, agent in every_agent().items()
        if getattr(agent, "integration", None)
    }
    assert named == BUILTIN


def _package_view(ws: Path) -> Candidate:
    """What pickup read before it was made light: the package and its status through the
    coordinator, in pickup's terms."""
    from passdown.coordinator import HandoffCoordinator

    with HandoffCoordinator(ws) as coordinator:
        package = coordinator.load_handoff()
    handoff = package.handoff
    assert handoff is not None
    return Candidate(
        id=package.id,
        status=package.status,
        agent=package.source_agent,
        timestamp=package.timestamp,
        source_session=handoff.source.session_id,
        ended=handoff.ended.reason,
        next_steps=tuple(handoff.state.next_steps or package.state.next_steps),
        git_hash=package.context.git_hash,
        workspace=package.workspace,
    )


def test_the_peeked_candidate_is_what_the_package_says(
    claude_session: Path,  # noqa: F811
    workspace: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    from passdown._git import project_name
    from passdown.store import default_store_url

    hook("claude", stop_failure(claude_session, workspace), capsys)
    with continuity._open_handoffs(workspace) as handoffs:
        assert isinstance(handoffs, continuity._PeekedHandoffs)
        peeked = handoffs.active()
    with continuity._Handoffs(default_store_url(), project_name(workspace)) as handoffs:
        through_the_store = handoffs.active()
    expected = _package_view(workspace)
    assert peeked == through_the_store == expected
    assert expected.status == "published" and expected.ended == "rate_limit"
    assert expected.next_steps and expected.git_hash and expected.source_session


def test_the_pointer_is_the_one_pickup_always_gave(
    claude_session: Path,  # noqa: F811
    workspace: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    from passdown._redact import redact
    from passdown.handoff import TAKEOVER_CONTRACT

    hook("claude", stop_failure(claude_session, workspace), capsys)
    view = _package_view(workspace)
    result = pickup("codex", "new", str(workspace))
    assert result.outcome == f"claimed {view.id}"
    lines = [
        f"passdown: an unfinished task was handed over from claude session "
        f"{claude_session.stem}, which ended on a rate limit.",
        f"Next step: {view.next_steps[0]}",
        f"Read the handoff first: {workspace / '.agent-handoff' / 'HANDOFF.md'}",
        f"Rule: {TAKEOVER_CONTRACT[0]} {TAKEOVER_CONTRACT[1]}",
    ]
    assert result.pointer == "\n".join(" ".join(redact(line).split()) for line in lines)


def test_a_package_without_a_session_is_read_as_its_record_says() -> None:
    from passdown._handoff_package import HandoffPackage, PackageContext, PackageState
    from passdown._handoff_record import package_to_record
    from passdown.records import record_to_dict

    package = HandoffPackage(
        id="handoff-no-session",
        source_agent="harness",
        timestamp="2026-11-30T10:00:00Z",
        state=PackageState(next_steps=["Wire the logout endpoint"]),
        context=PackageContext(git_hash="a" * 40),
        summary="Login works",
        workspace="/w",
        project="webapp",
    ).sealed()
    record = record_to_dict(package_to_record(package))
    assert Candidate.from_record(record, "published") == Candidate(
        id="handoff-no-session",
        status="published",
        agent="harness",
        timestamp="2026-11-30T10:00:00Z",
        next_steps=("Wire the logout endpoint",),
        git_hash="a" * 40,
        workspace="/w",
    )


def test_a_store_the_peek_cannot_read_is_opened_as_the_store(
    claude_session: Path,  # noqa: F811
    workspace: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    hook("claude", stop_failure(claude_session, workspace), capsys)
    store = Path(os.environ["PASSDOWN_DATA_DIR"]) / "store.db"
    store.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    sqlite3.connect(store).close()  # a store file without its tables (not migrated yet)
    assert pickup("codex", "new", str(workspace)).outcome == "none"
    with sqlite3.connect(store) as db:  # the store itself opened it, and migrated it
        assert db.execute("SELECT count(*) FROM pointers").fetchone() == (0,)


def test_no_store_file_means_nothing_to_pick_up(
    claude_session: Path,  # noqa: F811
    workspace: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    hook("claude", stop_failure(claude_session, workspace), capsys)
    store = Path(os.environ["PASSDOWN_DATA_DIR"]) / "store.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    assert pickup("codex", "new", str(workspace)).outcome == "none"
    assert not store.exists()  # a session start creates no store


PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)


@pytest.fixture
def postgresql_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    schema = f"test_{uuid.uuid4().hex[:16]}"
    url = f"{PG_URL}{'&' if '?' in PG_URL else '?'}schema={schema}"
    monkeypatch.setenv("PASSDOWN_STORE", url)
    yield url
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.postgres
def test_postgresql_takes_the_store_path_with_the_same_decisions(
    postgresql_store: str,
    claude_session: Path,  # noqa: F811
    workspace: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    hook("claude", stop_failure(claude_session, workspace), capsys)
    assert not (Path(os.environ["PASSDOWN_DATA_DIR"]) / "store.db").exists()
    with continuity._open_handoffs(workspace) as handoffs:
        assert not isinstance(handoffs, continuity._PeekedHandoffs)
        assert handoffs.active() == _package_view(workspace)
    assert pickup("codex", claude_session.stem, str(workspace)).outcome == "own-session"
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda n: pickup("codex", f"s{n}", str(workspace)), range(3)))
    outcomes = sorted(r.outcome.split()[0] for r in results)
    assert outcomes.count("claimed") == 1, outcomes
    assert set(outcomes) <= {"claimed", "taken", "already-claimed"}
    pointer = next(r.pointer for r in results if r.pointer)
    assert f"claude session {claude_session.stem}, which ended on a rate limit" in pointer


def test_pickup_names_the_lifecycles_own_pointers() -> None:
    from passdown.coordinator import _lifecycle as lifecycle

    assert continuity.ACTIVE_POINTER == lifecycle.ACTIVE_POINTER
    assert continuity.status_pointer("h-1") == lifecycle.status_pointer("h-1")
