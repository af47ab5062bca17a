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
    /api/store/...               the whole Store interface, for `PASSDOWN_STORE=https://...`
                                 on another machine (`passdown.mcp._api`)

The server keeps nothing of its own beside the store: every request (its token's scope
included) is answered from the database, so several servers on one PostgreSQL database
answer alike. TLS: `--certfile`/`--keyfile` (uvicorn's), or a reverse proxy in front.

A request body larger than the limit (`--max-body`, `$PASSDOWN_SERVE_MAX_BODY`, default
1 MiB) is 413 before anything reads it; the store bounds each record's size too
(`$PASSDOWN_MAX_RECORD_BYTES`, default 8 MiB). Every bad input (a body that is not a JSON
object, JSON nested too deep, a forged cursor, a limit or time out of range) is a 4xx with
a message; a 5xx means the store itself failed.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from passdown import _platform
from passdown.errors import (
    PassdownError,
    RecordInvalid,
    ServeError,
    UsageError,
    http_status_for,
)
from passdown.mcp._api import SCOPE_KEY
from passdown.mcp._tools import ScopedTools
from passdown.records import Scope
from passdown.store import Store
from passdown.store._tokens import TokenLookup, token_hash

Scope_ = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope_, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]
TOKEN_KEY = "passdown.token_id"
PROTECTED = ("/mcp", "/api")
DEFAULT_MAX_BODY = 1024 * 1024
MAX_BODY_ENV = "PASSDOWN_SERVE_MAX_BODY"


class BodyLimit:
    """ASGI middleware: a request body over `max_bytes` is 413, whether it announces its
    length (refused before reading) or arrives chunked (refused once the count passes).
    The body is read here, bounded, and handed on whole: the app never sees a byte of an
    oversized one."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            return await self._too_large(scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away; the app sees the disconnect next
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await self._too_large(scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope_, receive: Any, send: Any) -> None:
        response = JSONResponse(
            {
                "error": f"request body too large: the limit is {self.max_bytes} bytes",
                "hint": f"store smaller records, or start the server with --max-body ({MAX_BODY_ENV})",
            },
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _content_length(scope: Scope_) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def max_body_from_env() -> int:
    raw = os.environ.get(MAX_BODY_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BODY
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{MAX_BODY_ENV} must be a number of bytes, got {raw!r}") from None
    if value < 1:
        raise UsageError(f"{MAX_BODY_ENV} must be at least 1, got {value}")
    return value


class TokenAuth:
    """ASGI middleware: Bearer token -> the request's scope (in the ASGI scope dict,
    where the MCP tools and the API handlers read it), or 401."""

    def __init__(self, app: ASGIApp, store: Store) -> None:
        self.app = app
        self.store = store
        self._lookup = TokenLookup(store)

    async def __call__(self, scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED):
            return await self.app(scope, receive, send)
        token = _bearer(scope)
        bound = await self._lookup(token) if token else None
        if bound is None:
            response = JSONResponse(
                {"error": "unauthorized: a valid bearer token is required"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="passdown"'},
            )
            return await response(scope, receive, send)
        scope[SCOPE_KEY] = bound
        scope[TOKEN_KEY] = token_hash(token or "")[:12]
        await self.app(scope, receive, send)


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


def _error(exc: PassdownError) -> JSONResponse:
    from passdown._redact import redact

    body = {"error": redact(exc.message)}
    if exc.hint:
        body["hint"] = redact(exc.hint)
    return JSONResponse(body, status_code=http_status_for(exc))


async def _run(
    request: Request, store: Store, call: Callable[[ScopedTools], Any], status: int = 200
) -> Response:
    tools = tools_for_request(store, None, request)
    try:
        result = await anyio.to_thread.run_sync(call, tools)
    except PassdownError as exc:
        return _error(exc)
    except (RecursionError, OverflowError) as exc:  # input nested or sized past what we take
        return _error(
            UsageError(f"invalid request: {type(exc).__name__}: input too deep or too large")
        )
    return JSONResponse(result, status_code=status)


def _json_body(raw: bytes) -> Any:
    """The request body as JSON; RecordInvalid for anything else, nesting too deep included
    (the JSON parser raises RecursionError there, not ValueError)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise RecordInvalid("invalid record: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise RecordInvalid(f"invalid record: not JSON: {exc}") from None


def api_routes(
    store: Store,
) -> list[tuple[str, list[str], Callable[[Request], Awaitable[Response]]]]:
    async def store_record(request: Request) -> Response:
        try:
            body = _json_body(await request.body())
        except RecordInvalid as exc:
            return _error(exc)
        if not isinstance(body, dict):
            return _error(
                RecordInvalid(f"invalid record: expected a JSON object, got {type(body).__name__}")
            )
        new_version = request.query_params.get("new_version") in ("1", "true")
        return await _run(request, store, lambda t: t.store_record(body, new_version), 201)

    async def retrieve_record(request: Request) -> Response:
        record_id = request.path_params["id"]
        return await _run(request, store, lambda t: t.retrieve_record(record_id))

    async def find_records(request: Request) -> Response:
        q = request.query_params
        raw_limit = q.get("limit", "20")
        if len(raw_limit) > 6 or not raw_limit.strip().lstrip("-").isdigit():
            return _error(UsageError("limit must be an integer between 1 and 1000"))
        limit = int(raw_limit)
        return await _run(
            request,
            store,
            lambda t: t.find_records(
                q.get("text"),
                q.get("type"),
                q.get("kind"),
                q.get("since"),
                q.get("until"),
                limit,
                q.get("cursor"),
            ),
        )

    async def health(_request: Request) -> Response:
        return JSONResponse({"ok": True})

    return [
        ("/api/records", ["POST"], store_record),
        ("/api/records", ["GET"], find_records),
        ("/api/records/{id:path}", ["GET"], retrieve_record),
        ("/healthz", ["GET"], health),
    ]


def build_app(
    store: Store,
    *,
    host: str = "127.0.0.1",
    workspace: Path | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> ASGIApp:
    """The ASGI app: MCP at /mcp, the JSON API, behind TokenAuth and BodyLimit."""
    from passdown.mcp._server import build_server

    server = build_server(
        lambda ctx: tools_for_request(store, workspace, ctx.request_context.request)
    )
    from passdown.mcp._api import store_routes

    for path, methods, handler in [*api_routes(store), *store_routes(store)]:
        server.custom_route(path, methods=methods)(handler)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host
    )
    from passdown.web import with_pages  # the web view's pages, behind the same tokens

    # the token check first: an unauthenticated client cannot make the server read a body;
    # the pages' own guard refuses a wrong Host (421) or a foreign Origin (403) before both
    guarded: ASGIApp = TokenAuth(BodyLimit(app, max_body), store)
    return with_pages(guarded, store, host=host)


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or ServeError with the reason (address in use, no
    such address): checked before the server says it is serving."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc}", hint="check --host") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        _platform.listen_exclusively(sock)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ServeError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="another program may be using that port; choose another with --port",
        ) from None
    return sock


def tls_files(certfile: Path | None, keyfile: Path | None) -> tuple[str, str] | None:
    """uvicorn's ssl options for `--certfile`/`--keyfile`, after checking that the two
    go together and that they load (a ServeError says which one does not)."""
    if certfile is None and keyfile is None:
        return None
    if certfile is None or keyfile is None:
        raise UsageError("--certfile and --keyfile go together: give both, or neither")
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise ServeError(
            f"cannot load the TLS certificate {certfile} with its key {keyfile}: {exc}",
            hint="--certfile takes a PEM certificate (chain), --keyfile its unencrypted PEM key",
        ) from None
    return str(certfile), str(keyfile)


def run(
    store: Store,
    *,
    host: str,
    port: int,
    workspace: Path | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    sock: socket.socket | None = None,
    tls: tuple[str, str] | None = None,
) -> None:
    import uvicorn

    sock = sock or bind(host, port)
    app = build_app(store, host=host, workspace=workspace, max_body=max_body)
    certfile, keyfile = tls or (None, None)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    uvicorn.Server(config).run(sockets=[sock])
