"""The inspector's web app: its routes, the checks every request passes (``guard``), and the
error page each of Memento's errors becomes.

Every request passes, in order: the Host check and the token (``guard``); every POST carries
the page's CSRF token (``Inspector.form``); a change on a ``read_only`` inspector is refused
before core is called. Every response carries the security headers (``SecurityHeaders``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from memento_core import (
    InvalidInput,
    Memento,
    MementoError,
    MemoryNotFound,
    NotOwner,
    ReadOnlyStore,
    Scope,
    StoreError,
)
from memento_inspector.guard import Guard, SecurityHeaders
from memento_inspector.rendering import error_page
from memento_inspector.viewer import LOOPBACK_HOSTS, Inspector, Refused

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


def create_app(
    mem: Memento,
    *,
    user: str | None = None,
    project: str | None = None,
    read_only: bool = False,
    token: str | None = None,
    no_token: bool = False,
    allowed_hosts: frozenset[str] | set[str] = LOOPBACK_HOSTS,
) -> Starlette:
    """The inspector over ``mem``. With ``user``, it acts as that user (``Scope(user_id=user,
    project_id=project)``); without, as the store's owner. Every request must carry ``token``;
    only a user-mode inspector may go without, and only when told so (``no_token=True``: then
    anything that reaches the port acts as that user). ``read_only`` refuses every change. Only
    requests whose Host is in ``allowed_hosts`` are served."""
    from memento_inspector import actions, pages

    if no_token and user is None:
        raise InvalidInput("an inspector acting as the store's owner always needs a token")
    if no_token and token:
        raise InvalidInput("give a token or no_token=True, not both")
    if not token and not no_token:
        raise InvalidInput(
            "an inspector needs a token (acting as a user, no_token=True serves without one)"
        )
    if user is not None:
        Scope(user_id=user, project_id=project)  # checks the values now, not on a request
    inspector = Inspector(
        mem=mem,
        user=user,
        project=project,
        read_only=read_only or mem.read_only,
        token=token or None,
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

    app = _Inspector(
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


class _Inspector(Starlette):
    """Starlette with ``SecurityHeaders`` outermost: even its own 500 page carries them."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(super().build_middleware_stack())


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_page(request, 404, f"no page at {request.url.path}")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return error_page(request, 405, f"{request.method} is not accepted at {request.url.path}")
