"""Choosing and opening a store: URLs, defaults, migrations, translated errors."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from passdown._paths import data_dir
from passdown.errors import StoreError, UsageError
from passdown.store import default_store_url, open_store
from passdown.store._postgres import PostgresStore, redact, split_url
from passdown.store._sqlite import MIGRATIONS, SQLiteStore

Make = Callable[..., dict[str, Any]]


def test_data_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "d"))
    assert data_dir() == tmp_path / "d"
    monkeypatch.delenv("PASSDOWN_DATA_DIR")
    assert data_dir().name == "passdown"


def test_default_is_sqlite_in_the_data_folder(record_data: Make) -> None:
    assert default_store_url() == f"sqlite://{data_dir() / 'store.db'}"
    with open_store() as store:
        assert isinstance(store, SQLiteStore)
        store.store(record_data())
    assert (data_dir() / "store.db").is_file()


def test_env_then_config_file_choose_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir().mkdir(parents=True, exist_ok=True)
    (data_dir() / "config.toml").write_text(f'[store]\nurl = "sqlite://{tmp_path / "cfg.db"}"\n')
    assert default_store_url() == f"sqlite://{tmp_path / 'cfg.db'}"
    monkeypatch.setenv("PASSDOWN_STORE", f"sqlite://{tmp_path / 'env.db'}")
    assert default_store_url() == f"sqlite://{tmp_path / 'env.db'}"
    with open_store() as store:
        assert store.url == f"sqlite://{tmp_path / 'env.db'}"


def test_a_broken_config_file_is_a_store_error() -> None:
    data_dir().mkdir(parents=True, exist_ok=True)
    (data_dir() / "config.toml").write_text("[store\n")
    with pytest.raises(StoreError, match=r"config\.toml"):
        default_store_url()


@pytest.mark.parametrize("url", ["mysql://x/y", "sqlite://", "/just/a/path"])
def test_unsupported_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(UsageError):
        open_store(url)


def test_in_memory_sqlite_store(record_data: Make) -> None:
    with open_store("sqlite://:memory:") as store:
        store.store(record_data())
        assert store.retrieve("webapp", "rec-1").id == "rec-1"


def test_sqlite_migrations_are_named_ordered_and_recorded(tmp_path: Path) -> None:
    with open_store(f"sqlite://{tmp_path / 's.db'}"):
        pass
    conn = sqlite3.connect(tmp_path / "s.db")
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert rows == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.execute("INSERT INTO schema_migrations VALUES (99, '0099_from_the_future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="0099_from_the_future"):
        open_store(f"sqlite://{tmp_path / 's.db'}")


def test_sqlite_errors_become_store_errors(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"junk\.db"):
        open_store(f"sqlite://{junk}")


def test_postgres_url_handling() -> None:
    conninfo, schema = split_url("postgresql://u:secret@127.0.0.1/db?schema=team_a&sslmode=disable")
    assert (conninfo, schema) == ("postgresql://u:secret@127.0.0.1/db?sslmode=disable", "team_a")
    assert split_url("postgresql://127.0.0.1/db")[1] == "passdown"
    assert redact("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"
    with pytest.raises(UsageError, match="schema"):
        split_url("postgresql://h/db?schema=bad;name")


def test_an_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        PostgresStore("postgresql://u:hunter2@127.0.0.1:1/db?connect_timeout=2")
    assert "hunter2" not in caught.value.message and "127.0.0.1:1" in caught.value.message


@pytest.mark.postgres
def test_postgres_migrations_are_recorded(postgresql_url: str) -> None:
    with open_store(postgresql_url) as store:
        assert isinstance(store, PostgresStore)
        assert store.schema_version() == 2
        rows = store._read("SELECT name FROM schema_migrations ORDER BY version", ())
        assert [r[0] for r in rows] == ["0001_records", "0002_pointers"]


def test_check_reports_an_inconsistent_sqlite_store(sqlite_url: str, record_data: Make) -> None:
    with open_store(sqlite_url) as store:
        store.store(record_data())
    conn = sqlite3.connect(sqlite_url.removeprefix("sqlite://"))
    conn.execute("DELETE FROM records_fts")
    conn.execute("INSERT INTO record_history VALUES ('webapp', 'gone', 1, 'x', 'h', '{}')")
    conn.commit()
    conn.close()
    with open_store(sqlite_url) as store:
        problems = store.check()
    assert any("full-text index has 0 rows for 1 records" in p for p in problems)
    assert "1 history rows belong to no record" in problems


@pytest.mark.postgres
def test_check_reports_an_inconsistent_postgres_store(
    postgresql_url: str, record_data: Make
) -> None:
    with open_store(postgresql_url) as store:
        store.store(record_data())
        with store._transaction() as conn:  # type: ignore[attr-defined]
            conn.execute("UPDATE records SET version = 3")
        assert store.check() == ["1 records have missing history versions"]
