"""Reading a sendmsg request, and the error text for each way it can be wrong.

Checks run in this order and the first failure is answered (one error frame, nothing run):

1. the frame is a JSON object with ``"action": "sendmsg"``;
2. ``api_key`` is present (``api_key is required``), then it exists (``api_key is not exist``)
   and is usable (``api_key is not usable``) — the key comes first, so a client without a valid
   key learns nothing else;
3. ``msg`` (``msg is required``): required unless the key's space allows an empty turn
   (``Space.allow_empty_msg``; the spec both lists the error and says ``msg`` may be left out);
4. ``room_uid`` (``room_uid is required``), then ``user_id`` (``user_id is required``), each a
   string of 1 to 256 characters without control characters or lone surrogates;
5. ``return_voice``: 0, 1, "0" or "1" (the spec's text otherwise), or absent: the space's default;
6. the parameters ``stream``, ``model``, ``no_save``, ``no_history``, the variable
   ``visitor_name`` and ``chain_events`` (pass ``on_chain_*`` events through; default: the
   space's setting), at the top level or inside a ``params`` object (which wins).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memento_core import MAX_CONTENT_CHARS

__all__ = [
    "MAX_ID_CHARS",
    "RequestError",
    "SendMsg",
    "check_identifier",
    "parse_envelope",
    "read_request",
]

MAX_ID_CHARS = 256
_BAD_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_BAD_MSG_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")  # text keeps \t \n \r

API_KEY_REQUIRED = "api_key is required"
API_KEY_NOT_EXIST = "api_key is not exist"
API_KEY_NOT_USABLE = "api_key is not usable"
MSG_REQUIRED = "msg is required"
ROOM_UID_REQUIRED = "room_uid is required"
USER_ID_REQUIRED = "user_id is required"
RETURN_VOICE_INVALID = "return_voice must be a number (0, 1, '0', or '1')"
NOT_JSON = "the request is not valid JSON"
TOO_DEEP = "the request is nested too deeply"
NOT_SENDMSG = 'the request must be a JSON object with "action": "sendmsg"'


class RequestError(ValueError):
    """A request the gateway refuses; ``str(error)`` is the error frame's ``msg``."""


@dataclass(frozen=True)
class SendMsg:
    """One checked request. ``msg`` is "" for an empty turn."""

    api_key: str
    room_uid: str
    user_id: str
    msg: str
    return_voice: int
    stream: bool = True
    model: str | None = None
    no_save: bool = False
    no_history: bool = False
    visitor_name: str | None = None
    chain_events: bool | None = None


def parse_envelope(raw: str | bytes) -> tuple[dict[str, Any], str]:
    """The request object and its ``api_key`` (steps 1 and 2's presence check)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        request = json.loads(text)
    except RecursionError:
        raise RequestError(TOO_DEEP) from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        raise RequestError(NOT_JSON) from None
    if not isinstance(request, dict) or request.get("action") != "sendmsg":
        raise RequestError(NOT_SENDMSG)
    api_key = request.get("api_key")
    if not isinstance(api_key, str) or not api_key.strip():
        raise RequestError(API_KEY_REQUIRED)
    return request, api_key


def read_request(
    request: Mapping[str, Any],
    api_key: str,
    *,
    default_return_voice: int,
    allow_empty_msg: bool,
) -> SendMsg:
    """Steps 3 to 6, for a request whose key resolved to a usable space."""
    msg = request.get("msg")
    if msg is None or msg == "":
        if not allow_empty_msg:
            raise RequestError(MSG_REQUIRED)
        msg = ""
    elif not isinstance(msg, str) or not msg.strip():
        raise RequestError(MSG_REQUIRED)
    elif len(msg) > MAX_CONTENT_CHARS:
        raise RequestError(f"msg is {len(msg)} characters; the maximum is {MAX_CONTENT_CHARS}")
    elif _BAD_MSG_CHARS.search(msg):
        raise RequestError("msg holds a control character or a lone surrogate")
    room_uid = check_identifier(request, "room_uid", ROOM_UID_REQUIRED)
    user_id = check_identifier(request, "user_id", USER_ID_REQUIRED)
    return_voice = _return_voice(request.get("return_voice"), default_return_voice)
    params = _params(request)
    return SendMsg(
        api_key=api_key,
        room_uid=room_uid,
        user_id=user_id,
        msg=msg,
        return_voice=return_voice,
        stream=_flag(params, "stream") is not False,
        model=_optional_text(params, "model"),
        no_save=_flag(params, "no_save") is True,
        no_history=_flag(params, "no_history") is True,
        visitor_name=_optional_text(params, "visitor_name"),
        chain_events=_flag(params, "chain_events"),
    )


def check_identifier(request: Mapping[str, Any], field: str, missing: str) -> str:
    value = request.get(field)
    if value is None or value == "":
        raise RequestError(missing)
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > MAX_ID_CHARS
        or _BAD_CHARS.search(value)
    ):
        raise RequestError(
            f"{field} must be a string of 1 to {MAX_ID_CHARS} characters without control "
            "characters or lone surrogates"
        )
    return value


def _return_voice(value: object, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or value not in (0, 1, "0", "1"):
        raise RequestError(RETURN_VOICE_INVALID)
    return int(value)


def _params(request: Mapping[str, Any]) -> dict[str, Any]:
    nested = request.get("params")
    if nested is not None and not isinstance(nested, dict):
        raise RequestError("params must be a JSON object")
    names = ("stream", "model", "no_save", "no_history", "visitor_name", "chain_events")
    merged = {name: request[name] for name in names if name in request}
    merged.update(nested or {})
    return merged


def _flag(params: Mapping[str, Any], name: str) -> bool | None:
    """A yes/no parameter, or None when it is not given."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("1", "true", "0", "false"):
        return value.lower() in ("1", "true")
    raise RequestError(f"{name} must be true or false (or 1, 0, '1', '0')")


def _optional_text(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_ID_CHARS or _BAD_CHARS.search(value):
        raise RequestError(
            f"{name} must be a string of at most {MAX_ID_CHARS} characters without control "
            "characters"
        )
    return value
