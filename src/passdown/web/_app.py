"""The web view of a project's handoffs: server-rendered pages, a little JavaScript.

    GET  /                          -> the first project's timeline (or the login page)
    GET  /login, POST /login        token login (`passdown serve` only), POST /logout
    GET  /switch?project=P          -> /p/P/
    GET  /p/{project}/              timeline: ?agent=&status=&since=&until=&q=&cursor=
    GET  /p/{project}/events        server-sent events: new timeline rows as they are stored
    GET  /p/{project}/h/{id}        one handoff
    GET  /p/{project}/compare?a=&b= two handoffs (or ?pick=&pick= from the timeline)
    GET  /p/{project}/plan?h=       plan over time of the task of handoff h (default: newest)
    GET  /static/...                the CSS and JavaScript, shipped in the package

Everything printed goes through Jinja's autoescape and, before that, through the redactor
(`finalize`): the records are redacted when written, this is the second line.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import anyio
import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, TemplateError, select_autoescape
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from passdown._redact import redact
from passdown.agents import agent_names
from passdown.errors import PassdownError, RecordNotFound, UsageError
from passdown.records import parse_timestamp, project_label
from passdown.store import Store
from passdown.web import _model as model
from passdown.web._access import SESSION_COOKIE, Access, LocalAccess, TokenAccess
from passdown.web._guard import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SAFE_METHODS,
    SECURITY_HEADERS,
    ASGIApp,
    HostGuard,
    Scope_,
    csrf_ok,
    fetch_site_ok,
    new_csrf_token,
)
from passdown.web._live import LiveFeed

HERE = Path(__file__).parent
WEB_PREFIXES = ("/p/", "/static/", "/login", "/logout", "/switch")
POLL_INTERVAL_S = 1.0
HEARTBEAT_S = 15.0
STREAM_LIFETIME_S = (
    60.0  # then the browser reconnects by itself: a stopping server waits at most this long
)
MAX_FORM_BYTES = 4096
ACCESS_RECHECK_POLLS = 5  # an open stream checks its token again this often


@functools.lru_cache(maxsize=8192)
def _redact_short(text: str) -> str:
    return redact(text)


def _finalize(value: Any) -> Any:
    """Every printed value, redacted (ids, names and labels repeat on a page: cached).
    Markup (a macro's output) is left alone: its own values were finalized inside it."""
    if not isinstance(value, str) or hasattr(value, "__html__"):
        return value
    return _redact_short(value) if len(value) < 512 else redact(value)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short"] = lambda text, n=12: text if len(text) <= n else text[: n - 1] + "…"
    env.filters["when"] = _when
    env.globals["plan_statuses"] = model.PLAN_STATUSES
    env.globals["project_label"] = project_label  # `api` of the scope `api~3f9c2a1b7d0e`
    return env


def _when(value: str | None) -> str:
    """A timestamp as people read it (UTC, to the second)."""
    if not value:
        return ""
    try:
        return parse_timestamp(value).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return value


class WebApp:
    def __init__(self, store: Store, access: Access) -> None:
        self.store = store
        self.access = access
        self.env = _environment()
        self.app = Starlette(routes=self._routes())

    def _routes(self) -> list[Route | Mount]:
        page = self._page
        return [
            Route("/", self.home),
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/switch", self.switch),
            Route("/p/{project}/", page(self.timeline)),
            Route("/p/{project}/events", page(self.events)),
            Route("/p/{project}/compare", page(self.compare)),
            Route("/p/{project}/plan", page(self.plan)),
            Route("/p/{project}/h/{id:path}", page(self.handoff)),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    # -- plumbing ---------------------------------------------------------------------------

    def render(
        self, request: Request, name: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        csrf = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
        context.setdefault("project", None)
        html = self.env.get_template(name).render(
            csrf=csrf, needs_login=self.access.needs_login, quote=quote, **context
        )
        response = HTMLResponse(html, status_code=status)
        if request.cookies.get(CSRF_COOKIE) != csrf:
            _set_cookie(response, request, CSRF_COOKIE, csrf)
        return response

    def not_found(
        self,
        request: Request,
        message: str = "No such project or handoff here (or not one this sign-in can see).",
    ) -> HTMLResponse:
        return self.render(request, "error.html", 404, title="Not found", message=message)

    def _page(
        self, handler: Callable[[Request, model.Reader, dict[str, Any]], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A project page: 404 outside the caller's projects, the login page before login."""

        async def endpoint(request: Request) -> Response:
            projects = await self.access.projects(request)
            if projects is None:
                return RedirectResponse("/login", status_code=303)
            project = request.path_params["project"]
            scope = await self.access.scope(request, project)
            if scope is None:
                return self.not_found(request)
            context = {"project": project, "projects": projects}
            try:
                return await handler(request, model.Reader(self.store, scope), context)
            except RecordNotFound:
                return self.not_found(request)
            except UsageError as exc:
                return self.render(
                    request, "error.html", 400, title="Bad request", message=exc.message, **context
                )
            except PassdownError as exc:
                return self.render(
                    request,
                    "error.html",
                    503,
                    title="Store unavailable",
                    message=exc.message,
                    **context,
                )
            except (TypeError, ValueError, AttributeError, TemplateError) as exc:
                # a record of an unexpected shape (written by hand or another tool): say so
                return self.render(
                    request,
                    "error.html",
                    500,
                    title="Cannot show this record",
                    message=f"A stored record has an unexpected shape ({type(exc).__name__}).",
                    **context,
                )

        return endpoint

    # -- entry, login, switching ------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        projects = await self.access.projects(request)
        if projects is None:
            return RedirectResponse("/login", status_code=303)
        return RedirectResponse(_project_url(projects[0]), status_code=303)

    async def switch(self, request: Request) -> Response:
        project = request.query_params.get("project", "")
        projects = await self.access.projects(request)
        if projects is None:
            return RedirectResponse("/login", status_code=303)
        if not project or await self.access.scope(request, project) is None:
            return self.not_found(request)
        return RedirectResponse(_project_url(project), status_code=303)

    async def login_form(self, request: Request, error: str = "", status: int = 200) -> Response:
        if not self.access.needs_login:
            return RedirectResponse("/", status_code=303)
        return self.render(request, "login.html", status, title="Sign in", error=error)

    async def login(self, request: Request) -> Response:
        if not isinstance(self.access, TokenAccess):
            return RedirectResponse("/", status_code=303)
        form = await _form(request)
        if form is None or not _csrf_passes(request, form):
            return self.render(
                request,
                "error.html",
                403,
                title="Forbidden",
                message="The form expired or came from another site; reload the page and try again.",
            )
        token = form.get("token", "").strip()
        bound = await self.access.lookup(token) if token else None
        if bound is None:
            return await self.login_form(request, "That token is not valid (or was revoked).", 401)
        response = RedirectResponse(_project_url(bound.project), status_code=303)
        _set_cookie(response, request, SESSION_COOKIE, token)
        _set_cookie(response, request, CSRF_COOKIE, new_csrf_token())  # a fresh one per login
        return response

    async def logout(self, request: Request) -> Response:
        form = await _form(request)
        if form is None or not _csrf_passes(request, form):
            return self.render(
                request,
                "error.html",
                403,
                title="Forbidden",
                message="The form expired or came from another site.",
            )
        response = RedirectResponse("/login" if self.access.needs_login else "/", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    # -- the pages ----------------------------------------------------------------------------

    async def timeline(
        self, request: Request, reader: model.Reader, ctx: dict[str, Any]
    ) -> Response:
        q = request.query_params
        filters = _filters(q)
        error = ""
        try:
            page = await anyio.to_thread.run_sync(reader.timeline, filters, q.get("cursor") or None)
        except UsageError as exc:  # a search or date the store cannot take: say so, keep the form
            page, error = model.TimelinePage([], None), exc.message
        agents = sorted(
            {v.agent for v in page.views} | set(agent_names()) | ({filters.agent} - {""})
        )
        newest = page.views[0].created_at if page.views else None
        live = {k: v for k, v in _filter_params(filters).items() if v}
        if newest:
            live["since"] = newest
        live_query = None if q.get("cursor") else urlencode(live)  # older pages stay put
        return self.render(
            request,
            "timeline.html",
            400 if error else 200,
            title=f"{ctx['project']} · timeline",
            page=page,
            error=error,
            filters=filters,
            agents=agents,
            statuses=model.STATUSES,
            newest=newest,
            live_query=live_query,
            older_query=urlencode({**_filter_params(filters), "cursor": page.next_cursor or ""}),
            **ctx,
        )

    async def handoff(
        self, request: Request, reader: model.Reader, ctx: dict[str, Any]
    ) -> Response:
        def load() -> dict[str, Any]:
            view = reader.handoff(request.path_params["id"])
            trail = reader.task(view, older=1, newer=1)
            previous, following = model.neighbours(trail, view.id)
            return {
                "view": view,
                "previous": previous,
                "following": following,
                "events": reader.history(view.id),
                "versions": reader.store.history(reader.scope, view.id),
            }

        data = await anyio.to_thread.run_sync(load)
        return self.render(
            request, "handoff.html", title=f"{ctx['project']} · {data['view'].id}", **data, **ctx
        )

    async def compare(
        self, request: Request, reader: model.Reader, ctx: dict[str, Any]
    ) -> Response:
        q = request.query_params
        picked = [p for p in q.getlist("pick") if p]
        a_id, b_id = (q.get("a") or "", q.get("b") or "")
        if len(picked) >= 2:
            a_id, b_id = picked[0], picked[1]

        def load() -> dict[str, Any]:
            choices = reader.recent(limit=100)
            a = reader.handoff(a_id) if a_id else None
            b = reader.handoff(b_id) if b_id else None
            if b is not None and a is None:  # compare with the previous handoff of its task
                a = model.neighbours(reader.task(b, older=1, newer=0), b.id)[0]
            if a is None and b is None and len(choices) >= 2:
                a, b = reader.handoff(choices[1].id), reader.handoff(choices[0].id)
            result = None
            if a is not None and b is not None:
                result = model.compare(*model.in_order(a, b, [c.id for c in choices]))
            if result is not None:
                a, b = result.older, result.newer
            return {
                "choices": choices,
                "cmp": result,
                "a_id": a.id if a else "",
                "b_id": b.id if b else "",
            }

        data = await anyio.to_thread.run_sync(load)
        return self.render(
            request, "compare.html", title=f"{ctx['project']} · compare", **data, **ctx
        )

    async def plan(self, request: Request, reader: model.Reader, ctx: dict[str, Any]) -> Response:
        def load() -> dict[str, Any]:
            wanted = request.query_params.get("h")
            recent = [] if wanted else reader.recent(limit=1)
            anchor = reader.handoff(wanted) if wanted else (recent[0] if recent else None)
            if anchor is None:
                return {"grid": None, "anchor": None}
            trail = reader.task(anchor, older=model.PLAN_COLUMNS - 1, newer=model.PLAN_COLUMNS - 1)
            return {"grid": model.plan_grid(trail), "anchor": anchor}

        data = await anyio.to_thread.run_sync(load)
        return self.render(
            request, "plan.html", title=f"{ctx['project']} · plan over time", **data, **ctx
        )

    async def events(self, request: Request, reader: model.Reader, ctx: dict[str, Any]) -> Response:
        filters = _filters(request.query_params)
        since = request.query_params.get("since") or None
        if since:
            try:
                parse_timestamp(since)
            except ValueError:
                raise UsageError(f"since: not a timestamp: {since!r}") from None
        row = self.env.get_template("_row.html")
        feed = LiveFeed(reader, filters, since or datetime.now(UTC).isoformat())

        async def stream() -> AsyncIterator[str]:
            await anyio.to_thread.run_sync(feed.start)
            yield "retry: 2000\n\n"
            quiet = 0.0
            for polls in range(int(STREAM_LIFETIME_S / POLL_INTERVAL_S)):
                if (
                    polls % ACCESS_RECHECK_POLLS == 0
                    and polls
                    and await self.access.scope(request, ctx["project"]) is None
                ):
                    return  # signed out or token revoked: the stream ends with the session
                for view in await anyio.to_thread.run_sync(feed.poll):
                    html = row.render(
                        v=view, project=ctx["project"], quote=quote, search=filters.text
                    )
                    yield f"event: handoff\ndata: {json.dumps({'id': view.id, 'html': html})}\n\n"
                    quiet = 0.0
                if quiet >= HEARTBEAT_S:
                    yield ": keep-alive\n\n"
                    quiet = 0.0
                await anyio.sleep(POLL_INTERVAL_S)
                quiet += POLL_INTERVAL_S

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )


# -- helpers ---------------------------------------------------------------------------------


def _project_url(project: str) -> str:
    return f"/p/{quote(project, safe='')}/"


def _filters(q: Any) -> model.Filters:
    status = q.get("status", "")
    return model.Filters(
        agent=q.get("agent", "")[:200],
        status=status if status in model.STATUSES else "",
        since=q.get("since_day", "")[:10],
        until=q.get("until_day", "")[:10],
        text=q.get("q", "")[:500],
    )


def _filter_params(f: model.Filters) -> dict[str, str]:
    return {
        "q": f.text,
        "agent": f.agent,
        "status": f.status,
        "since_day": f.since,
        "until_day": f.until,
    }


def _set_cookie(response: Response, request: Request, name: str, value: str) -> None:
    response.set_cookie(
        name,
        value,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


async def _form(request: Request) -> dict[str, str] | None:
    """A small urlencoded form (the only kind the pages post), or None."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items()}


def _csrf_passes(request: Request, form: dict[str, str]) -> bool:
    return fetch_site_ok(request.headers) and csrf_ok(
        request.cookies.get(CSRF_COOKIE), form.get(CSRF_FIELD)
    )


class _Headers:
    """Adds the security headers to every answer of the pages; refuses a state-changing
    request that is not a same-site form post before it reaches a handler."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["method"] not in SAFE_METHODS and not fetch_site_ok(Headers(scope=scope)):
            response = HTMLResponse("Forbidden: cross-site request", status_code=403)
            return await self._with_headers(response, scope, receive, send)

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers.setdefault(key, value)
                headers.setdefault("cache-control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _with_headers(
        self, response: Response, scope: Scope_, receive: Any, send: Any
    ) -> None:
        for key, value in SECURITY_HEADERS.items():
            response.headers[key] = value
        await response(scope, receive, send)


def is_web_path(path: str) -> bool:
    return path == "/" or path.startswith(WEB_PREFIXES)


class Dispatch:
    """The pages beside another app (the MCP server and the JSON API of `passdown serve`)."""

    def __init__(self, web: ASGIApp, other: ASGIApp) -> None:
        self.web = web
        self.other = other

    async def __call__(self, scope: Scope_, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_web_path(scope["path"]):
            return await self.web(scope, receive, send)
        await self.other(scope, receive, send)


def local_app(store: Store, current_project: str, *, host: str = "127.0.0.1") -> ASGIApp:
    """`passdown ui`: every project of the store, no login, loopback Host names only."""
    web = WebApp(store, LocalAccess(store, current_project))
    return HostGuard(_Headers(web.app), host)


def with_pages(app: ASGIApp, store: Store, *, host: str) -> ASGIApp:
    """`passdown serve`: the pages behind token login, beside `app` (MCP and the API);
    the Host and Origin checks cover all of them."""
    web = WebApp(store, TokenAccess(store))
    return HostGuard(Dispatch(_Headers(web.app), app), host)


__all__ = ["local_app", "with_pages"]
