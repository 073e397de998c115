"""MementoMemoryBlock and MementoChatStore inside LlamaIndex's own Memory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from _llamaindex_support import assistant, tool_call, tool_result, user, words
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus

from memento_core import Embedder, InvalidInput, Memento, MemoryItem, NotOwner, Scope, plugins
from memento_core.plugins import hookimpl
from memento_llamaindex import MementoChatStore, MementoMemoryBlock


def split_tokens(text: str) -> list[str]:
    return text.split()


def contents(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


async def test_the_block_recalls_for_the_input_into_the_system_message(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    store.remember("Mina keeps her bicycle in the blue shed.", scope=Scope(user_id="mina"))
    store.remember("Omar keeps his bicycle at work.", scope=Scope(user_id="omar"))
    memory = Memory.from_defaults(
        session_id=fresh("session"),
        memory_blocks=[MementoMemoryBlock(store=store, user_id="mina")],
    )
    await memory.aput(user("Good morning!"))
    messages = await memory.aget(input="Where is my bicycle?")
    assert messages[0].role == MessageRole.SYSTEM
    system = messages[0].content or ""
    assert "<memento>" in system and "blue shed" in system
    assert "Omar" not in system
    assert contents(messages[1:]) == ["Good morning!"]


async def test_the_block_recalls_for_the_newest_user_message_and_adds_nothing_without_one(
    store: Memento,
) -> None:
    store.remember("The retro moved to Thursday afternoons.")
    block = MementoMemoryBlock(store=store)
    text = await block.aget([user("hello"), assistant("hi"), user("when is the retro?")])
    assert "Thursday afternoons" in text
    assert await block.aget([assistant("only me")]) == ""
    assert await block.aget([]) == ""


async def test_what_the_block_puts_into_the_prompt_counts_as_a_use_as_in_core(
    store: Memento, embedder: Embedder, tmp_path: Path
) -> None:
    # aget's text goes into the prompt: each memory in it is used once, as core's
    # memory_injection counts (recall counts an access only); without usage tracking, nothing.
    shed = store.remember("Mina keeps her bicycle in the blue shed.", scope=Scope(user_id="mina"))
    block = MementoMemoryBlock(store=store, user_id="mina")
    for _ in range(2):
        assert "blue shed" in await block.aget([user("Where is my bicycle?")])
    store.memory_injection("Where is my bicycle?", scope=Scope(user_id="mina"))
    assert store.get(shed).access_count == 3
    with Memento.open(tmp_path / "untracked", embedder=embedder, track_usage=False) as quiet:
        kept = quiet.remember("Mina keeps her bicycle in the blue shed.")
        assert "blue shed" in await MementoMemoryBlock(store=quiet).aget([user("bicycle?")])
        assert quiet.get(kept).access_count == 0


async def test_the_retrieval_context_window_queries_with_the_last_messages(store: Memento) -> None:
    store.remember("The retro moved to Thursday afternoons.")
    store.remember("Parking passes are renewed in March.")
    recent = [user("the retro, when is it?"), assistant("checking"), user("and parking?")]

    newest = await MementoMemoryBlock(store=store, recall_limit=1).aget(recent)
    wide = await MementoMemoryBlock(store=store, recall_limit=2, retrieval_context_window=3).aget(
        recent
    )

    assert "Parking passes" in newest and "Thursday" not in newest
    assert "Parking passes" in wide and "Thursday" in wide


async def test_node_postprocessors_and_format_template_shape_what_the_block_returns(
    store: Memento,
) -> None:
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle

    seen: list[tuple[list[str], str | None]] = []

    class Recorder(BaseNodePostprocessor):
        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            seen.append(([n.node.node_id for n in nodes], query_bundle and query_bundle.query_str))
            return list(reversed(nodes))

    first = store.remember("The retro moved to Thursday afternoons.")
    second = store.remember("The retro room is Aurora on the 4th floor.")
    block = MementoMemoryBlock(
        store=store,
        recall_limit=2,
        node_postprocessors=[Recorder()],
        format_template="<recalled>\n{{ text }}\n</recalled>",
    )

    text = await block.aget([user("where and when is the retro?")])

    ((ranked, query),) = seen  # the recalled memories, in Memento's order, and the query
    assert sorted(ranked) == sorted([first, second]) and query == "where and when is the retro?"
    assert text.startswith("<recalled>\n") and text.endswith("\n</recalled>")
    shown = [line for line in text.split("\n")[1:-1] if line]
    assert shown == [store.get(i).content for i in reversed(ranked)]  # the postprocessed order
    strict = MementoMemoryBlock(
        store=store, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=2.0)]
    )
    assert await strict.aget([user("where and when is the retro?")]) == ""
    plain = MementoMemoryBlock(store=store, format_template="Memories: {text}")
    assert (await plain.aget([user("when is the retro?")])).startswith("Memories: ")


async def test_flushed_messages_become_episodic_memories_of_the_session(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    session = fresh("session")
    block = MementoMemoryBlock(store=store, user_id="mina", agent_id="helper")
    memory = Memory.from_defaults(
        session_id=session,
        memory_blocks=[block],
        token_limit=60,
        token_flush_size=20,
        tokenizer_fn=split_tokens,
    )
    await memory.aput_messages(
        [
            ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
            user("My sister Lan lives in Hue and teaches piano."),
            tool_call("c1", "lookup", q="Hue"),
            tool_result("c1", "Hue is in central Vietnam."),
            assistant("Lovely; Hue is in central Vietnam."),
            user(words(30, "filler")),
            assistant(words(30, "more")),
        ]
    )
    items = store.items(scope=Scope(user_id="mina"))
    by_content = {item.content: item for item in items}
    lan = by_content["My sister Lan lives in Hue and teaches piano."]
    assert lan.type.value == "episodic"
    assert lan.scope == Scope(user_id="mina", agent_id="helper", session_id=session)
    assert by_content["Hue is in central Vietnam."].source == "tool"
    assert "Be brief." not in by_content  # instructions are not episodes
    found = await block.aget([user("Who teaches piano?")], session_id=fresh("other"))
    assert "Lan lives in Hue" in found  # recall spans sessions


async def test_priority_lets_memory_drop_the_block_when_the_context_is_too_long(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    store.remember("Mina keeps her bicycle in the blue shed.")
    droppable = MementoMemoryBlock(store=store, priority=1)
    kept = MementoMemoryBlock(store=store, name="kept", priority=0)
    for block, expected in ((droppable, False), (kept, True)):
        memory = Memory.from_defaults(
            session_id=fresh(block.name), memory_blocks=[block], token_limit=30,
            chat_history_token_ratio=0.9, tokenizer_fn=split_tokens,
        )  # fmt: skip
        await memory.aput(user(words(20)))
        messages = await memory.aget(input="where is the bicycle?")
        assert ("blue shed" in (messages[0].content or "")) is expected


async def test_remember_checks_every_message_before_storing_any(store: Memento) -> None:
    block = MementoMemoryBlock(store=store, user_id="mina")
    bad = ChatMessage(role=MessageRole.USER, content="x", additional_kwargs={"created_at": "nope"})
    with pytest.raises(InvalidInput, match="created_at"):
        await block.aremember([user("a fine message"), bad])
    with pytest.raises(InvalidInput, match="session_id"):
        await block.aremember([user("a fine message")], session_id="")
    assert store.items() == []
    image = ChatMessage(role=MessageRole.USER, blocks=[ImageBlock(image=b"\x89PNG")])
    assert await block.aremember([image]) == []  # no text: nothing to remember


async def test_the_chat_store_makes_memory_durable_across_a_restart(
    embedder: Embedder, tmp_path: Path
) -> None:
    path = tmp_path / "durable"
    with Memento.open(path, embedder=embedder) as first:
        memory = Memory.from_defaults(
            session_id="s1",
            chat_store=MementoChatStore(store=first, user_id="mina"),
            memory_blocks=[MementoMemoryBlock(store=first, user_id="mina")],
            token_limit=50,
            token_flush_size=10,
            tokenizer_fn=split_tokens,
        )
        for n in range(4):
            await memory.aput(user(f"question {n} " + words(8)))
            await memory.aput(assistant(f"answer {n} " + words(8)))
        active = contents(await memory.aget())
        everything = contents(await memory.aget_all())
        assert 0 < len(active) < len(everything) == 8
    with Memento.open(path, embedder=embedder) as second:
        store = MementoChatStore(store=second, user_id="mina")
        again = Memory.from_defaults(session_id="s1", chat_store=store, tokenizer_fn=split_tokens)
        assert contents(await again.aget()) == active
        assert contents(await again.aget_all()) == everything
        archived = await store.get_messages("s1", status=MessageStatus.ARCHIVED)
        assert contents(archived) == everything[: len(everything) - len(active)]
        assert await store.count_messages("s1") == len(active)
        await again.areset()
        assert await again.aget_all() == []


async def test_the_chat_store_keeps_the_async_db_chat_store_contract(store: Memento) -> None:
    chats = MementoChatStore(store=store)
    await chats.set_messages("k", [user("one"), assistant("two"), user("three"), assistant("4")])
    assert contents(await chats.get_messages("k", limit=2, offset=1)) == ["two", "three"]
    archived = await chats.archive_oldest_messages("k", 2)
    assert contents(archived) == ["one", "two"]
    assert contents(await chats.get_messages("k")) == ["three", "4"]
    assert await chats.count_messages("k", status=MessageStatus.ARCHIVED) == 2
    assert contents(await chats.get_messages("k", status=None)) == ["one", "two", "three", "4"]
    removed = await chats.delete_message("k", 1)
    assert removed is not None and removed.content == "two"
    assert contents(await chats.get_messages("k", status=None)) == ["one", "three", "4"]
    assert await chats.delete_message("k", 99) is None
    assert contents(await chats.delete_oldest_messages("k", 1)) == ["three"]
    await chats.add_message("k", user("five"))
    assert contents(await chats.get_messages("k")) == ["4", "five"]
    await chats.delete_messages("k", status=MessageStatus.ARCHIVED)
    assert contents(await chats.get_messages("k", status=None)) == ["4", "five"]
    await chats.delete_messages("k", status=MessageStatus.ACTIVE)
    assert await chats.get_messages("k", status=None) == []
    with pytest.raises(NotImplementedError, match="keys"):
        await chats.get_keys()


async def test_archiving_keeps_the_system_message_and_takes_tool_results_along(
    store: Memento,
) -> None:
    chats = MementoChatStore(store=store)
    system = ChatMessage(role=MessageRole.SYSTEM, content="Be brief.")
    await chats.add_messages(
        "t",
        [system, tool_call("c1"), tool_result("c1", "found"), user("next"), assistant("ok")],
    )
    archived = await chats.archive_oldest_messages("t", 2)  # the system message and the call
    assert [m.role for m in archived] == [MessageRole.ASSISTANT, MessageRole.TOOL]
    assert contents(await chats.get_messages("t")) == ["Be brief.", "next", "ok"]
    await chats.archive_oldest_messages("t", 10)
    assert contents(await chats.get_messages("t")) == ["Be brief."]


async def test_bad_chat_store_requests_raise_and_change_nothing(store: Memento) -> None:
    chats = MementoChatStore(store=store)
    await chats.add_messages("b", [user("keep"), tool_call("c1"), tool_result("c1", "r")])
    before = await chats.get_messages("b", status=None)
    with pytest.raises(InvalidInput, match="answers no"):
        await chats.add_message("b", tool_result("elsewhere", "?"))
    with pytest.raises(InvalidInput, match="answers no earlier"):
        await chats.set_messages("b", [tool_result("c1", "r")])
    with pytest.raises(InvalidInput, match="answers no earlier"):
        await chats.delete_message("b", 1)  # would orphan the tool result
    with pytest.raises(InvalidInput, match="active only"):
        await chats.add_message("b", user("x"), status=MessageStatus.ARCHIVED)
    with pytest.raises(InvalidInput, match="session_id"):
        await chats.add_message("", user("x"))
    assert await chats.get_messages("b", status=None) == before


async def test_a_chat_key_is_not_a_capability(store: Memento) -> None:
    """Bob's chat store cannot read, add to, archive or delete alice's session (issue 21)."""
    hers = MementoChatStore(store=store, user_id="alice")
    await hers.set_messages("alice-key", [user("my pin is 7312"), assistant("noted")])
    bobs = MementoChatStore(store=store, user_id="bob")
    for attempt in (
        lambda: bobs.get_messages("alice-key"),
        lambda: bobs.count_messages("alice-key"),
        lambda: bobs.add_message("alice-key", user("bob was here")),
        lambda: bobs.delete_messages("alice-key"),
        lambda: bobs.archive_oldest_messages("alice-key", 1),
    ):
        with pytest.raises(NotOwner, match="belongs to another user"):
            await attempt()
    assert contents(await hers.get_messages("alice-key")) == ["my pin is 7312", "noted"]


async def test_the_messages_of_a_flush_are_written_together(
    store: Memento, fresh: Callable[[str], str]
) -> None:
    user_id = fresh("flusher")
    sizes: list[int] = []

    class Noting:
        @hookimpl
        def memento_on_remember(self, memento: Memento, items: list[MemoryItem]) -> None:
            if any(item.scope.user_id == user_id for item in items):
                sizes.append(len(items))

    block = MementoMemoryBlock(store=store, user_id=user_id)
    memory = Memory.from_defaults(
        session_id=fresh("session"),
        memory_blocks=[block],
        token_limit=40,
        token_flush_size=30,
        tokenizer_fn=split_tokens,
    )
    plugins.manager().register(Noting(), name="flush-noting")
    try:
        await memory.aput_messages(
            [user(f"fact {n}: {words(8, 'w')}") for n in range(6)] + [assistant("noted")]
        )
    finally:
        plugins.manager().unregister(name="flush-noting")
    # Memory flushes in rounds of ``token_flush_size`` tokens: one write per round, not one
    # per message.
    stored = store.items(scope=Scope(user_id=user_id))
    assert sizes and all(size > 1 for size in sizes) and sum(sizes) == len(stored)
