"""MementoChatMemory through LlamaIndex's BaseMemory API: a durable ChatMemoryBuffer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _llamaindex_support import assistant, tool_call, tool_result, user, words
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer

from memento_core import Embedder, InvalidContent, InvalidInput, Memento, NotOwner, Scope
from memento_llamaindex import MementoChatMemory


def split_tokens(text: str) -> list[str]:
    """One token per word: budgets in these tests are counted in words."""
    return text.split()


@pytest.fixture
def memory(store: Memento, fresh: Callable[[str], str]) -> MementoChatMemory:
    return MementoChatMemory.from_defaults(
        store=store,
        user_id="alice",
        session_id=fresh("chat"),
        token_limit=40,
        tokenizer_fn=split_tokens,
    )


def contents(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


def test_from_defaults_takes_chat_memory_buffer_arguments(store: Memento) -> None:
    history = [user("hello"), assistant("hi")]
    memory = MementoChatMemory.from_defaults(
        chat_history=history, llm=MockLLM(), store=store, chat_store_key="kept"
    )
    buffer = ChatMemoryBuffer.from_defaults(llm=MockLLM())
    assert memory.token_limit == buffer.token_limit
    assert memory.session_id == "kept"
    assert memory.get_all() == history
    assert MementoChatMemory.from_defaults(store=store).token_limit == 3000


def test_get_trims_like_chat_memory_buffer(memory: MementoChatMemory) -> None:
    messages = [
        user(words(10, "one")),
        assistant(words(10, "two")),
        user(words(10, "three")),
        assistant(words(10, "four")),
        user(words(10, "five")),
    ]
    memory.put_messages(messages)
    buffer = ChatMemoryBuffer.from_defaults(
        chat_history=messages, token_limit=40, tokenizer_fn=split_tokens
    )
    # 50 words in a 40-word budget: the oldest user message leaves, and then the assistant
    # message it leaves at the front goes too, so the window starts on a user message.
    assert memory.get() == buffer.get() == messages[2:]
    assert memory.get(initial_token_count=15) == buffer.get(initial_token_count=15) == messages[4:]
    assert memory.get_all() == messages


def test_the_newest_message_alone_comes_back_when_nothing_fits(memory: MementoChatMemory) -> None:
    memory.put_messages([user("short"), assistant(words(60))])
    assert memory.get() == [assistant(words(60))]
    with pytest.raises(ValueError, match="Initial token count"):
        memory.get(initial_token_count=41)


def test_a_tool_call_leaves_with_its_result_and_the_window_never_starts_on_them(
    memory: MementoChatMemory,
) -> None:
    memory.put_messages(
        [
            user(words(12, "first")),
            tool_call("c1", "lookup", q="shed"),
            tool_result("c1", words(12, "result")),
            assistant(words(5, "answer")),
            user(words(12, "second")),
        ]
    )
    window = memory.get()
    assert window[0].role == MessageRole.USER
    assert contents(window) == [words(12, "second")]


def test_the_system_message_is_kept_first_and_replaced_by_a_new_one(
    memory: MementoChatMemory,
) -> None:
    memory.put(ChatMessage(role=MessageRole.SYSTEM, content="Be brief."))
    memory.put_messages([user(words(20, "old")), assistant(words(20, "older"))])
    memory.put(ChatMessage(role=MessageRole.SYSTEM, content="Be kind."))
    memory.put(user("newest"))
    window = memory.get()
    assert contents(window) == ["Be kind.", "newest"]


def test_input_adds_recalled_memories_as_a_system_message_within_the_share(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    store.remember("Alice parks on level 3 of the Nova garage.", scope=Scope(user_id="alice"))
    store.remember("Bob parks in the street.", scope=Scope(user_id="bob"))
    memory = MementoChatMemory.from_defaults(
        store=store, user_id="alice", session_id=fresh("chat"), token_limit=200, memory_share=0.5
    )
    memory.put_messages([user("hi"), assistant("hello, Alice")])
    got = memory.get(input="Where did I park the car?")
    assert [m.role for m in got] == [MessageRole.SYSTEM, MessageRole.USER, MessageRole.ASSISTANT]
    recalled = got[0].content or ""
    assert "level 3 of the Nova garage" in recalled
    assert "Bob" not in recalled  # another user's private memory
    assert len(memory.tokenizer_fn(recalled)) <= 100
    assert memory.get() == [user("hi"), assistant("hello, Alice")]  # no input, no recall
    off = MementoChatMemory.from_defaults(
        store=store, user_id="alice", session_id=memory.session_id, memory_share=0
    )
    assert off.get(input="Where did I park?") == memory.get()


@pytest.mark.parametrize(
    "other", [42, 3.5, {"q": "parking"}, object()], ids=["int", "float", "dict", "object"]
)
async def test_get_with_an_input_that_is_not_text_returns_the_window_like_the_buffer(
    store: Memento, fresh: Callable[[str], str], other: object
) -> None:
    store.remember("Alice parks on level 3 of the Nova garage.", scope=Scope(user_id="alice"))
    memory = MementoChatMemory.from_defaults(
        store=store, user_id="alice", session_id=fresh("chat"), memory_share=0.5
    )
    buffer = ChatMemoryBuffer.from_defaults(token_limit=memory.token_limit)
    for message in (user("hi"), assistant("hello, Alice")):
        memory.put(message)
        buffer.put(message)
    assert (
        memory.get(input=other)
        == buffer.get(input=other)
        == [user("hi"), assistant("hello, Alice")]
    )
    assert await memory.aget(input=other) == memory.get()


def test_get_with_a_list_of_messages_recalls_for_the_newest_user_message(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    store.remember("Alice parks on level 3 of the Nova garage.", scope=Scope(user_id="alice"))
    memory = MementoChatMemory.from_defaults(
        store=store, user_id="alice", session_id=fresh("chat"), memory_share=0.5
    )
    got = memory.get(input=[user("Where did I park the car?"), assistant("Let me check.")])
    assert got[0].role == MessageRole.SYSTEM and "Nova garage" in (got[0].content or "")


def test_recalled_memories_shrink_the_window(store: Memento, fresh: Callable[[str], str]) -> None:
    store.remember("The spare key hides under the third flowerpot.")
    memory = MementoChatMemory.from_defaults(
        store=store, session_id=fresh("chat"), token_limit=60, tokenizer_fn=split_tokens,
        memory_share=0.5,
    )  # fmt: skip
    memory.put_messages([user(words(20, "a")), assistant(words(20, "b")), user(words(15, "c"))])
    assert len(memory.get()) == 3
    with_memories = memory.get(input="where is the spare key?")
    assert with_memories[0].role == MessageRole.SYSTEM
    assert contents(with_memories[1:]) == [words(15, "c")]


def test_set_replaces_and_reset_empties_but_history_stays(memory: MementoChatMemory) -> None:
    memory.put_messages([user("first"), assistant("one")])
    memory.set([user("second"), assistant("two")])
    assert contents(memory.get_all()) == ["second", "two"]
    memory.reset()
    assert memory.get_all() == []
    assert memory.get() == []
    assert contents(memory.history()) == ["first", "one", "second", "two"]


def test_memory_never_tests_false_so_agents_keep_it(memory: MementoChatMemory) -> None:
    assert not hasattr(MementoChatMemory, "__len__")
    assert bool(memory) is True


async def test_async_twins_do_what_the_sync_methods_do(memory: MementoChatMemory) -> None:
    await memory.aput(user("one"))
    await memory.aput_messages([assistant("two"), user("three")])
    assert contents(await memory.aget()) == ["one", "two", "three"]
    await memory.aset([user("four")])
    assert contents(await memory.aget_all()) == ["four"]
    await memory.areset()
    assert await memory.aget_all() == []


async def test_async_methods_leave_the_event_loop_free(embedder: Embedder, tmp_path: Path) -> None:
    with Memento.open(tmp_path / "slow", embedder=embedder) as store:
        memory = MementoChatMemory.from_defaults(store=store, session_id="s")
        original = memory.chat.window

        def slow_window() -> list:  # type: ignore[type-arg]
            time.sleep(0.3)
            return original()

        memory.chat.window = slow_window  # type: ignore[method-assign]
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        await memory.aget()
        task.cancel()
        assert ticks > 3


def test_messages_survive_a_restart(embedder: Embedder, tmp_path: Path) -> None:
    path = tmp_path / "durable"
    with Memento.open(path, embedder=embedder) as first:
        memory = MementoChatMemory.from_defaults(store=first, user_id="alice", session_id="s1")
        memory.put_messages([user("I moved to Lisbon."), assistant("Noted.")])
        saved = memory.to_dict()
    with Memento.open(path, embedder=embedder) as second:
        again = MementoChatMemory.from_dict(saved, store=second)
        assert contents(again.get_all()) == ["I moved to Lisbon.", "Noted."]


def test_to_dict_holds_settings_only_and_from_dict_reopens_the_store(
    store: Memento, tmp_path: Path
) -> None:
    memory = MementoChatMemory.from_defaults(
        store=store, user_id="alice", session_id="s9", token_limit=123, memory_share=0.1
    )
    memory.put(user("hello"))
    data = memory.to_dict()
    assert data["class_name"] == "MementoChatMemory"
    assert data["path"] == store.location
    assert "hello" not in str(data)
    # Without a store, from_dict opens (and shares per process) the one the settings name.
    rebuilt = MementoChatMemory.from_string(memory.to_string())
    assert (rebuilt.token_limit, rebuilt.memory_share, rebuilt.user_id) == (123, 0.1, "alice")
    assert rebuilt.memento is MementoChatMemory.from_dict(data).memento


def test_bad_input_raises_clearly_and_harms_nothing_stored(memory: MementoChatMemory) -> None:
    memory.put_messages([user("keep me"), assistant("kept")])
    before = memory.get_all()
    image = ChatMessage(role=MessageRole.USER, blocks=[ImageBlock(image=b"\x89PNG")])
    with pytest.raises(InvalidContent, match="image"):
        memory.put(image)
    with pytest.raises(InvalidInput, match="answers no tool call"):
        memory.put(tool_result("nowhere", "?"))
    with pytest.raises(InvalidContent):  # one bad message in a batch stores none of it
        memory.put_messages([user("lost"), user("")])
    with pytest.raises(InvalidInput, match="answers no earlier tool call"):
        memory.set([user("replacement"), tool_result("nowhere", "?")])
    with pytest.raises(InvalidContent):
        memory.set([user("replacement"), image])
    assert memory.get_all() == before
    assert [m.content for m in memory.history()] == ["keep me", "kept"]


def test_bad_settings_are_refused_when_built(store: Memento) -> None:
    with pytest.raises(ValueError, match="user_id"):
        MementoChatMemory.from_defaults(store=store, user_id="")
    with pytest.raises(ValueError, match="token_limit"):
        MementoChatMemory.from_defaults(store=store, token_limit=0)
    with pytest.raises(ValueError, match="memory_share"):
        MementoChatMemory.from_defaults(store=store, memory_share=1.5)
    with pytest.raises(ValueError, match="either path"):
        MementoChatMemory(path="/tmp/a", url="http://127.0.0.1:1")
    with pytest.raises(ValueError, match="sesion_id"):
        MementoChatMemory.from_defaults(store=store, sesion_id="typo")
    with pytest.raises(ValueError, match="session_id"):
        MementoChatMemory.from_defaults(store=store, session_id="bad\x00id")


# ------------------------------------------------------------------- ownership (issue 21)


def _bobs_view(store: Memento, session_id: str) -> MementoChatMemory:
    return MementoChatMemory.from_defaults(
        store=store, user_id="bob", session_id=session_id, tokenizer_fn=split_tokens
    )


def test_a_session_id_is_not_a_capability(store: Memento, fresh: Callable[[str], str]) -> None:
    """Bob, given alice's session id, can neither read, add to, replace, reset, purge nor
    archive her conversation; hers is unharmed."""
    session = fresh("alice")
    hers = MementoChatMemory.from_defaults(
        store=store, user_id="alice", session_id=session, tokenizer_fn=split_tokens
    )
    hers.put_messages([user("my door code is 4417"), assistant("noted")])
    bobs = _bobs_view(store, session)
    for attempt in (
        bobs.get,
        lambda: bobs.get("door code"),
        bobs.get_all,
        bobs.history,
        lambda: bobs.put(user("bob was here")),
        lambda: bobs.put_messages([user("bob was here")]),
        lambda: bobs.set([user("bob's version")]),
        bobs.reset,
        lambda: bobs.chat.reset(purge=True),
        bobs.archive,
        lambda: MementoChatMemory.from_defaults(
            chat_history=[user("bob's version")], store=store, user_id="bob", session_id=session
        ),
    ):
        with pytest.raises(NotOwner, match="belongs to another user"):
            attempt()

    assert contents(hers.get_all()) == ["my door code is 4417", "noted"]
    assert contents(hers.history()) == ["my door code is 4417", "noted"]
    assert not [i for i in store.items() if i.scope.user_id == "bob"]  # nothing archived as his


async def test_the_async_twins_refuse_another_users_session_too(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    session = fresh("alice")
    hers = MementoChatMemory.from_defaults(store=store, user_id="alice", session_id=session)
    await hers.aput(user("my door code is 4417"))
    bobs = _bobs_view(store, session)
    for attempt in (
        bobs.aget,
        bobs.aget_all,
        bobs.ahistory,
        lambda: bobs.aput(user("bob was here")),
        lambda: bobs.aput_messages([user("bob was here")]),
        lambda: bobs.aset([]),
        bobs.areset,
        bobs.aarchive,
    ):
        with pytest.raises(NotOwner, match="belongs to another user"):
            await attempt()
    assert contents(await hers.aget_all()) == ["my door code is 4417"]
