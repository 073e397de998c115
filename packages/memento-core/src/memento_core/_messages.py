"""Chat messages: roles, tool calls, validation, and OpenAI-style dictionaries.

A ``Message`` is what working memory holds. It is validated when built, so a malformed one
never reaches the store. ``id`` and ``created_at`` say where and when a chat memory recorded it;
they take no part in equality (two messages are equal when they say the same thing).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memento_core._model import MAX_CONTENT_CHARS, check_json, check_scope_value, parse_enum
from memento_core.errors import InvalidContent, InvalidInput

__all__ = ["Message", "Role", "ToolCall", "as_message", "from_openai", "to_openai"]

MAX_TOOL_CALLS = 128


class Role(str, enum.Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True)
class ToolCall:
    """A tool call requested by an assistant message; ``arguments`` is a JSON object."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.id is None:
            raise InvalidInput("a tool call needs an id")
        check_scope_value(self.id, "tool call id")
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 256:
            raise InvalidInput(f"a tool call needs a name (a short string), got {self.name!r}")
        if not isinstance(self.arguments, Mapping):
            raise InvalidInput(
                f"tool call arguments must be a JSON object, got {type(self.arguments).__name__}"
            )
        object.__setattr__(self, "arguments", check_json(dict(self.arguments), "arguments"))

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": json.dumps(self.arguments, ensure_ascii=False),
            },
        }

    @classmethod
    def from_openai(cls, value: object) -> ToolCall:
        """Read ``{"id", "function": {"name", "arguments": "<JSON text>"}}``."""
        if not isinstance(value, Mapping) or not isinstance(value.get("function"), Mapping):
            raise InvalidInput(f"a tool call is {{'id', 'function': {{...}}}}, got {value!r}")
        function = value["function"]
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as err:
                raise InvalidInput(f"tool call arguments are not valid JSON: {err}") from err
        call_id = value.get("id")
        if not isinstance(call_id, str):
            raise InvalidInput(f"a tool call needs an id (a string), got {call_id!r}")
        return cls(id=call_id, name=function.get("name"), arguments=arguments)


@dataclass(frozen=True)
class Message:
    """One chat message.

    Rules: system and user messages carry text; an assistant message carries text, tool calls,
    or both; a tool message answers one tool call (``tool_call_id``) and may be empty. Content
    is plain text — images and other non-text parts are refused.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    id: str | None = field(default=None, compare=False)
    created_at: datetime | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        role = parse_enum(Role, self.role, "role")
        object.__setattr__(self, "role", role)
        _check_content(self.content)
        check_scope_value(self.name, "name")
        if isinstance(self.tool_calls, (str, Mapping)) or not isinstance(self.tool_calls, Iterable):
            raise InvalidInput("tool_calls must be a list of ToolCall")
        calls = tuple(
            c if isinstance(c, ToolCall) else ToolCall.from_openai(c) for c in self.tool_calls
        )
        object.__setattr__(self, "tool_calls", calls)
        if calls and role is not Role.ASSISTANT:
            raise InvalidInput(f"only assistant messages make tool calls, not {role.value}")
        if len(calls) > MAX_TOOL_CALLS:
            raise InvalidInput(f"{len(calls)} tool calls; at most {MAX_TOOL_CALLS} per message")
        if len({c.id for c in calls}) != len(calls):
            raise InvalidInput("tool call ids must be unique within a message")
        if role is Role.TOOL:
            if self.tool_call_id is None:
                raise InvalidInput("a tool message needs the tool_call_id it answers")
            check_scope_value(self.tool_call_id, "tool_call_id")
        elif self.tool_call_id is not None:
            raise InvalidInput(f"only tool messages carry a tool_call_id, not {role.value}")
        if role in (Role.SYSTEM, Role.USER) and not self.content.strip():
            raise InvalidContent(f"a {role.value} message needs text")
        if role is Role.ASSISTANT and not self.content.strip() and not calls:
            raise InvalidContent("an assistant message needs text or tool calls")

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(Role.SYSTEM, content)

    @classmethod
    def user(cls, content: str, *, name: str | None = None) -> Message:
        return cls(Role.USER, content, name=name)

    @classmethod
    def assistant(cls, content: str = "", *, tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls(Role.ASSISTANT, content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, content: str, *, tool_call_id: str) -> Message:
        return cls(Role.TOOL, content, tool_call_id=tool_call_id)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions form (``content`` is ``None`` for a bare tool call)."""
        out: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
            if not self.content:
                out["content"] = None
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_openai(cls, value: Mapping[str, Any]) -> Message:
        """Read an OpenAI-style dict. Keys may come in other common casings (``Role``,
        ``Content``, ``toolCalls``, ``tool-call-id``), and so may the role (``User``);
        ``developer`` is read as ``system``, ``human`` as ``user``, ``ai`` and ``model`` as
        ``assistant``. List content is accepted when every part is text (the parts are joined
        with newlines)."""
        if not isinstance(value, Mapping):
            raise InvalidInput(f"a message is a dict, got {type(value).__name__}")
        value = _canonical_keys(value)
        role = value.get("role")
        if isinstance(role, str):
            role = _ROLE_ALIASES.get(role.strip().lower(), role.strip().lower())
        role = parse_enum(Role, role, "role")
        content = value.get("content")
        if content is None:
            content = ""
        elif isinstance(content, list):
            content = "\n".join(_text_part(part) for part in content)
        calls = value.get("tool_calls") or ()
        if isinstance(calls, (str, Mapping)) or not isinstance(calls, Sequence):
            raise InvalidInput("tool_calls must be a list")
        return cls(
            role=role,
            content=content,
            tool_calls=tuple(ToolCall.from_openai(c) for c in calls),
            tool_call_id=value.get("tool_call_id"),
            name=value.get("name"),
        )


_ROLE_ALIASES = {"developer": "system", "human": "user", "ai": "assistant", "model": "assistant"}
_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def _canonical_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    """The message's fields under their OpenAI names, whatever casing the caller used
    (ZEGO sends ``Role``/``Content``; JavaScript clients send ``toolCallId``)."""
    wanted = {key.replace("_", ""): key for key in _KEYS}
    out: dict[str, Any] = {}
    for key, field_value in value.items():
        if not isinstance(key, str):
            continue
        name = wanted.get(key.replace("_", "").replace("-", "").lower())
        if name is None:
            continue
        if name in out and out[name] != field_value:
            raise InvalidInput(f"a message gives {name!r} twice, in two casings, with two values")
        out[name] = field_value
    return out


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in messages]


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    return [Message.from_openai(m) for m in messages]


def as_message(value: Message | Mapping[str, Any]) -> Message:
    """A ``Message`` as is, or one read from an OpenAI-style dict."""
    if isinstance(value, Message):
        return value
    if isinstance(value, Mapping):
        return Message.from_openai(value)
    raise InvalidInput(f"expected a Message or an OpenAI-style dict, got {type(value).__name__}")


def _check_content(content: object) -> None:
    if not isinstance(content, str):
        raise InvalidContent(
            f"message content must be text (a str), got {type(content).__name__}; "
            "images, audio and other non-text parts are not stored"
        )
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidContent(
            f"message content is {len(content)} characters; the maximum is {MAX_CONTENT_CHARS}"
        )
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InvalidContent("message content holds a lone surrogate; not valid Unicode") from err


def _text_part(part: object) -> str:
    if (
        isinstance(part, Mapping)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ):
        return str(part["text"])
    kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
    raise InvalidContent(f"message content part of type {kind!r} is not text; only text is stored")
