"""Ownership: a caller may change or delete only its own memories and chat sessions, and no
erasure cascade — through links, facts or merges — reaches another user's data (issue 21)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    InvalidInput,
    LinkType,
    Memento,
    MementoError,
    MemoryNotFound,
    Message,
    NotOwner,
    Scope,
    WindowPolicy,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ALICE = Scope(user_id="alice", project_id="apollo")
BOB = Scope(user_id="bob", project_id="apollo")
CAROL = Scope(user_id="carol", project_id="apollo")
MALLORY = Scope(user_id="mallory", project_id="apollo")


def alive(mem: Memento, memory_id: str) -> bool:
    try:
        mem.get(memory_id, include_deleted=True)
    except MemoryNotFound:
        return False
    return True


# ------------------------------------------------------------ links cannot delete


def test_hard_forget_through_a_link_never_erases_another_users_public_memory(
    mem: Memento,
) -> None:
    bob_public = mem.remember("Bob's public note on tide tables", scope=BOB, privacy="public")
    carol_team = mem.remember("Carol's team note on the launch date", scope=CAROL, privacy="team")
    alice_own = mem.remember("Alice's own note about tides", scope=ALICE)
    made = mem.link(bob_public, "derived_from", alice_own, scope=ALICE)
    mem.link(carol_team, "derived_from", alice_own, scope=ALICE)
    assert made.made_by == "alice"

    mem.forget(alice_own, hard=True, scope=ALICE)

    assert not alive(mem, alice_own)
    assert mem.get(bob_public, scope=BOB).content == "Bob's public note on tide tables"
    assert mem.get(carol_team, scope=CAROL).content == "Carol's team note on the launch date"
    assert mem.links(bob_public) == [] and mem.links(carol_team) == []


def test_the_application_forgetting_follows_no_user_made_link_into_shared_facts(
    mem: Memento,
) -> None:
    shared = mem.remember("Apollo ships in June", scope=Scope(project_id="apollo"), privacy="team")
    alice_own = mem.remember("Alice thinks apollo ships in June", scope=ALICE)
    mem.link(shared, "derived_from", alice_own, scope=ALICE)
    mem.forget(alice_own, hard=True)  # no caller: the application itself
    assert alive(mem, shared) and mem.links(shared) == []


def test_erase_user_after_a_malicious_link_keeps_the_linked_users_memory(mem: Memento) -> None:
    bob_public = mem.remember("Bob's public recipe for rye bread", scope=BOB, privacy="public")
    mallory_own = mem.remember("Mallory likes bread", scope=MALLORY)
    mem.link(bob_public, LinkType.DERIVED_FROM, mallory_own, scope=MALLORY)

    report = mem.erase_user("mallory")

    assert report.memories == (mallory_own,) and bob_public not in report.derived
    assert alive(mem, bob_public) and mem.links(bob_public) == []


def test_an_admin_link_across_users_loses_the_link_not_the_memory(mem: Memento) -> None:
    alice_ep = mem.remember("Alice said the office moves to Lyon", scope=ALICE)
    bob_fact = mem.remember("The office moves to Lyon", scope=BOB, type="semantic")
    mem.link(bob_fact, "derived_from", alice_ep)  # made by the application, across users
    report = mem.erase_user("alice")
    assert alive(mem, bob_fact) and report.unlinked == (bob_fact,)


def test_a_users_own_derived_facts_still_go_with_their_sources(mem: Memento) -> None:
    episode = mem.remember("Alice moved to Porto in May", scope=ALICE)
    fact = mem.remember("Alice lives in Porto", scope=ALICE, type="semantic")
    mem.link(fact, "derived_from", episode, scope=ALICE)
    mem.forget(episode, hard=True, scope=ALICE)
    assert not alive(mem, fact)


def test_hard_forget_clears_superseded_by_everywhere(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source:
        older = source.remember("Alice's favourite colour is green", scope=ALICE, type="semantic")
        newer = source.remember("Alice's favourite colour is blue", scope=ALICE, type="semantic")
        records = [json.loads(line) for line in source.export()]
    for record in records:  # what sleep() marks when a newer fact contradicts an older one
        if record.get("id") == older:
            record["superseded_by"] = newer
    mem = store_factory.open()
    mem.import_ndjson(json.dumps(r) for r in records)
    assert mem.get(older).superseded_by == newer
    mem.forget(newer, hard=True)
    assert mem.get(older).superseded_by is None
    assert newer not in "\n".join(mem.export())
    mem.close()


# ------------------------------------------------------------ seeing is not owning


@pytest.mark.parametrize(
    "change",
    [
        lambda mem, i, s: mem.forget(i, scope=s),
        lambda mem, i, s: mem.forget(i, hard=True, scope=s),
        lambda mem, i, s: mem.pin(i, scope=s),
        lambda mem, i, s: mem.unpin(i, scope=s),
        lambda mem, i, s: mem.restore(i, scope=s),
        lambda mem, i, s: mem.update(i, content="defaced", scope=s),
        lambda mem, i, s: mem.feedback(i, "not_helpful", scope=s),
        lambda mem, i, s: mem.review(i, 0, scope=s),
    ],
    ids=["forget", "hard", "pin", "unpin", "restore", "update", "feedback", "review"],
)
def test_another_users_memory_cannot_be_changed(mem: Memento, change: Any) -> None:
    public = mem.remember(
        "Alice's public talk notes", scope=ALICE, privacy="public", importance=0.9
    )
    private = mem.remember("Alice's private diary entry", scope=ALICE)
    before = mem.get(public)

    with pytest.raises(NotOwner, match="belongs to another user") as refused:
        change(mem, public, BOB)
    assert isinstance(refused.value, PermissionError) and isinstance(refused.value, MementoError)
    with pytest.raises(MemoryNotFound):
        change(mem, private, BOB)

    assert mem.get(public) == before and mem.feedback_events(public) == []
    assert mem.get(private).content == "Alice's private diary entry"


def test_the_owner_may_change_its_own_memory(mem: Memento) -> None:
    own = mem.remember("Alice's note to self", scope=ALICE, privacy="public")
    assert mem.pin(own, scope=ALICE).pinned
    assert mem.update(own, content="Alice's note to self, revised", scope=ALICE).content.endswith(
        "revised"
    )
    mem.feedback(own, "helpful", scope=ALICE)
    mem.forget(own, scope=ALICE)
    assert mem.restore(own, scope=ALICE).deleted_at is None


def test_link_needs_both_ends_visible_to_the_caller(mem: Memento) -> None:
    private = mem.remember("Bob's private note", scope=BOB)
    own = mem.remember("Alice's note", scope=ALICE)
    with pytest.raises(MemoryNotFound):
        mem.link(own, "cause_of", private, scope=ALICE)
    assert mem.links(own) == []


# ------------------------------------------------------------------- chat sessions


def test_another_user_cannot_use_a_chat_session(mem: Memento) -> None:
    hers = mem.chat("alice-s1", scope=ALICE)
    hers.append(Message.user("Alice's secret plan is to move to Oslo"))
    bobs = mem.chat("alice-s1", scope=BOB)

    for call in (
        bobs.window,
        bobs.history,
        lambda: bobs.append(Message.user("Bob was here")),
        bobs.reset,
        lambda: bobs.reset(purge=True),
        bobs.archive,
        lambda: mem.history("alice-s1", scope=BOB),
    ):
        with pytest.raises(NotOwner, match="chat session 'alice-s1' belongs to another user"):
            call()
    with pytest.raises(InvalidInput, match="no messages"):
        mem.summarize_thread("alice-s1", scope=BOB)

    assert [m.content for m in hers.window()] == ["Alice's secret plan is to move to Oslo"]
    assert len(mem.history("alice-s1", scope=ALICE)) == 1
    archived = mem.get(mem.summarize_thread("alice-s1", scope=ALICE))
    assert archived.scope.user_id == "alice"


def test_summaries_of_a_session_belong_to_its_owner(mem: Memento) -> None:
    hers = mem.chat("alice-s2", scope=ALICE, policy=WindowPolicy(max_messages=2, snapshot_chunk=1))
    hers.append(Message.user("Alice keeps her spare key under the blue flowerpot"))
    # The application (no caller) drives her session until it overflows.
    app = mem.chat("alice-s2", policy=WindowPolicy(max_messages=2, snapshot_chunk=1))
    for n in range(3):
        app.append(Message.user(f"filler message number {n}"))
    summaries = [i for i in mem.items() if "chat-overflow" in i.tags]
    assert summaries and {i.scope.user_id for i in summaries} == {"alice"}

    mem.erase_user("alice")
    assert not [i for i in mem.items(include_deleted=True) if "flowerpot" in i.content]
    assert "flowerpot" not in "\n".join(mem.export())


# ------------------------------------------------------------------- bad numbers


def test_non_finite_feedback_is_refused_and_export_still_works(mem: Memento) -> None:
    own = mem.remember("Alice's note", scope=ALICE)
    for score in (math.inf, -math.inf, math.nan, 10**400):
        with pytest.raises(InvalidInput, match="score must be a finite number"):
            mem.feedback(own, "helpful", score=score)
    assert mem.feedback_events(own) == [] and mem.get(own).feedback == {}
    assert len(list(mem.export())) == 1 and mem.all_feedback() == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda mem: mem.remember("x", importance=10**400), "importance"),
        (lambda mem: mem.remember("x", importance=math.inf), "importance"),
        (lambda mem: mem.remember("x", created_at=0), "created_at must be a datetime"),
        (lambda mem: mem.remember("x", pinned="false"), "pinned must be true or false"),
        (
            lambda mem: mem.remember("x", created_at=datetime(9999, 12, 30)),
            "created_at must be between",
        ),
        (lambda mem: mem.recall("x", weights=[1, 2]), "weights must be"),
        (lambda mem: mem.recall("x", weights={"recency": 10**400}), "recency"),
        (lambda mem: mem.review_due(Scope(), now=datetime(9999, 12, 30)), "now must be between"),
    ],
    ids=["huge-int", "inf", "zero-time", "str-bool", "far-future", "list", "huge", "now"],
)
def test_bad_values_raise_memento_errors(mem: Memento, call: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        call(mem)
    assert mem.items(include_deleted=True) == []


def test_review_far_in_the_future_is_refused(mem: Memento) -> None:
    own = mem.remember("Alice's important fact", scope=ALICE, importance=0.9)
    before = mem.get(own)
    with pytest.raises(InvalidInput, match="now must be between"):
        mem.review(own, 5, now=datetime(9999, 12, 30, tzinfo=timezone.utc))
    assert mem.get(own).review_due_at == before.review_due_at
    assert mem.review(own, 5, now=datetime.now(timezone.utc) + timedelta(days=1)).review_step


def test_links_export_who_made_them_and_import_keeps_it(mem: Memento) -> None:
    a = mem.remember("Alice's first note", scope=ALICE)
    b = mem.remember("Alice's second note", scope=ALICE)
    mem.link(a, "cause_of", b, scope=ALICE)
    lines = list(mem.export())
    (link,) = [json.loads(x) for x in lines if json.loads(x)["kind"] == "link"]
    assert link["made_by"] == "alice"
