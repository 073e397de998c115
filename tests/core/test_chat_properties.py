"""Property-based checks of the window invariants, on a real embedded store.

Hypothesis drives random conversations (text, tool-call exchanges, system changes, resets)
through random window policies; after every step the window must keep its rules, and at the
end a reopened store must rebuild the very same window.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memento_core import Embedder, Memento
from memento_core._chat import ChatMemory, MessageTooLarge, WindowPolicy
from memento_core._messages import Message, Role, ToolCall
from memento_core._tokens import count_message, default_counter

WORDS = ["alpha", "beta", "gamma", "delta", "tokenization", "über", "数据", "🙂", "x1", "lisbon"]

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("user"), text),
        st.tuples(st.just("assistant"), text),
        st.tuples(st.just("tools"), st.lists(text, min_size=1, max_size=3)),
        st.tuples(st.just("system"), st.sampled_from(["Be brief.", "Answer in French, kindly."])),
        st.tuples(st.just("reset"), st.just("")),
    ),
    min_size=1,
    max_size=14,
)
policies = st.one_of(
    st.builds(WindowPolicy, max_tokens=st.integers(12, 160), snapshot_on_overflow=st.just(False)),
    st.builds(WindowPolicy, max_messages=st.integers(1, 6), snapshot_on_overflow=st.just(False)),
    st.builds(
        WindowPolicy,
        max_messages=st.integers(2, 6),
        max_tokens=st.integers(30, 160),
        snapshot_on_overflow=st.just(False),
    ),
)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chat-properties") / "store"


@pytest.fixture(scope="module")
def store(store_path: Path, embedder: Embedder) -> Iterator[Memento]:
    with Memento.open(store_path, embedder=embedder) as mem:
        yield mem


def check_window(memory: ChatMemory, policy: WindowPolicy, system: str | None) -> None:
    window = memory.window()
    body = [m for m in window if m.role is not Role.SYSTEM]
    if policy.max_tokens is not None:
        assert sum(count_message(m) for m in window) <= policy.max_tokens
    if policy.max_messages is not None:
        assert len(body) <= policy.max_messages
    if system is None:
        assert body == window
    else:
        assert window[0].content == system and len(window) == len(body) + 1
    calls: set[str] = set()
    for message in body:
        if message.role is Role.TOOL:
            assert message.tool_call_id in calls, "an orphan tool result in the window"
        calls.update(call.id for call in message.tool_calls)
    stored = memory.history()
    answered = {m.tool_call_id for m in stored if m.role is Role.TOOL} & calls
    assert answered <= {m.tool_call_id for m in body}, "a tool result left before its call"


def too_large(message: Message, group: list[Message], system: Message | None, p: Any) -> bool:
    """Whether ``message`` (with the tool call it completes) cannot fit even alone."""
    unit = [*group, message]
    if p.max_messages is not None and len(unit) > p.max_messages:
        return True
    if p.max_tokens is None:
        return False
    beside = count_message(system) if system is not None else 0
    return beside + sum(count_message(m) for m in unit) > p.max_tokens


@pytest.mark.slow  # 15-30 s on its own: `make test-slow` runs it
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies, script=steps)
def test_window_invariants_hold_and_survive_a_reopen(
    store: Memento, store_path: Path, embedder: Embedder, policy: WindowPolicy, script: Any
) -> None:
    session = uuid4().hex
    memory = ChatMemory(store, session, policy=policy)
    accepted: list[Message] = []
    system: Message | None = None
    for n, (kind, value) in enumerate(script):
        if kind == "reset":
            memory.reset()
            system = None
            check_window(memory, policy, None)
            continue
        if kind == "tools":
            call_ids = [f"{session}-{n}-{k}" for k in range(len(value))]
            batch = [Message.assistant(tool_calls=[ToolCall(c, "lookup") for c in call_ids])]
            batch += [Message.tool(v, tool_call_id=c) for c, v in zip(call_ids, value)]
        elif kind == "system":
            batch = [Message.system(value)]
        else:
            batch = [Message(Role(kind), value)]
        group: list[Message] = []
        for message in batch:
            if message.role is Role.SYSTEM and system is not None and message == system:
                memory.append(message)  # identical: ignored
                continue
            if message.role is Role.SYSTEM:  # a system message only has to fit alone
                expect_refusal = too_large(message, [], None, policy)
            else:
                expect_refusal = too_large(message, group, system, policy)
            try:
                stored = memory.append(message)
            except MessageTooLarge:
                assert expect_refusal, f"refused a message that fits: {message}"
                break
            assert not expect_refusal, f"kept a message that cannot fit: {message}"
            accepted.append(stored)
            if message.role is Role.SYSTEM:
                system = stored
            else:
                assert memory.window()[-1] == stored  # the newest message is always in the window
                if message.tool_calls or group:
                    group.append(stored)
            check_window(memory, policy, system.content if system else None)
        assert memory.history() == accepted  # every message ever added, evicted ones too
    window = memory.window()
    with Memento.open(store_path, embedder=embedder) as reopened:
        again = ChatMemory(reopened, session, policy=policy).window()
        assert again == window and [m.id for m in again] == [m.id for m in window]


@settings(max_examples=30, deadline=None)
@given(policy=policies, contents=st.lists(text, min_size=1, max_size=12))
def test_token_counts_in_the_window_use_the_pluggable_counter(
    store: Memento, policy: WindowPolicy, contents: list[str]
) -> None:
    class Characters:
        """Counts one token per character: a counter very different from WordPiece."""

        def count(self, value: str) -> int:
            return len(value)

    counter = Characters()
    memory = ChatMemory(store, uuid4().hex, policy=policy, counter=counter)
    for content in contents:
        try:
            memory.append(Message.user(content))
        except MessageTooLarge as refused:
            assert refused.size == count_message(Message.user(content), counter)
        if policy.max_tokens is not None:
            assert sum(count_message(m, counter) for m in memory.window()) <= policy.max_tokens
    assert memory.tokens() == sum(count_message(m, counter) for m in memory.window())
    assert default_counter().count("abc") != counter.count("abc")
