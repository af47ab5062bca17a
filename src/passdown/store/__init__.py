"""The handoff store: one `Store` interface, SQLite (default) and PostgreSQL backends.

    with open_store() as store:              # $PASSDOWN_STORE, config, or SQLite
        store.store(record)
        store.retrieve("webapp", record.id)
        page = store.query("webapp", text="auth", kind="next", limit=20)

Backend modules import their database drivers only when opened.
"""

from passdown.store._base import MAX_LIMIT, Page, RecordMeta, ScopeLike, Store
from passdown.store._open import default_store_url, open_store

__all__ = [
    "MAX_LIMIT",
    "Page",
    "RecordMeta",
    "ScopeLike",
    "Store",
    "default_store_url",
    "open_store",
]
