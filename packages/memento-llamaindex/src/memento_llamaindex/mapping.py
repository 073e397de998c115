"""Between LlamaIndex's ``ChatMessage`` and Memento's ``Message`` and memories.

Chat messages, ``ChatMessage`` → ``Message`` (``to_memento_message``):

- Roles: ``system`` and ``developer`` → system; ``user`` → user; ``assistant``, ``chatbot`` and
  ``model`` → assistant; ``tool`` and ``function`` → tool. Coming back, each is the first of its
  group (a ``developer`` message returns as ``system``).
- Text blocks are joined with newlines, as ``ChatMessage.content`` joins them.
- Tool calls: ``ToolCallBlock`` blocks, and OpenAI-style ``additional_kwargs["tool_calls"]``
  (dicts, OpenAI SDK objects or ``ToolSelection``); the same call id given both ways counts once.
  A ``ToolCallBlock`` without an id takes its tool name as the id (the convention of the LLMs
  that leave it out). Tool calls come back as ``ToolCallBlock`` blocks, LlamaIndex's own form.
- ``additional_kwargs["tool_call_id"]`` of a tool message is the call it answers (other roles
  drop it: FunctionAgent sets it on a ``return_direct`` reply); ``additional_kwargs["name"]``
  is the sender's or tool's name. Other ``additional_kwargs`` are not kept.
- Thinking blocks and cache points are left out; images, audio, video, documents and citations
  are refused with ``InvalidContent`` (Memento keeps text), so nothing is half-stored.

Messages flushed from ``Memory``'s short-term queue become episodic memories
(``drafts_from_messages``): their text unchanged, system messages and messages without text left
out; ``additional_kwargs["session_id"]`` (set by ``Memory``) and ``additional_kwargs["created_at"]``
(a datetime or ISO 8601 text, for imported history) set the memory's session and time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from llama_index.core.base.llms.types import (
    CachePoint,
    ChatMessage,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)

from memento_core import (
    MAX_CONTENT_CHARS,
    InvalidContent,
    InvalidInput,
    MemoryDraft,
    Message,
    Role,
    Scope,
    ToolCall,
)

TRACE_KEY = "llamaindex"
"""The key of the LlamaIndex provenance in a memory's ``origin_trace``."""

_TO_CORE = {
    MessageRole.SYSTEM: Role.SYSTEM,
    MessageRole.DEVELOPER: Role.SYSTEM,
    MessageRole.USER: Role.USER,
    MessageRole.ASSISTANT: Role.ASSISTANT,
    MessageRole.CHATBOT: Role.ASSISTANT,
    MessageRole.MODEL: Role.ASSISTANT,
    MessageRole.TOOL: Role.TOOL,
    MessageRole.FUNCTION: Role.TOOL,
}
_FROM_CORE = {
    Role.SYSTEM: MessageRole.SYSTEM,
    Role.USER: MessageRole.USER,
    Role.ASSISTANT: MessageRole.ASSISTANT,
    Role.TOOL: MessageRole.TOOL,
}
_LEFT_OUT = (ThinkingBlock, CachePoint)


def to_memento_message(message: ChatMessage) -> Message:
    """The Memento message a ``ChatMessage`` is stored as (see the module docs for the rules)."""
    if not isinstance(message, ChatMessage):
        raise InvalidInput(f"expected a llama_index ChatMessage, got {type(message).__name__}")
    role = _TO_CORE[MessageRole(message.role)]
    texts: list[str] = []
    calls: dict[str, ToolCall] = {}
    for block in message.blocks:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            call = _call_from_block(block)
            calls.setdefault(call.id, call)
        elif not isinstance(block, _LEFT_OUT):
            raise InvalidContent(
                f"a {role.value} message with a {block.block_type!r} block cannot be stored: "
                "Memento keeps text and tool calls only"
            )
    extra = message.additional_kwargs
    raw_calls = extra.get("tool_calls") or ()
    if isinstance(raw_calls, (str, Mapping)) or not isinstance(raw_calls, Sequence):
        raise InvalidInput(f"additional_kwargs['tool_calls'] must be a list, got {raw_calls!r}")
    for raw in raw_calls:
        call = _call_from_kwargs(raw)
        calls.setdefault(call.id, call)
    name = extra.get("name")
    return Message(
        role=role,
        content="\n".join(texts),
        tool_calls=tuple(calls.values()),
        tool_call_id=extra.get("tool_call_id") if role is Role.TOOL else None,
        name=name if isinstance(name, str) and name.strip() else None,
    )


def from_memento_message(message: Message) -> ChatMessage:
    """A stored message as LlamaIndex sees it: text, then one ``ToolCallBlock`` per call."""
    blocks: list[Any] = []
    if message.content or not message.tool_calls:
        blocks.append(TextBlock(text=message.content))
    blocks += [
        ToolCallBlock(tool_call_id=call.id, tool_name=call.name, tool_kwargs=dict(call.arguments))
        for call in message.tool_calls
    ]
    extra: dict[str, Any] = {}
    if message.tool_call_id is not None:
        extra["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        extra["name"] = message.name
    return ChatMessage(role=_FROM_CORE[message.role], blocks=blocks, additional_kwargs=extra)


def text_of(message: ChatMessage) -> str:
    """The text blocks of a message, joined; other blocks are ignored."""
    return "\n".join(block.text for block in message.blocks if isinstance(block, TextBlock))


def latest_user_text(messages: Sequence[ChatMessage] | None) -> str | None:
    """The text of the newest user message with text, cut to what a query may hold."""
    for message in reversed(messages or ()):
        if message.role == MessageRole.USER:
            text = text_of(message)
            if text.strip():
                return text[:MAX_CONTENT_CHARS]
    return None


def drafts_from_messages(
    messages: Sequence[ChatMessage], *, scope: Scope, session_id: str | None = None
) -> list[MemoryDraft]:
    """Episodic memories for the messages that carry text (system messages left out)."""
    drafts = []
    for message in messages:
        if not isinstance(message, ChatMessage):
            raise InvalidInput(f"expected a llama_index ChatMessage, got {type(message).__name__}")
        role = _TO_CORE[MessageRole(message.role)]
        text = text_of(message)
        if role is Role.SYSTEM or not text.strip():
            continue
        extra = message.additional_kwargs
        session = extra.get("session_id") or session_id
        drafts.append(
            MemoryDraft(
                content=text,
                scope=scope.with_session(session) if session is not None else scope,
                type="episodic",
                source="tool" if role is Role.TOOL else "chat",
                created_at=_timestamp(extra.get("created_at")),
                origin_trace={TRACE_KEY: {"role": role.value}},
            )
        )
    return drafts


def check_tool_results(messages: Sequence[Message]) -> None:
    """What core checks message by message, checked for a whole list before anything is
    replaced: every tool result answers a tool call made earlier in the list, once."""
    calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        calls.update(call.id for call in message.tool_calls)
        if message.role is Role.TOOL:
            call_id = message.tool_call_id or ""
            if call_id not in calls:
                raise InvalidInput(
                    f"a tool result for call {call_id!r} answers no earlier tool call"
                )
            if call_id in answered:
                raise InvalidInput(f"tool call {call_id!r} already has a result")
            answered.add(call_id)


def _call_from_block(block: ToolCallBlock) -> ToolCall:
    arguments: Any = block.tool_kwargs
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as err:
            raise InvalidInput(
                f"arguments of tool call {block.tool_name!r} are not valid JSON: {err}"
            ) from err
    return ToolCall(
        id=block.tool_call_id or block.tool_name, name=block.tool_name, arguments=arguments
    )


def _call_from_kwargs(raw: object) -> ToolCall:
    if hasattr(raw, "model_dump"):  # an OpenAI SDK tool call or a ToolSelection
        raw = raw.model_dump()
    if isinstance(raw, Mapping) and "tool_id" in raw:  # ToolSelection
        return ToolCall(
            id=raw["tool_id"],
            name=str(raw.get("tool_name") or ""),
            arguments=raw.get("tool_kwargs") or {},
        )
    return ToolCall.from_openai(raw)


def _timestamp(value: object) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            # Python 3.10's fromisoformat does not read the "Z" suffix.
            return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
        except ValueError as err:
            raise InvalidInput(f"created_at must be an ISO 8601 timestamp, got {value!r}") from err
    raise InvalidInput(f"created_at must be a datetime or ISO 8601 text, got {value!r}")
