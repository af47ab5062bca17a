"""The project scope names the repository, not the folder's name (issue 21).

An unrelated folder that happens to have the same name (`ws-codex`) sees none of another
repository's handoffs, in `passdown find` or the session-start pickup; clones of the
same remote share one scope; and a scope named with `--project` is a scope of its own,
which the repository's exports and pickups never touch, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from passdown._git import project_label
from passdown.coordinator import _doors as doors
from passdown.coordinator._lifecycle import Lifecycle
from passdown.records import Scope, default_project
from passdown.store import open_store
from test_coordinator_fixtures import git
from test_doors import passdown, repo, simple_session

pytestmark = pytest.mark.timeout(300)
PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)
SESSION_A = "aaaaaaaa-0000-4000-8000-00000000000a"
SESSION_B = "bbbbbbbb-0000-4000-8000-00000000000b"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The store every door uses ($PASSDOWN_STORE, inherited by the CLI subprocesses)."""
    if request.param == "sqlite":
        url = f"sqlite://{tmp_path / 'store.db'}"
        monkeypatch.setenv("PASSDOWN_STORE", url)
        yield url
        return
    import psycopg
    from psycopg import sql

    schema = f"test_{uuid.uuid4().hex[:16]}"
    url = f"{PG_URL}{'&' if '?' in PG_URL else '?'}schema={schema}"
    monkeypatch.setenv("PASSDOWN_STORE", url)
    yield url
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def find(cwd: Path) -> list[str]:
    """`passdown find --type handoff --json` in `cwd`: the ids it lists."""
    proc = passdown(["find", "--type", "handoff", "--json"], cwd)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    records = data["records"] if isinstance(data, dict) else data
    return [r["id"] for r in records]


def session_start(ws: Path) -> str:
    """`passdown hook claude` on a new session's SessionStart in `ws`: the context it
    gives the session ("" when there is no handoff to pick up)."""
    import subprocess
    import sys

    payload = {"hook_event_name": "SessionStart", "session_id": "new", "cwd": str(ws)}
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "hook", "claude"],
        input=json.dumps({**payload, "source": "startup"}),
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    if not proc.stdout.strip():
        return ""
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def export(ws: Path) -> str:
    proc = passdown(["export", "--from", "claude", "--json"], ws)
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["record_id"])


def test_an_unrelated_folder_of_the_same_name_sees_nothing(tmp_path: Path, store_url: str) -> None:
    mine = repo(tmp_path / "one" / "ws-codex")
    simple_session(SESSION_A, mine)
    handoff = export(mine)
    unrelated = tmp_path / "two" / "ws-codex"
    unrelated.mkdir(parents=True)  # empty, not even git
    assert default_project(mine) != default_project(unrelated)
    assert project_label(default_project(mine)) == project_label(default_project(unrelated))
    assert handoff in find(mine)
    assert find(unrelated) == []
    assert session_start(unrelated) == ""  # the hook a new Claude Code session runs
    assert f"from claude session {SESSION_A}" in session_start(mine)


def test_clones_of_one_remote_share_a_scope_and_a_moved_local_repo_does_not(
    tmp_path: Path, store_url: str
) -> None:
    first = repo(tmp_path / "first" / "api")
    second = repo(tmp_path / "second" / "api-copy")
    for clone, url in (
        (first, "https://github.com/acme/api.git"),
        (second, "git@github.com:acme/api"),  # the same remote, spelled the ssh way
    ):
        git(clone, "remote", "add", "origin", url)
    assert default_project(first) == default_project(second)
    assert project_label(default_project(second)) == "api"
    simple_session(SESSION_A, first)
    assert export(first) in find(second)

    local = repo(tmp_path / "local" / "api")  # no remote: its path identifies it
    before = default_project(local)
    moved = tmp_path / "moved" / "api"
    moved.parent.mkdir()
    local.rename(moved)
    assert default_project(moved) != before
    assert default_project(moved / "sub-folder-does-not-matter") == default_project(moved)
    other_remote = repo(tmp_path / "fork" / "api")
    git(other_remote, "remote", "add", "origin", "https://github.com/someone-else/api.git")
    assert default_project(other_remote) != default_project(first)


def test_a_scope_named_after_the_folder_is_a_scope_of_its_own(
    tmp_path: Path, store_url: str
) -> None:
    """A handoff stored under `--project ws-codex` (the folder's name) stays there: the
    repository's own exports, listings and session-start pickup leave it where it is."""
    mine = repo(tmp_path / "ws-codex")
    simple_session(SESSION_A, mine)
    named = Scope(project="ws-codex")
    with open_store(store_url) as store:
        kept = doors.export(doors.HandoffRequest(source="claude"), mine, store=store, scope=named)
    assert find(mine) == []
    assert session_start(mine) == ""  # nothing of the repository's own to pick up
    simple_session(SESSION_B, mine)
    ours = export(mine)
    assert find(mine) == [ours]
    with open_store(store_url) as store:
        assert [r.id for r in store.query(named, type="handoff", limit=5).records] == [
            kept.record_id
        ]
        assert Lifecycle(store, named).active() == kept.record_id
        own = Scope(project=default_project(mine))
        assert [r.id for r in store.query(own, type="handoff", limit=5).records] == [ours]


def test_the_scope_of_a_folder_named_after_a_token_is_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ws = tmp_path / f"ws-{token}"
    ws.mkdir()
    project = default_project(ws)
    assert token not in project and project.startswith("ws-[REDACTED:")
    assert project == default_project(ws)


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/api.git",
        "https://ci:ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8@GitHub.com:443/acme/api",
        "ssh://git@github.com/acme/api.git/",
        "git@github.com:acme/api.git",
    ],
)
def test_every_spelling_of_one_remote_is_one_identity(url: str) -> None:
    from passdown._git import _remote_key

    assert _remote_key(url, Path("/work")) == "github.com/acme/api"


def test_a_remote_on_this_machine_is_identified_by_its_path(tmp_path: Path) -> None:
    from passdown._git import _remote_key

    bare = tmp_path / "r.git"
    assert _remote_key(str(bare), tmp_path) == _remote_key(bare.as_uri(), tmp_path)
    assert _remote_key("../r.git", tmp_path / "clone") == _remote_key(str(bare), tmp_path)


def test_paths_are_case_folded_where_the_file_system_ignores_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown import _git

    monkeypatch.setattr(_git, "_case_insensitive", lambda _path: True)
    assert _git._path_key(tmp_path / "Repo") == _git._path_key(tmp_path / "rEPO")
    monkeypatch.setattr(_git, "_case_insensitive", lambda _path: False)
    assert _git._path_key(tmp_path / "Repo") != _git._path_key(tmp_path / "rEPO")


@pytest.mark.parametrize(
    ("project", "label"),
    [
        ("api~3f9c2a1b7d0e", "api"),
        ("my~team~0123456789ab", "my~team"),
        ("webapp", "webapp"),  # a name given with --project, or stored before
        ("api~notanid", "api~notanid"),
        ("~0123456789ab", "~0123456789ab"),
    ],
)
def test_the_label_is_the_readable_part(project: str, label: str) -> None:
    assert project_label(project) == label
