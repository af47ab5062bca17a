"""`passdown serve`: the MCP tools over streamable HTTP (`/mcp`) and a small JSON API
(`/api/records`), for a team sharing one store (PostgreSQL with
`PASSDOWN_STORE=postgresql://...`).

Every request under `/mcp` and `/api` needs `Authorization: Bearer <token>`
(`passdown token create --project P`); no token or an unknown one is 401. The token's
scope is the request's scope: the MCP tools and the API are bound to it exactly as
`passdown mcp` is bound to its project, so a record of another project is 404, as if it
did not exist.

    POST /api/records            store a record (JSON body)   -> 201 {"id", "project"}
    GET  /api/records/{id}       retrieve                     -> 200 record | 404
    GET  /api/records?text=&type=&kind=&since=&until=&limit=&cursor=   find -> 200
    GET  /healthz                (no token)                   -> 200 {"ok": true}
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from passdown.errors import (
    PassdownError,
    RecordConflict,
    RecordInvalid,
    RecordNotFound,
    StoreError,
    UsageError,
)
from passdown.mcp.tools import ScopedTools
from passdown.records import Scope
from passdown.serve_tokens import scope_for_token, token_hash
from passdown.store import Store

Scope_ = MutableMapping[str, Any]
ASGIApp = Callable[[Scope_, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
SCOPE_KEY = "passdown.scope"
TOKEN_KEY = "passdown.token_id"
PROTECTED = ("/mcp", "/api")
TOKEN_CACHE_S = 5.0  # a revoked token stops working within this long


class TokenAuth:
    """ASGI middleware: Bearer token -> the request's scope (in the ASGI scope dict,
    where the MCP tools and the API handlers read it), or 401."""

    def __init__(self, app: ASGIApp, store: Store) -> None:
        self.app = app
        self.store = store
        self._cache: dict[str, tuple[float, Scope | None]] = {}

    async def __call__(self, scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED):
            return await self.app(scope, receive, send)
        token = _bearer(scope)
        bound = await self._lookup(token) if token else None
        if bound is None:
            response = JSONResponse(
                {"error": "unauthorized: a valid bearer token is required"}, status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="passdown"'},
            )
            return await response(scope, receive, send)
        scope[SCOPE_KEY] = bound
        scope[TOKEN_KEY] = token_hash(token or "")[:12]
        await self.app(scope, receive, send)

    async def _lookup(self, token: str) -> Scope | None:
        now = time.monotonic()
        hit = self._cache.get(token)
        if hit and now - hit[0] < TOKEN_CACHE_S:
            return hit[1]
        bound = await anyio.to_thread.run_sync(scope_for_token, self.store, token)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[token] = (now, bound)
        return bound


def _bearer(scope: Scope_) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" and token.strip() else None
    return None


def tools_for_request(store: Store, workspace: Path | None, request: Any) -> ScopedTools:
    scope = getattr(request, "scope", {}) if request is not None else {}
    bound = scope.get(SCOPE_KEY)
    if not isinstance(bound, Scope):  # only reachable if the middleware was bypassed
        raise PermissionError("request without an authenticated scope")
    actor = f"passdown-serve:token-{scope.get(TOKEN_KEY, '?')}"
    return ScopedTools(store, bound, workspace=workspace, actor=actor)


# -- the JSON API ------------------------------------------------------------------------

_STATUS = ((RecordNotFound, 404), (RecordConflict, 409), (RecordInvalid, 400), (UsageError, 400),
           (StoreError, 503))


def _error(exc: PassdownError) -> JSONResponse:
    from passdown.redact import redact

    status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)
    body = {"error": redact(exc.message)}
    if exc.hint:
        body["hint"] = redact(exc.hint)
    return JSONResponse(body, status_code=status)


async def _run(request: Request, store: Store, call: Callable[[ScopedTools], Any], status: int = 200) -> Response:
    tools = tools_for_request(store, None, request)
    try:
        result = await anyio.to_thread.run_sync(call, tools)
    except PassdownError as exc:
        return _error(exc)
    return JSONResponse(result, status_code=status)


def api_routes(store: Store) -> list[tuple[str, list[str], Callable[[Request], Awaitable[Response]]]]:
    async def store_record(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return _error(RecordInvalid(f"invalid record: not JSON: {exc}"))
        new_version = request.query_params.get("new_version") in ("1", "true")
        return await _run(request, store, lambda t: t.store_record(body, new_version), 201)

    async def retrieve_record(request: Request) -> Response:
        record_id = request.path_params["id"]
        return await _run(request, store, lambda t: t.retrieve_record(record_id))

    async def find_records(request: Request) -> Response:
        q = request.query_params
        try:
            limit = int(q.get("limit", "20"))
        except ValueError:
            return _error(UsageError("limit must be an integer"))
        return await _run(request, store, lambda t: t.find_records(
            q.get("text"), q.get("type"), q.get("kind"), q.get("since"), q.get("until"),
            limit, q.get("cursor")))

    async def health(_request: Request) -> Response:
        return JSONResponse({"ok": True})

    return [
        ("/api/records", ["POST"], store_record),
        ("/api/records", ["GET"], find_records),
        ("/api/records/{id:path}", ["GET"], retrieve_record),
        ("/healthz", ["GET"], health),
    ]


def build_app(store: Store, *, host: str = "127.0.0.1", workspace: Path | None = None) -> ASGIApp:
    """The ASGI app: MCP at /mcp, the JSON API, behind TokenAuth."""
    from passdown.mcp.server import build_server

    server = build_server(lambda ctx: tools_for_request(store, workspace, ctx.request_context.request))
    for path, methods, handler in api_routes(store):
        server.custom_route(path, methods=methods)(handler)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host
    )
    from passdown.web import with_pages  # the web view's pages, behind the same tokens

    return with_pages(TokenAuth(app, store), store, host=host)


def run(store: Store, *, host: str, port: int, workspace: Path | None = None) -> None:
    import uvicorn

    config = uvicorn.Config(build_app(store, host=host, workspace=workspace), host=host,
                            port=port, log_level="warning")
    uvicorn.Server(config).run()
