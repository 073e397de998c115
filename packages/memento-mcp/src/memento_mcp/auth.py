"""A static bearer token for the streamable HTTP transport.

``BearerTokenGuard`` wraps the whole HTTP app: a request without ``Authorization: Bearer
<token>``, or with another token, gets ``401`` and is never seen by the MCP server. The SDK's
own ``token_verifier`` is built for OAuth: its refusal is an OAuth error body that MCP clients
report only as "Server returned an error response". This guard answers with a JSON-RPC error
that says what was wrong (no token, or a wrong one), which the SDK's client shows as the error
message, plus the standard ``WWW-Authenticate: Bearer`` header (RFC 6750).
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

UNAUTHORIZED = -32001
"""JSON-RPC error code for a refused token (the implementation-defined server-error range)."""


class BearerTokenGuard:
    """ASGI middleware admitting only HTTP requests that carry ``token`` as a bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token or token != token.strip():
            raise ValueError("the bearer token must be non-empty, without surrounding spaces")
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # the server's start and stop, not a request
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            # Fail closed: the MCP app serves plain HTTP only (no WebSocket routes).
            await _refuse_connection(send)
            return
        authorization = _header(scope, b"authorization")
        problem = self.problem(authorization)
        if problem is None:
            await self.app(scope, receive, send)
            return
        # RFC 6750 §3: a request without credentials gets a bare challenge, no error code.
        challenge = 'Bearer realm="memento"'
        if authorization is not None:
            challenge += f', error="invalid_token", error_description="{problem}"'
        await _refuse(send, problem, challenge)

    def problem(self, authorization: bytes | None) -> str | None:
        """Why a request with this ``Authorization`` header is refused, or None to admit it."""
        if authorization is None:
            return "this server needs a bearer token: send 'Authorization: Bearer <token>'"
        scheme, _, credentials = authorization.partition(b" ")
        if scheme.lower() != b"bearer" or not credentials.strip():
            return "the Authorization header must be 'Bearer <token>'"
        if not hmac.compare_digest(credentials.strip(), self._token):
            return "the bearer token is wrong"
        return None


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value)
    return None


async def _refuse(send: Send, problem: str, challenge: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED, "message": problem}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _refuse_connection(send: Send) -> None:
    await send({"type": "websocket.close", "code": 1008})
