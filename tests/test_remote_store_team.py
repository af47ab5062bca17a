"""Done means, for the team server as a store: two `passdown serve` processes on one
PostgreSQL database (a fresh schema per test), `PASSDOWN_STORE=http://127.0.0.1:PORT`
from two HOMEs. A handoff exported from HOME A; then 20 concurrent pickups, the real
SessionStart hook (`passdown hook claude`, as Claude Code runs it), spread over both
servers and both HOMEs: exactly one claims, all answer within 30 s. Once more over
https, with a self-signed certificate made here and the client's CA bundle naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from passdown.records import Scope
from passdown.store import open_store
from passdown.store._tokens import create_token
from recorded import scenarios
from remote_store_helpers import SRC, Serve, self_signed

PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)
PICKUPS = 20
ANSWERED_WITHIN_S = 30.0
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}

pytestmark = [pytest.mark.timeout(300), pytest.mark.postgres]


@pytest.fixture
def pg_url() -> Iterator[str]:
    import psycopg
    from psycopg import sql

    schema = f"team_{uuid.uuid4().hex[:12]}"
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}schema={schema}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "--allow-empty", "-m", "initial"],
    ):
        subprocess.run(["git", *args], cwd=ws, env={**os.environ, **GIT_ENV}, check=True)
    return ws


def home_env(home: Path, store: str, token: str, **extra: str) -> dict[str, str]:
    """A machine of its own: HOME, data folder, agent homes; the team server as store."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PASSDOWN_", "CLAUDE_", "CODEX_"))
    }
    env.update(
        HOME=str(home),
        PASSDOWN_DATA_DIR=str(home / "passdown-data"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        PASSDOWN_STORE=store,
        PASSDOWN_TOKEN=token,
        PYTHONPATH=str(SRC),
        **extra,
    )
    return env


def passdown(
    env: dict[str, str], *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def export_from(home: Path, env: dict[str, str], ws: Path) -> str:
    """HOME A's claude session handed off into `ws` through the team server."""
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    claude_home = home / ".claude"
    shutil.copytree(recorded.root, claude_home, ignore=shutil.ignore_patterns("expected.json"))
    session = claude_home / recorded.session_files()[0]
    done = passdown(env, "export", "--session", str(session), "--workspace", str(ws))
    assert done.returncode == 0, done.stderr
    handoff = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())
    return str(handoff["id"])


def concurrent_pickups(ws: Path, envs: list[dict[str, str]]) -> tuple[list[str], float]:
    """PICKUPS SessionStart hooks at once, the i-th with envs[i % len(envs)]; their
    stdouts and the wall time until the last answered."""
    started = time.monotonic()
    procs = []
    for i in range(PICKUPS):
        payload = {
            "hook_event_name": "SessionStart",
            "session_id": f"pickup-{i}",
            "cwd": str(ws),
            "source": "startup",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "passdown", "hook", "claude"],
            env=envs[i % len(envs)],
            cwd=ws,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload))
        proc.stdin.close()
        procs.append(proc)
    outs = []
    for proc in procs:
        assert proc.stdout is not None
        outs.append(proc.stdout.read())
        proc.wait(timeout=120)
        assert proc.returncode == 0
    return outs, time.monotonic() - started


def hook_logs(*homes: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace")
        for home in homes
        for p in (home / "passdown-data").rglob("*.log")
    )


def run_team(
    tmp_path: Path, ws: Path, pg_url: str, scheme: str, **serve: Any
) -> tuple[list[str], float, str, str]:
    project = _project(ws)
    with open_store(pg_url) as db:
        token = create_token(db, project, "team test")
    servers = [Serve(tmp_path / f"server{n}", pg_url, scheme=scheme, **serve) for n in (1, 2)]
    try:
        extra = {"PASSDOWN_CA_BUNDLE": str(serve["ca"])} if "ca" in serve else {}
        home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
        envs = [
            home_env(home, server.url, token, **extra)
            for home in (home_a, home_b)
            for server in servers
        ]
        handoff_id = export_from(home_a, envs[0], ws)
        outs, elapsed = concurrent_pickups(ws, envs)
        claimed = [out for out in outs if out.strip()]
        logs = hook_logs(home_a, home_b)
        assert len(claimed) == 1, (outs, logs)
        # every pickup answered: one claim, the others lost the race (no error among them)
        outcomes = [
            line.split("pickup claude ", 1)[1]
            for line in logs.splitlines()
            if "pickup claude " in line
        ]
        assert len(outcomes) == PICKUPS, logs
        assert [o for o in outcomes if o.split()[0] not in ("taken", "already-claimed")] == [
            f"claimed {handoff_id}"
        ], logs
    finally:
        for server in servers:
            server.stop()
    return outs, elapsed, handoff_id, project


def _project(ws: Path) -> str:
    from passdown._git import project_name

    return project_name(ws)


def _status(pg_url: str, project: str, handoff_id: str) -> dict[str, Any]:
    from passdown.coordinator._lifecycle import status_pointer

    with open_store(pg_url) as db:
        raw = db.get_pointer(Scope(project=project), status_pointer(handoff_id))
    assert raw is not None
    return dict(json.loads(raw))


def test_twenty_pickups_over_two_servers_on_one_database_claim_once(
    tmp_path: Path, workspace: Path, pg_url: str
) -> None:
    outs, elapsed, handoff_id, project = run_team(tmp_path, workspace, pg_url, "http")
    assert elapsed < ANSWERED_WITHIN_S, f"{PICKUPS} pickups took {elapsed:.1f} s"
    (winner,) = [i for i, out in enumerate(outs) if out.strip()]
    context = json.loads(outs[winner])["hookSpecificOutput"]["additionalContext"]
    assert str(workspace / ".agent-handoff" / "HANDOFF.md") in context
    status = _status(pg_url, project, handoff_id)
    assert status["status"] == "claimed" and status["by"] == f"claude:pickup-{winner}"
    print(f"{PICKUPS} concurrent pickups over two servers answered in {elapsed:.1f} s")


def test_the_same_over_https_with_a_self_signed_certificate(
    tmp_path: Path, workspace: Path, pg_url: str
) -> None:
    cert, key = self_signed(tmp_path / "tls")
    _outs, elapsed, handoff_id, project = run_team(
        tmp_path, workspace, pg_url, "https", certfile=cert, keyfile=key, ca=cert
    )
    assert elapsed < ANSWERED_WITHIN_S, f"{PICKUPS} pickups took {elapsed:.1f} s"
    assert _status(pg_url, project, handoff_id)["status"] == "claimed"
    print(f"{PICKUPS} concurrent pickups over https answered in {elapsed:.1f} s")
