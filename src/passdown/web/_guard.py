"""Request checks for the web pages and the JSON API.

- Host (against DNS rebinding): a page or API request whose Host header is not one of the
  names the server answers to gets 421, as `/mcp` already does. Bound to loopback, the
  names are 127.0.0.1, localhost and [::1] (any port); bound to another address, that
  address plus the names in `$PASSDOWN_ALLOWED_HOSTS` (comma-separated `name[:port]`).
- Origin: a request that carries an Origin header must come from the same origin (403
  otherwise), so another site's page cannot drive the server through the browser. The
  token-authenticated machine doors (`/api`, `/mcp`, `/healthz`), which no cookie opens,
  also accept a loopback Origin when the server answers on loopback (a local MCP
  inspector); they answer in JSON.
- CSRF: every state-changing request (anything but GET/HEAD/OPTIONS) to a page needs,
  besides a same-origin Origin, a form field equal to the `passdown_csrf` cookie
  (double submit; the cookie is HttpOnly and SameSite=Strict, so another site can neither
  read it nor make the browser send it).
- Every page answer carries a strict Content-Security-Policy (scripts and styles only from
  this server's own files, no inline script), no-store caching, and no referrer to
  other sites (a same-origin one is kept: with none, browsers send `Origin: null`).
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse, Response

Scope_ = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope_, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_BINDS = ("127.0.0.1", "localhost", "::1")
ALLOWED_HOSTS_ENV = "PASSDOWN_ALLOWED_HOSTS"
CSRF_COOKIE = "passdown_csrf"
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MACHINE_PREFIXES = ("/api/", "/mcp", "/healthz")  # bearer-token doors: JSON answers, no cookies

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


def allowed_hosts(bind_host: str) -> set[str]:
    """Host names (without port) the server answers to."""
    names = set(LOOPBACK_NAMES)
    if bind_host not in LOOPBACK_BINDS and bind_host not in ("0.0.0.0", "::", ""):
        names.add(f"[{bind_host}]" if ":" in bind_host else bind_host)
    for entry in os.environ.get(ALLOWED_HOSTS_ENV, "").split(","):
        if entry.strip():
            names.add(_hostname(entry.strip().lower()))
    return names


def _hostname(host: str) -> str:
    """The name part of a Host header value (`[::1]:8080` -> `[::1]`, `a:1` -> `a`)."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _origin_host(origin: str) -> str | None:
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https") or "/" in rest:
        return None
    return rest.lower()


class HostGuard:
    """ASGI middleware: 421 for an unknown Host, 403 for a foreign Origin, on every path."""

    def __init__(self, app: ASGIApp, bind_host: str) -> None:
        self.app = app
        self.names = allowed_hosts(bind_host)

    def host_ok(self, host: str | None) -> bool:
        return host is not None and _hostname(host.lower()) in self.names

    async def __call__(self, scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        host = headers.get("host")
        machine = (
            str(scope.get("path", "")).startswith(MACHINE_PREFIXES) or scope.get("path") == "/api"
        )
        if not self.host_ok(host):
            message = (
                f"Misdirected request: this server does not answer to that Host name "
                f"(allowed: {', '.join(sorted(self.names))}; add names with ${ALLOWED_HOSTS_ENV})"
            )
            return await _refuse(message, 421, machine)(scope, receive, send)
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            if not self._origin_ok(_origin_host(origin), host, machine):
                return await _refuse("Forbidden: cross-origin request", 403, machine)(
                    scope, receive, send
                )
        elif origin == "null" and scope.get("method", "GET") not in SAFE_METHODS:
            return await _refuse("Forbidden: opaque origin", 403, machine)(scope, receive, send)
        await self.app(scope, receive, send)

    def _origin_ok(self, origin_host: str | None, host: str | None, machine: bool) -> bool:
        if origin_host is None:
            return False
        if origin_host == (host or "").lower():
            return True
        loopback_server = self.names == set(LOOPBACK_NAMES)
        return machine and loopback_server and _hostname(origin_host) in LOOPBACK_NAMES


def _refuse(message: str, status: int, machine: bool) -> Response:
    if machine:
        return JSONResponse({"error": message}, status_code=status)
    return PlainTextResponse(message, status_code=status)


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_ok(cookie: str | None, submitted: str | None) -> bool:
    if not cookie or not submitted:
        return False
    return hmac.compare_digest(cookie.encode(), submitted.encode())


def fetch_site_ok(headers: Headers) -> bool:
    """Browsers say where a request comes from; a cross-site one never changes state."""
    return headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")
