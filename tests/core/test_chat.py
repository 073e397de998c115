"""Working memory: messages, chat windows, durable history, initial memory, archiving, errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import InvalidContent, InvalidInput, InvalidScope, Memento, MemoryType, Scope
from memento_core import _chat as chat_module
from memento_core._chat import (
    ChatMemory,
    FromSession,
    MessageTooLarge,
    WindowPolicy,
)
from memento_core._messages import Message, Role, ToolCall, from_openai, to_openai
from memento_core._model import utcnow
from memento_core._tokens import MESSAGE_OVERHEAD, WordPieceCounter, count_message

if TYPE_CHECKING:
    from conftest import StoreFactory

NO_SNAPSHOT = {"snapshot_on_overflow": False}


def chat(mem: Memento, session: str = "s1", **policy: Any) -> ChatMemory:
    options = {**NO_SNAPSHOT, **policy}
    return ChatMemory(mem, session, policy=WindowPolicy(**options))


def call(call_id: str, name: str = "search", **arguments: Any) -> Message:
    return Message.assistant(tool_calls=[ToolCall(call_id, name, arguments)])


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


# ----------------------------------------------------------------------------- messages


def test_messages_round_trip_through_openai_dicts() -> None:
    conversation = [
        Message.system("You book flights."),
        Message.user("Find me a flight to Lisbon", name="ann"),
        Message.assistant(
            "Searching.", tool_calls=[ToolCall("c1", "search", {"to": "LIS", "pax": 1})]
        ),
        Message.tool('{"flights": ["TP123"]}', tool_call_id="c1"),
        Message.assistant("TP123 leaves at 9:00."),
    ]
    dicts = to_openai(conversation)
    assert dicts[2]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"to": "LIS", "pax": 1}'},
        }
    ]
    assert dicts[3] == {"role": "tool", "content": '{"flights": ["TP123"]}', "tool_call_id": "c1"}
    assert dicts[1]["name"] == "ann"
    assert from_openai(dicts) == conversation


def test_openai_dict_variants_are_read() -> None:
    bare = Message.from_openai(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c9", "function": {"name": "now", "arguments": ""}}],
        }
    )
    assert bare.content == "" and bare.tool_calls == (ToolCall("c9", "now", {}),)
    assert bare.to_openai()["content"] is None
    parts = Message.from_openai(
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    )
    assert parts == Message.user("a\nb")
    assert Message.from_openai({"role": "developer", "content": "rules"}).role is Role.SYSTEM


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"role": "wizard", "content": "hi"}, "unknown role 'wizard'"),
        ({"role": "user", "content": b"bytes"}, "must be text"),
        ({"role": "user", "content": {"text": "hi"}}, "must be text"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            "'image_url' is not text",
        ),
        ({"role": "user", "content": "  "}, "needs text"),
        ({"role": "assistant", "content": ""}, "text or tool calls"),
        ({"role": "tool", "content": "42"}, "needs the tool_call_id"),
        ({"role": "user", "content": "hi", "tool_call_id": "c1"}, "only tool messages"),
        (
            {
                "role": "user",
                "content": "hi",
                "tool_calls": [{"id": "c", "function": {"name": "f"}}],
            },
            "only assistant messages",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}],
            },
            "not valid JSON",
        ),
    ],
)
def test_malformed_messages_are_refused(value: dict[str, Any], error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        Message.from_openai(value)


def test_message_rules_hold_for_direct_construction() -> None:
    with pytest.raises(InvalidContent):
        Message(Role.USER, 42)  # type: ignore[arg-type]  # the error is the point
    with pytest.raises(InvalidInput, match="unique"):
        Message.assistant(tool_calls=[ToolCall("c", "f"), ToolCall("c", "g")])
    with pytest.raises(InvalidInput, match="JSON object"):
        ToolCall("c", "f", ["not", "an", "object"])  # type: ignore[arg-type]  # on purpose


# ------------------------------------------------------------------------------ tokens


def test_default_counter_is_the_real_wordpiece_tokenizer() -> None:
    counter = WordPieceCounter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("tokenization") == 2  # token + ##ization
    assert counter.count("word " * 300) == 300  # no truncation at the model's 128/256 limit
    message = Message.assistant("ok", tool_calls=[ToolCall("c1", "search", {"q": "x"})])
    expected = MESSAGE_OVERHEAD + 1 + counter.count("search") + counter.count('{"q": "x"}')
    assert count_message(message, counter) == expected


def test_counting_tokens_does_not_import_torch() -> None:
    code = (
        "import sys; from memento_core._tokens import default_counter;"
        "import memento_core._chat, memento_core._injection;"
        "assert default_counter().count('hello world') == 2;"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------------- windows


def test_message_window_keeps_the_last_n(mem: Memento) -> None:
    memory = chat(mem, max_messages=3)
    for n in range(6):
        memory.append(Message.user(f"message {n}"))
    assert contents(memory.window()) == ["message 3", "message 4", "message 5"]
    assert contents(memory.history()) == [f"message {n}" for n in range(6)]


def test_token_window_keeps_the_last_n_tokens_and_never_splits(mem: Memento) -> None:
    counter = WordPieceCounter()
    texts = [f"the number {n} is here" for n in range(10)]  # 5 words → 5 + 4 tokens each
    cost = count_message(Message.user(texts[0]), counter)
    memory = chat(mem, max_tokens=cost * 3 + cost // 2)
    for text in texts:
        memory.append(Message.user(text))
    assert contents(memory.window()) == texts[-3:]
    assert memory.tokens() == cost * 3


def test_the_system_message_is_kept_counted_replaced_or_ignored(mem: Memento) -> None:
    counter = WordPieceCounter()
    memory = chat(mem, max_tokens=40)
    first = memory.set_system("You are terse.")
    for n in range(12):
        memory.append(Message.user(f"turn {n}"))
    window = memory.window()
    assert window[0] == first and window[0].id == first.id
    assert sum(count_message(m, counter) for m in window) == memory.tokens() <= 40
    again = memory.set_system("You are terse.")
    assert again.id == first.id
    assert [m for m in memory.history() if m.role is Role.SYSTEM] == [first]
    second = memory.append({"role": "system", "content": "You are verbose."})
    window = memory.window()
    assert [m for m in window if m.role is Role.SYSTEM] == [second] and window[0] == second
    assert [m.id for m in memory.history() if m.role is Role.SYSTEM] == [first.id, second.id]


def test_evicting_a_tool_call_evicts_its_results(mem: Memento) -> None:
    memory = chat(mem, max_messages=4)
    memory.append(Message.user("weather in Paris and Rome?"))
    memory.append(
        Message.assistant(tool_calls=[ToolCall("p", "weather", {}), ToolCall("r", "weather", {})])
    )
    memory.append(Message.tool("Paris: 20C", tool_call_id="p"))
    memory.append(Message.tool("Rome: 25C", tool_call_id="r"))
    memory.append(Message.assistant("Paris 20C, Rome 25C."))  # evicts the user message
    assert [m.role for m in memory.window()][:2] == [Role.ASSISTANT, Role.TOOL]
    memory.append(Message.user("thanks"))  # evicts the call, so both results go with it
    assert contents(memory.window()) == ["Paris 20C, Rome 25C.", "thanks"]
    assert len(memory.history()) == 6


def test_a_window_never_starts_with_an_orphan_tool_result(mem: Memento) -> None:
    counter = WordPieceCounter()
    memory = chat(mem, max_tokens=60)
    memory.append(call("c1", query="x"))
    memory.append(Message.tool("result " * 10, tool_call_id="c1"))
    budget_left = 60 - sum(count_message(m, counter) for m in memory.window())
    memory.append(Message.user("word " * (budget_left + 1)))  # pushes the call out
    window = memory.window()
    assert window[0].role is Role.USER and len(window) == 1


def test_a_message_larger_than_the_window_is_refused_and_nothing_stored(mem: Memento) -> None:
    memory = chat(mem, max_tokens=50)
    memory.set_system("Be brief.")
    memory.append(Message.user("hello"))
    before_window, before_history = memory.window(), memory.history()
    message = "user message of 64 tokens beside a system message of 7 does not fit a 50-token"
    with pytest.raises(MessageTooLarge, match=message) as caught:
        memory.append(Message.user("word " * 60))
    assert caught.value.size == 64 and caught.value.budget == 50
    assert isinstance(caught.value, InvalidInput)
    assert memory.window() == before_window and memory.history() == before_history
    with pytest.raises(MessageTooLarge):
        memory.set_system("rule " * 60)
    assert memory.window() == before_window


def test_a_tool_exchange_larger_than_the_window_is_refused(mem: Memento) -> None:
    memory = chat(mem, max_messages=2)
    memory.append(Message.assistant(tool_calls=[ToolCall("a", "f", {}), ToolCall("b", "f", {})]))
    memory.append(Message.tool("one", tool_call_id="a"))
    with pytest.raises(MessageTooLarge, match="make 3 messages; the window holds 2"):
        memory.append(Message.tool("two", tool_call_id="b"))
    assert len(memory.history()) == 2


def test_initial_memory_needs_a_real_session_and_count() -> None:
    with pytest.raises(InvalidScope):
        FromSession("")
    with pytest.raises(InvalidInput, match="last"):
        FromSession("old", last=0)


@pytest.mark.parametrize(
    "policy",
    [
        {"max_messages": 0},
        {"max_messages": -3},
        {"max_tokens": 0},
        {"max_tokens": -1},
        {"max_tokens": True},
        {"max_tokens": 2.5},
        {"snapshot_chunk": 0},
        {"ttl": timedelta(0)},
    ],
)
def test_bad_window_policies_are_refused(policy: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        WindowPolicy(**policy)


def test_bad_input_is_refused_and_harms_nothing(mem: Memento) -> None:
    memory = chat(mem, max_messages=10)
    memory.append(Message.user("first"))
    memory.append(call("c1"))
    memory.append(Message.tool("done", tool_call_id="c1"))
    stored = memory.history()
    bad: list[Any] = [
        {"role": "wizard", "content": "hi"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "tool", "content": "?", "tool_call_id": "nope"},
        Message.tool("again", tool_call_id="c1"),
        "just a string",
    ]
    for value in bad:
        with pytest.raises(InvalidInput):
            memory.append(value)
    with pytest.raises(InvalidInput, match="no tool call in the window"):
        memory.extend([Message.user("ok"), Message.tool("x", tool_call_id="ghost")])
    assert memory.history() == stored and memory.window() == stored
    with pytest.raises(InvalidScope):
        ChatMemory(mem, "")
    with pytest.raises(InvalidScope):
        mem.history({"$ne": "x"})  # type: ignore[arg-type]  # an operator smuggled as an id


# ----------------------------------------------------------------- history and persistence


def test_reopening_restores_every_window_exactly(store_factory: StoreFactory) -> None:
    policies = {
        "tokens": {"max_tokens": 45},
        "messages": {"max_messages": 3},
        "reset": {"max_messages": 5},
    }
    expected: dict[str, tuple[list[Message], list[str | None], list[Message]]] = {}
    with store_factory.open() as mem:
        for session, policy in policies.items():
            memory = chat(mem, session, **policy)
            memory.set_system(f"system of {session}")
            for n in range(7):
                memory.append(Message.user(f"{session} says {n}"))
                memory.append(call(f"{session}-{n}"))
                memory.append(Message.tool(f"answer {n}", tool_call_id=f"{session}-{n}"))
            if session == "reset":
                memory.reset()
                memory.append(Message.user("after the reset"))
            window = memory.window()
            expected[session] = (window, [m.id for m in window], memory.history())
    with store_factory.open() as mem:
        for session, policy in policies.items():
            memory = chat(mem, session, **policy)
            window, ids, full = expected[session]
            assert memory.window() == window
            assert [m.id for m in memory.window()] == ids
            assert memory.history() == full and len(full) == 22 + (session == "reset")
    assert contents(expected["reset"][0]) == ["after the reset"]


def test_history_keeps_evicted_messages_with_ids_and_times(mem: Memento) -> None:
    memory = chat(mem, max_messages=2)
    added = [memory.append(Message.user(f"m{n}")) for n in range(5)]
    full = mem.history("s1")
    assert full == added and [m.id for m in full] == [m.id for m in added]
    assert all(m.created_at is not None for m in full)
    assert [m.id for m in full] == sorted(m.id or "" for m in full)


def test_reset_keeps_history_and_purge_erases_it(mem: Memento) -> None:
    memory = chat(mem, max_messages=5)
    memory.set_system("sys")
    memory.extend([Message.user("a"), Message.assistant("b")])
    memory.reset()
    assert memory.window() == []
    assert contents(memory.history()) == ["sys", "a", "b"]
    memory.append(Message.user("c"))
    assert contents(memory.window()) == ["c"]
    other = chat(mem, "s2")
    other.append(Message.user("keep me"))
    memory.reset(purge=True)
    assert memory.window() == [] and memory.history() == []
    assert contents(mem.history("s2")) == ["keep me"]
    memory.append(Message.user("fresh start"))
    assert contents(memory.window()) == ["fresh start"]


def test_window_expires_after_its_ttl(mem: Memento, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = chat(mem, max_messages=5)
    assert memory.policy.ttl == timedelta(hours=48)
    memory.append(Message.user("soon stale"))
    assert contents(memory.window()) == ["soon stale"]
    later = utcnow() + timedelta(hours=48, minutes=1)
    with monkeypatch.context() as patch:
        patch.setattr(chat_module, "utcnow", lambda: later)
        assert memory.window() == []
    memory.append(Message.user("new day"))
    assert contents(memory.window()) == ["new day"]
    assert contents(memory.history()) == ["soon stale", "new day"]
    forever = chat(mem, "forever", max_messages=5, ttl=None)
    forever.append(Message.user("kept"))
    with monkeypatch.context() as patch:
        patch.setattr(chat_module, "utcnow", lambda: later + timedelta(days=365))
        assert contents(forever.window()) == ["kept"]


def test_erasing_a_user_deletes_their_chat_messages(mem: Memento) -> None:
    ann = ChatMemory(
        mem, "ann-chat", scope=Scope(user_id="ann"), policy=WindowPolicy(**NO_SNAPSHOT)
    )
    ben = ChatMemory(
        mem, "ben-chat", scope=Scope(user_id="ben"), policy=WindowPolicy(**NO_SNAPSHOT)
    )
    ann.extend([Message.user("my address is 1 Main St"), Message.assistant("noted")])
    ben.append(Message.user("hello"))
    assert mem.erase_user("ann").messages == 2
    assert ann.history() == [] and ann.window() == []
    assert contents(ben.window()) == ["hello"]
    assert mem.erase_user("nobody").messages == 0


# --------------------------------------------------------------------------- initial memory


def test_initial_memory_from_an_earlier_session(mem: Memento) -> None:
    old = chat(mem, "old", max_messages=50)
    old.set_system("old system")
    old.append(Message.user("plan a trip"))
    old.append(call("c1"))
    old.append(Message.tool("found", tool_call_id="c1"))
    old.append(Message.assistant("Lisbon it is."))
    seeded = ChatMemory(mem, "new", initial=FromSession("old", last=2))
    window = seeded.window()
    # The last 2 start with a tool result whose call is left behind: it is dropped too.
    assert contents(window) == ["Lisbon it is."]
    with_call = ChatMemory(mem, "new1", initial=FromSession("old", last=3)).window()
    assert [m.role for m in with_call] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert ChatMemory(mem, "new2", initial=FromSession("old", last=10)).window() == [
        m for m in old.history() if m.role is not Role.SYSTEM
    ]
    assert window[0].id not in {m.id for m in old.history()}
    assert contents(seeded.history()) == ["Lisbon it is."]


def test_initial_memory_never_copies_another_users_session(mem: Memento) -> None:
    ann = ChatMemory(mem, "ann-old", scope=Scope(user_id="ann"))
    ann.append(Message.user("my secret plan"))
    own = ChatMemory(mem, "ann-new", scope=Scope(user_id="ann"), initial=FromSession("ann-old"))
    assert contents(own.window()) == ["my secret plan"]
    ben = ChatMemory(mem, "ben-new", scope=Scope(user_id="ben"), initial=FromSession("ann-old"))
    for _ in range(2):
        with pytest.raises(InvalidInput, match="no messages to start from"):
            ben.window()
    assert mem.history("ben-new") == []


def test_initial_memory_from_messages_or_nothing(mem: Memento) -> None:
    given = [Message.user("I am Ann"), {"role": "assistant", "content": "Hi Ann"}]
    seeded = ChatMemory(mem, "a", initial=given)
    assert contents(seeded.window()) == ["I am Ann", "Hi Ann"]
    assert ChatMemory(mem, "b").window() == []
    # A session with history keeps it: initial memory only seeds new sessions.
    again = ChatMemory(mem, "a", initial=[Message.user("other")])
    assert contents(again.window()) == ["I am Ann", "Hi Ann"]


# ------------------------------------------------------------------------- per-turn switches


def test_no_save_answers_without_writing_and_no_history_skips_history(mem: Memento) -> None:
    memory = chat(mem, max_messages=10)
    memory.set_system("sys")
    memory.append(Message.user("remember this"))
    before = mem.stats().memories
    secret = memory.append(Message.user("my password is hunter2"), no_save=True)
    assert secret.content == "my password is hunter2" and secret.id is None
    memory.extend([Message.assistant("noted")], no_save=True)
    assert contents(memory.history()) == ["sys", "remember this"]
    assert mem.stats().memories == before
    assert contents(memory.window(no_history=True)) == ["sys"]
    assert contents(memory.window()) == ["sys", "remember this"]


# ------------------------------------------------------------------- archiving and overflow


def test_summarize_thread_writes_an_episodic_memory_of_the_session(mem: Memento) -> None:
    ann = Scope(user_id="ann", agent_id="travel")
    memory = ChatMemory(mem, "s1", scope=ann, policy=WindowPolicy(max_messages=3))
    memory.set_system("You are a travel agent.")
    memory.append(Message.user("I need a flight from Berlin to Lisbon on May 3."))
    memory.append(Message.assistant("TAP flight TP541 leaves Berlin at 9:40 on May 3."))
    memory.append(Message.user("Book it, and add a window seat."))
    memory.append(Message.assistant("Booked TP541 with a window seat, confirmation X7Q2."))
    memory_id = mem.summarize_thread("s1")
    item = mem.get(memory_id)
    assert item.type is MemoryType.EPISODIC and item.scope == ann.with_session("s1")
    trace = item.origin_trace
    non_system = [m for m in memory.history() if m.role is not Role.SYSTEM]
    assert trace["session_id"] == "s1" and trace["messages"] == [m.id for m in non_system]
    assert "TP541" in item.content and "travel agent" not in item.content
    assert memory.archive() == memory_id  # the same summary is the same memory
    found = mem.recall("flight to Lisbon booking", scope=Scope(user_id="ann"), limit=3)
    assert memory_id in [r.item.id for r in found]
    with pytest.raises(InvalidInput, match="no messages"):
        mem.summarize_thread("never-used")
    with pytest.raises(InvalidInput, match="no messages"):  # not Ben's to archive
        mem.summarize_thread("s1", scope=Scope(user_id="ben"))


def test_overflow_is_snapshotted_into_episodic_memory(mem: Memento) -> None:
    memory = ChatMemory(mem, "s1", policy=WindowPolicy(max_messages=4, snapshot_chunk=2))
    added = [memory.append(Message.user(f"Fact number {n}: the sky is blue.")) for n in range(8)]
    snapshots = [i for i in mem.items() if "chat-overflow" in i.tags]
    traced = [m for s in sorted(snapshots, key=lambda i: i.origin_trace["messages"][0])
              for m in s.origin_trace["messages"]]  # fmt: skip
    assert traced == [m.id for m in added[:4]]  # evicted = archived, in order, once
    assert all(s.type is MemoryType.EPISODIC for s in snapshots) and len(snapshots) == 2
    quiet = chat(mem, "quiet", max_messages=2)
    for n in range(6):
        quiet.append(Message.user(f"quiet {n}"))
    assert not [i for i in mem.items() if i.scope.session_id == "quiet"]


def test_pending_overflow_survives_a_reopen(store_factory: StoreFactory) -> None:
    policy = WindowPolicy(max_messages=2, snapshot_chunk=3)
    with store_factory.open() as mem:
        memory = ChatMemory(mem, "s1", policy=policy)
        added = [memory.append(Message.user(f"point {n} about gardens")) for n in range(4)]
        assert not [i for i in mem.items() if "chat-overflow" in i.tags]  # 2 evicted < 3
    with store_factory.open() as mem:
        memory = ChatMemory(mem, "s1", policy=policy)
        memory.append(Message.user("point 4 about gardens"))
        [snapshot] = [i for i in mem.items() if "chat-overflow" in i.tags]
        assert snapshot.origin_trace["messages"] == [m.id for m in added[:3]]


# ------------------------------------------------------------------------------ async twins


async def test_async_twins_give_the_same_results(mem: Memento) -> None:
    memory = chat(mem, max_messages=3)
    await memory.aset_system("sys")
    stored = await memory.aappend(Message.user("hi"))
    await memory.aextend([Message.assistant("hello"), Message.user("bye")])
    assert contents(await memory.awindow()) == ["sys", "hi", "hello", "bye"]
    assert (await memory.ahistory())[1] == stored
    assert await memory.atokens() == memory.tokens()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await memory.aappend(Message.user("while the loop keeps running"))
    task.cancel()
    assert ticks > 0  # the write ran in a thread; the event loop was free
    await memory.areset()
    assert await memory.awindow() == []
