"""Hotword updates through a store: a change takes effect for new conversations, and a detector
is rebuilt only when the hotword set really changed."""

from __future__ import annotations

import pytest

from memento_core import Memento, Scope
from memento_core.hotwords import Conversation, HotwordDetected

ANN = Scope(user_id="ann")


def detected(conversation: Conversation, text: str) -> list[str]:
    events = conversation.feed_message(text)
    return [e.hotword_uid for e in events if isinstance(e, HotwordDetected)]


def test_an_added_hotword_is_detected_by_new_conversations(mem: Memento) -> None:
    do_son = mem.remember("Do Son is a seaside town", scope=ANN, hotwords=["도손", "Do Son"])
    before = mem.hotword_detector(ANN).conversation("before")

    added = mem.remember("Jo Malone is on the third floor", scope=ANN, hotwords=["Jo Malone"])
    after = mem.hotword_detector(ANN).conversation("after")

    assert detected(after, "Jo Malone and Do Son") == [added, do_son]
    assert detected(before, "Jo Malone and Do Son") == [do_son]  # it started before the change


def test_a_forgotten_memory_stops_firing_and_a_restored_one_fires_again(mem: Memento) -> None:
    memory_id = mem.remember("Do Son is a seaside town", scope=ANN, hotwords=["Do Son"])

    mem.forget(memory_id)
    assert detected(mem.hotword_detector(ANN).conversation("c1"), "Do Son") == []
    mem.restore(memory_id)
    assert detected(mem.hotword_detector(ANN).conversation("c2"), "Do Son") == [memory_id]


def test_an_unchanged_set_keeps_its_detector(mem: Memento) -> None:
    mem.remember("Do Son is a seaside town", scope=ANN, hotwords=["Do Son"])
    detector = mem.hotword_detector(ANN)

    assert mem.hotword_detector(ANN) is detector  # every conversation shares it
    mem.remember("A memory without hotwords", scope=ANN)  # a write, but the same hotword set
    assert mem.hotword_detector(ANN) is detector
    assert [mem.hotword_detector(ANN) for _ in range(3)] == [detector] * 3

    mem.remember("Jo Malone is on the third floor", scope=ANN, hotwords=["Jo Malone"])
    assert mem.hotword_detector(ANN) is not detector


@pytest.mark.server
def test_another_instances_hotwords_reach_a_server_reader_at_once(
    writer_and_reader: tuple[Memento, Memento],
) -> None:
    writer, reader = writer_and_reader
    first = reader.hotword_detector(ANN)
    added = writer.remember("Do Son is a seaside town", scope=ANN, hotwords=["Do Son"])

    # Instances of a store in one process share its state: no refresh period to wait out.
    again = reader.hotword_detector(ANN)
    assert again is not first
    assert detected(again.conversation("c"), "Do Son") == [added]


def test_a_store_keeps_the_detectors_of_the_scopes_used_last(mem: Memento) -> None:
    """A server serving many users keeps a bounded number of detectors built."""
    from memento_core._memento import DETECTORS_KEPT

    first = mem.hotword_detector(Scope(user_id="user-0"))
    assert mem.hotword_detector(Scope(user_id="user-0")) is first
    for n in range(1, DETECTORS_KEPT + 1):
        mem.hotword_detector(Scope(user_id=f"user-{n}"))
    assert mem.hotword_detector(Scope(user_id="user-0")) is not first  # built again
