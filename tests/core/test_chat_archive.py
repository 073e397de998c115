"""Chat into long-term memory: lossless archives, informative summaries, archiving when a
session ends (closed, reset, expired, or left idle for the worker), and message interop."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memento_core import InvalidInput, LinkType, Memento, MemoryItem, MemoryType, Scope
from memento_core import _chat as chat_module
from memento_core._chat import ChatMemory, MessageTooLarge, WindowPolicy
from memento_core._messages import Message, Role
from memento_core._model import utcnow

ANN = Scope(user_id="ann", agent_id="travel")
U, A = Message.user, Message.assistant
TRIP = [
    U("Hi!"),
    A("Hello! How can I help you today?"),
    U("I'm planning a trip to Korea with my mother in October."),
    A("Wonderful. Which cities are you thinking of?"),
    U("Seoul for three days, then Busan."),
    A("Great choices. Any dietary needs I should know about for restaurants?"),
    U("I'm vegetarian, so no meat or fish please."),
    A("Noted. I'll look for temple food places in Seoul."),
    U("Also, my mother has trouble with stairs."),
    A("Understood, I'll only suggest hotels with elevators and step-free entrances."),
    U("Thanks!"),
    A("For Busan, the Haeundae Bay hotel has elevators and a vegetarian breakfast."),
    U("Book the Busan hotel for October 12 to 15."),
    A("Done, I booked the Haeundae Bay hotel from October 12 to 15, confirmation BX-4471."),
    U("ok great"),
    A("Shall I book the KTX train from Seoul to Busan too?"),
    U("Yes, a morning train on October 12."),
    A("Booked KTX 101 at 8:00 on October 12."),
    U("Thanks, that's all."),
    A("Have a great trip!"),
]
FILLER = {"Hi!", "Thanks!", "ok great", "Thanks, that's all.", "Have a great trip!"}


def trip_chat(mem: Memento, session: str = "trip", **policy: object) -> ChatMemory:
    chat = ChatMemory(mem, session, scope=ANN, policy=WindowPolicy(**policy))  # type: ignore[arg-type]  # test options
    chat.set_system("You are a travel agent.")
    chat.extend(TRIP)
    return chat


def session_memories(mem: Memento, session: str, tag: str) -> list[MemoryItem]:
    return [i for i in mem.items() if i.scope.session_id == session and tag in i.tags]


def in_timeline_order(turns: list[MemoryItem]) -> list[MemoryItem]:
    """The turns by their ``follows`` chain, from the one that follows none of them."""
    by_predecessor = {t.follows: t for t in turns}
    ids = {t.id for t in turns}
    chain = [next(t for t in turns if t.follows not in ids)]
    while chain[-1].id in by_predecessor:
        chain.append(by_predecessor[chain[-1].id])
    return chain


# --------------------------------------------------------------------------- lossless archive


def test_an_archive_keeps_every_message_with_content_as_a_turn_in_order(mem: Memento) -> None:
    chat = trip_chat(mem)
    summary_id = chat.archive()
    turns = session_memories(mem, "trip", "chat-turn")
    substantive = [m for m in TRIP if m.content not in FILLER]
    assert len(turns) == len(substantive)  # one memory per message with content
    ordered = in_timeline_order(turns)
    assert len(ordered) == len(turns)  # one unbroken timeline
    for turn, message in zip(ordered, substantive):
        assert message.content in turn.content
        assert turn.type is MemoryType.EPISODIC and turn.scope == ANN.with_session("trip")
        [line] = [line for line in turn.content.splitlines() if message.content in line]
        assert line.startswith("[") and f"] {message.role.value}: {message.content}" in line
    every_text = "\n".join(t.content for t in turns)
    assert all(m.content in every_text for m in TRIP)  # filler folded, not dropped
    assert "travel agent" not in every_text  # the system message is an instruction
    summary = mem.get(summary_id)
    assert "chat-archive" in summary.tags and "chat-turn" not in summary.tags
    derived = {x.target_id for x in mem.links(summary_id) if x.type is LinkType.DERIVED_FROM}
    assert derived == {t.id for t in turns}


def test_archiving_again_writes_nothing_new(mem: Memento) -> None:
    chat = trip_chat(mem)
    first = chat.archive()
    before = mem.stats()
    assert mem.summarize_thread("trip") == first
    assert chat.archive() == first
    after = mem.stats()
    assert (after.memories, after.links) == (before.memories, before.links)


def test_the_trip_summary_names_its_substance_and_recall_finds_the_fact(mem: Memento) -> None:
    summary = mem.get(trip_chat(mem).archive())
    text = summary.content.lower()
    assert "vegetarian" in text and "stairs" in text and "busan" in text
    lines = summary.content.splitlines()[1:]
    assert not any(line.split(": ", 1)[1] in FILLER for line in lines)
    found = mem.recall("is the user vegetarian?", scope=Scope(user_id="ann"), limit=3)
    assert "I'm vegetarian" in found[0].item.content


def test_overflow_snapshots_keep_every_turn(mem: Memento) -> None:
    chat = ChatMemory(mem, "long", scope=ANN, policy=WindowPolicy(max_messages=4))
    chat.extend(TRIP)
    turns = session_memories(mem, "long", "chat-turn")
    archived = "\n".join(t.content for t in turns)
    evicted = TRIP[:-4]
    assert all(m.content in archived for m in evicted if m.content not in FILLER)
    assert session_memories(mem, "long", "chat-overflow")
    for snapshot in session_memories(mem, "long", "chat-overflow"):
        assert any(x.type is LinkType.DERIVED_FROM for x in mem.links(snapshot.id))


def test_erasure_and_export_cover_the_archive(mem: Memento) -> None:
    summary_id = trip_chat(mem).archive()
    archived = {summary_id} | {t.id for t in session_memories(mem, "trip", "chat-turn")}
    exported = "\n".join(mem.export())
    assert "trouble with stairs" in exported and "BX-4471" in exported
    report = mem.erase_user("ann")
    assert archived <= set(report.memories)
    assert not [i for i in mem.items(include_deleted=True) if i.scope.user_id == "ann"]
    assert "trouble with stairs" not in "\n".join(mem.export())


def test_imported_messages_keep_when_they_were_said(mem: Memento) -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    chat = ChatMemory(mem, "old", scope=ANN)
    chat.append(Message(Role.USER, "I moved to Lisbon last week.", created_at=said))
    assert chat.history()[0].created_at == said
    chat.archive()
    [turn] = session_memories(mem, "old", "chat-turn")
    assert turn.created_at == said and "8 May 2023" in turn.content
    vague = Message(Role.USER, "a while ago", created_at="last May")  # type: ignore[arg-type]  # the error is the point
    with pytest.raises(InvalidInput, match="created_at must be a datetime"):
        chat.append(vague)
    assert len(chat.history()) == 1


# ------------------------------------------------------------------- archiving at session end


def test_closing_a_session_archives_what_is_not_archived_yet(mem: Memento) -> None:
    chat = trip_chat(mem, max_messages=50)
    summary_id = chat.close()
    assert summary_id is not None and chat.window() == []
    assert "chat-archive" in mem.get(summary_id).tags
    assert len(session_memories(mem, "trip", "chat-turn")) == len(TRIP) - len(FILLER)
    before = mem.stats().memories
    assert chat.close() is None and mem.stats().memories == before
    chat.append(U("One more thing: I need a wheelchair at Incheon airport."))
    assert chat.close() is not None
    turns = "\n".join(t.content for t in session_memories(mem, "trip", "chat-turn"))
    assert "wheelchair" in turns


def test_a_window_that_expires_is_archived_when_touched(
    mem: Memento, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = trip_chat(mem, max_messages=50)
    assert not session_memories(mem, "trip", "chat-turn")
    later = utcnow() + timedelta(hours=48, minutes=1)
    with monkeypatch.context() as patch:
        patch.setattr(chat_module, "utcnow", lambda: later)
        assert chat.window() == []
    assert len(session_memories(mem, "trip", "chat-turn")) == len(TRIP) - len(FILLER)


def test_a_session_left_to_expire_is_archived_by_the_worker(mem: Memento) -> None:
    trip_chat(mem, max_messages=50)
    forever = ChatMemory(mem, "forever", scope=ANN, policy=WindowPolicy(ttl=None))
    forever.append(U("Keep this window open: my passport expires in March."))
    quiet = ChatMemory(mem, "quiet", scope=ANN, policy=WindowPolicy(archive_on_end=False))
    quiet.append(U("Do not archive this chat about my allergy to penicillin."))
    early = mem.maintain(now=utcnow() + timedelta(hours=47))
    assert early.chats_archived == []  # not idle long enough yet
    report = mem.maintain(now=utcnow() + timedelta(hours=49))
    [summary_id] = report.chats_archived
    assert mem.get(summary_id).scope == ANN.with_session("trip")
    assert len(session_memories(mem, "trip", "chat-turn")) == len(TRIP) - len(FILLER)
    assert not session_memories(mem, "forever", "chat-turn")
    assert not session_memories(mem, "quiet", "chat-turn")
    before = mem.stats().memories
    assert mem.maintain(now=utcnow() + timedelta(hours=50)).chats_archived == []
    assert ChatMemory(mem, "trip", scope=ANN).window() == []  # the window ended too
    assert mem.stats().memories == before


# -------------------------------------------------------------------------------- interop


def test_messages_in_other_casings_are_read(mem: Memento) -> None:
    chat = ChatMemory(mem, "zego", scope=ANN)
    chat.extend(
        [
            {"Role": "user", "Content": "Book a table for two."},
            {"ROLE": "Assistant", "content": "Booked for 8 pm."},
            {"role": "user", "content": "Thanks", "Name": "ann"},
        ]
    )
    assert [(m.role, m.content) for m in chat.window()] == [
        (Role.USER, "Book a table for two."),
        (Role.ASSISTANT, "Booked for 8 pm."),
        (Role.USER, "Thanks"),
    ]
    assert chat.window()[-1].name == "ann"
    with pytest.raises(InvalidInput, match="'role' twice"):
        chat.extend([{"role": "user", "Role": "assistant", "content": "which?"}])
    with pytest.raises(InvalidInput, match="unknown role"):
        chat.extend([{"Role": "narrator", "Content": "Once upon a time"}])
    assert len(chat.history()) == 3  # nothing stored by the refused ones


def test_a_message_window_can_count_the_system_message_like_langchain4j(mem: Memento) -> None:
    counted = ChatMemory(mem, "lc4j", policy=WindowPolicy(max_messages=3, count_system=True))
    plain = ChatMemory(mem, "plain", policy=WindowPolicy(max_messages=3))
    for chat in (counted, plain):
        chat.set_system("Be brief.")
        chat.extend([U("one"), A("two"), U("three")])
    assert [m.content for m in counted.window()] == ["Be brief.", "two", "three"]
    assert [m.content for m in plain.window()] == ["Be brief.", "one", "two", "three"]
    with pytest.raises(InvalidInput, match="count_system"):
        WindowPolicy(count_system=True)
    tiny = ChatMemory(mem, "tiny", policy=WindowPolicy(max_messages=1, count_system=True))
    tiny.set_system("Be brief.")
    with pytest.raises(MessageTooLarge, match="beside the system message"):
        tiny.append(U("hello?"))
    assert [m.content for m in tiny.history()] == ["Be brief."]
