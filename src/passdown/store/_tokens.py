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
from datetime import UTC, datetime
from pathlib import Path

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
    if scope.project == REGISTRY.project:
        raise UsageError(f"{project!r} is the token registry's own scope: choose another name")
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


def token_project(store: Store, name: str, *, new: bool = False, here: Path | None = None) -> str:
    """The project scope `token create --project NAME` means: `.` is the repository of
    `here` (the current folder); a scope that holds records as given; else the one scope
    whose readable name is NAME (`api` for `api~3f9c2a1b7d0e`), or that NAME is a prefix
    of. A name that matches no scope is refused (a token bound to it would see nothing),
    naming the closest ones, unless `new` says it is a new team project; one that
    matches several is refused as ambiguous (AmbiguousSession, exit 4)."""
    from passdown.records import default_project

    if name == ".":
        return default_project(here or Path.cwd())
    known = store.projects()
    if name in known or new:
        return name
    named = [p for p in known if p.split("~", 1)[0] == name]
    matches = named or [p for p in known if p.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        from passdown._text import listed
        from passdown.errors import AmbiguousSession

        raise AmbiguousSession(
            f"project {name!r} matches {len(matches)} project scopes: {listed(matches)}",
            hint="give the whole scope, as `passdown find --project` takes it",
        )
    raise UsageError(
        f"no project scope {name!r} in the store: a token bound to it would see nothing",
        hint=_close_hint(name, known),
    )


def _close_hint(name: str, known: list[str]) -> str:
    import difflib

    from passdown._text import listed

    labels = {p.split("~", 1)[0]: p for p in known}
    close = difflib.get_close_matches(name, list(labels), n=5, cutoff=0.5)
    scopes = list(dict.fromkeys([*(labels[c] for c in close), *(p for p in known if name in p)]))
    new = "pass --new to bind it to a new team project"
    if scopes:
        return f"close scopes: {listed(scopes)}; --project . is this repository's; or {new}"
    if known:
        return f"scopes in this store: {listed(known)}; --project . is this repository's; or {new}"
    return f"the store holds no project yet; --project . is this repository's; or {new}"


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


class TokenLookup:
    """Token -> its scope, for a server's requests: asked of the store on every request
    (off the event loop), never cached, so a revoked token stops working at once on every
    server that shares the store, and two servers never disagree about a token."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def __call__(self, token: str) -> Scope | None:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(scope_for_token, self.store, token)
