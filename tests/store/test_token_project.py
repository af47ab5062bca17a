"""`passdown token create --project NAME` binds the token to a scope that exists (issue
30): a unique name or prefix resolves to its scope, `.` to this repository's, and a name
that matches no scope is refused unless `--new` says it is a new team project. On every
backend."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from passdown.cli import main
from passdown.records import default_project, parse_record
from passdown.store import open_store
from passdown.store._tokens import scope_for_token

API = "api~3f9c2a1b7d0e"
WEB = "webapp~0a1b2c3d4e5f"


@pytest.fixture
def url(store_url: str, record_data: Callable[..., dict[str, Any]]) -> str:
    """A store with records in two project scopes."""
    with open_store(store_url) as store:
        store.store(parse_record(record_data(id="r1", project=API)))
        store.store(parse_record(record_data(id="r2", project=WEB)))
    return store_url


def create(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["token", "create", "--store", url, "--json", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def bound_to(url: str, token: str) -> str | None:
    with open_store(url) as store:
        scope = scope_for_token(store, token)
    return scope.project if scope else None


@pytest.mark.parametrize("given", ["api", "api~3f", API])
def test_a_name_or_unique_prefix_binds_the_scope(
    url: str, given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = create(url, capsys, "--project", given)
    assert code == 0, err
    data = json.loads(out)
    assert data["project"] == API
    assert bound_to(url, data["token"]) == API, "the token sees the project's records"


def test_a_name_of_no_scope_is_refused_with_the_close_ones(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = create(url, capsys, "--project", "apj")
    assert code == 2 and out == ""
    error = json.loads(err)
    assert "no project scope 'apj'" in error["error"]
    assert API in error["hint"] and "--new" in error["hint"] and "--project ." in error["hint"]
    code, _, err = create(url, capsys, "--project", "billing")
    assert code == 2 and "--new" in json.loads(err)["hint"]


def test_new_binds_a_new_team_project(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = create(url, capsys, "--project", "billing", "--new")
    assert code == 0, err
    data = json.loads(out)
    assert data["project"] == "billing" and bound_to(url, data["token"]) == "billing"


def test_a_prefix_of_several_scopes_is_ambiguous(
    url: str, capsys: pytest.CaptureFixture[str], record_data: Callable[..., dict[str, Any]]
) -> None:
    with open_store(url) as store:
        for n in range(6):
            store.store(parse_record(record_data(id=f"w{n}", project=f"web{n}~00000000000{n}")))
    code, _, err = create(url, capsys, "--project", "web")
    assert code == 4
    error = json.loads(err)["error"]
    assert "matches 7 project scopes" in error and error.endswith("and 2 more")


def test_dot_is_this_repository(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=os.environ.copy())
    monkeypatch.chdir(repo)
    code, out, err = create(url, capsys, "--project", ".")
    assert code == 0, err
    assert json.loads(out)["project"] == default_project(repo)
