"""The team server as a store (`PASSDOWN_STORE=http(s)://...`, `passdown.store._http`):
export, find and retrieve through `passdown serve` on loopback; the token from the
environment or the config file; https with a CA bundle; each fault with its own exit
code (18 unreachable, 19 token refused, 20 token of another project), and an export
that cannot store writes nothing; the store API refuses every other scope with 403."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from passdown.cli import main
from passdown.coordinator._lifecycle import ACTIVE_POINTER
from passdown.errors import (
    ForeignScope,
    ServerUnreachable,
    TokenRefused,
    exit_code_for,
    http_status_for,
)
from passdown.store import Store, open_store
from passdown.store._tokens import create_token, revoke_token
from recorded import scenarios
from remote_store_helpers import Served, self_signed

pytestmark = pytest.mark.timeout(120)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def record(id: str, project: str, content: str = "body") -> dict[str, Any]:
    return {
        "id": id,
        "type": "task",
        "title": f"Title of {id}",
        "scope": {"project": project},
        "content": content,
        "annotations": [{"kind": "next", "value": "carry on"}],
        "created_at": "2026-04-01T12:00:00Z",
        "provenance": {"agent": "test", "session": "s"},
    }


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite://{tmp_path / 'server.db'}") as store:
        yield store


@pytest.fixture
def served(backing: Store) -> Iterator[Served]:
    running = Served(backing)
    yield running
    running.stop()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(["git", *args], cwd=ws, env={**os.environ, **GIT_ENV}, check=True)
    monkeypatch.chdir(ws)
    return ws


def project_of(ws: Path) -> str:
    from passdown._git import project_name

    return project_name(ws)


def use_server(monkeypatch: pytest.MonkeyPatch, url: str, token: str | None) -> None:
    monkeypatch.setenv("PASSDOWN_STORE", url)
    if token is None:
        monkeypatch.delenv("PASSDOWN_TOKEN", raising=False)
    else:
        monkeypatch.setenv("PASSDOWN_TOKEN", token)
    monkeypatch.delenv("PASSDOWN_CA_BUNDLE", raising=False)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def claude_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    return recorded.install(tmp_path / "claude-home", monkeypatch)


def error_of(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


# -- through the server -------------------------------------------------------------------


def test_export_find_and_retrieve_go_through_the_server(
    served: Served,
    backing: Store,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = project_of(workspace)
    use_server(monkeypatch, served.url, create_token(backing, project, "laptop"))
    session = claude_session(tmp_path, monkeypatch)
    assert main(["export", "--session", str(session), "--workspace", str(workspace)]) == 0
    handoff_id = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())["id"]
    # stored on the server, active there, and nowhere on this machine
    assert backing.retrieve(project, handoff_id).id == handoff_id
    assert backing.get_pointer(project, ACTIVE_POINTER) == handoff_id
    assert not (Path(_data_dir()) / "store.db").exists()
    capsys.readouterr()

    assert main(["find", "--type", "handoff", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in found["records"]] == [handoff_id]
    assert main(["retrieve", handoff_id[:12]]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == handoff_id


def _data_dir() -> str:
    return os.environ["PASSDOWN_DATA_DIR"]


def test_versions_and_the_pointer_compare_and_swap_cross_the_wire(
    served: Served, backing: Store
) -> None:
    from passdown.store._http import HTTPStore, ServerConfig

    token = create_token(backing, "alpha", "")
    with HTTPStore(ServerConfig(served.url, token, None)) as remote:
        remote.store(record("r1", "alpha", "first"))
        remote.store(record("r1", "alpha", "second"), new_version=True)
        assert [m.version for m in remote.history("alpha", "r1")] == [1, 2]
        assert remote.retrieve("alpha", "r1", version=1).content == "first"
        assert remote.retrieve("alpha", "r1").content == "second"
        assert remote.set_pointer("alpha", "active", None, "r1")
        assert not remote.set_pointer("alpha", "active", None, "r1")  # taken: one winner
        stamp = remote.pointer_stamp("alpha", "active")
        assert stamp == backing.pointer_stamp("alpha", "active")
        assert remote.set_pointer("alpha", "active", "r1", None)
        assert remote.restore_pointer("alpha", "active", None, "r1", stamp)
        assert backing.pointer_stamp("alpha", "active") == stamp  # the undo kept its time
        assert remote.projects() == ["alpha"]
        assert remote.check() == []
        remote.delete("alpha", "r1")
    assert backing.get_pointer("alpha", "active") == "r1"


# -- the URL, the token and TLS ------------------------------------------------------------


def test_plain_http_off_loopback_is_refused_before_any_request(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_server(monkeypatch, "http://passdown.example.invalid:8765", "pdt_x")
    assert main(["find"]) == 2
    err = error_of(capsys)
    assert "refusing plain http to passdown.example.invalid" in err
    assert "https://" in err


def test_a_url_with_credentials_in_it_is_refused(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_server(monkeypatch, "https://user:secret@127.0.0.1:1", "pdt_x")
    assert main(["find"]) == 2
    err = error_of(capsys)
    assert "no credentials" in err and "secret" not in err


def test_the_config_file_gives_url_token_and_ca_bundle(
    backing: Store,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cert, key = self_signed(tmp_path / "tls")
    running = Served(backing, tls=(cert, key))
    try:
        token = create_token(backing, project_of(workspace), "")
        backing.store(record("from-the-server", project_of(workspace)))
        for name in ("PASSDOWN_STORE", "PASSDOWN_TOKEN", "PASSDOWN_CA_BUNDLE"):
            monkeypatch.delenv(name, raising=False)
        config = Path(_data_dir()) / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[store]\nurl = "{running.url}"\ntoken = "{token}"\nca_bundle = "{cert.as_posix()}"\n'
        )
        assert main(["find", "--json"]) == 0
        assert [r["id"] for r in json.loads(capsys.readouterr().out)["records"]] == [
            "from-the-server"
        ]
    finally:
        running.stop()


def test_https_needs_the_ca_bundle_of_a_self_signed_server(
    backing: Store,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cert, key = self_signed(tmp_path / "tls")
    running = Served(backing, tls=(cert, key))
    try:
        use_server(monkeypatch, running.url, create_token(backing, project_of(workspace), ""))
        assert main(["find"]) == 18  # the system's trust store does not know this CA
        err = error_of(capsys)
        assert "TLS certificate is not trusted" in err and "PASSDOWN_CA_BUNDLE" in err
        monkeypatch.setenv("PASSDOWN_CA_BUNDLE", str(cert))
        assert main(["find"]) == 0
        monkeypatch.setenv("PASSDOWN_CA_BUNDLE", str(tmp_path / "missing.pem"))
        assert main(["find"]) == 2
        assert "cannot read the CA bundle" in error_of(capsys)
    finally:
        running.stop()


# -- faults, each with its exit code -------------------------------------------------------


def test_an_unreachable_server_is_exit_18(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    use_server(monkeypatch, url, "pdt_x")
    assert main(["find"]) == 18
    lines = error_of(capsys).splitlines()
    assert lines[0].startswith(f"passdown: error: cannot reach the team server {url}")
    assert len(lines) == 2 and lines[1].startswith("hint: ")


def test_no_token_an_unknown_one_and_a_revoked_one_are_exit_19(
    served: Served,
    backing: Store,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_server(monkeypatch, served.url, None)
    assert main(["find"]) == 19
    assert "no token for the team server" in error_of(capsys)
    use_server(monkeypatch, served.url, "pdt_never_issued")
    assert main(["find"]) == 19
    assert "does not know this token (never issued, or revoked)" in error_of(capsys)
    token = create_token(backing, project_of(workspace), "")
    use_server(monkeypatch, served.url, token)
    assert main(["find"]) == 0
    assert revoke_token(backing, token)
    assert main(["find"]) == 19
    err = error_of(capsys)
    assert "does not know this token" in err and token not in err


def test_a_token_of_another_project_is_exit_20(
    served: Served,
    backing: Store,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_server(monkeypatch, served.url, create_token(backing, "someone-else", ""))
    assert main(["find"]) == 20
    err = error_of(capsys)
    assert "bound to project 'someone-else'" in err and project_of(workspace) in err


def test_an_export_the_server_cannot_take_writes_nothing(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_server(monkeypatch, f"http://127.0.0.1:{closed_port()}", "pdt_x")
    session = claude_session(tmp_path, monkeypatch)
    assert main(["export", "--session", str(session), "--workspace", str(workspace)]) == 18
    assert "cannot reach the team server" in error_of(capsys)
    assert not (workspace / ".agent-handoff" / "handoff.json").exists()
    assert not (workspace / ".agent-handoff" / "HANDOFF.md").exists()


def test_the_new_errors_map_onto_exit_codes_and_statuses() -> None:
    assert [exit_code_for(e("x")) for e in (ServerUnreachable, TokenRefused, ForeignScope)] == [
        18,
        19,
        20,
    ]
    assert http_status_for(TokenRefused("x")) == 401
    assert http_status_for(ForeignScope("x")) == 403


# -- the server side -----------------------------------------------------------------------


def test_the_store_api_refuses_every_other_scope_with_403(served: Served, backing: Store) -> None:
    alpha = create_token(backing, "alpha", "")
    backing.store(record("secret-plan", "beta"))
    backing.set_pointer("beta", "active", None, "secret-plan")
    headers = {"Authorization": f"Bearer {alpha}"}
    beta = {"project": "beta"}
    registry = ["passdown-server", "", "", "passdown-token-registry", "token/x"]
    refused = [
        ("write", {"records": [json.dumps(record("evil", "beta"))]}),
        ("query", {"scope": beta}),
        ("retrieve", {"scope": beta, "id": "secret-plan"}),
        ("history", {"scope": beta, "id": "secret-plan"}),
        ("delete", {"scope": beta, "id": "secret-plan"}),
        ("pointer", {"key": ["beta", "", "", "", "active"]}),
        ("swap", {"key": ["beta", "", "", "", "active"], "expected": "secret-plan", "new": None}),
        ("pointer", {"key": registry}),
        ("swap", {"key": registry, "expected": None, "new": '{"scope":{"project":"beta"}}'}),
    ]
    with httpx2.Client(base_url=served.url, headers=headers) as http:
        for op, body in refused:
            answer = http.post(f"/api/store/{op}", json=body)
            assert answer.status_code == 403, (op, answer.text)
            assert answer.json()["type"] == "ForeignScope"
        assert http.get("/api/store/whoami").json() == {"project": "alpha"}
        assert http.get("/api/store/projects").json() == {"projects": []}
        assert http.get("/api/store/whoami", headers={"Authorization": ""}).status_code == 401
    assert backing.retrieve("beta", "secret-plan").id == "secret-plan"
    assert backing.get_pointer("beta", "active") == "secret-plan"


def test_the_token_registry_cannot_be_a_tokens_project(backing: Store) -> None:
    from passdown.errors import UsageError

    with pytest.raises(UsageError, match="token registry"):
        create_token(backing, "passdown-server")


def test_a_revoked_token_stops_at_once_on_every_server(backing: Store) -> None:
    """Two servers on one store keep nothing of their own: the one that just accepted a
    token refuses it as soon as another revokes it."""
    first, second = Served(backing), Served(backing)
    try:
        token = create_token(backing, "alpha", "")
        headers = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(headers=headers) as http:
            assert http.get(f"{first.url}/api/store/whoami").status_code == 200
            assert http.get(f"{second.url}/api/store/whoami").status_code == 200
            assert revoke_token(backing, token)
            assert http.get(f"{first.url}/api/store/whoami").status_code == 401
            assert http.get(f"{second.url}/api/store/whoami").status_code == 401
    finally:
        first.stop()
        second.stop()


def test_serve_takes_a_certificate_with_its_key_or_neither(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cert, _key = self_signed(tmp_path / "tls")
    store = f"sqlite://{tmp_path / 'serve.db'}"
    assert main(["serve", "--port", "0", "--store", store, "--certfile", str(cert)]) == 2
    assert "--certfile and --keyfile go together" in error_of(capsys)
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    tls = ["--certfile", str(junk), "--keyfile", str(junk)]
    assert main(["serve", "--port", "0", "--store", store, *tls]) == 14
    assert "cannot load the TLS certificate" in error_of(capsys)


def test_a_pickup_that_cannot_reach_the_server_injects_nothing_and_logs_why(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from passdown.integrations._hooks import run_hook

    url = f"http://127.0.0.1:{closed_port()}"
    use_server(monkeypatch, url, "pdt_x")
    (workspace / ".agent-handoff").mkdir()
    (workspace / ".agent-handoff" / "handoff.json").write_text('{"id": "handoff-x"}')
    start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(workspace)}
    assert run_hook("claude", [], json.dumps(start)) == 0
    assert capsys.readouterr().out == ""
    log = (Path(_data_dir()) / "logs" / "hooks.log").read_text()
    assert f"ServerUnreachable: cannot reach the team server {url}" in log


def test_a_write_above_the_servers_body_limit_is_exit_15_and_stores_nothing(
    served: Served, backing: Store
) -> None:
    from passdown.errors import RecordTooLarge
    from passdown.store._http import HTTPStore, ServerConfig

    token = create_token(backing, "alpha", "")
    with HTTPStore(ServerConfig(served.url, token, None)) as remote:
        with pytest.raises(RecordTooLarge, match="request body too large") as raised:
            remote.store(record("big", "alpha", "x" * (1536 * 1024)))
        assert raised.value.exit_code == 15 and "--max-body" in (raised.value.hint or "")
        assert remote.query("alpha").records == []


@pytest.mark.parametrize(
    ("url", "taken"),
    [
        ("http://127.0.0.1:8765", True),
        ("http://127.9.9.9:8765", True),
        ("http://[::1]:8765", True),
        ("http://localhost:8765/passdown", True),
        ("https://passdown.example.org", True),
        ("https://passdown.example.org:8443/prefix", True),
        ("http://10.0.0.5:8765", False),
        ("http://passdown.example.org", False),
        ("http://[::ffff:10.0.0.5]:8765", False),
        ("https://host:notaport", False),
        ("https://", False),
        ("https://host/?token=pdt_x", False),
    ],
)
def test_which_server_urls_are_taken(url: str, taken: bool) -> None:
    from passdown.errors import UsageError
    from passdown.store._http import check_url

    if taken:
        check_url(url)
    else:
        with pytest.raises(UsageError):
            check_url(url)


def test_a_name_the_server_does_not_answer_to_says_how_to_allow_it() -> None:
    """`passdown serve --host 0.0.0.0` answers only the names in PASSDOWN_ALLOWED_HOSTS
    (421 otherwise, its guard against DNS rebinding): the client's error says so."""
    from passdown.errors import StoreError
    from passdown.store._http import _answer

    refused = httpx2.Response(421, json={"error": "Misdirected request: ..."})
    with pytest.raises(StoreError) as raised:
        _answer("https://passdown.internal:8443", refused)
    assert raised.value.exit_code == 9
    assert raised.value.hint == (
        "start the server with PASSDOWN_ALLOWED_HOSTS=passdown.internal (the name clients use)"
    )
    forbidden = httpx2.Response(403, json={"error": "Forbidden: cross-origin request"})
    with pytest.raises(StoreError) as raised:  # not a token of another project: no type
        _answer("https://passdown.internal:8443", forbidden)
    assert not isinstance(raised.value, ForeignScope)
