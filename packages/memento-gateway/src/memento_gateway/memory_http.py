"""``GET /v4/memory/{uid}``: a memory whole, for a client that got only its ``hotword_uid``.

Served beside the WebSocket on the same port (through websockets' ``process_request``). The key
goes in ``Authorization: Bearer <api_key>``, an ``api_key`` header, or the ``api_key`` query
parameter; ``user_id`` (optional, query) is the client's user, taken inside the key's space as
for sendmsg. Only memories that scope may see are returned; any other uid is a 404, the same as
an unknown one, so uids leak nothing. Errors are ``{"msg": ..., "msgtype": "error"}``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, unquote

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from memento_core import InvalidInput, Memento, MemoryItem, MemoryNotFound
from memento_gateway.keys import KeyRegistry
from memento_gateway.requests import (
    API_KEY_NOT_EXIST,
    API_KEY_NOT_USABLE,
    API_KEY_REQUIRED,
    MAX_ID_CHARS,
    RequestError,
    check_identifier,
)

__all__ = ["MEMORY_PATH", "memory_response"]

MEMORY_PATH = "/v4/memory/"


def _json(connection: ServerConnection, status: int, body: dict[str, Any]) -> Response:
    response = connection.respond(status, json.dumps(body, ensure_ascii=False))
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json; charset=utf-8"
    return response


def _error(connection: ServerConnection, status: int, message: str) -> Response:
    return _json(connection, status, {"msg": message, "msgtype": "error"})


def _api_key(request: Request, query: dict[str, list[str]]) -> str | None:
    authorization = request.headers.get("Authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    key = request.headers.get("api_key") or request.headers.get("X-Api-Key")
    if key:
        return key
    values = query.get("api_key")
    return values[0] if values else None


def memory_body(item: MemoryItem) -> dict[str, Any]:
    return {
        "status": "memory",
        "uid": item.id,
        "type": item.type.value,
        "title": item.title,
        "content": item.content,
        "data": item.data,
        "hotwords": list(item.hotwords),
        "tags": list(item.tags),
        "privacy": item.privacy.value,
        "created_at": item.created_at.isoformat(),
        "msgtype": "memory",
    }


async def memory_response(
    connection: ServerConnection, request: Request, mem: Memento, keys: KeyRegistry
) -> Response:
    """The response to a ``GET`` under ``MEMORY_PATH``."""
    path, _, raw_query = request.path.partition("?")
    query = parse_qs(raw_query)
    uid = unquote(path[len(MEMORY_PATH) :])
    api_key = _api_key(request, query)
    if not api_key:
        return _error(connection, 401, API_KEY_REQUIRED)
    space = await keys.resolve(api_key)
    if space is None:
        return _error(connection, 401, API_KEY_NOT_EXIST)
    if not space.usable:
        return _error(connection, 403, API_KEY_NOT_USABLE)
    user_id: str | None = None
    if "user_id" in query:
        try:
            user_id = check_identifier(
                {"user_id": query["user_id"][0]}, "user_id", "user_id is empty"
            )
        except RequestError as err:
            return _error(connection, 400, str(err))
    if not uid or len(uid) > MAX_ID_CHARS or "/" in uid:
        return _error(connection, 404, f"no memory {uid[:MAX_ID_CHARS]!r}")
    try:
        item = await mem.aget(uid, scope=space.scope_for(user_id))
    except (MemoryNotFound, InvalidInput):
        return _error(connection, 404, f"no memory {uid!r}")
    return _json(connection, 200, memory_body(item))
