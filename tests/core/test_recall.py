"""Recall: hybrid relevance, ranking weights, filters, visibility and the reasons given."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    InvalidFilter,
    InvalidInput,
    InvalidScope,
    Memento,
    MemoryDraft,
    MemoryNotFound,
    MemoryType,
    Privacy,
    RankingWeights,
    Recalled,
    RecallFilter,
    Scope,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", agent_id="planner", project_id="apollo", session_id="s1")
BEN = Scope(user_id="ben", agent_id="coder", project_id="apollo", session_id="s9")
CAT = Scope(user_id="cat", project_id="gemini")
ONLY = {
    "relevance": 0.0,
    "recency": 0.0,
    "importance": 0.0,
    "usage": 0.0,
    "context": 0.0,
    "expansion": 0.0,
}


def only(component: str) -> dict[str, float]:
    """Weights that rank by one component alone."""
    return {**ONLY, component: 1.0}


def ids(results: list[Recalled]) -> list[str]:
    return [r.item.id for r in results]


# ---------------------------------------------------------------------------- relevance


def test_the_relevant_memory_comes_first(mem: Memento) -> None:
    coffee = mem.remember("Ann takes her coffee black, without sugar", scope=ANN)
    mem.remember_many(
        [
            MemoryDraft("The billing service runs on MariaDB 10.6", scope=ANN),
            MemoryDraft("Ann's daughter starts school in September", scope=ANN),
            MemoryDraft("The office closes early on Fridays", scope=ANN),
            MemoryDraft("Deploys go out every Tuesday after the standup", scope=ANN),
        ]
    )
    results = mem.recall("How does Ann like her coffee?", scope=ANN, limit=3)
    assert ids(results)[0] == coffee
    assert len(results) == 3
    assert results[0].score > results[1].score >= results[2].score


def test_recall_without_keyword_overlap_still_finds_the_meaning(mem: Memento) -> None:
    car = mem.remember("My car broke down on the highway last night", scope=ANN)
    mem.remember("I baked sourdough bread on Sunday", scope=ANN)
    mem.remember("The quarterly taxes are due in April", scope=ANN)
    results = mem.recall("vehicle trouble", scope=ANN, limit=1)
    assert ids(results) == [car]
    assert results[0].reason.keyword == 0.0
    assert results[0].reason.matched_terms == ()


def test_min_relevance_is_an_absolute_bar_not_a_place_among_candidates(mem: Memento) -> None:
    """Calibration ranks by each candidate's place among the others; the bar stays absolute, so
    the best of unrelated memories (here the only one) does not pass it."""
    scope = Scope(user_id="dana")
    mem.remember("The billing service runs on MariaDB 10.6", scope=scope)
    assert mem.recall("Good morning, how are you?", scope=scope, min_relevance=0.5) == []
    hits = mem.recall("Which database does billing run on?", scope=scope, min_relevance=0.5)
    assert [hit.item.content for hit in hits] == ["The billing service runs on MariaDB 10.6"]


def test_limit_caps_the_results(mem: Memento) -> None:
    mem.remember_many([MemoryDraft(f"Note {n} about gardening", scope=ANN) for n in range(6)])
    assert len(mem.recall("gardening", scope=ANN, limit=4)) == 4
    assert len(mem.recall("gardening", scope=ANN, limit=10)) == 6


@pytest.mark.parametrize(
    ("query", "target", "distractors"),
    [
        (
            "도손",
            "도손의 해안 마을에서 휴가를 보냈다",
            ["서울의 회의실에서 회의를 했다", "부산 해안에서 수영을 했다"],
        ),
        ("记忆", "长期记忆管理", ["短期计划安排", "长期项目管理"]),
        ("東京", "来週は東京で会議があります", ["大阪でラーメンを食べました"]),
    ],
    ids=["korean", "chinese", "japanese"],
)
def test_bm25_finds_words_inside_cjk_text(
    mem: Memento, query: str, target: str, distractors: list[str]
) -> None:
    target_id = mem.remember(target, scope=ANN)
    mem.remember_many([MemoryDraft(text, scope=ANN) for text in distractors])
    results = mem.recall(query, scope=ANN, limit=len(distractors) + 1)
    assert ids(results)[0] == target_id
    assert query in results[0].reason.matched_terms
    assert results[0].reason.keyword == 1.0
    assert all(r.reason.keyword == 0.0 for r in results[1:]), "no other text holds the word"

    keyword_only = mem.recall(query, scope=ANN, limit=1, weights={**only("relevance"),
                              "dense_share": 0.0})  # fmt: skip
    assert ids(keyword_only) == [target_id]


def test_keyword_search_matches_english_word_forms(mem: Memento) -> None:
    target = mem.remember("We are migrating the databases to MariaDB", scope=ANN)
    mem.remember("The cafeteria serves soup on Mondays", scope=ANN)
    results = mem.recall("database migration", scope=ANN, limit=2)
    assert ids(results)[0] == target
    assert set(results[0].reason.matched_terms) == {"database", "migration"}


@pytest.mark.server
def test_a_reader_on_a_server_sees_what_other_processes_wrote_and_erased(
    writer_and_reader: tuple[Memento, Memento],
) -> None:
    writer, reader = writer_and_reader
    kept = writer.remember("The quokka enclosure opens at nine", scope=ANN)
    erased = writer.remember("The quokka keeper is called Dana", scope=ANN)
    assert set(ids(reader.recall("quokka", scope=ANN))) == {kept, erased}
    writer.forget(erased, hard=True)
    added = writer.remember_many(
        [MemoryDraft(f"Quokka feeding number {n} is at noon", scope=ANN) for n in range(3)]
    )

    found = reader.recall("quokka", scope=ANN, limit=10)

    assert set(ids(found)) == {kept, *added}
    assert all("quokka" in hit.reason.matched_terms for hit in found)


# ------------------------------------------------------------------------------ reasons


def test_reason_shows_components_and_matched_terms(mem: Memento) -> None:
    mem.remember("Ann takes her coffee black", scope=ANN, importance=0.9)
    hit = mem.recall("coffee preference", scope=ANN, limit=1)[0]
    reason = hit.reason
    assert reason.matched_terms == ("coffee",)
    assert 0.0 < reason.dense <= 1.0
    assert 0.0 < reason.keyword <= 1.0
    assert 0.0 < reason.relevance <= 1.0
    assert 0.9 < reason.recency <= 1.0, "just remembered"
    assert reason.importance == 0.9
    assert reason.usage == 0.0, "never used before this recall"
    assert reason.duplication == 0.0
    w = reason.weights
    expected = (
        w.relevance * reason.relevance
        + w.recency * reason.recency
        + w.importance * reason.importance
        + w.usage * reason.usage
        + w.expansion * reason.expansion
    )
    assert hit.score == pytest.approx(expected)
    text = str(reason)
    for word in ("relevance", "dense", "keyword", "recency", "importance", "usage"):
        assert word in text
    assert "matched: coffee" in text


# ------------------------------------------------------------------------------ weights


def test_per_call_weights_change_the_order(mem: Memento) -> None:
    plain = mem.remember("The team lunch is on Thursday at the Thai place", scope=ANN)
    vital = mem.remember("Ann is allergic to peanuts", scope=ANN, importance=1.0)
    by_relevance = mem.recall("team lunch Thursday", scope=ANN, limit=2)
    assert ids(by_relevance) == [plain, vital]

    by_importance = mem.recall(
        "team lunch Thursday", scope=ANN, limit=2, weights=only("importance")
    )
    assert ids(by_importance) == [vital, plain]
    assert by_importance[0].score == pytest.approx(1.0)
    assert by_importance[1].score == pytest.approx(0.5)

    as_object = RankingWeights(
        relevance=0, recency=0, importance=1, usage=0, context=0, expansion=0
    )
    assert ids(mem.recall("team lunch Thursday", scope=ANN, limit=2, weights=as_object)) == [
        vital,
        plain,
    ]
    assert ids(mem.recall("team lunch Thursday", scope=ANN, limit=2)) == [plain, vital], (
        "per-call weights must not change the store's weights"
    )


def test_store_weights_apply_to_every_call(mem: Memento) -> None:
    plain = mem.remember("The team lunch is on Thursday at the Thai place", scope=ANN)
    vital = mem.remember("Ann is allergic to peanuts", scope=ANN, importance=1.0)
    mem.weights = RankingWeights(relevance=0, recency=0, importance=1, usage=0, context=0)
    assert ids(mem.recall("team lunch Thursday", scope=ANN, limit=2)) == [vital, plain]


def test_unknown_or_negative_weights_are_refused(mem: Memento) -> None:
    mem.remember("anything at all", scope=ANN)
    with pytest.raises(InvalidInput, match="unknown ranking weight"):
        mem.recall("anything", scope=ANN, weights={"relevnace": 1.0})
    with pytest.raises(InvalidInput, match="relevance"):
        mem.recall("anything", scope=ANN, weights={"relevance": -1.0})


def test_near_duplicates_are_pushed_down_so_results_are_diverse(mem: Memento) -> None:
    first = mem.remember("The quarterly report is due on Friday at noon", scope=ANN)
    second = mem.remember("The quarterly report is due on Friday at noon.", scope=ANN)
    different = mem.remember("The annual report is due in December", scope=ANN)
    query = "When is the quarterly report due?"

    diverse = mem.recall(query, scope=ANN, limit=2)
    assert different in ids(diverse)
    assert len(set(ids(diverse)) & {first, second}) == 1

    without_penalty = mem.recall(query, scope=ANN, limit=2, weights={"duplication": 0.0})
    assert set(ids(without_penalty)) == {first, second}, "the two copies outrank the other"

    all_three = mem.recall(query, scope=ANN, limit=3)
    assert ids(all_three)[-1] in {first, second}
    assert all_three[-1].reason.duplication > 0.0
    assert "duplication" in str(all_three[-1].reason)


def test_recency_alone_puts_the_newer_memory_first(mem: Memento) -> None:
    now = datetime.now(timezone.utc)
    old = mem.remember(
        "Tea with Ben at the harbour", scope=ANN, created_at=now - timedelta(days=60)
    )
    new = mem.remember("Tea with Cat in the garden", scope=ANN, created_at=now - timedelta(hours=1))
    results = mem.recall("tea", scope=ANN, limit=2, weights=only("recency"))
    assert ids(results) == [new, old]
    assert results[0].reason.recency > results[1].reason.recency
    assert results[1].reason.recency == pytest.approx(0.25, abs=0.01), "two episodic half-lives"

    later = mem.recall(
        "tea", scope=ANN, limit=2, weights=only("recency"), now=now + timedelta(days=30)
    )
    assert later[0].reason.recency == pytest.approx(0.5, abs=0.01), "recency is measured at now="


def test_recency_fades_by_memory_type(mem: Memento) -> None:
    week_ago = datetime.now(timezone.utc) - timedelta(days=7)
    fact = mem.remember("Fact: the VPN needs 2FA", scope=ANN, type="semantic", created_at=week_ago)
    chat = mem.remember("Chat: asked about the VPN", scope=ANN, type="working", created_at=week_ago)
    results = {r.item.id: r for r in mem.recall("VPN", scope=ANN, limit=2)}
    assert results[fact].reason.recency > 0.9 > 0.1 > results[chat].reason.recency


def test_recall_notes_an_access_of_each_result_but_not_a_use(mem: Memento) -> None:
    hit = mem.remember("The wifi password is on the fridge", scope=ANN)
    miss = mem.remember("The cat's vet appointment is on Monday", scope=ANN)
    before = datetime.now(timezone.utc)
    assert ids(mem.recall("wifi password", scope=ANN, limit=1)) == [hit]
    assert ids(mem.recall("wifi password", scope=ANN, limit=1)) == [hit]
    accessed = mem.get(hit)
    assert accessed.access_count == 0  # a use is an injection, feedback or review
    assert accessed.last_accessed_at is not None and accessed.last_accessed_at >= before
    assert mem.get(miss).access_count == 0
    assert mem.get(miss).last_accessed_at is None


def test_recall_can_leave_usage_alone(store_factory: StoreFactory) -> None:
    with store_factory.open(track_usage=False) as store:
        memory_id = store.remember("Read-only recall", scope=ANN)
        assert ids(store.recall("read-only recall", scope=ANN)) == [memory_id]
        store.memory_injection("read-only recall", scope=ANN)
        untouched = store.get(memory_id)
        assert untouched.access_count == 0 and untouched.last_accessed_at is None


def test_helpful_feedback_raises_usage(mem: Memento) -> None:
    liked = mem.remember("Use the staging cluster for load tests", scope=ANN)
    plain = mem.remember("Use the staging database for migrations", scope=ANN)
    disliked = mem.remember("Use the staging bucket for uploads", scope=ANN)
    mem.feedback(liked, "helpful")
    mem.feedback(liked, "helpful")
    mem.feedback(disliked, "not_helpful")
    results = mem.recall("staging", scope=ANN, limit=3, weights=only("usage"))
    assert ids(results)[0] == liked
    usage = {r.item.id: r.reason.usage for r in results}
    assert usage[liked] > usage[plain] == usage[disliked] == 0.0


# ------------------------------------------------------------------------------ filters


@pytest.fixture
def catalogue(mem: Memento) -> dict[str, str]:
    """Memories about deployments that differ in type, tags, time, privacy, agent and session."""
    now = datetime.now(timezone.utc)
    ann_other = Scope(user_id="ann", agent_id="reviewer", project_id="apollo", session_id="s2")
    drafts = {
        "old_episode": MemoryDraft("We deployed the API on a Friday and it broke", scope=ANN,
                                   created_at=now - timedelta(days=40), tags=["deploy", "api"]),
        "fact": MemoryDraft("Deployments need a second reviewer", scope=ANN, type="semantic",
                            tags=["deploy", "policy"], privacy="team"),
        "howto": MemoryDraft("To deploy, run make release then tag the commit", scope=ann_other,
                             type="procedural", tags=["deploy", "howto"], privacy="public"),
        "recent": MemoryDraft("The web deploy today went smoothly", scope=ANN,
                              created_at=now - timedelta(days=2), tags=["deploy", "web"]),
    }  # fmt: skip
    return dict(zip(drafts, mem.remember_many(drafts.values())))


def recalled_names(mem: Memento, catalogue: dict[str, str], **kwargs: Any) -> set[str]:
    names = {v: k for k, v in catalogue.items()}
    return {names[i] for i in ids(mem.recall("deploy", scope=ANN, limit=20, **kwargs))}


def test_without_filters_every_memory_is_a_candidate(
    mem: Memento, catalogue: dict[str, str]
) -> None:
    assert recalled_names(mem, catalogue) == set(catalogue)


@pytest.mark.parametrize(
    ("recall_filter", "expected"),
    [
        ({"types": "semantic"}, {"fact"}),
        ({"types": ["semantic", MemoryType.PROCEDURAL]}, {"fact", "howto"}),
        ({"tags": ["deploy"]}, {"old_episode", "fact", "howto", "recent"}),
        ({"tags": ["deploy", "api"]}, {"old_episode"}),
        ({"tags": ["api", "web"]}, set()),
        ({"privacy": "team"}, {"fact"}),
        ({"privacy": ["public", Privacy.TEAM]}, {"fact", "howto"}),
        ({"agent_id": "reviewer"}, {"howto"}),
        ({"session_id": "s1"}, {"old_episode", "fact", "recent"}),
        ({"project_id": "gemini"}, set()),
        ({"types": "episodic", "tags": ["web"]}, {"recent"}),
    ],
    ids=[
        "one-type",
        "two-types",
        "one-tag",
        "tags-are-anded",
        "tags-anded-none",
        "privacy",
        "privacies",
        "agent",
        "session",
        "project",
        "type-and-tag",
    ],
)
def test_filters_narrow_recall(
    mem: Memento, catalogue: dict[str, str], recall_filter: dict[str, Any], expected: set[str]
) -> None:
    assert recalled_names(mem, catalogue, filter=recall_filter) == expected
    as_object = RecallFilter.build(recall_filter)
    assert recalled_names(mem, catalogue, filter=as_object) == expected


def test_time_range_filters(mem: Memento, catalogue: dict[str, str]) -> None:
    now = datetime.now(timezone.utc)
    week = timedelta(days=7)
    assert recalled_names(mem, catalogue, filter={"since": now - week}) == {
        "fact",
        "howto",
        "recent",
    }
    assert recalled_names(mem, catalogue, filter={"until": now - week}) == {"old_episode"}
    window = {"since": now - 3 * week, "until": now - timedelta(days=1)}
    assert recalled_names(mem, catalogue, filter=window) == {"recent"}
    naive = (now - week).replace(tzinfo=None)
    assert recalled_names(mem, catalogue, filter={"until": naive}) == {"old_episode"}


def test_include_deleted_filter_reaches_soft_forgotten_memories(
    mem: Memento, catalogue: dict[str, str]
) -> None:
    mem.forget(catalogue["fact"])
    assert "fact" not in recalled_names(mem, catalogue)
    assert "fact" in recalled_names(mem, catalogue, filter={"include_deleted": True})


# --------------------------------------------------------------------------- visibility


@pytest.fixture
def people(mem: Memento) -> dict[str, str]:
    """The same topic remembered by three users with every privacy."""
    drafts = {
        "ann_private": MemoryDraft("Ann's surprise party plan for Friday", scope=ANN),
        "ben_private": MemoryDraft("Ben's secret party plan: the cake is in my car", scope=BEN),
        "ben_team": MemoryDraft("Team party plan: meet in room 4 on Friday", scope=BEN,
                                privacy="team"),
        "cat_team": MemoryDraft("Gemini team party plan: pizza on Friday", scope=CAT,
                                privacy="team"),
        "cat_public": MemoryDraft("Public notice: the office party is on Friday", scope=CAT,
                                  privacy="public"),
    }  # fmt: skip
    return dict(zip(drafts, mem.remember_many(drafts.values())))


def seen_by(mem: Memento, people: dict[str, str], scope: Scope, **kwargs: Any) -> set[str]:
    names = {v: k for k, v in people.items()}
    found = mem.recall("party plan Friday", scope=scope, limit=50, **kwargs)
    return {names[i] for i in ids(found)}


def test_each_user_sees_own_team_and_public_memories(mem: Memento, people: dict[str, str]) -> None:
    assert seen_by(mem, people, ANN) == {"ann_private", "ben_team", "cat_public"}
    assert seen_by(mem, people, BEN) == {"ben_private", "ben_team", "cat_public"}
    assert seen_by(mem, people, CAT) == {"cat_team", "cat_public"}
    outsider = Scope(user_id="dan", project_id="apollo")
    assert seen_by(mem, people, outsider) == {"ben_team", "cat_public"}, "team = same project"
    assert seen_by(mem, people, Scope(user_id="eve")) == {"cat_public"}, "public = everyone"


def test_filters_never_widen_visibility(mem: Memento, people: dict[str, str]) -> None:
    assert seen_by(mem, people, ANN, filter={"privacy": "private"}) == {"ann_private"}
    assert seen_by(mem, people, ANN, filter={"agent_id": "coder", "session_id": "s9"}) == {
        "ben_team"
    }
    assert seen_by(mem, people, ANN, filter={"project_id": "gemini"}) == {"cat_public"}
    assert seen_by(mem, people, ANN, filter={"include_deleted": True}) == {
        "ann_private",
        "ben_team",
        "cat_public",
    }


def test_a_hidden_memory_is_not_found_for_that_scope(mem: Memento, people: dict[str, str]) -> None:
    secret = people["ben_private"]
    with pytest.raises(MemoryNotFound):
        mem.get(secret, scope=ANN)
    assert mem.get(secret, scope=BEN).scope == BEN
    assert secret not in {i.id for i in mem.items(scope=ANN)}
    assert {i.id for i in mem.items(scope=ANN)} == {
        people["ann_private"],
        people["ben_team"],
        people["cat_public"],
    }


def test_keyword_hits_do_not_leak_other_users_private_memories(
    mem: Memento, people: dict[str, str]
) -> None:
    # "cake" occurs only in Ben's private memory: BM25 must not bring it to Ann.
    for result in mem.recall("cake car", scope=ANN, limit=50):
        assert result.item.id != people["ben_private"]
        assert result.item.scope.user_id == "ann" or result.item.privacy is not Privacy.PRIVATE


@pytest.mark.parametrize(
    "injected", [{"$ne": "me"}, {"$in": ["ann", "ben"]}, {"$exists": True}, ["ben"]]
)
def test_operator_injection_through_a_scope_is_refused(
    mem: Memento, people: dict[str, str], injected: object
) -> None:
    for field in ("user_id", "project_id", "agent_id", "session_id"):
        with pytest.raises(InvalidScope, match=field):
            Scope(**{field: injected})


@pytest.mark.parametrize(
    ("recall_filter", "word"),
    [
        ({"user_id": {"$ne": "x"}}, "unknown filter field"),
        ({"user_id": "ben"}, "unknown filter field"),
        ({"$or": [{"user_id": "ben"}]}, "unknown filter field"),
        ({"tags": [{"$ne": 1}]}, "tag"),
        ({"tags": {"$ne": 1}}, "tags"),
        ({"agent_id": {"$ne": "x"}}, "agent_id"),
        ({"session_id": {"$in": ["s1", "s9"]}}, "session_id"),
        ({"project_id": {"$ne": "apollo"}}, "project_id"),
        ({"privacy": {"$ne": "private"}}, "privacy"),
        ({"types": {"$in": ["episodic"]}}, "types"),
        ({"since": {"$gt": 0}}, "since"),
        ({"include_deleted": {"$ne": False}}, "include_deleted"),
    ],
)
def test_operator_injection_through_a_filter_is_refused(
    mem: Memento, people: dict[str, str], recall_filter: dict[str, Any], word: str
) -> None:
    with pytest.raises(InvalidFilter, match=word):
        mem.recall("party plan", scope=ANN, filter=recall_filter)
    with pytest.raises(InvalidFilter):
        RecallFilter.build(recall_filter)
    assert seen_by(mem, people, ANN) == {"ann_private", "ben_team", "cat_public"}


# ------------------------------------------------------------------------ temporal contiguity


def test_memories_stored_one_after_another_are_timeline_neighbours(mem: Memento) -> None:
    moment = datetime(2024, 5, 1, 18, 0, tzinfo=timezone.utc)
    first, second, third = mem.remember_many(
        [
            MemoryDraft(text, scope=ANN, created_at=moment)
            for text in ("Ann: did you go to the new climbing gym?", "Bo: yes, on Tuesday", "ok")
        ]
    )
    later = mem.remember(
        "Ann: what about dinner?", scope=ANN, created_at=moment + timedelta(minutes=5)
    )
    elsewhere = mem.remember("Bo: the gym was great", scope=BEN, created_at=moment)
    much_later = mem.remember("Ann: back again", scope=ANN, created_at=moment + timedelta(days=3))
    assert mem.get(first).follows is None
    assert mem.get(second).follows == first and mem.get(third).follows == second
    assert mem.get(later).follows == third  # the next call continues the timeline
    assert mem.get(elsewhere).follows is None  # another scope has its own timeline
    assert mem.get(much_later).follows is None  # days apart: not the same moment


def test_a_reply_comes_back_with_the_question_it_answers(mem: Memento) -> None:
    moment = datetime(2024, 5, 1, 18, 0, tzinfo=timezone.utc)
    question, answer = mem.remember_many(
        [
            MemoryDraft(
                "Ann: did you ever try the climbing gym downtown?", scope=ANN, created_at=moment
            ),
            MemoryDraft("Bo: yes, last Tuesday, it was great", scope=ANN, created_at=moment),
        ]
    )
    unrelated = mem.remember(
        "Bo: yes, last Friday, it was great", scope=ANN, created_at=moment + timedelta(days=9)
    )
    # Usage left out: the first recall counts as a use, which the second would rank by.
    found = {
        r.item.id: r for r in mem.recall("climbing gym", scope=ANN, limit=3, weights={"usage": 0})
    }
    assert found[answer].reason.context == pytest.approx(found[question].reason.relevance)
    assert found[unrelated].reason.context == 0.0
    assert found[answer].score > found[unrelated].score
    assert "context" in str(found[answer].reason)
    without = {
        r.item.id: r.score
        for r in mem.recall("climbing gym", scope=ANN, limit=3, weights={"context": 0, "usage": 0})
    }
    assert found[answer].score > without[answer]
    assert found[unrelated].score == pytest.approx(without[unrelated])


def test_filters_hold_for_keyword_hits_and_vector_hits_alike(mem: Memento) -> None:
    """Keyword hits beyond the vector candidates are read by id and filtered in Python
    (``RecallFilter.admits``), vector hits by the store query: both keep only what the filter
    describes. 120 memories and ``limit=10`` make the keyword path bring in many of its own."""
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    count = 120

    def kind(n: int) -> str:
        return ("episodic", "semantic", "procedural")[n % 3]

    drafts = [
        MemoryDraft(
            f"zebra note {n}" + " filler words" * (n % 7),
            scope=Scope(user_id="ann", agent_id=f"a{n % 2}", session_id=f"s{n % 5}"),
            type=kind(n),
            tags=[f"t{n % 2}", *(["both"] if n % 4 == 0 else [])],
            created_at=start + timedelta(days=n),
            privacy=("private", "public")[n % 2],
        )
        for n in range(count)
    ]
    ids = mem.remember_many(drafts)
    deleted = {ids[n] for n in range(0, count, 9)}
    for memory_id in deleted:
        mem.forget(memory_id)
    cases: list[tuple[dict[str, Any], Any]] = [
        ({}, lambda n: True),
        ({"types": ["semantic"]}, lambda n: kind(n) == "semantic"),
        ({"tags": ["t0", "both"]}, lambda n: n % 4 == 0),
        (
            {"since": start + timedelta(days=30), "until": start + timedelta(days=80)},
            lambda n: 30 <= n <= 80,
        ),
        ({"privacy": ["public"], "agent_id": "a1"}, lambda n: n % 2 == 1),
        ({"session_id": "s2"}, lambda n: n % 5 == 2),
    ]
    for values, wanted in cases:
        expected = {ids[n] for n in range(count) if wanted(n)} - deleted
        found = [
            r.item.id
            for r in mem.recall("zebra", scope=Scope(user_id="ann"), limit=10, filter=values)
        ]
        assert set(found) <= expected, values
        assert len(found) == min(10, len(expected)), values
    with_deleted = mem.recall(
        "zebra", scope=Scope(user_id="ann"), limit=200, filter={"include_deleted": True}
    )
    assert deleted <= {r.item.id for r in with_deleted}


def test_keyword_stems_are_right_when_threads_tokenise_at_once() -> None:
    import random
    import threading

    import snowballstemmer

    from memento_core._candidate_index import tokenize

    rng = random.Random(7)
    suffixes = ["ational", "izations", "fulness", "ingly", "ements", "ousness", "iveness"]
    words = [
        [
            "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(4))
            + rng.choice(suffixes)
            for _ in range(2_000)
        ]
        for _ in range(8)
    ]
    reference = snowballstemmer.stemmer("english")
    expected = [[reference.stemWord(w) for w in mine] for mine in words]
    found: dict[int, list[str]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(words))

    def worker(n: int) -> None:
        start.wait()
        try:
            found[n] = [token for word in words[n] for token in tokenize(word)]
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(len(words))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [found[n] for n in range(len(words))] == expected


def test_recalls_in_threads_beside_updates_of_the_same_memories_never_fail(mem: Memento) -> None:
    # A memory rewritten while a recall ranks it was once briefly out of the index: the recall
    # raised KeyError. Tiny switch intervals make threads interleave inside those steps.
    import sys
    import threading

    scope = Scope(user_id="ann")
    topics = ["garden", "piano", "harbour", "lantern", "violin", "orchard"]
    ids_ = mem.remember_many(
        [MemoryDraft(f"Ann's {t} note number {n}.", scope=scope) for t in topics for n in range(5)]
    )
    errors: list[BaseException] = []
    done = threading.Event()

    def rewrite() -> None:
        n = 0
        while not done.is_set():
            memory_id = ids_[n % len(ids_)]
            # Long texts: indexing one takes milliseconds, the window the race needed.
            long = " ".join(f"{topics[(n + k) % 6]} word{k}" for k in range(2000))
            try:
                mem.update(memory_id, content=f"Ann's {topics[n % 6]} note {n}: {long}")
            except BaseException as err:  # reported below
                errors.append(err)
            n += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for n in range(300):
            found = mem.recall(f"{topics[n % 6]} note", scope=scope, limit=5)
            assert found and all(r.item.id in ids_ for r in found)
    finally:
        done.set()
        writer.join()
        sys.setswitchinterval(interval)
    assert errors == []


# ---------------------------------------------------------------------------- calibration

PET_FACT = "Our puppy Bean is a seven-year-old Maltese who sleeps on the sofa."
WORD_ONLY = [
    "Tell the plumber the kitchen sink still leaks.",
    "The quarterly budget spreadsheet is due on Friday.",
    "I renewed the car insurance for another year.",
    "The printer on the third floor is out of toner.",
]


def test_calibrated_relevance_lets_a_clear_meaning_beat_a_lone_common_word(
    mem: Memento,
) -> None:
    """A memory that shares only a common word with the question ("tell") wins uncalibrated,
    its keyword half counting 1 as the best match; calibrated (the default), that word is a
    small share of what the question asks and the memory the question means comes first."""
    texts = [PET_FACT, *WORD_ONLY]
    stored = mem.remember_many([MemoryDraft(content=t, scope=ANN) for t in texts])
    question = "Tell me about her dog and its breed"
    today = mem.recall(question, scope=ANN, limit=1, weights={"calibrate": 0.0})
    calibrated = mem.recall(question, scope=ANN, limit=1)
    assert ids(today) == [stored[1]]
    assert ids(calibrated) == [stored[0]]
    assert calibrated[0].reason.keyword == 0.0
    assert calibrated[0].reason.dense > today[0].reason.dense  # the cosines, as the model gave


def test_calibrate_out_of_range_is_refused_and_nothing_changes(mem: Memento) -> None:
    memory_id = mem.remember(PET_FACT, scope=ANN)
    for bad in (1.5, -0.1, "full", True):
        with pytest.raises(InvalidInput, match=r"^calibrate must be from 0 to 1"):
            mem.recall("dog", scope=ANN, weights={"calibrate": bad})
    assert ids(mem.recall("dog", scope=ANN)) == [memory_id]


# ---------------------------------------------------------------------------- baseline


class NarrowBand:
    """The session's model with its space squeezed into a narrow band, as multilingual-e5's
    (unrelated text near 0.8): every cosine becomes ``share + (1 − share)·cosine``, exactly,
    through one extra constant dimension."""

    def __init__(self, inner: Any, share: float) -> None:
        self.inner, self.share = inner, share

    @property
    def name(self) -> str:
        return f"{self.inner.name}-narrow-{self.share:g}"

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension) + 1

    def _squeeze(self, vectors: Any) -> Any:
        import numpy as np

        units = np.asarray(vectors, dtype=np.float64)
        units = units / np.linalg.norm(units, axis=-1, keepdims=True)
        extra = np.full((*units.shape[:-1], 1), self.share**0.5)
        return np.concatenate([units * (1 - self.share) ** 0.5, extra], axis=-1).astype(np.float32)

    def embed_documents(self, texts: Any) -> Any:
        return self._squeeze(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> Any:
        return self._squeeze(self.inner.embed_query(text))


BAND_TEXTS = [
    f"{name} {habit}"
    for name in ("Ann", "Bo", "Cy", "Di")
    for habit in (
        "drinks her coffee black every morning.",
        "commutes on the subway and reads on the way.",
        "keeps a Maltese puppy called Bean.",
        "is allergic to peanuts and carries an injector.",
        "plays tennis on Sunday afternoons.",
        "is saving a third of each salary for a flat.",
        "learns Spanish from an online course at night.",
        "had knee surgery last winter and avoids stairs.",
        "grows tomatoes and lettuce on the balcony.",
        "works from home on Mondays and Fridays.",
    )
]
BAND_QUESTIONS = [
    "Who has a dog at home?",
    "Which of them cannot eat nuts?",
    "How does Bo get to work?",
    "What does Di do on weekends?",
    "Who is studying a language?",
]


def test_a_narrow_band_embedder_ranks_as_the_plain_one_with_the_baseline(
    embedder: Any, tmp_path: Any
) -> None:
    """Measured from the query's baseline, the dense half is the same whatever band an
    embedder's cosines sit in: the squeezed space ranks and scores exactly as the plain one.
    Raw cosines (``baseline`` 0) squeezed to a sixth of their spread let keyword matches
    decide instead."""
    drafts = [MemoryDraft(content=t, scope=ANN) for t in BAND_TEXTS]
    weights = {"calibrate": 0.0, "usage": 0.0}  # calibration hides the band in some queries
    ranked: dict[tuple[str, float], list[list[tuple[int, float]]]] = {}
    for name, space in (("plain", embedder), ("narrow", NarrowBand(embedder, 0.8))):
        with Memento.open(tmp_path / name, embedder=space) as store:
            stored = store.remember_many(drafts)
            for shift in (1.0, 0.0):
                ranked[name, shift] = [
                    [
                        (stored.index(r.item.id), r.score)
                        for r in store.recall(
                            q, scope=ANN, limit=5, weights={**weights, "baseline": shift}
                        )
                    ]
                    for q in BAND_QUESTIONS
                ]

    def order(key: tuple[str, float]) -> list[list[int]]:
        return [[i for i, _ in results] for results in ranked[key]]

    def scores(key: tuple[str, float]) -> list[float]:
        return [score for results in ranked[key] for _, score in results]

    assert order(("narrow", 1.0)) == order(("plain", 1.0))
    assert scores(("narrow", 1.0)) == pytest.approx(scores(("plain", 1.0)), abs=1e-4)
    assert order(("narrow", 0.0)) != order(("plain", 0.0))


def test_baseline_out_of_range_is_refused_and_nothing_changes(mem: Memento) -> None:
    memory_id = mem.remember(PET_FACT, scope=ANN)
    for bad in (1.5, -0.1, "full", True, None):
        with pytest.raises(InvalidInput, match=r"^baseline must be from 0 to 1"):
            mem.recall("dog", scope=ANN, weights={"baseline": bad})
    assert ids(mem.recall("dog", scope=ANN)) == [memory_id]
