"""The inspector's web app: who it acts as, the checks every request passes, error pages.

Every request passes, in order: the Host header names an allowed host (a page on another site
cannot reach the app through DNS rebinding); in owner mode, the request carries the token
printed at start (a cookie set on the first visit with ``?token=``, or an ``Authorization:
Bearer`` / ``X-Memento-Token`` header); every POST carries the page's CSRF token. A change on a
``read_only`` inspector is refused before core is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from memento_core import (
    Census,
    InvalidInput,
    Memento,
    MementoError,
    MemoryNotFound,
    NotOwner,
    ReadOnlyStore,
    Scope,
    StoreError,
    __version__,
)
from memento_inspector.browsing import Catalog

TOKEN_COOKIE = "memento_inspector_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
CENSUS_SECONDS = 30.0
"""Counts older than this are recounted in the background (``Inspector.census``)."""
FIRST_COUNT_WAIT = 3.0
"""How long a page waits for the first count before it says it is counting."""
QUICK_COUNT = 1.0
"""A census quicker than this (seconds) is redone at once after a change made here."""


class Refused(Exception):
    """A request the inspector will not serve: ``status`` and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Inspector:
    """One inspector over one store, acting as ``user`` (None: the store's owner)."""

    mem: Memento
    user: str | None = None
    project: str | None = None
    read_only: bool = False
    token: str | None = None
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    _census: tuple[float, Census] | None = None
    catalog: Catalog | None = None
    """The last census's listing as arrays, for the browse page."""
    _counting: threading.Lock = field(default_factory=threading.Lock)
    _first_count: threading.Event = field(default_factory=threading.Event)
    _count_seconds: float = 0.0

    @property
    def scope(self) -> Scope | None:
        """What core is told about the caller: None acts as the store's owner."""
        if self.user is None:
            return None
        return Scope(user_id=self.user, project_id=self.project)

    async def census(self) -> tuple[Census, float] | None:
        """The counts of what the viewer may see and how many seconds old they are; None
        while the first count is still running after ``FIRST_COUNT_WAIT`` seconds.

        A census reads every visible memory's fields (tens of seconds at 100,000 memories),
        so it runs in a thread: pages show the last one, a stale one is recounted in the
        background, and a page asked for before the first one is done says so and reloads."""
        cached = self._census
        if cached is None:
            self.count_in_background()
            await asyncio.to_thread(self._first_count.wait, FIRST_COUNT_WAIT)
            cached = self._census
            if cached is None:
                return None
        elif time.monotonic() - cached[0] > CENSUS_SECONDS:
            self.count_in_background()
        return cached[1], time.monotonic() - cached[0]

    def count_in_background(self) -> None:
        if not self._counting.locked():
            threading.Thread(target=self.recount, name="inspector-census", daemon=True).start()

    def recount(self) -> None:
        if not self._counting.acquire(blocking=False):
            return  # a count is running: its result will do
        try:
            started = time.monotonic()
            fresh = self.mem.census(self.scope)
            catalog = Catalog(fresh)
            self._count_seconds = time.monotonic() - started
            self._census = (started, fresh)
            self.catalog = catalog
        finally:
            self._counting.release()
            self._first_count.set()

    async def changed(self) -> None:
        """A change went through: the counts and lists are recounted — at once where a count
        is quick (under ``QUICK_COUNT`` seconds), else in the background while pages show the
        last ones."""
        if self._count_seconds < QUICK_COUNT and self._census is not None:
            await asyncio.to_thread(self._counting.acquire)  # a background count may be on
            self._counting.release()
            await asyncio.to_thread(self.recount)
        elif self._census is not None:
            self._census = (time.monotonic() - 2 * CENSUS_SECONDS, self._census[1])

    async def form(self, request: Request, *, change: bool = True) -> FormData:
        """A POST's form, once its CSRF token checks out (and, for a change, the inspector is
        not read-only)."""
        form = await request.form()
        sent = str(form.get("csrf", "")) or request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(sent.encode(), self.csrf.encode()):
            raise Refused(403, "the form's CSRF token is missing or wrong; reload the page")
        if change and self.read_only:
            raise Refused(403, "this inspector is read-only (--read-only): nothing was changed")
        return form


templates = Environment(
    loader=PackageLoader("memento_inspector", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(request: Request, name: str, code: int = 200, **values: Any) -> HTMLResponse:
    inspector: Inspector = request.app.state.inspector
    page = templates.get_template(name).render(
        request=request,
        inspector=inspector,
        who=inspector.user or "the store's owner",
        version=__version__,
        **values,
    )
    return HTMLResponse(page, status_code=code)


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", code=status, status_code=status, message=message)


ERRORS: tuple[tuple[type[Exception], int], ...] = (
    (MemoryNotFound, 404),
    (NotOwner, 403),
    (ReadOnlyStore, 403),
    (InvalidInput, 400),
    (StoreError, 503),
)


async def _error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, Refused):
        return error_page(request, exc.status, exc.message)
    for kind, status in ERRORS:
        if isinstance(exc, kind):
            return error_page(request, status, str(exc))
    raise exc


def _host(header: str) -> str:
    if header.startswith("["):  # [::1]:8000
        return header[1 : header.find("]")]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard(BaseHTTPMiddleware):
    """The Host check and, in owner mode, the token check, before any handler runs."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        inspector: Inspector = request.app.state.inspector
        host = _host(request.headers.get("host", ""))
        if host not in inspector.allowed_hosts:
            return error_page(request, 400, f"host {host!r} is not served by this inspector")
        if inspector.token is None or request.url.path.startswith("/static/"):
            return await call_next(request)
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given.encode(), inspector.token.encode()):
            # The token leaves the address bar (and the history) for a cookie.
            rest = request.url.remove_query_params("token")
            target = rest.path + (f"?{rest.query}" if rest.query else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                TOKEN_COOKIE, inspector.token, httponly=True, samesite="strict", path="/"
            )
            return response
        sent = (
            request.cookies.get(TOKEN_COOKIE)
            or request.headers.get("x-memento-token")
            or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        )
        if not sent or not hmac.compare_digest(sent.encode(), inspector.token.encode()):
            return error_page(
                request,
                401,
                "this inspector acts as the store's owner: open the address with the token "
                "printed when it started (…/?token=…)",
            )
        return await call_next(request)


def create_app(
    mem: Memento,
    *,
    user: str | None = None,
    project: str | None = None,
    read_only: bool = False,
    token: str | None = None,
    allowed_hosts: frozenset[str] | set[str] = LOOPBACK_HOSTS,
) -> Starlette:
    """The inspector over ``mem``. With ``user``, it acts as that user (``Scope(user_id=user,
    project_id=project)``); without, as the store's owner, and then ``token`` is required (every
    request must carry it). ``read_only`` refuses every change. Only requests whose Host is in
    ``allowed_hosts`` are served."""
    from memento_inspector import actions, pages

    if user is None and not token:
        raise InvalidInput("an inspector acting as the store's owner needs a token")
    if user is not None:
        Scope(user_id=user, project_id=project)  # checks the values now, not on a request
    inspector = Inspector(
        mem=mem,
        user=user,
        project=project,
        read_only=read_only or mem.read_only,
        token=token if user is None else None,
        allowed_hosts=frozenset(allowed_hosts),
    )
    static = StaticFiles(packages=[("memento_inspector", "static")])
    routes = [
        *pages.routes(),
        *actions.routes(),
        Mount("/static", static, name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Count at once, so that the first overview need not wait for it.
        inspector.count_in_background()
        yield

    app = Starlette(
        lifespan=lifespan,
        routes=routes,
        middleware=[Middleware(Guard)],
        exception_handlers={
            MementoError: _error,
            Refused: _error,
            404: _not_found,
            405: _not_allowed,
        },
    )
    app.state.inspector = inspector
    return app


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_page(request, 404, f"no page at {request.url.path}")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return error_page(request, 405, f"{request.method} is not accepted at {request.url.path}")


def inspector_of(request: Request) -> Inspector:
    inspector: Inspector = request.app.state.inspector
    return inspector


__all__ = ["Inspector", "Refused", "create_app", "error_page", "inspector_of", "render"]
