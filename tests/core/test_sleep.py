"""Sleep consolidation: clusters of episodes become facts with provenance; duplicates merge;
contradictions are linked and the older fact ranks lower; re-runs and concurrent runs are
harmless."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    Embedder,
    InvalidContent,
    InvalidInput,
    InvalidScope,
    LinkType,
    Memento,
    MemoryNotFound,
    MemoryType,
    Message,
    Scope,
    SleepReport,
    Summarizer,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann")
BEN = Scope(user_id="ben")
T0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)

# A week of Ann's life, as her assistant heard it: four threads, told interleaved, and a
# remark that belongs to none of them.
TOPICS: dict[str, tuple[str, ...]] = {
    "pet": (
        "Ann adopted a beagle puppy called Biscuit from the animal shelter.",
        "Biscuit, Ann's beagle puppy, chews her slippers every morning.",
        "Ann takes her beagle Biscuit to puppy training class on Sundays.",
    ),
    "trip": (
        "Ann is flying to Lisbon on 3 October for a week's holiday.",
        "For her Lisbon holiday Ann booked a hotel in the Alfama district.",
        "On her Lisbon holiday Ann wants to eat pastel de nata in Belém.",
    ),
    "cello": (
        "Ann practises the cello for an hour every evening.",
        "Ann's cello teacher says her cello playing has improved a lot.",
        "Ann will play the cello at the spring concert.",
    ),
    "garden": (
        "Ann planted tomatoes and basil in her garden.",
        "Ann's garden tomatoes are finally turning red.",
        "Ann waters the tomatoes in her garden every morning.",
    ),
}
LONE = "Ann's car needs new winter tyres before November."
IMPORTANCE = {"pet": (0.3, 0.6, 0.4), "trip": (0.9, 0.5, 0.5)}


def remember_week(mem: Memento, scope: Scope = ANN, start: datetime = T0) -> dict[str, list[str]]:
    """The episodes, an hour apart, threads interleaved; returns their ids by thread."""
    ids: dict[str, list[str]] = {name: [] for name in TOPICS}
    ids["lone"] = []
    told = [(name, n) for n in range(3) for name in TOPICS]
    told.insert(5, ("lone", 0))
    for hour, (name, n) in enumerate(told):
        text = LONE if name == "lone" else TOPICS[name][n]
        importance = IMPORTANCE.get(name, (0.5, 0.5, 0.5))[n]
        tags = ["travel"] if name == "trip" else []
        ids[name].append(
            mem.remember(
                text, scope=scope, importance=importance, tags=tags, created_at=start + hour * HOUR
            )
        )
    return ids


def remember_weeks(mem: Memento, weeks: int = 3) -> None:
    """The same week told again in later sessions: distinct memories with the same texts, so
    each thread's cluster holds ``weeks`` times as many episodes (and the lone remarks form one
    of their own)."""
    for week in range(weeks):
        scope = Scope(user_id="ann", session_id=f"week-{week}")
        remember_week(mem, scope=scope, start=T0 + timedelta(days=7 * week))


def sources(mem: Memento, fact_id: str) -> set[str]:
    return {
        link.target_id
        for link in mem.links(fact_id)
        if link.type is LinkType.DERIVED_FROM and link.source_id == fact_id
    }


def live_facts(mem: Memento, scope: Scope) -> list[str]:
    return [
        i.id for i in mem.items(scope=scope, include_deleted=False) if i.type is MemoryType.SEMANTIC
    ]


def assert_each_episode_in_one_fact(mem: Memento, scope: Scope) -> dict[str, set[str]]:
    """No episode consolidated twice, none lost: the live facts' sources are disjoint and are
    exactly the consolidated episodes. Returns each live fact's sources."""
    by_fact = {fact_id: sources(mem, fact_id) for fact_id in live_facts(mem, scope)}
    listed = [s for group in by_fact.values() for s in group]
    assert len(listed) == len(set(listed)), "an episode feeds two live facts"
    consolidated = {
        i.id for i in mem.items(scope=scope) if i.type is MemoryType.EPISODIC and i.consolidated_at
    }
    assert set(listed) == consolidated
    contents = [mem.get(fact_id).content for fact_id in by_fact]
    assert len(contents) == len(set(contents)), "a fact was written twice"
    return by_fact


# ------------------------------------------------------------------------- clusters


def test_each_cluster_becomes_one_fact_with_provenance(mem: Memento) -> None:
    ids = remember_week(mem)
    ben_episode = mem.remember(TOPICS["pet"][0].replace("Ann", "Ben"), scope=BEN)
    progress: list[tuple[int, int]] = []

    report = mem.sleep(ANN, on_progress=lambda done, total: progress.append((done, total)))

    assert (report.considered, report.clusters, len(report.written)) == (13, 4, 4)
    assert progress[-1] == (4, 4)
    assert report.derived_links == 12
    assert set(report.consolidated) == {i for name in TOPICS for i in ids[name]}
    by_sources = {frozenset(sources(mem, fact_id)): fact_id for fact_id in report.written}
    assert set(by_sources) == {frozenset(ids[name]) for name in TOPICS}
    for name in TOPICS:
        fact = mem.get(by_sources[frozenset(ids[name])])
        episodes = [mem.get(i) for i in ids[name]]
        assert fact.type is MemoryType.SEMANTIC and fact.source == "consolidation"
        assert fact.scope == Scope(user_id="ann")
        assert fact.importance == max(e.importance for e in episodes)
        assert fact.created_at == max(e.created_at for e in episodes)
        assert set(fact.tags) == {t for e in episodes for t in e.tags}
        assert fact.origin_trace == {"derived_from": ids[name]}
        assert all(e.consolidated_at is not None for e in episodes)
    # The remark that joined no cluster waits for a later sleep; Ben's episodes are Ben's.
    assert mem.get(ids["lone"][0]).consolidated_at is None
    assert mem.get(ben_episode).consolidated_at is None


def test_the_extractive_summary_keeps_the_key_facts_readably(mem: Memento) -> None:
    ids = remember_week(mem)
    report = mem.sleep(ANN)
    facts = {frozenset(sources(mem, f)): mem.get(f).content for f in report.written}
    pet, trip = facts[frozenset(ids["pet"])], facts[frozenset(ids["trip"])]
    for key_fact in ("beagle puppy called Biscuit", "animal shelter", "puppy training class"):
        assert key_fact in pet
    for key_fact in ("Lisbon on 3 October", "Alfama district", "pastel de nata in Belém"):
        assert key_fact in trip
    # Readable: whole sentences from the episodes, one a line, in the order they were told.
    assert pet.splitlines() == list(TOPICS["pet"])
    assert trip.splitlines() == list(TOPICS["trip"])


def test_a_shared_tag_pulls_borderline_episodes_into_one_cluster(
    mem: Memento, embedder: Embedder
) -> None:
    texts = ("Ann plays the cello.", "Ann practises music on Tuesdays.")
    vectors = embedder.embed_documents(list(texts))
    similarity = float(vectors[0] @ vectors[1])
    assert 0.5 <= similarity < 0.6, f"fixture drifted: similarity {similarity:.3f}"

    untagged, tagged = Scope(user_id="untagged"), Scope(user_id="tagged")
    for hour, text in enumerate(texts):
        mem.remember(text, scope=untagged, created_at=T0 + hour * HOUR)
        mem.remember(text, scope=tagged, tags=["music"], created_at=T0 + hour * HOUR)
    assert mem.sleep(untagged).clusters == 0
    report = mem.sleep(tagged)
    assert report.clusters == 1 and len(sources(mem, report.written[0])) == 2


class Headline:
    """A stand-in for an LLM summarizer: any object with ``summarize`` will do."""

    def summarize(self, items: Sequence[Message | str]) -> str:
        texts = [item if isinstance(item, str) else item.content for item in items]
        return f"{len(texts)} related episodes, starting: {texts[0]}"


def test_facts_are_written_through_the_given_summarizer(mem: Memento) -> None:
    assert isinstance(Headline(), Summarizer)
    ids = remember_week(mem)
    report = mem.sleep(ANN, summarizer=Headline())
    contents = {mem.get(f).content for f in report.written}
    assert f"3 related episodes, starting: {TOPICS['pet'][0]}" in contents
    assert len(contents) == 4 and all(c.startswith("3 related episodes") for c in contents)
    assert {frozenset(sources(mem, f)) for f in report.written} == {
        frozenset(ids[name]) for name in TOPICS
    }


def test_since_limits_sleep_to_newer_episodes(mem: Memento) -> None:
    old = remember_week(mem, start=T0)
    recent_start = T0 + timedelta(days=60)
    recent = [
        mem.remember(text, scope=ANN, created_at=recent_start + n * HOUR)
        for n, text in enumerate(
            (
                "Ann started a pottery course at the community centre.",
                "Ann's pottery teacher showed her how to centre clay on the wheel.",
                "Ann made her first pottery bowl on the wheel.",
            )
        )
    ]
    report = mem.sleep(ANN, since=recent_start)
    assert report.considered == 3 and set(report.consolidated) == set(recent)
    assert all(mem.get(i).consolidated_at is None for name in TOPICS for i in old[name])
    assert mem.sleep(ANN).clusters == 4  # the rest, when asked without since


async def test_sleep_on_an_empty_store_or_scope_writes_nothing(mem: Memento) -> None:
    assert await mem.asleep(ANN) == SleepReport()
    assert list(mem.export()) == []
    remember_week(mem, scope=BEN)
    before = list(mem.export())
    assert mem.sleep(ANN) == SleepReport()
    assert list(mem.export()) == before


# ---------------------------------------------------------------------- idempotency


def test_a_second_sleep_writes_nothing(mem: Memento) -> None:
    remember_week(mem)
    for n, city in enumerate(("Paris", "Berlin", "Oslo")):
        mem.remember(
            f"Ann lives in {city}.",
            scope=ANN,
            type="semantic",
            data={"subject": "ann", "city": city},
            created_at=T0 + timedelta(days=n),
        )
    first = mem.sleep(ANN)
    assert first.written and len(first.contradictions) == 3
    before = list(mem.export())

    second = mem.sleep(ANN)
    assert (second.written, second.consolidated, second.merged, second.contradictions) == (
        [],
        [],
        [],
        [],
    )
    assert list(mem.export()) == before


def test_concurrent_sleeps_in_two_threads_write_each_fact_once(
    store_factory: StoreFactory,
) -> None:
    setup = store_factory.open()
    remember_weeks(setup)
    handles = [store_factory.open(), store_factory.open()]
    barrier = threading.Barrier(2)
    reports: list[SleepReport] = []
    errors: list[BaseException] = []

    def run(mem: Memento) -> None:
        try:
            barrier.wait()
            reports.append(mem.sleep(ANN))
        except BaseException as err:  # surfaced below: a thread's exception would vanish
            errors.append(err)

    threads = [threading.Thread(target=run, args=(handle,)) for handle in handles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors

    by_fact = assert_each_episode_in_one_fact(setup, ANN)
    assert set(by_fact) == {f for report in reports for f in report.written}
    assert sorted(len(group) for group in by_fact.values()) == [3, 9, 9, 9, 9]
    derived = [link for link in setup.all_links() if link.type is LinkType.DERIVED_FROM]
    assert len(derived) == 39


CHILD = textwrap.dedent(
    """
    import json, sys
    from memento_core import Memento, Scope

    url, prefix = sys.argv[1:3]
    mem = Memento.open(url=url, collection_prefix=prefix)
    mem.embedder.embed_query("load the model before the start line")
    print("ready", flush=True)
    sys.stdin.readline()
    report = mem.sleep(Scope(user_id="ann"))
    print(json.dumps(report.written), flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.server
def test_two_processes_sleeping_against_a_server_write_each_fact_once(
    chroma_server: str, embedder: Embedder, tmp_path: Path
) -> None:
    prefix = f"sleep{os.getpid()}{tmp_path.name[-6:]}".replace("_", "")
    mem = Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder)
    remember_weeks(mem)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, chroma_server, prefix],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
        )
        for _ in range(2)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    written: set[str] = set()
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        written |= set(json.loads(out.splitlines()[-1]))

    by_fact = assert_each_episode_in_one_fact(mem, ANN)
    assert set(by_fact) == written
    assert sorted(len(group) for group in by_fact.values()) == [3, 9, 9, 9, 9]


# ------------------------------------------------------------ duplicates and conflicts


def test_a_near_duplicate_fact_is_merged_into_the_older_keeping_provenance(mem: Memento) -> None:
    def episodes(texts: Sequence[str], start: datetime) -> list[str]:
        return [
            mem.remember(text, scope=ANN, created_at=start + n * HOUR)
            for n, text in enumerate(texts)
        ]

    first = episodes(
        ("Ann's dog is a beagle named Biscuit.", "Biscuit, Ann's beagle, is two years old."), T0
    )
    older = mem.sleep(ANN).written[0]
    second = episodes(
        ("Ann's dog is a beagle called Biscuit.", "Biscuit, Ann's beagle, is two years old now."),
        T0 + timedelta(days=3),
    )
    report = mem.sleep(ANN)
    newer = report.written[0]

    assert report.merged == [(newer, older)]
    assert (newer, LinkType.DUPLICATES, older) in [
        (x.source_id, x.type, x.target_id) for x in mem.links(newer)
    ]
    assert sources(mem, older) == set(first) | set(second)  # provenance kept
    with pytest.raises(MemoryNotFound):
        mem.get(newer)
    assert mem.get(newer, include_deleted=True).is_deleted  # hidden, not silently deleted
    recalled = [r.item.id for r in mem.recall("What is Ann's dog called?", scope=ANN, limit=10)]
    assert older in recalled and newer not in recalled
    assert_each_episode_in_one_fact(mem, ANN)


def test_a_cluster_that_summarises_to_a_merged_fact_feeds_the_fact_it_was_merged_into(
    mem: Memento,
) -> None:
    def episodes(texts: Sequence[str], start: datetime, scope: Scope = ANN) -> list[str]:
        return [
            mem.remember(text, scope=scope, created_at=start + n * HOUR)
            for n, text in enumerate(texts)
        ]

    later_texts = ("Ann's dog is a beagle called Biscuit.", "Biscuit, Ann's beagle, is two now.")
    episodes(("Ann's dog is a beagle named Biscuit.", "Biscuit, Ann's beagle, is two."), T0)
    older = mem.sleep(ANN).written[0]
    episodes(later_texts, T0 + timedelta(days=3))
    newer = mem.sleep(ANN).written[0]
    assert mem.get(newer, include_deleted=True).is_deleted  # merged into the older
    # The same texts told again in another session: their summary is the hidden fact's text.
    again = episodes(later_texts, T0 + timedelta(days=6), Scope(user_id="ann", session_id="s2"))

    report = mem.sleep(ANN)

    assert report.written == [older]
    assert set(again) <= sources(mem, older)
    assert not set(again) & sources(mem, newer)
    assert mem.get(newer, include_deleted=True).is_deleted
    assert_each_episode_in_one_fact(mem, ANN)


def test_a_late_episode_joins_the_fact_an_earlier_sleep_made_for_its_topic(
    mem: Memento,
) -> None:
    ids = remember_week(mem)
    first = mem.sleep(ANN)
    pet_fact = next(f for f in first.written if sources(mem, f) == set(ids["pet"]))
    late = mem.remember(
        "Ann's beagle puppy Biscuit learned to sit at his puppy training class.",
        scope=ANN,
        created_at=T0 + 3 * 24 * HOUR,
    )
    bens = mem.remember(
        "Ben's beagle puppy Biscuit learned to sit at his puppy training class.", scope=BEN
    )

    report = mem.sleep(ANN)

    assert (report.clusters, report.written) == (0, [])
    assert report.consolidated == [late] and report.derived_links == 1
    assert sources(mem, pet_fact) == {*ids["pet"], late}
    assert mem.get(late).consolidated_at is not None
    # The remark of no topic still waits, and Ben's episode is not Ann's fact's.
    assert mem.get(ids["lone"][0]).consolidated_at is None
    assert mem.get(bens).consolidated_at is None
    assert_each_episode_in_one_fact(mem, ANN)
    assert mem.sleep(ANN).consolidated == []  # nothing left to join: a second run writes nothing


def test_a_late_episode_joins_no_fact_that_is_more_visible_than_it(mem: Memento) -> None:
    team = Scope(user_id="ann", project_id="home")
    for n, text in enumerate(TOPICS["pet"]):
        mem.remember(text, scope=team, privacy="team", created_at=T0 + n * HOUR)
    (fact,) = mem.sleep(ANN).written
    assert mem.get(fact).privacy.value == "team"
    private = mem.remember(
        "Ann's beagle puppy Biscuit learned to sit at his puppy training class.",
        scope=team,
        created_at=T0 + 24 * HOUR,
    )

    report = mem.sleep(ANN)

    assert report.consolidated == []
    assert mem.get(private).consolidated_at is None
    assert private not in sources(mem, fact)


def recall_facts(mem: Memento, query: str) -> list[Any]:
    return mem.recall(query, scope=ANN, limit=10, filter={"types": ["semantic"]})


def test_a_negated_fact_contradicts_the_older_which_then_ranks_lower(mem: Memento) -> None:
    for n, text in enumerate(
        ("Ann is allergic to peanuts.", "Ann is allergic to peanuts, her doctor says.")
    ):
        mem.remember(text, scope=ANN, created_at=T0 + n * HOUR)
    older = mem.sleep(ANN).written[0]
    for n, text in enumerate(
        ("Ann is not allergic to peanuts.", "Ann is not allergic to peanuts, her doctor says.")
    ):
        mem.remember(text, scope=ANN, created_at=T0 + timedelta(days=3) + n * HOUR)
    report = mem.sleep(ANN)
    newer = report.written[0]

    assert report.contradictions == [(newer, older)] and report.merged == []
    assert (newer, LinkType.CONTRADICTS, older) in [
        (x.source_id, x.type, x.target_id) for x in mem.links(older)
    ]
    assert mem.get(older).superseded_by == newer and mem.get(newer).superseded_by is None

    results = recall_facts(mem, "Is Ann allergic to peanuts?")
    assert [r.item.id for r in results] == [newer, older]
    note = f"superseded by newer memory {newer}"
    assert results[1].reason.notes == (note,) and note in str(results[1].reason)
    assert results[0].reason.notes == ()


def test_facts_giving_a_key_another_value_contradict(mem: Memento) -> None:
    def fact(text: str, data: dict[str, str], day: int) -> str:
        return mem.remember(
            text, scope=ANN, type="semantic", data=data, created_at=T0 + timedelta(days=day)
        )

    paris = fact("Ann lives in Paris.", {"subject": "ann", "city": "Paris"}, 0)
    fact("Ann has a beagle.", {"subject": "ann", "pet": "beagle"}, 1)  # another key
    fact("Ben lives in Rome.", {"subject": "ben", "city": "Rome"}, 2)  # another subject
    berlin = fact("Ann lives in Berlin.", {"subject": "ann", "city": "Berlin"}, 3)

    report = mem.sleep(ANN)
    assert report.contradictions == [(berlin, paris)]
    assert mem.get(paris).superseded_by == berlin
    ranked = [r.item.id for r in recall_facts(mem, "Which city does Ann live in?")]
    assert ranked.index(berlin) < ranked.index(paris)

    # A third value: the oldest is superseded by the newest, and a re-run keeps it so.
    oslo = fact("Ann lives in Oslo.", {"subject": "ann", "city": "Oslo"}, 4)
    report = mem.sleep(ANN)
    assert sorted(report.contradictions) == sorted([(oslo, paris), (oslo, berlin)])
    assert mem.get(paris).superseded_by == oslo and mem.get(berlin).superseded_by == oslo
    before = list(mem.export())
    assert mem.sleep(ANN).contradictions == []
    assert list(mem.export()) == before


def test_the_newer_fact_ranks_higher_even_when_the_older_matches_the_words_better(
    mem: Memento,
) -> None:
    paris = mem.remember(
        "Ann lives in Paris.", scope=ANN, type="semantic", data={"subject": "ann", "city": "Paris"}
    )
    berlin = mem.remember(
        "Ann moved to Berlin.",
        scope=ANN,
        type="semantic",
        data={"subject": "ann", "city": "Berlin"},
    )
    assert mem.sleep(ANN).contradictions == [(berlin, paris)]
    ranked = [r.item.id for r in recall_facts(mem, "Where does Ann live?")]
    assert ranked.index(berlin) < ranked.index(paris)


# ----------------------------------------------------------------------- bad input


class Blank:
    def summarize(self, items: Sequence[Message | str]) -> str:
        return "   "


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda mem: mem.sleep({"user_id": "ann"}), InvalidScope),
        (lambda mem: mem.sleep(ANN, since="last week"), InvalidInput),
        (lambda mem: mem.sleep(ANN, summarizer=Blank()), InvalidContent),
    ],
    ids=["scope-dict", "since-text", "blank-summary"],
)
def test_bad_sleep_input_is_refused_and_harms_nothing(
    mem: Memento, call: Callable[[Memento], Any], error: type[Exception]
) -> None:
    remember_week(mem)
    before = list(mem.export())
    with pytest.raises(error):
        call(mem)
    assert list(mem.export()) == before
