"""The team server as a store: `PASSDOWN_STORE=https://HOST[:PORT]` opens an `HTTPStore`,
which answers every Store call through `passdown serve`'s store API (`/api/store/...`,
`passdown.mcp._api`), so export, the hooks, pickup, claim, `find` and `retrieve` work
from any machine unchanged.

- The token: `$PASSDOWN_TOKEN`, else `[store] token` in the config file. It is bound to
  one project on the server; a request for another project is ForeignScope (exit 20).
- TLS: `https://` verifies the server against the system's trust store, or against the
  CA bundle `$PASSDOWN_CA_BUNDLE` / `[store] ca_bundle` names. Plain `http://` is taken
  only for a loopback host (127.0.0.0/8, ::1, localhost): anywhere else the token would
  cross the network in clear text.
- Every call has a timeout; a server that does not answer is ServerUnreachable
  (exit 18), a token it does not know TokenRefused (exit 19).

The validation (and redaction) of a record happens here before it is sent, and again
on the server, which keeps the data: the client holds no state besides its connection.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from passdown import errors
from passdown.errors import (
    RecordNotFound,
    ServerUnreachable,
    StoreError,
    TokenRefused,
    UsageError,
)
from passdown.store._base import (
    Page,
    PointerKey,
    Prepared,
    Query,
    RecordMeta,
    ScopeLike,
    Store,
    TimeLike,
    build_query,
    coerce_scope,
)

if TYPE_CHECKING:
    import httpx2

    from passdown.records import Record, Scope

TOKEN_ENV = "PASSDOWN_TOKEN"
CA_BUNDLE_ENV = "PASSDOWN_CA_BUNDLE"
TIMEOUT_S = 20.0  # every call: connect, each read and write (a claim is one short call)
CONNECT_TIMEOUT_S = 5.0
API = "/api/store/"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Where the team server is and how to reach it."""

    url: str  # as given, without a trailing slash
    token: str | None
    ca_bundle: str | None


def is_server_url(url: str) -> bool:
    return url.partition("://")[0].lower() in ("http", "https")


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> tuple[str, str]:
    """(scheme, host) of a team server URL; UsageError for plain http off loopback, and
    for a URL with credentials, a query or a fragment in it (the token travels in a
    header, never in the URL)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        host = parts.hostname or ""
        parts.port  # noqa: B018 -- parsing it raises on a port that is not a number
    except ValueError:
        raise UsageError(f"invalid team server URL {url!r}: bad port") from None
    if not host:
        raise UsageError(f"invalid team server URL {url!r}: no host", hint="https://HOST[:PORT]")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise UsageError(
            f"invalid team server URL {_shown(url)!r}: no credentials, query or fragment",
            hint=f"give the token in ${TOKEN_ENV} or [store] token in the config file",
        )
    if scheme == "http" and not is_loopback(host):
        raise UsageError(
            f"refusing plain http to {host}: the token would cross the network unencrypted",
            hint="use https:// (passdown serve --certfile/--keyfile, or a reverse proxy); "
            "http:// is taken only for a loopback host",
        )
    return scheme, host


def _shown(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def ssl_context(ca_bundle: str | None) -> ssl.SSLContext | bool:
    """The CA bundle's context; True (the system's trust store) without one."""
    if not ca_bundle:
        return True
    try:
        return ssl.create_default_context(cafile=os.path.expanduser(ca_bundle))
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise UsageError(
            f"cannot read the CA bundle {ca_bundle!r}: {exc}",
            hint=f"{CA_BUNDLE_ENV} or [store] ca_bundle must name a PEM file of CA certificates",
        ) from None


class HTTPStore(Store):
    """A Store whose every call is a request to `passdown serve` (see the module
    docstring). Opening it asks the server which project the token is bound to."""

    def __init__(self, config: ServerConfig) -> None:
        import httpx2

        scheme, host = check_url(config.url)
        if not config.token:
            raise TokenRefused(
                f"no token for the team server {config.url}",
                hint=f"set {TOKEN_ENV} or [store] token in the config file to a token from "
                "`passdown token create --project .` run against the server's store",
            )
        self.url = config.url
        self._client = httpx2.Client(
            base_url=config.url.rstrip("/"),
            headers={"Authorization": f"Bearer {config.token}"},
            verify=ssl_context(config.ca_bundle) if scheme == "https" else True,
            timeout=httpx2.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            trust_env=not is_loopback(host),  # a proxy from the environment, never for loopback
            follow_redirects=False,
        )
        try:
            self.project: str = str(self._call("whoami", method="GET")["project"])
        except BaseException:
            self._client.close()
            raise

    # -- the wire ----------------------------------------------------------------------

    def _call(self, op: str, body: Mapping[str, Any] | None = None, method: str = "POST") -> Any:
        import httpx2

        try:
            response = self._client.request(method, API + op, json=body)
        except httpx2.TimeoutException:
            raise ServerUnreachable(
                f"the team server {self.url} did not answer within {TIMEOUT_S:g} s",
                hint="check that `passdown serve` runs there and the network reaches it",
            ) from None
        except httpx2.TransportError as exc:
            raise _unreachable(self.url, exc) from None
        return _answer(self.url, response)

    # -- records -----------------------------------------------------------------------

    def _write(self, prepared: list[Prepared], new_version: bool) -> None:
        self._call("write", {"records": [p.body for p in prepared], "new_version": new_version})

    def query(
        self,
        scope: ScopeLike,
        *,
        type: str | None = None,
        kind: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        text: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        from passdown.records import Record

        sc = coerce_scope(scope)
        # the same checks as every store, here: a bad argument never makes a request
        build_query(
            sc,
            type=type,
            kind=kind,
            since=since,
            until=until,
            text=text,
            limit=limit,
            cursor=cursor,
        )
        filters = _filters(type, kind, since, until, text)
        answer = self._call(
            "query", {"scope": _scope(sc), **filters, "limit": limit, "cursor": cursor}
        )
        records = [Record.model_validate_json(body) for body in answer["records"]]
        return Page(records, answer["next_cursor"])

    def count(
        self,
        scope: ScopeLike,
        *,
        type: str | None = None,
        kind: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        text: str | None = None,
    ) -> int:
        sc = coerce_scope(scope)
        build_query(  # the same checks as every store, here
            sc, type=type, kind=kind, since=since, until=until, text=text, limit=1, cursor=None
        )
        filters = _filters(type, kind, since, until, text)
        return int(self._call("count", {"scope": _scope(sc), **filters})["count"])

    def _select(self, q: Query) -> list[tuple[int, int, str]]:  # pragma: no cover
        raise NotImplementedError("the team server answers query() whole")

    def retrieve(self, scope: ScopeLike, id: str, *, version: int | None = None) -> Record:
        from passdown.records import Record

        sc = coerce_scope(scope)
        answer = self._call("retrieve", {"scope": _scope(sc), "id": id, "version": version})
        return Record.model_validate_json(answer["record"])

    def history(self, scope: ScopeLike, id: str) -> list[RecordMeta]:
        sc = coerce_scope(scope)
        answer = self._call("history", {"scope": _scope(sc), "id": id})
        return [RecordMeta(**meta) for meta in answer["versions"]]

    def _current(self, sc: Scope, id: str) -> tuple[int, str, str, str]:
        from passdown.records import canonical_json

        meta = self.history(sc, id)[-1]
        body = canonical_json(self.retrieve(sc, id, version=meta.version))
        return meta.version, meta.stored_at, meta.content_hash, body

    def _older_body(self, sc: Scope, id: str, version: int) -> str | None:
        from passdown.records import canonical_json

        try:
            return canonical_json(self.retrieve(sc, id, version=version))
        except RecordNotFound:
            return None

    def _older_meta(self, sc: Scope, id: str) -> list[tuple[int, str, str]]:
        return [(m.version, m.stored_at, m.content_hash) for m in self.history(sc, id)[:-1]]

    def delete(self, scope: ScopeLike, id: str) -> None:
        self._call("delete", {"scope": _scope(coerce_scope(scope)), "id": id})

    # -- pointers: the compare-and-swap runs in one transaction on the server ----------

    def _pointer_row(self, key: PointerKey) -> tuple[str, str] | None:
        answer = self._call("pointer", {"key": list(key)})
        if answer["value"] is None:
            return None
        return str(answer["value"]), str(answer["stamp"])

    def _swap_pointer(
        self, key: PointerKey, expected: str | None, new: str | None, stamp: str | None
    ) -> bool:
        body = {"key": list(key), "expected": expected, "new": new, "stamp": stamp}
        return bool(self._call("swap", body)["swapped"])

    # -- the store as a whole ----------------------------------------------------------

    def projects(self) -> list[str]:
        """The token's project, when it holds records: a token sees no other."""
        return [str(p) for p in self._call("projects", method="GET")["projects"]]

    def check(self) -> list[str]:
        return [str(p) for p in self._call("check", method="GET")["problems"]]

    def close(self) -> None:
        self._client.close()


def _scope(sc: Scope) -> dict[str, Any]:
    return sc.model_dump(exclude_none=True)


def _time(value: TimeLike | None) -> str | None:
    return value.isoformat() if value is not None and not isinstance(value, str) else value


def _filters(
    type: str | None,
    kind: str | None,
    since: TimeLike | None,
    until: TimeLike | None,
    text: str | None,
) -> dict[str, str | None]:
    """The record filters `query` and `count` send, as the store API reads them."""
    return {"type": type, "kind": kind, "since": _time(since), "until": _time(until), "text": text}


def _unreachable(url: str, exc: Exception) -> ServerUnreachable:
    reason = str(exc) or type(exc).__name__
    if "CERTIFICATE_VERIFY_FAILED" in reason or isinstance(
        exc.__context__, ssl.SSLCertVerificationError
    ):
        return ServerUnreachable(
            f"cannot reach the team server {url}: its TLS certificate is not trusted ({reason})",
            hint=f"point {CA_BUNDLE_ENV} (or [store] ca_bundle) at the CA certificate that "
            "signed the server's certificate",
        )
    return ServerUnreachable(
        f"cannot reach the team server {url}: {reason}",
        hint="check that `passdown serve` runs there and the network reaches it; "
        "PASSDOWN_STORE names the server",
    )


# the statuses of answers that carry no `type` (the middleware's 401 and 413); the store
# API names the class of every error it raises
_STATUS_CLASSES: dict[int, type[StoreError]] = {
    401: TokenRefused,
    404: RecordNotFound,
    409: errors.RecordConflict,
    413: errors.RecordTooLarge,
}


def _answer(url: str, response: httpx2.Response) -> Any:
    """The JSON of a 2xx answer; the server's error as the class it raised, else the
    class its status stands for."""
    try:
        data = response.json()
    except (ValueError, RecursionError):
        data = None
    if response.is_success and isinstance(data, dict):
        return data
    if response.is_success or not isinstance(data, dict) or "error" not in data:
        raise StoreError(
            f"unexpected answer from the team server {url}: HTTP {response.status_code} "
            f"{response.headers.get('content-type', '')}".rstrip(),
            hint="is PASSDOWN_STORE the address of `passdown serve` (or of its reverse proxy)?",
        )
    message, hint = str(data["error"]), data.get("hint")
    cls = _error_class(str(data.get("type", "")), response.status_code)
    if cls is TokenRefused:
        message = f"the team server {url} does not know this token (never issued, or revoked)"
        hint = f"ask for a new token (`passdown token create` on the server) and set {TOKEN_ENV}"
    elif response.status_code == 421:  # the server's Host guard: a name it does not answer to
        host = urlsplit(url).hostname
        hint = f"start the server with PASSDOWN_ALLOWED_HOSTS={host} (the name clients use)"
    raise cls(message, hint=str(hint) if hint else None)


def _error_class(name: str, status: int) -> type[StoreError] | type[UsageError]:
    for cls in errors.ERROR_CLASSES:
        if cls.__name__ == name and issubclass(cls, (StoreError, UsageError)):
            return cls
    if status in _STATUS_CLASSES:
        return _STATUS_CLASSES[status]
    return UsageError if status == 400 else StoreError
