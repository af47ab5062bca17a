"""`passdown serve` over loopback, against SQLite and PostgreSQL: bearer tokens bound to
projects (401 without a valid one, 404 outside its scope), the MCP tools over streamable
HTTP with the SDK's client, the JSON API with an HTTP client, and 1,000 concurrent
requests from 50 clients losing nothing."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2 as httpx
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from passdown.mcp._http import build_app
from passdown.store import Store, open_store
from passdown.store._tokens import create_token, revoke_token

PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)

pytestmark = pytest.mark.timeout(240)


def record(id: str, title: str, project: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": id,
        "type": "task",
        "title": title,
        "content": f"{title} body",
        "annotations": [{"kind": "next", "value": "carry on"}],
        "created_at": "2026-04-01T12:00:00Z",
        "provenance": {"agent": "test", "session": "s"},
    }
    if project:
        data["scope"] = {"project": project}
    return data


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store]:
    if request.param == "sqlite":
        with open_store(f"sqlite://{tmp_path / 'serve.db'}") as s:
            yield s
        return
    schema = f"serve_test_{uuid.uuid4().hex[:10]}"  # our own schema, dropped afterwards
    sep = "&" if "?" in PG_URL else "?"
    with open_store(f"{PG_URL}{sep}schema={schema}") as s:
        yield s
    import psycopg

    from passdown.store._postgres import split_url

    with psycopg.connect(split_url(PG_URL)[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Running:
    def __init__(self, store: Store) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(build_app(store), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def server(store: Store) -> Iterator[Running]:
    running = Running(store)
    yield running
    running.stop()


@pytest.fixture
def tokens(store: Store) -> dict[str, str]:
    return {"alpha": create_token(store, "alpha"), "beta": create_token(store, "beta")}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_no_token_or_a_wrong_token_is_401(
    server: Running, tokens: dict[str, str], store: Store
) -> None:
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/healthz").status_code == 200
        for headers in ({}, auth("pdt_wrong"), {"Authorization": "Basic abc"}, auth("x" * 300)):
            for method, path in (
                ("GET", "/api/records"),
                ("GET", "/api/records/x"),
                ("POST", "/api/records"),
                ("POST", "/mcp"),
            ):
                r = http.request(method, path, headers=headers, json={})
                assert r.status_code == 401, (method, path, headers, r.text)
                assert r.headers["www-authenticate"].startswith("Bearer")
        assert http.get("/api/records", headers=auth(tokens["alpha"])).status_code == 200
        revoked = create_token(store, "alpha")
        assert revoke_token(store, revoked)
        assert http.get("/api/records", headers=auth(revoked)).status_code == 401


def test_two_tokens_see_only_their_own_project(server: Running, tokens: dict[str, str]) -> None:
    a, b = auth(tokens["alpha"]), auth(tokens["beta"])
    with httpx.Client(base_url=server.url) as http:
        r = http.post("/api/records", headers=a, json=record("plan-1", "Alpha deploy plan"))
        assert r.status_code == 201 and r.json() == {"id": "plan-1", "project": "alpha"}
        r = http.post("/api/records", headers=b, json=record("plan-b", "Beta deploy plan"))
        assert r.status_code == 201
        # beta cannot write into alpha by naming it
        r = http.post("/api/records", headers=b, json=record("evil", "x", project="alpha"))
        assert r.status_code == 400 and "must be 'beta'" in r.json()["error"]

        assert http.get("/api/records/plan-1", headers=a).json()["scope"] == {"project": "alpha"}
        other = http.get("/api/records/plan-1", headers=b)
        missing = http.get("/api/records/never-was", headers=b)
        assert other.status_code == missing.status_code == 404
        assert other.json()["error"].replace("plan-1", "ID") == missing.json()["error"].replace(
            "never-was", "ID"
        )
        assert "alpha" not in other.text

        found_a = http.get("/api/records", headers=a, params={"text": "deploy"}).json()
        found_b = http.get("/api/records", headers=b, params={"text": "deploy"}).json()
        assert [r["id"] for r in found_a["records"]] == ["plan-1"]
        assert [r["id"] for r in found_b["records"]] == ["plan-b"]
        assert http.get("/api/records", headers=a, params={"limit": "x"}).status_code == 400
        assert http.post("/api/records", headers=a, content=b"{nope").status_code == 400

    async def over_mcp(token: str) -> tuple[bool, str, bool, str]:
        async with (
            httpx.AsyncClient(headers=auth(token)) as client,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=client)) as mcp,
        ):
            names = {t.name for t in (await mcp.list_tools()).tools}
            assert {"store_record", "retrieve_record", "find_records", "load_handoff"} <= names
            own = await mcp.call_tool("find_records", {"text": "deploy"})
            theirs = await mcp.call_tool("retrieve_record", {"id": "plan-1"})
            return (
                bool(own.is_error),
                own.content[0].text,
                bool(theirs.is_error),  # type: ignore[union-attr]
                theirs.content[0].text,
            )  # type: ignore[union-attr]

    err, own, err2, theirs = anyio.run(over_mcp, tokens["beta"])
    assert not err and "plan-b" in own and "plan-1" not in own
    assert err2 and "no record 'plan-1' in project 'beta'" in theirs
    err, own, err2, theirs = anyio.run(over_mcp, tokens["alpha"])
    assert not err and "plan-1" in own and "plan-b" not in own
    assert not err2 and "Alpha deploy plan" in theirs


def test_1000_concurrent_requests_from_50_clients_lose_nothing(
    server: Running, tokens: dict[str, str], store: Store
) -> None:
    clients, per_client = 50, 20
    statuses: list[int] = []

    async def client(n: int) -> None:
        async with httpx.AsyncClient(
            base_url=server.url, headers=auth(tokens["alpha"]), timeout=60
        ) as http:
            for i in range(per_client):
                if i % 4 == 3:  # every fourth request reads back what this client stored
                    r = await http.get(f"/api/records/c{n}-r{i - 1}")
                    statuses.append(r.status_code)
                    continue
                r = await http.post("/api/records", json=record(f"c{n}-r{i}", f"load {n} {i}"))
                statuses.append(r.status_code)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(clients):
                tg.start_soon(client, n)

    anyio.run(main)
    assert len(statuses) == clients * per_client == 1000
    assert statuses.count(201) == 750 and statuses.count(200) == 250, sorted(set(statuses))
    stored: list[str] = []
    cursor = None
    while True:
        page = store.query("alpha", limit=1000, cursor=cursor)
        stored += [r.id for r in page.records]
        cursor = page.next_cursor
        if cursor is None:
            break
    expected = {f"c{n}-r{i}" for n in range(clients) for i in range(per_client) if i % 4 != 3}
    assert sorted(stored) == sorted(expected)  # nothing lost, nothing duplicated
    assert not store.query("beta").records


# -- hostile clients (issue 11, items 5 and 10) ----------------------------------------------


def test_a_body_over_the_limit_is_413_and_stores_nothing(
    server: Running, tokens: dict[str, str], store: Store
) -> None:
    from passdown.mcp._http import DEFAULT_MAX_BODY

    assert DEFAULT_MAX_BODY == 1024 * 1024
    big = record("big", "Big record")
    big["content"] = "x" * (DEFAULT_MAX_BODY + 1)
    with httpx.Client(base_url=server.url, headers=auth(tokens["alpha"]), timeout=60) as http:
        r = http.post("/api/records", json=big)
        assert r.status_code == 413, r.text
        assert "1048576 bytes" in r.json()["error"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            body = json.dumps(big).encode()
            for i in range(0, len(body), 65536):
                yield body[i : i + 65536]

        r = http.post(
            "/api/records", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 413, r.text
        r = http.post(
            "/mcp",
            content=b"[" * (DEFAULT_MAX_BODY + 10),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert r.status_code == 413
        small = record("small", "Small record")
        small["content"] = "y" * (DEFAULT_MAX_BODY // 2)
        assert http.post("/api/records", json=small).status_code == 201
    assert [r.id for r in store.query("alpha").records] == ["small"]


def test_the_store_bounds_record_sizes(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from passdown.errors import RecordInvalid, RecordNotFound

    monkeypatch.setenv("PASSDOWN_MAX_RECORD_BYTES", "50000")
    huge = record("huge", "Huge", project="alpha")
    huge["content"] = "z" * 60_000
    with pytest.raises(
        RecordInvalid, match=r"record 'huge' is 60,[0-9]{3} bytes; the store takes at most 50,000"
    ):
        store.store(huge)
    with pytest.raises(RecordNotFound):
        store.retrieve("alpha", "huge")


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"cursor": "djE6OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OjE"}, "invalid cursor"),
        ({"cursor": "%%%"}, "invalid cursor"),
        ({"limit": "99999999999999999999999"}, "limit"),
        ({"since": "99999-01-01"}, "since"),
        ({"until": "not a time"}, "until"),
        ({"text": "\x00"}, ""),
        ({"kind": "a\x00b"}, ""),
        ({"type": "nope"}, "unknown record type"),
    ],
)
def test_bad_queries_are_4xx_with_a_message(
    server: Running, tokens: dict[str, str], params: dict[str, str], needle: str
) -> None:
    with httpx.Client(base_url=server.url, headers=auth(tokens["alpha"]), timeout=60) as http:
        r = http.get("/api/records", params=params)
    assert 400 <= r.status_code < 500 or r.status_code == 200, r.text
    if r.status_code != 200:
        assert needle in r.json()["error"]


def test_bad_bodies_and_ids_are_4xx_with_a_message(server: Running, tokens: dict[str, str]) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    deep_obj = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    with httpx.Client(base_url=server.url, headers=auth(tokens["alpha"]), timeout=60) as http:
        for body in (deep, deep_obj, b"\xff\xfe", b"", b"null", b"[]", b'"x"', b"1e999999"):
            r = http.post(
                "/api/records", content=body, headers={"Content-Type": "application/json"}
            )
            assert r.status_code == 400, (body[:20], r.status_code, r.text)
            assert r.json()["error"]
        nested = record("nested", "Nested")
        nested["metadata"] = json.loads("[" * 900 + "]" * 900)
        r = http.post("/api/records", json=nested)
        assert r.status_code in (201, 400), r.text
        with_nul = record("nul", "title \x00 with a NUL")
        with_nul["annotations"] = [{"kind": "k\x00", "value": "v\x00"}]
        r = http.post("/api/records", json=with_nul)
        assert r.status_code == 400 and "annotations.0.kind" in r.json()["error"], r.text
        with_nul["annotations"] = [{"kind": "k", "value": "v\x00"}]
        assert http.post("/api/records", json=with_nul).status_code == 201
        assert http.get("/api/records/nul").json()["title"] == "title \x00 with a NUL"
        for record_id in ("a%00b", "x" * 5000, "../../etc/passwd", "%ff"):
            r = http.get(f"/api/records/{record_id}")
            assert r.status_code in (400, 404), (record_id, r.status_code, r.text)
        r = http.post(
            "/mcp",
            content=deep,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert 400 <= r.status_code < 500, r.text
        r = http.get("/api/records/x", params={"version": "99999999999999999999999"})
        assert r.status_code in (400, 404)


def test_serve_on_a_port_in_use_exits_with_a_server_error(tmp_path: Any) -> None:
    import subprocess
    import sys

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "passdown",
                "serve",
                "--port",
                str(port),
                "--store",
                f"sqlite://{tmp_path / 's.db'}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=os.environ.copy(),
        )
    finally:
        busy.close()
    assert proc.returncode == 14, proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "serving" not in proc.stderr and "Traceback" not in proc.stderr


def test_token_create_with_an_empty_project_is_a_usage_error(tmp_path: Any) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "passdown",
            "token",
            "create",
            "--project",
            "",
            "--store",
            f"sqlite://{tmp_path / 's.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=os.environ.copy(),
    )
    assert proc.returncode == 2, proc.stderr
    assert "project" in proc.stderr and "internal error" not in proc.stderr


def test_the_body_limit_is_configurable(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    from passdown.errors import UsageError
    from passdown.mcp._http import max_body_from_env

    monkeypatch.setenv("PASSDOWN_SERVE_MAX_BODY", "2000")
    assert max_body_from_env() == 2000
    monkeypatch.setenv("PASSDOWN_SERVE_MAX_BODY", "lots")
    with pytest.raises(UsageError):
        max_body_from_env()
    token = create_token(store, "alpha")
    with TestClient(build_app(store, max_body=2000), base_url="http://127.0.0.1") as http:
        r = http.post("/api/records", headers=auth(token), json=record("r", "t" * 3000))
        assert r.status_code == 413 and "2000 bytes" in r.json()["error"]
        assert (
            http.post("/api/records", headers=auth(token), json=record("r", "t")).status_code == 201
        )
        r = http.post("/api/records", json=record("r2", "t" * 3000))
        assert r.status_code == 401, "no token: refused before the body is looked at"


def test_a_loopback_server_refuses_other_hosts_and_origins(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starlette.testclient import TestClient

    token = create_token(store, "alpha")
    with TestClient(build_app(store), base_url="http://127.0.0.1:8765") as http:
        assert http.get("/api/records", headers=auth(token)).status_code == 200
        assert http.get("/healthz", headers={"Host": "localhost:8765"}).status_code == 200
        assert http.get("/healthz", headers={"Host": "[::1]:8765"}).status_code == 200
        r = http.get("/api/records", headers={**auth(token), "Host": "evil.example:8765"})
        assert r.status_code == 421 and "127.0.0.1" in r.json()["error"]
        r = http.get("/api/records", headers={**auth(token), "Origin": "http://evil.example"})
        assert r.status_code == 403
        ok = http.get("/api/records", headers={**auth(token), "Origin": "http://localhost:3000"})
        assert ok.status_code == 200
    with TestClient(build_app(store, host="0.0.0.0"), base_url="http://team.example") as http:
        assert http.get("/api/records", headers=auth(token)).status_code == 421, (
            "bound to all interfaces, a name answers only once the operator allows it"
        )
    monkeypatch.setenv("PASSDOWN_ALLOWED_HOSTS", "team.example")
    with TestClient(build_app(store, host="0.0.0.0"), base_url="http://team.example") as http:
        assert http.get("/api/records", headers=auth(token)).status_code == 200
