"""ChatMessage ↔ Memento Message: roles, text blocks, tool calls and tool results."""

from __future__ import annotations

import pytest
from _llamaindex_support import assistant, tool_call, tool_result, user
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.llm import ToolSelection

from memento_core import InvalidContent, InvalidInput, Message, Role, ToolCall
from memento_llamaindex import from_memento_message, to_memento_message

ROUND_TRIPS = [
    ChatMessage(role=MessageRole.SYSTEM, content="You are terse."),
    user("Where is my bike?"),
    assistant("In the blue shed."),
    tool_call("call-1", "lookup", place="shed", depth=2),
    ChatMessage(
        role=MessageRole.ASSISTANT,
        blocks=[
            TextBlock(text="Let me check two places."),
            ToolCallBlock(tool_call_id="a", tool_name="lookup", tool_kwargs={"q": "shed"}),
            ToolCallBlock(tool_call_id="b", tool_name="lookup", tool_kwargs={"q": "garage"}),
        ],
    ),
    tool_result("call-1", "Found: a bicycle."),
    ChatMessage(
        role=MessageRole.TOOL, content="", additional_kwargs={"tool_call_id": "x", "name": "noop"}
    ),
    ChatMessage(
        role=MessageRole.USER, content="multi\nline\ntext", additional_kwargs={"name": "mina"}
    ),
]


@pytest.mark.parametrize("message", ROUND_TRIPS, ids=lambda m: m.role.value)
def test_messages_round_trip_unchanged(message: ChatMessage) -> None:
    assert from_memento_message(to_memento_message(message)) == message


def test_roles_text_and_tool_calls_map_onto_core_messages() -> None:
    core = to_memento_message(tool_call("call-7", "weather", city="Hanoi"))
    assert core == Message.assistant(tool_calls=[ToolCall("call-7", "weather", {"city": "Hanoi"})])
    answer = to_memento_message(tool_result("call-7", "28°C"))
    assert (answer.role, answer.content, answer.tool_call_id) == (Role.TOOL, "28°C", "call-7")
    split = ChatMessage(role=MessageRole.USER, blocks=[TextBlock(text="a"), TextBlock(text="b")])
    assert to_memento_message(split).content == "a\nb"


def test_other_roles_map_to_their_group_and_come_back_as_its_first() -> None:
    developer = ChatMessage(role=MessageRole.DEVELOPER, content="Be brief.")
    chatbot = ChatMessage(role=MessageRole.CHATBOT, content="Hello.")
    assert from_memento_message(to_memento_message(developer)).role == MessageRole.SYSTEM
    assert from_memento_message(to_memento_message(chatbot)).role == MessageRole.ASSISTANT


def test_openai_style_tool_calls_in_additional_kwargs_become_tool_call_blocks() -> None:
    message = ChatMessage(
        role=MessageRole.ASSISTANT,
        content=None,
        additional_kwargs={
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "lookup", "arguments": '{"q": "shed"}'}},
                ToolSelection(tool_id="c2", tool_name="remember", tool_kwargs={"fact": "tea"}),
            ]
        },
    )  # fmt: skip
    back = from_memento_message(to_memento_message(message))
    calls = [b for b in back.blocks if isinstance(b, ToolCallBlock)]
    assert [(c.tool_call_id, c.tool_name, c.tool_kwargs) for c in calls] == [
        ("c1", "lookup", {"q": "shed"}),
        ("c2", "remember", {"fact": "tea"}),
    ]
    assert "tool_calls" not in back.additional_kwargs


def test_a_call_given_as_block_and_in_kwargs_counts_once_and_json_text_arguments_parse() -> None:
    block = ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs='{"q": "shed"}')
    raw = {"id": "c1", "function": {"name": "lookup", "arguments": '{"q": "shed"}'}}
    message = ChatMessage(
        role=MessageRole.ASSISTANT, blocks=[block], additional_kwargs={"tool_calls": [raw]}
    )
    assert to_memento_message(message).tool_calls == (ToolCall("c1", "lookup", {"q": "shed"}),)


def test_thinking_is_left_out_and_a_call_without_id_is_named_after_its_tool() -> None:
    message = ChatMessage(
        role=MessageRole.ASSISTANT,
        blocks=[
            ThinkingBlock(content="hmm, the shed"),
            ToolCallBlock(tool_name="lookup", tool_kwargs={}),
        ],
    )
    core = to_memento_message(message)
    assert core.content == ""
    assert core.tool_calls == (ToolCall("lookup", "lookup", {}),)


def test_a_tool_call_id_on_an_assistant_reply_is_dropped() -> None:
    # FunctionAgent tags a return_direct reply with the tool call it came from.
    reply = ChatMessage(
        role=MessageRole.ASSISTANT, content="Done.", additional_kwargs={"tool_call_id": "c1"}
    )
    assert to_memento_message(reply) == Message.assistant("Done.")


@pytest.mark.parametrize(
    ("message", "error", "words"),
    [
        (
            ChatMessage(role=MessageRole.USER, blocks=[ImageBlock(image=b"\x89PNG")]),
            InvalidContent,
            "'image' block",
        ),
        (user(""), InvalidContent, "needs text"),
        (ChatMessage(role=MessageRole.TOOL, content="orphan"), InvalidInput, "tool_call_id"),
        (
            ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[ToolCallBlock(tool_call_id="c", tool_name="f", tool_kwargs="{not json")],
            ),
            InvalidInput,
            "not valid JSON",
        ),
        (
            ChatMessage(role=MessageRole.ASSISTANT, additional_kwargs={"tool_calls": "nope"}),
            InvalidInput,
            "must be a list",
        ),
    ],
    ids=["image", "empty-user", "tool-without-call-id", "bad-arguments", "tool-calls-not-list"],
)
def test_bad_messages_are_refused_with_a_clear_error(
    message: ChatMessage, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        to_memento_message(message)


def test_something_other_than_a_chat_message_is_refused() -> None:
    with pytest.raises(InvalidInput, match="ChatMessage"):
        to_memento_message({"role": "user", "content": "hi"})  # type: ignore[arg-type]
