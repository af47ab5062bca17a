"""The project scope names the repository, not the folder's name (issue 21).

An unrelated folder that happens to have the same name (`ws-codex`) sees none of another
repository's handoffs, in `passdown find` or the session-start pickup; clones of the
same remote share one scope; and handoffs stored under the old scheme (the folder's
name) are adopted by the repository that wrote them, and only by it, on SQLite and on
PostgreSQL (passdown.store._adopt)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from passdown._git import legacy_project_name, project_label
from passdown.coordinator import _doors as doors
from passdown.coordinator._lifecycle import ACTIVE_POINTER, STATUSES, Lifecycle
from passdown.integrations._continuity import pickup
from passdown.records import Scope, default_project
from passdown.store import _adopt, open_store
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


def legacy_export(ws: Path, session: str, store_url: str) -> str:
    """A handoff as passdown stored it before: under the folder's name."""
    simple_session(session, ws)
    legacy = Scope(project=legacy_project_name(ws))
    with open_store(store_url) as store:
        written = doors.export(doors.HandoffRequest(source="claude"), ws, store=store, scope=legacy)
    return written.record_id


def test_records_of_the_old_scheme_are_adopted_by_their_repository_only(
    tmp_path: Path, store_url: str
) -> None:
    other = repo(tmp_path / "two" / "ws-codex")
    mine = repo(tmp_path / "one" / "ws-codex")
    theirs = legacy_export(other, SESSION_B, store_url)
    ours = legacy_export(mine, SESSION_A, store_url)  # the old scope's active handoff
    old = Scope(project="ws-codex")
    with open_store(store_url) as store:
        lc = Lifecycle(store, old)
        assert lc.active() == ours
        assert lc.current(theirs).status == "superseded"  # type: ignore[union-attr]
        versions = len(store.history(old, ours))

    assert find(mine) == [ours]  # the first use adopts
    new = Scope(project=default_project(mine))
    with open_store(store_url) as store:
        lc = Lifecycle(store, new)
        assert lc.active() == ours
        assert lc.current(ours).status == "published"  # type: ignore[union-attr]
        assert [e.status for e in lc.events(ours)] == ["prepared", "published"]
        assert len(store.history(new, ours)) == versions
        record = store.retrieve(new, ours)
        assert record.scope == new and record.type == "handoff"
        left = [r.id for r in store.query(old, limit=50).records]
        assert ours not in left and f"{ours}#published" not in left
        assert theirs in left  # written elsewhere: not adopted
        assert store.get_pointer(old, ACTIVE_POINTER) is None
        assert store.get_pointer(new, _adopt.ADOPTED_POINTER) == "ws-codex"

    assert find(mine) == [ours]  # a second run changes nothing
    assert pickup("codex", "new-session", str(mine)).outcome.startswith("claimed ")
    assert find(other) == [theirs]  # the other repository adopts its own
    with open_store(store_url) as store:
        assert store.query(old, type="handoff", limit=5).records == []
    unrelated = tmp_path / "three" / "ws-codex"
    unrelated.mkdir(parents=True)
    assert find(unrelated) == []


def test_the_pickup_adopts_the_old_active_handoff(tmp_path: Path, store_url: str) -> None:
    """The first session after the upgrade is offered the handoff stored before it."""
    mine = repo(tmp_path / "ws-codex")
    ours = legacy_export(mine, SESSION_A, store_url)
    assert f"from claude session {SESSION_A}" in session_start(mine)
    with open_store(store_url) as store:
        event = Lifecycle(store, Scope(project=default_project(mine))).current(ours)
        assert event is not None and event.status == "claimed"


def test_an_explicit_project_adopts_nothing(tmp_path: Path, store_url: str) -> None:
    mine = repo(tmp_path / "ws-codex")
    ours = legacy_export(mine, SESSION_A, store_url)
    with open_store(store_url) as store:
        assert _adopt.adopt_legacy_records(store, mine, "ws-codex") == 0
        assert _adopt.adopt_legacy_records(store, mine, "elsewhere") == 0
        assert store.retrieve("ws-codex", ours).id == ours
        assert _adopt.adopt_legacy_records(store, mine) == 1
        assert _adopt.adopt_legacy_records(store, mine) == 0


def test_the_scope_of_a_folder_named_after_a_token_is_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ws = tmp_path / f"ws-{token}"
    ws.mkdir()
    project = default_project(ws)
    assert token not in project and project.startswith("ws-[REDACTED:")
    assert project == default_project(ws)


def test_the_adopter_knows_the_lifecycles_names() -> None:
    assert _adopt.STATUSES == STATUSES and _adopt.ACTIVE_POINTER == ACTIVE_POINTER


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


def test_adopting_in_several_processes_at_once_moves_each_record_once(
    tmp_path: Path, store_url: str
) -> None:
    """Session-start hooks of several agents may adopt at the same moment."""
    from concurrent.futures import ThreadPoolExecutor

    mine = repo(tmp_path / "ws-codex")
    ours = legacy_export(mine, SESSION_A, store_url)
    with open_store(store_url) as store:  # a second version of the handoff record
        record = store.retrieve("ws-codex", ours).model_dump(mode="json")
        store.store({**record, "title": record["title"] + " (edited)"}, new_version=True)

    def adopt(_: int) -> int:
        with open_store(store_url) as store:
            return _adopt.adopt_legacy_records(store, mine)

    with ThreadPoolExecutor(4) as pool:
        moved = list(pool.map(adopt, range(4)))
    assert 1 <= sum(moved) <= 4
    new = Scope(project=default_project(mine))
    with open_store(store_url) as store:
        assert [m.version for m in store.history(new, ours)] == [1, 2]
        assert store.retrieve(new, ours).title.endswith("(edited)")
        assert store.query(Scope(project="ws-codex"), limit=10).records == []
        assert Lifecycle(store, new).active() == ours
