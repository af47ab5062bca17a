"""Choosing a backend from a URL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from passdown._paths import data_dir
from passdown.errors import StoreError, UsageError

if TYPE_CHECKING:
    from passdown.store._base import Store

CONFIG_FILE = "config.toml"


def default_store_url() -> str:
    """`$PASSDOWN_STORE`, else `[store] url` in `data_dir()/config.toml`, else SQLite
    at `data_dir()/store.db`."""
    from_env = os.environ.get("PASSDOWN_STORE")
    if from_env:
        return from_env
    from_config = _config_value(data_dir() / CONFIG_FILE, "url")
    if from_config:
        return from_config
    return f"sqlite://{data_dir() / 'store.db'}"


def _setting(env: str, key: str) -> str | None:
    """`$env`, else `[store] key` in the config file (the team server's token and CA
    bundle sit beside its `url` there)."""
    return os.environ.get(env) or _config_value(data_dir() / CONFIG_FILE, key)


def _config_value(path: Path, key: str) -> str | None:
    if not path.is_file():
        return None
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover
        raise StoreError(f"{path}: reading config files needs Python 3.11 or later") from None

    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    section = config.get("store", {})
    value = section.get(key) if isinstance(section, dict) else None
    if value is not None and not isinstance(value, str):
        raise StoreError(f"{path}: [store] {key} must be a string")
    return value


def open_store(url: str | None = None) -> Store:
    """Open (creating and migrating if needed) the store at `url`.

    `sqlite://PATH` (so `sqlite:///abs/path.db`; `sqlite://:memory:` for a throwaway
    store), `postgresql://user:pass@host/db[?schema=NAME]`, or a team server
    `https://HOST[:PORT]` (`http://` on loopback; `passdown.store._http`). Without a URL,
    see `default_store_url`.
    """
    url = url or default_store_url()
    scheme, sep, rest = url.partition("://")
    if sep and scheme == "sqlite":
        from passdown.store._sqlite import SQLiteStore

        if not rest:
            raise UsageError("sqlite store URL has no path: use sqlite:///path/to/store.db")
        if rest == ":memory:":
            return recovered(SQLiteStore(rest))
        return recovered(SQLiteStore(_sqlite_path(rest), url=url))
    if sep and scheme in ("postgresql", "postgres"):
        _require_psycopg()
        from passdown.store._postgres import PostgresStore

        return recovered(PostgresStore(url))
    if sep and scheme.lower() in ("http", "https"):
        from passdown.store._http import CA_BUNDLE_ENV, TOKEN_ENV, HTTPStore, ServerConfig

        config = ServerConfig(
            url=url.rstrip("/"),
            token=_setting(TOKEN_ENV, "token"),
            ca_bundle=_setting(CA_BUNDLE_ENV, "ca_bundle"),
        )
        return recovered(HTTPStore(config))
    from passdown.store._postgres import redact

    raise UsageError(
        f"unsupported store URL {redact(url)!r}: use sqlite:///PATH, postgresql://... "
        "or https://HOST[:PORT] (a team server)"
    )


def _sqlite_path(rest: str) -> Path:
    """The file a `sqlite://` URL names. `sqlite:////abs/store.db` (SQLAlchemy's
    spelling of an absolute path) is `/abs/store.db`: on POSIX any run of leading
    slashes is the root (Windows keeps `//server/share`)."""
    from passdown import _platform

    if rest.startswith("//") and not _platform.is_windows():
        rest = "/" + rest.lstrip("/")
    return Path(rest).expanduser()


def _require_psycopg() -> None:
    """PostgreSQL support is an extra: say how to get it instead of an ImportError."""
    import importlib.util

    if (
        importlib.util.find_spec("psycopg") is None
        or importlib.util.find_spec("psycopg_pool") is None
    ):
        raise StoreError(
            "PostgreSQL stores need the postgres extra",
            hint="pip install 'passdown[postgres]'",
        )


def recovered(store: Store) -> Store:
    """The store, after the exports a killed process left half-done in it are taken
    back (or finished, when all their files were in place): see `passdown._wal`."""
    from passdown._wal import recover_and_say

    recover_and_say(store)
    return store
