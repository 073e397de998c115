"""The checks before any handler runs, and the headers on every response.

``Guard``: the Host header names an allowed host (a page on another site cannot reach the app
through DNS rebinding); the request carries the token printed at start (a cookie set on the
first visit with ``?token=``, or an ``Authorization: Bearer`` / ``X-Memento-Token`` header) —
in both modes, unless a user-mode inspector was started with ``--no-token``.

``SecurityHeaders``: no page may be framed by another site (``frame-ancestors 'none'``,
``X-Frame-Options: DENY``: two clicks on an invisible "Erase user" cannot be stolen), no script
runs but the inspector's own file (a CSP), nothing is sniffed into another type, cached, or
sent on as a referrer.
"""

from __future__ import annotations

import hmac

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memento_inspector.rendering import error_page
from memento_inspector.viewer import Inspector

TOKEN_COOKIE = "memento_inspector_token"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""Only the inspector's own script and style sheet; inline SVG is part of the page and needs
nothing; no inline script or style, nothing from elsewhere, never framed."""
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = tuple(
    (name.encode(), value.encode())
    for name, value in (
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        ("cache-control", "no-store"),
    )
)


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` to every response, error pages and downloads included (it
    wraps the whole app, Starlette's own 500 page too)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                given = {name.lower() for name, _ in message.get("headers", [])}
                added = [(n, v) for n, v in SECURITY_HEADERS if n not in given]
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        await self.app(scope, receive, with_headers)


def local_path(path: str, query: str = "") -> str:
    """A redirect target on the inspector itself: ``//host/`` or ``/\\host`` would leave it."""
    return "/" + path.lstrip("/\\") + (f"?{query}" if query else "")


def _cookie(request: Request) -> str:
    """The token's cookie, named for the port: cookies do not tell ports apart, and two
    inspectors on one host must not take each other's."""
    return f"{TOKEN_COOKIE}_{request.url.port or 80}"


def _host(header: str) -> str:
    if header.startswith("["):  # [::1]:8000
        return header[1 : header.find("]")]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard(BaseHTTPMiddleware):
    """The Host check, then the token check, before any handler runs."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        inspector: Inspector = request.app.state.inspector
        host = _host(request.headers.get("host", ""))
        if host not in inspector.allowed_hosts:
            return error_page(
                request, 400, f"host {host!r} is not served by this inspector", stranger=True
            )
        if inspector.token is None or request.url.path.startswith("/static/"):
            return await call_next(request)
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given.encode(), inspector.token.encode()):
            # The token leaves the address bar (and the history) for a cookie.
            rest = request.url.remove_query_params("token")
            response = RedirectResponse(local_path(rest.path, rest.query), status_code=303)
            response.set_cookie(
                _cookie(request), inspector.token, httponly=True, samesite="strict", path="/"
            )
            return response
        sent = (
            request.cookies.get(_cookie(request))
            or request.headers.get("x-memento-token")
            or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        )
        if not sent or not hmac.compare_digest(sent.encode(), inspector.token.encode()):
            return error_page(
                request,
                401,
                "this inspector needs the token printed when it started: open the address "
                "it printed (…/?token=…)",
                stranger=True,
            )
        return await call_next(request)
