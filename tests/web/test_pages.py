"""The web view without a browser: the pages' content for lifecycle states and records
passdown did not write, `Store.projects` on both backends, and the `passdown ui` command
(--port, --open)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from passdown.mcp._lifecycle import mark_handoff
from passdown.records import Scope, record_from_package
from passdown.store import Store, open_store
from passdown.web import local_app

from .conftest import Trail

PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)


@pytest.fixture
def store(own_trail: Trail) -> Iterator[Store]:
    """A copy of the trail's store: what a test stores or marks stays in it."""
    with open_store(own_trail.store_url) as opened:
        yield opened


@pytest.fixture
def client(store: Store, own_trail: Trail) -> TestClient:
    return TestClient(local_app(store, own_trail.project), base_url="http://127.0.0.1:8123")


def package(
    id: str, timestamp: str, next_steps: list[str], blockers: list[str]
) -> dict[str, object]:
    return {
        "id": id,
        "source_agent": "harness-bot",
        "timestamp": timestamp,
        "summary": f"Session {id}",
        "state": {"next_steps": next_steps, "blockers": blockers, "completed_features": []},
        "context": {"recent_files": ["api.py"], "session_number": 2},
    }


def test_claimed_by_whom_shows_on_the_timeline_and_in_the_history(
    client: TestClient, store: Store, trail: Trail
) -> None:
    newest = trail.ids[-1]
    mark_handoff(store, Scope(project=trail.project), newest, "claimed", by="codex-takeover-7")
    page = client.get(f"/p/{trail.project}/")
    assert page.status_code == 200
    row = page.text.split(f'data-id="{newest}"')[1].split("</li>")[0]
    assert "claimed by codex-takeover-7" in row
    claimed = client.get(f"/p/{trail.project}/?status=claimed").text
    assert claimed.count('class="row"') == 1 and newest in claimed
    history = client.get(f"/p/{trail.project}/h/{newest}").text.split('class="lifecycle"')[1]
    assert history.index("published") < history.index("claimed") and "codex-takeover-7" in history


def test_records_without_a_handoff_still_show_and_compare(
    client: TestClient, store: Store, trail: Trail
) -> None:
    project = trail.project
    first = record_from_package(
        package("pkg-1", "2026-01-05T10:00:00Z", ["wire the API", "write docs"], ["db is down"]),
        project=project,
    )
    second = record_from_package(
        package("pkg-2", "2026-01-05T11:00:00Z", ["write docs", "ship it"], ["CI is red"]),
        project=project,
    )
    store.store_many([first, second])
    page = client.get(f"/p/{project}/h/pkg-1")
    assert page.status_code == 200
    assert "wire the API" in page.text and "db is down" in page.text and "harness-bot" in page.text
    compared = client.get(f"/p/{project}/compare?a=pkg-2&b=pkg-1").text
    resolved = compared.split("<h3>Resolved</h3>")[1].split("</ul>")[0]
    new = compared.split("<h3>New</h3>")[1].split("</ul>")[0]
    assert "wire the API" in resolved and "write docs" not in resolved
    assert "ship it" in new
    cleared = compared.split("<h3>Cleared</h3>")[1].split("</ul>")[0]
    assert "db is down" in cleared
    assert "CI is red" in compared.split("<h3>Cleared</h3>")[1].split("<h3>New</h3>")[1]
    assert client.get(f"/p/{project}/?agent=harness-bot").text.count('class="row"') == 2


def test_unknown_projects_ids_and_bad_filters_answer_plainly(
    client: TestClient, trail: Trail
) -> None:
    assert client.get("/p/no-such-project/").status_code == 404
    assert client.get("/p/passdown-server/").status_code == 404, "the token registry is no project"
    assert client.get(f"/p/{trail.project}/h/no-such-handoff").status_code == 404
    bad = client.get(f"/p/{trail.project}/?since_day=yesterday")
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.text
    assert 'id="search"' in bad.text, "the filters stay, to correct them"
    nothing = client.get(f"/p/{trail.project}/", params={"q": '"'})
    assert nothing.status_code == 400 and "give at least one word" in nothing.text
    assert client.get(f"/p/{trail.project}/events?since=not-a-time").status_code == 400
    home = client.get("/", follow_redirects=False)
    assert home.status_code == 303 and home.headers["location"] == f"/p/{trail.project}/"


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_store_lists_its_projects_most_recent_first(backend: str, tmp_path: Path) -> None:
    schema = f"web_test_{uuid.uuid4().hex[:10]}"
    url = f"sqlite://{tmp_path / 's.db'}" if backend == "sqlite" else f"{PG_URL}?schema={schema}"
    try:
        with open_store(url) as store:
            assert store.projects() == []
            for project, when in (
                ("alpha", "2026-01-01T00:00:00Z"),
                ("beta", "2026-03-01T00:00:00Z"),
                ("alpha", "2026-02-01T00:00:00Z"),
            ):
                store.store(
                    record_from_package(package(f"{project}-{when}", when, [], []), project=project)
                )
            assert store.projects() == ["alpha", "beta"][::-1]
    finally:
        if backend == "postgresql":
            import psycopg

            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_ui_command_takes_a_port_and_opens_the_browser(trail: Trail, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    env = {**trail.env, "BROWSER": str(browser)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "ui", "--port", str(port), "--open"],
        cwd=trail.workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 60
        while not opened.exists() or not opened.read_text():
            assert time.monotonic() < deadline, "the browser was not started"
            time.sleep(0.1)
        assert opened.read_text() == url
        while True:
            try:
                answer = httpx.get(url, follow_redirects=False)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert answer.status_code == 303 and answer.headers["location"] == f"/p/{trail.project}/"
    finally:
        proc.terminate()
        proc.wait(20)
    assert proc.returncode in (0, -15), proc.stderr.read() if proc.stderr else ""


def test_ui_command_on_a_port_in_use_says_so(trail: Trail) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "passdown", "ui", "--port", str(port)],
            cwd=trail.workspace,
            env=trail.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == "", "no URL for a server that is not there"


def test_trail_links_and_plan_columns_reach_both_ways(client: TestClient, trail: Trail) -> None:
    early, claude, codex = trail.ids[:3]
    grid = (
        client.get(f"/p/{trail.project}/plan?h={early}")
        .text.split("<thead>")[1]
        .split("</thead>")[0]
    )
    assert [grid.index(i) for i in (early, claude, codex)] == sorted(
        grid.index(i) for i in (early, claude, codex)
    )
    first = client.get(f"/p/{trail.project}/h/{early}").text
    assert f'rel="next" class="next" href="/p/{trail.project}/h/{claude}"' in first
    assert 'rel="prev"' not in first and "first handoff of this task" in first
    compared = client.get(f"/p/{trail.project}/compare?b={claude}").text
    assert f'<option value="{early}" selected>' in compared, "b alone compares with its previous"


def test_how_a_session_ended_shows_from_the_handoff_json(
    client: TestClient, store: Store, trail: Trail
) -> None:
    from passdown.records import record_to_dict

    data = record_to_dict(store.retrieve(trail.project, trail.ids[1]))
    data["id"] = "handoff-hit-the-limit"
    data["created_at"] = "2001-01-01T00:00:00Z"
    data["passdown_handoff"]["ended"] = {
        "reason": "usage_limit",
        "at": "2001-01-01T00:00:00Z",
        "message": "You've hit your usage limit",
    }
    store.store(data)
    timeline = client.get(f"/p/{trail.project}/?until_day=2001-01-01").text
    row = timeline.split('data-id="handoff-hit-the-limit"')[1].split("</li>")[0]
    assert "ended-usage_limit" in row and ">usage limit<" in row
    assert "You&#39;ve hit your usage limit" in row
    page = client.get(f"/p/{trail.project}/h/handoff-hit-the-limit").text
    assert "usage limit</span> at 2001-01-01 00:00:00 UTC: You&#39;ve hit your usage limit" in page


def test_task_trail_follows_the_branch_across_time_and_ties(store: Store, trail: Trail) -> None:
    """prev/next within one branch: same-second handoffs keep the order they were stored in,
    and a next handoff days later, past other branches' handoffs, is still found."""
    from passdown.records import record_to_dict
    from passdown.web._model import Reader

    base = record_to_dict(store.retrieve(trail.project, trail.ids[1]))
    project = "trail-project"

    def put(id: str, when: str, branch: str) -> None:
        data = {**base, "id": id, "created_at": when, "scope": {"project": project}}
        data["passdown_handoff"] = {
            **base["passdown_handoff"],
            "id": id,
            "workspace": {**base["passdown_handoff"]["workspace"], "branch": branch},
        }
        store.store(data)

    put("t1", "2026-02-01T10:00:00Z", "feature")
    put("t2", "2026-02-01T10:00:00Z", "feature")  # same second, stored after t1
    for i in range(30):
        put(f"other-{i}", f"2026-02-0{1 + i % 3}T12:{i:02d}:00Z", "main")
    put("t3", "2026-02-04T09:00:00Z", "feature")
    reader = Reader(store, Scope(project=project))
    ids = lambda views: [v.id for v in views]  # noqa: E731
    assert ids(reader.task(reader.handoff("t2"))) == ["t1", "t2", "t3"]
    assert ids(reader.task(reader.handoff("t1"), older=1, newer=1)) == ["t1", "t2"]
    assert ids(reader.task(reader.handoff("t3"), older=1, newer=1)) == ["t2", "t3"]
    assert ids(reader.task(reader.handoff("other-0"), older=0, newer=2)) == [
        "other-0",
        "other-3",
        "other-6",
    ]


ODD_HANDOFFS = (
    {"state": [], "task": "x", "workspace": {"head": 5, "path": 7}, "ended": "y"},
    {
        "state": {
            "plan": [{"subject": 5}, "x", {"subject": "a", "status": None}],
            "files_touched": [1, {"path": 2}],
            "commands": [1, {"command": None}],
            "last_failure": "x",
            "next_steps": "abc",
            "blockers": [None],
        },
        "task": {"transcript": [1, {"role": "user", "text": None}], "compactions": "2"},
        "ended": {"reason": 5, "message": 7},
        "workspace": {"branch": ["x"]},
    },
    {"state": {"plan": "x"}, "task": {"transcript": "abc"}, "warnings": "x", "source": "y"},
)


def test_records_of_odd_shapes_never_break_a_page(
    client: TestClient, store: Store, trail: Trail
) -> None:
    for i, odd in enumerate(ODD_HANDOFFS):
        store.store(
            {
                "id": f"odd-{i}",
                "type": "handoff",
                "title": f"odd {i}",
                "scope": {"project": trail.project},
                "created_at": f"1999-01-0{i + 1}T00:00:00Z",
                "provenance": {"agent": "hand", "session": "s"},
                "passdown_handoff": odd,
            }
        )
    base = f"/p/{trail.project}/"
    for path in (
        "",
        "?until_day=1999-12-31",
        "h/odd-0",
        "h/odd-1",
        "h/odd-2",
        "compare?a=odd-0&b=odd-1",
        "compare?a=odd-1&b=odd-2",
        "plan?h=odd-1",
    ):
        answer = client.get(base + path)
        assert answer.status_code == 200, (path, answer.status_code)
    assert "odd 1" in client.get(base + "?until_day=1999-12-31").text


def test_an_open_event_stream_ends_when_its_token_is_revoked(own_trail: Trail) -> None:
    from passdown.store._tokens import create_token, revoke_token

    from .conftest import TeamServer

    trail = own_trail  # the token stays in this copy of the store
    team = TeamServer(trail.store_url)
    try:
        token = create_token(team.store, trail.project)
        cookies = {"passdown_session": token}
        began = time.monotonic()
        with httpx.stream(
            "GET", f"{team.url}p/{trail.project}/events", cookies=cookies, timeout=60
        ) as events:
            assert events.status_code == 200
            revoke_token(team.store, token)
            body = "".join(events.iter_text())  # returns once the server ends the stream
        assert time.monotonic() - began < 30, "ended within a few polls, not at the 60 s lifetime"
        assert body.startswith("retry:")
        assert (
            httpx.get(
                f"{team.url}p/{trail.project}/", cookies=cookies, follow_redirects=False
            ).status_code
            == 303
        )
    finally:
        team.stop()


@pytest.mark.postgres
def test_pages_over_a_postgresql_store(store: Store, trail: Trail) -> None:
    """The same pages over PostgreSQL: order, search (its own text index), trail, compare."""
    from passdown.records import record_to_dict

    schema = f"web_pages_{uuid.uuid4().hex[:10]}"
    try:
        with open_store(f"{PG_URL}?schema={schema}") as pg:
            early, claude, codex = trail.ids[:3]
            for handoff_id in (
                early,
                claude,
                codex,
            ):  # one at a time: same-second ties keep this order
                pg.store(record_to_dict(store.retrieve(trail.project, handoff_id)))
            client = TestClient(local_app(pg, trail.project), base_url="http://127.0.0.1:8123")
            timeline = client.get(f"/p/{trail.project}/").text
            assert [timeline.index(f'data-id="{i}"') for i in (codex, claude, early)] == sorted(
                timeline.index(f'data-id="{i}"') for i in (codex, claude, early)
            )
            found = client.get(f"/p/{trail.project}/", params={"q": "example"}).text
            assert found.count('class="row"') == 1 and claude in found
            page = client.get(f"/p/{trail.project}/h/{claude}").text
            assert f"/h/{early}" in page and f"/h/{codex}" in page
            compared = client.get(f"/p/{trail.project}/compare?a={early}&b={codex}").text
            assert compared.count('class="plan-change"') == 3
    finally:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_the_timeline_is_titled_with_the_projects_readable_name(
    client: TestClient, trail: Trail
) -> None:
    """The scope names the repository (`webapp~<id>`); people read its name."""
    assert trail.project.startswith("webapp~")
    page = client.get(f"/p/{trail.project}/")
    assert page.status_code == 200
    assert f'<h1 title="{trail.project}">webapp <span class="sub">' in page.text
