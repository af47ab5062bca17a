"""`passdown serve`'s store API: the whole Store interface over HTTP, for a client whose
`PASSDOWN_STORE` names this server (`passdown.store._http.HTTPStore`).

Every route sits behind the bearer token (`TokenAuth`), and every request names its
scope; one whose project is not the token's is 403 (ForeignScope), before the store is
asked. The token registry's own scope is never reachable. The server answers each
request from the database alone (no cache, no session): any number of `passdown serve`
processes on one PostgreSQL database answer alike, and a compare-and-swap (a claim)
runs in one database transaction, so two servers never both win it.

    GET  /api/store/whoami      -> {"project"}                     the token's project
    POST /api/store/write       {"records": [json...], "new_version"} -> {"ids"}
    POST /api/store/query       {"scope", "type", "kind", "since", "until", "text",
                                 "limit", "cursor"}  -> {"records": [json...], "next_cursor"}
    POST /api/store/retrieve    {"scope", "id", "version"}        -> {"record": json}
    POST /api/store/history     {"scope", "id"}  -> {"versions": [{id, version, stored_at,
                                 content_hash}...]}, oldest first
    POST /api/store/delete      {"scope", "id"}                    -> {"deleted": true}
    POST /api/store/pointer     {"key": [project, user, team, agent, name]}
                                -> {"value", "stamp"} (both null: unset)
    POST /api/store/swap        {"key", "expected", "new", "stamp"} -> {"swapped"}
    GET  /api/store/projects    -> {"projects"}   the token's project, when it holds records
    GET  /api/store/check       -> {"problems"}   the database's consistency (counts only)

Records travel as their canonical JSON (a string), exactly as the store keeps them. An
error is `{"error", "hint", "type"}` (`type`: the class in `passdown.errors`, which the
client raises again) with the status of `errors.http_status_for`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from passdown.errors import ForeignScope, PassdownError, RecordInvalid, UsageError, http_status_for
from passdown.records import Scope
from passdown.store import Store
from passdown.store._base import POINTER_COLUMNS, coerce_scope
from passdown.store._tokens import REGISTRY

SCOPE_KEY = "passdown.scope"  # where serve's token check leaves the token's scope

Handler = Callable[[Request], Awaitable[Response]]
Call = Callable[[Scope, dict[str, Any]], dict[str, Any]]
PREFIX = "/api/store/"


def _error(exc: PassdownError) -> JSONResponse:
    from passdown._redact import redact

    body = {"error": redact(exc.message), "type": type(exc).__name__}
    if exc.hint:
        body["hint"] = redact(exc.hint)
    return JSONResponse(body, status_code=http_status_for(exc))


def _bound(request: Request) -> Scope:
    bound = request.scope.get(SCOPE_KEY)
    if not isinstance(bound, Scope):  # only reachable if the middleware was bypassed
        raise PermissionError("request without an authenticated scope")
    return bound


def allowed(bound: Scope, project: str) -> None:
    """ForeignScope unless `project` is the token's (the registry's never is)."""
    if project == REGISTRY.project or project != bound.project:
        raise ForeignScope(
            f"this token is bound to project {bound.project!r}; the request is for "
            f"project {project!r}",
            hint="use a token of that project (`passdown token create --project NAME` "
            "against the server's store)",
        )


def _scope(bound: Scope, body: dict[str, Any]) -> Scope:
    raw = body.get("scope")
    if not isinstance(raw, dict):
        raise UsageError("invalid request: scope must be an object with a project")
    sc = coerce_scope(raw)
    allowed(bound, sc.project)
    return sc


def _text(body: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise UsageError(f"invalid request: {name} must be a string")
    return value


def _int(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise UsageError(f"invalid request: {name} must be an integer")
    return value


def _key(bound: Scope, body: dict[str, Any]) -> tuple[Scope, str]:
    raw = body.get("key")
    if (
        not isinstance(raw, list)
        or len(raw) != len(POINTER_COLUMNS)
        or not all(isinstance(v, str) for v in raw)
    ):
        raise UsageError("invalid request: key must be [project, user, team, agent, name]")
    project, user, team, agent, name = raw
    fields = {"project": project, "user": user, "team": team, "agent": agent}
    sc = coerce_scope({k: v for k, v in fields.items() if v})
    allowed(bound, sc.project)
    return sc, name


# -- the calls: each runs in a worker thread, against the store alone -------------------


def _whoami(bound: Scope, _body: dict[str, Any]) -> dict[str, Any]:
    return {"project": bound.project}


def _write_call(store: Store) -> Call:
    def write(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        raw = body.get("records")
        if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
            raise UsageError("invalid request: records must be a list of JSON texts")
        records = [_record(r) for r in raw]
        for record in records:
            scope = record.get("scope")
            allowed(bound, scope.get("project", "") if isinstance(scope, dict) else "")
        ids = store.store_many(records, new_version=body.get("new_version") is True)
        return {"ids": ids}

    return write


def _record(raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except RecursionError:
        raise RecordInvalid("invalid record: JSON nested too deeply") from None
    except ValueError as exc:
        raise RecordInvalid(f"invalid record: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RecordInvalid("invalid record: expected a JSON object")
    return data


def _query_call(store: Store) -> Call:
    def query(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        from passdown.records import canonical_json

        limit = _int(body, "limit")
        page = store.query(
            _scope(bound, body),
            **_filters(body),
            limit=50 if limit is None else limit,
            cursor=_text(body, "cursor", required=False),
        )
        return {
            "records": [canonical_json(r) for r in page.records],
            "next_cursor": page.next_cursor,
        }

    return query


def _count_call(store: Store) -> Call:
    def count(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        return {"count": store.count(_scope(bound, body), **_filters(body))}

    return count


def _filters(body: dict[str, Any]) -> dict[str, str | None]:
    """The record filters `query` and `count` share, from a request's body."""
    names = ("type", "kind", "since", "until", "text")
    return {name: _text(body, name, required=False) for name in names}


def _retrieve_call(store: Store) -> Call:
    def retrieve(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        from passdown.records import canonical_json

        sc, id = _scope(bound, body), _text(body, "id") or ""
        return {"record": canonical_json(store.retrieve(sc, id, version=_int(body, "version")))}

    return retrieve


def _history_call(store: Store) -> Call:
    def history(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        metas = store.history(_scope(bound, body), _text(body, "id") or "")
        return {
            "versions": [
                {
                    "id": m.id,
                    "version": m.version,
                    "stored_at": m.stored_at,
                    "content_hash": m.content_hash,
                }
                for m in metas
            ]
        }

    return history


def _delete_call(store: Store) -> Call:
    def delete(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        store.delete(_scope(bound, body), _text(body, "id") or "")
        return {"deleted": True}

    return delete


def _pointer_call(store: Store) -> Call:
    def pointer(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        sc, name = _key(bound, body)
        if sc == REGISTRY:  # pragma: no cover -- `allowed` refused its project already
            raise ForeignScope("the token registry is not reachable")
        value = store.get_pointer(sc, name)
        stamp = store.pointer_stamp(sc, name) if value is not None else None
        return {"value": value, "stamp": stamp}

    return pointer


def _swap_call(store: Store) -> Call:
    def swap(bound: Scope, body: dict[str, Any]) -> dict[str, Any]:
        sc, name = _key(bound, body)
        expected = _text(body, "expected", required=False)
        new = _text(body, "new", required=False)
        stamp = _text(body, "stamp", required=False)
        # one transaction in the database (`Store._swap_pointer`): an atomic claim
        return {"swapped": store.restore_pointer(sc, name, expected, new, stamp)}

    return swap


def _projects_call(store: Store) -> Call:
    def projects(bound: Scope, _body: dict[str, Any]) -> dict[str, Any]:
        return {"projects": [p for p in store.projects() if p == bound.project]}

    return projects


def _check_call(store: Store) -> Call:
    def check(_bound: Scope, _body: dict[str, Any]) -> dict[str, Any]:
        return {"problems": store.check()}

    return check


def _handler(call: Call) -> Handler:
    async def handle(request: Request) -> Response:
        bound = _bound(request)
        try:
            body: Any = {}
            if request.method == "POST":
                raw = await request.body()
                try:
                    body = json.loads(raw)
                except RecursionError:
                    raise UsageError("invalid request: JSON nested too deeply") from None
                except ValueError as exc:
                    raise UsageError(f"invalid request: not JSON: {exc}") from None
                if not isinstance(body, dict):
                    raise UsageError("invalid request: expected a JSON object")
            result = await anyio.to_thread.run_sync(call, bound, body)
        except PassdownError as exc:
            return _error(exc)
        except (RecursionError, OverflowError) as exc:  # input nested or sized past what we take
            return _error(
                UsageError(f"invalid request: {type(exc).__name__}: input too deep or too large")
            )
        return JSONResponse(result)

    return handle


def store_routes(store: Store) -> list[tuple[str, list[str], Handler]]:
    """The store API's routes, for `build_app`."""
    posts: dict[str, Call] = {
        "write": _write_call(store),
        "query": _query_call(store),
        "count": _count_call(store),
        "retrieve": _retrieve_call(store),
        "history": _history_call(store),
        "delete": _delete_call(store),
        "pointer": _pointer_call(store),
        "swap": _swap_call(store),
    }
    gets: dict[str, Call] = {
        "whoami": _whoami,
        "projects": _projects_call(store),
        "check": _check_call(store),
    }
    return [
        *((PREFIX + name, ["POST"], _handler(call)) for name, call in posts.items()),
        *((PREFIX + name, ["GET"], _handler(call)) for name, call in gets.items()),
    ]
