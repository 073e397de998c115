"""The checks before any handler runs: the Host header names an allowed host (a page on another
site cannot reach the app through DNS rebinding); in owner mode, the request carries the token
printed at start (a cookie set on the first visit with ``?token=``, or an ``Authorization:
Bearer`` / ``X-Memento-Token`` header)."""

from __future__ import annotations

import hmac

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memento_inspector.rendering import error_page
from memento_inspector.viewer import Inspector

TOKEN_COOKIE = "memento_inspector_token"


def _cookie(request: Request) -> str:
    """The token's cookie, named for the port: cookies do not tell ports apart, and two
    inspectors on one host must not take each other's."""
    return f"{TOKEN_COOKIE}_{request.url.port or 80}"


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
                "this inspector acts as the store's owner: open the address with the token "
                "printed when it started (…/?token=…)",
            )
        return await call_next(request)
