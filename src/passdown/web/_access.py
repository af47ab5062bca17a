"""Who may see which project's pages.

- Local (`passdown ui`): the person who owns the store; every project in it, with the
  current workspace's project first.
- Token (`passdown serve`): the bearer tokens of the API (`passdown token create`). The
  login page takes a token and keeps it in an HttpOnly, SameSite=Strict cookie; each
  request resolves it to its scope, exactly as the API does, so another project's pages
  are 404, as if they did not exist.
"""

from __future__ import annotations

from typing import Protocol

import anyio.to_thread
from pydantic import ValidationError
from starlette.requests import Request

from passdown.records import Scope
from passdown.store import Store
from passdown.store._tokens import REGISTRY, TokenLookup

SESSION_COOKIE = "passdown_session"


class Access(Protocol):
    needs_login: bool

    async def scope(self, request: Request, project: str) -> Scope | None:
        """The scope to read `project` with, or None: the project is not found for them."""

    async def projects(self, request: Request) -> list[str] | None:
        """The projects to offer, or None when the request is not logged in."""


def _project_scope(project: str) -> Scope | None:
    try:
        return Scope(project=project)
    except ValidationError:
        return None


class LocalAccess:
    needs_login = False

    def __init__(self, store: Store, current_project: str) -> None:
        self.store = store
        self.current_project = current_project

    async def scope(self, request: Request, project: str) -> Scope | None:
        if project == REGISTRY.project:
            return None  # the token registry is not a project
        if project != self.current_project and project not in await self._stored():
            return None
        return _project_scope(project)

    async def _stored(self) -> list[str]:
        return await anyio.to_thread.run_sync(self.store.projects)

    async def projects(self, request: Request) -> list[str]:
        stored = await self._stored()
        others = [p for p in stored if p not in (self.current_project, REGISTRY.project)]
        return [self.current_project, *others]


class TokenAccess:
    needs_login = True

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lookup = TokenLookup(store)

    async def bound(self, request: Request) -> Scope | None:
        token = request.cookies.get(SESSION_COOKIE)
        return await self.lookup(token) if token else None

    async def scope(self, request: Request, project: str) -> Scope | None:
        bound = await self.bound(request)
        return bound if bound is not None and bound.project == project else None

    async def projects(self, request: Request) -> list[str] | None:
        bound = await self.bound(request)
        return [bound.project] if bound is not None else None
