"""Helpers shared by the LlamaIndex adapter tests."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def tool_call(call_id: str, name: str = "lookup", **arguments: object) -> ChatMessage:
    block = ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=dict(arguments))
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])


def tool_result(call_id: str, text: str) -> ChatMessage:
    return ChatMessage(
        role=MessageRole.TOOL, content=text, additional_kwargs={"tool_call_id": call_id}
    )


def words(n: int, word: str = "pebble") -> str:
    """A text of ``n`` words (about ``n`` tokens with tiktoken for common words)."""
    return " ".join([word] * n)
