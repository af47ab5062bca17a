"""The store commands, run through click against a SQLite store in the test's data folder."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from passdown.cli._store_cmds import (
    delete_command,
    find_command,
    parse_since,
    retrieve_command,
    store_command,
)
from passdown.errors import RecordConflict, RecordInvalid, RecordNotFound
from passdown.records import default_project, project_label

PACKAGE = {
    "id": "handoff-20250115-103000",
    "source_agent": "coding-agent",
    "target_agent": "coding-agent",
    "timestamp": "2025-01-15T10:30:00",
    "state": {"current_feature": "auth-002", "completed_features": ["auth-001"], "blockers": [],
              "next_steps": ["Implement logout endpoint"]},
    "context": {"recent_files": ["src/auth/login.ts"], "git_hash": "abc1234", "session_number": 5},
    "summary": "Completed auth-001, starting auth-002",
}  # fmt: skip

Make = Callable[..., dict[str, Any]]


def run(command: Any, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(command, list(args), input=input, catch_exceptions=True)


def ok(command: Any, *args: str, input: str | None = None) -> str:
    result = run(command, *args, input=input)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_store_retrieve_round_trip_from_file_and_stdin(tmp_path: Path, record_data: Make) -> None:
    data = record_data(id="h-1", project="webapp", title="Ünïcode ✓")
    assert ok(store_command, write(tmp_path / "r.json", data)) == "h-1\n"
    assert json.loads(ok(retrieve_command, "h-1", "--project", "webapp")) == data
    other = record_data(id="h-2", project="webapp")
    assert ok(store_command, "-", input=json.dumps(other)) == "h-2\n"
    assert json.loads(ok(retrieve_command, "h-2", "--project", "webapp"))["id"] == "h-2"


def test_store_a_package_into_a_project_and_get_it_back(tmp_path: Path) -> None:
    ok(store_command, write(tmp_path / "p.json", PACKAGE), "--project", "webapp")
    record = json.loads(ok(retrieve_command, PACKAGE["id"], "--project", "webapp"))
    assert record["type"] == "handoff" and record["created_at"] == "2025-01-15T10:30:00"
    assert record["package"]["state"] == PACKAGE["state"]


def test_a_json_array_stores_all_or_nothing(tmp_path: Path, record_data: Make) -> None:
    good, bad = record_data(id="a", project="p"), record_data(id="b", project="p", type="memo")
    result = run(store_command, write(tmp_path / "arr.json", [good, bad]))
    assert isinstance(result.exception, RecordInvalid) and "1" not in result.output
    assert "type" in result.exception.message
    assert isinstance(run(retrieve_command, "a", "--project", "p").exception, RecordNotFound)
    assert (
        ok(store_command, write(tmp_path / "ok.json", [good, record_data(id="b", project="p")]))
        == "a\nb\n"
    )


def test_conflicts_and_new_versions(tmp_path: Path, record_data: Make) -> None:
    ok(store_command, write(tmp_path / "1.json", record_data(project="p", content="one")))
    changed = write(tmp_path / "2.json", record_data(project="p", content="two"))
    assert isinstance(run(store_command, changed).exception, RecordConflict)
    ok(store_command, changed, "--new-version")
    assert json.loads(ok(retrieve_command, "rec-1", "--project", "p"))["content"] == "two"
    assert (
        json.loads(ok(retrieve_command, "rec-1", "--project", "p", "--version", "1"))["content"]
        == "one"
    )


def test_invalid_input_is_rejected_with_the_field(tmp_path: Path, record_data: Make) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert isinstance(run(store_command, str(bad)).exception, RecordInvalid)
    result = run(store_command, write(tmp_path / "b.json", record_data(created_at="soon")))
    assert "created_at" in result.exception.message  # type: ignore[union-attr]


def test_find_filters_text_and_pages(tmp_path: Path, record_data: Make) -> None:
    items = [record_data(id=f"r{i}", project="p", title=f"mailer fix {i}", created_at=f"2026-01-0{i + 1}T00:00:00Z",
                         type="task" if i == 0 else "handoff") for i in range(5)]  # fmt: skip
    items.append(record_data(id="elsewhere", project="q", title="mailer fix"))
    ok(store_command, write(tmp_path / "all.json", items))
    lines = ok(find_command, "--project", "p", "mailer").splitlines()
    assert [line.split()[2] for line in lines] == ["r4", "r3", "r2", "r1", "r0"]
    assert lines[0].startswith("2026-01-05T00:00:00Z  handoff  r4  published  mailer fix 4")
    assert ok(find_command, "--project", "p", "--type", "task").split()[2] == "r0"
    nothing = ok(find_command, "--project", "p", "--kind", "decisions")  # output holds stderr too
    assert nothing == "passdown: no records in project 'p' with a 'decisions' annotation\n"
    first = json.loads(
        ok(find_command, "--project", "p", "--json", "--limit", "2", "mailer", "fix")
    )
    assert [r["id"] for r in first["records"]] == ["r4", "r3"]
    rest = json.loads(
        ok(find_command, "--project", "p", "--json", "--cursor", first["next_cursor"])
    )
    assert [r["id"] for r in rest["records"]] == ["r2", "r1", "r0"] and rest["next_cursor"] is None
    since = json.loads(
        ok(find_command, "--project", "p", "--json", "--since", "2026-01-04T00:00:00Z")
    )
    assert [r["id"] for r in since["records"]] == ["r4", "r3"]


def test_find_prints_the_next_cursor_on_stderr(tmp_path: Path, record_data: Make) -> None:
    ok(
        store_command,
        write(tmp_path / "a.json", [record_data(id=f"r{i}", project="p") for i in range(3)]),
    )
    result = CliRunner().invoke(find_command, ["--project", "p", "--limit", "2"])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 2
    assert "more: --cursor " in result.stderr


def test_delete(tmp_path: Path, record_data: Make) -> None:
    ok(store_command, write(tmp_path / "r.json", record_data(project="p")))
    assert isinstance(run(delete_command, "rec-1", "--project", "other").exception, RecordNotFound)
    assert ok(delete_command, "rec-1", "--project", "p") == "deleted rec-1\n"
    assert isinstance(run(retrieve_command, "rec-1", "--project", "p").exception, RecordNotFound)


def test_project_defaults_to_the_git_root_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    monkeypatch.chdir(repo / "src")
    project = default_project(Path.cwd())
    assert project == default_project(repo) and project_label(project) == "shop-api"
    ok(store_command, write(tmp_path / "p.json", PACKAGE))  # a package takes the default project
    assert json.loads(ok(retrieve_command, PACKAGE["id"]))["scope"] == {"project": project}
    assert PACKAGE["id"] in ok(find_command)


def test_store_url_option_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record_data: Make
) -> None:
    url = f"sqlite://{tmp_path / 'elsewhere.db'}"
    ok(store_command, write(tmp_path / "r.json", record_data(project="p")), "--store", url)
    assert isinstance(run(retrieve_command, "rec-1", "--project", "p").exception, RecordNotFound)
    monkeypatch.setenv("PASSDOWN_STORE", url)
    assert json.loads(ok(retrieve_command, "rec-1", "--project", "p"))["id"] == "rec-1"


def test_parse_since_accepts_durations_and_timestamps() -> None:
    now = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
    assert parse_since("2h", now) == "2026-01-10T10:00:00+00:00"
    assert parse_since("7d", now) == "2026-01-03T12:00:00+00:00"
    assert parse_since("1w", now) == "2026-01-03T12:00:00+00:00"
    assert parse_since("2026-01-01T00:00:00Z", now) == "2026-01-01T00:00:00Z"


def test_importing_the_commands_loads_no_heavy_modules() -> None:
    code = (
        "import sys, passdown.cli._store_cmds;"
        "heavy = [m for m in ('pydantic', 'psycopg', 'psycopg_pool', 'sqlite3', 'platformdirs')"
        " if m in sys.modules]; print(heavy)"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": src, "PATH": ""})  # fmt: skip
    assert out.stdout.strip() == "[]"
