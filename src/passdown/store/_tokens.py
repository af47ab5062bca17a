"""Bearer tokens for `passdown serve`, each bound to one project scope.

A token is `pdt_` + 43 random URL-safe characters, printed once by `passdown token
create`. Only its sha256 is kept: the pointer `token/<sha256>` in a registry scope of
the store (the Store API's per-scope named values), whose value is the scope the token
is bound to. A token of 256 random bits needs no slow hash: nobody can guess one, and
the lookup by hash is the comparison. The registry scope carries an `agent` narrowing
field, so no token's own (project-only) scope ever equals it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from datetime import UTC, datetime

from passdown.errors import UsageError
from passdown.records import Scope
from passdown.store import Store

PREFIX = "pdt_"
REGISTRY = Scope(project="passdown-server", agent="passdown-token-registry")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _pointer(token: str) -> str:
    return f"token/{token_hash(token)}"


def create_token(store: Store, project: str, label: str = "") -> str:
    from pydantic import ValidationError

    try:
        scope = Scope(project=project)
    except ValidationError:
        raise UsageError(f"invalid project name {project!r}: give a non-empty name") from None
    token = PREFIX + secrets.token_urlsafe(32)
    value = json.dumps(
        {
            "scope": scope.model_dump(exclude_none=True),
            "label": label,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    if not store.set_pointer(REGISTRY, _pointer(token), None, value):  # pragma: no cover
        raise UsageError("token collision; try again")
    return token


def scope_for_token(store: Store, token: str) -> Scope | None:
    """The scope a token is bound to, or None for an unknown (or revoked) token."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    raw = store.get_pointer(REGISTRY, _pointer(token))
    if raw is None:
        return None
    return Scope.model_validate(json.loads(raw)["scope"])


def revoke_token(store: Store, token: str) -> bool:
    name = _pointer(token)
    current = store.get_pointer(REGISTRY, name)
    return current is not None and store.set_pointer(REGISTRY, name, current, None)


TOKEN_CACHE_S = 5.0  # a revoked token stops working (API, MCP, pages) within this long


class TokenLookup:
    """Token -> its scope for a server's requests: the store is asked at most once per
    token every TOKEN_CACHE_S (off the event loop), so a revocation takes effect within
    that long without a store query per request."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[str, tuple[float, Scope | None]] = {}

    async def __call__(self, token: str) -> Scope | None:
        import anyio.to_thread

        now = time.monotonic()
        hit = self._cache.get(token)
        if hit and now - hit[0] < TOKEN_CACHE_S:
            return hit[1]
        bound = await anyio.to_thread.run_sync(scope_for_token, self.store, token)
        if len(self._cache) > 10_000:  # bounded: a client cycling tokens cannot grow it
            self._cache.clear()
        self._cache[token] = (now, bound)
        return bound
