"""Every page of the inspector through the ASGI test client: what it shows, to whom, and the
clear message (with its status) that bad input gets — after which the store is unchanged."""

from __future__ import annotations

import csv
import io
import json

import pytest
from _inspector_support import HOSTS, SESSION, TOKEN, Seeded, client_for, csrf_of
from starlette.testclient import TestClient

from memento_core import Memento


@pytest.fixture(scope="module")
def owner(seeded: tuple[Memento, Seeded]):  # type: ignore[no-untyped-def]
    return client_for(seeded[0])


@pytest.fixture(scope="module")
def alice(seeded: tuple[Memento, Seeded]):  # type: ignore[no-untyped-def]
    return client_for(seeded[0], user="alice")


def snapshot(mem: Memento) -> list[str]:
    return list(mem.export("ndjson"))


# ------------------------------------------------------------------- access


def test_owner_mode_needs_the_token(seeded: tuple[Memento, Seeded]) -> None:
    client = client_for(seeded[0])
    del client.headers["x-memento-token"]
    refused = client.get("/")
    assert refused.status_code == 401 and "token" in refused.text
    assert client.get("/", headers={"x-memento-token": "wrong"}).status_code == 401
    assert client.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    # The printed address: ?token= sets a cookie and takes the token out of the address.
    first = client.get(f"/memories?token={TOKEN}&state=all")
    assert first.status_code == 303 and first.headers["location"] == "/memories?state=all"
    assert client.get("/memories?state=all").status_code == 200  # the cookie carries it now


def test_an_inspector_without_a_token_must_be_asked_for(seeded: tuple[Memento, Seeded]) -> None:
    from memento_core import InvalidInput
    from memento_inspector import create_app

    mem = seeded[0]
    with pytest.raises(InvalidInput, match="needs a token"):
        create_app(mem, user="alice")
    with pytest.raises(InvalidInput, match="store's owner always needs a token"):
        create_app(mem, no_token=True)
    with pytest.raises(InvalidInput, match="not both"):
        create_app(mem, user="alice", token=TOKEN, no_token=True)
    opened = TestClient(create_app(mem, user="alice", no_token=True, allowed_hosts=HOSTS))
    assert opened.get("/").status_code == 200  # asked for: served without one


def test_a_foreign_host_is_refused(owner) -> None:  # type: ignore[no-untyped-def]
    response = owner.get("/", headers={"host": "attacker.example"})
    assert response.status_code == 400 and "attacker.example" in response.text


def test_user_mode_needs_the_token_too(seeded: tuple[Memento, Seeded]) -> None:
    alice = client_for(seeded[0], user="alice")
    response = alice.get("/")
    assert response.status_code == 200 and "acting as <b>alice</b>" in response.text
    del alice.headers["x-memento-token"]
    refused = alice.get("/")
    assert refused.status_code == 401 and "token" in refused.text
    assert "alice" not in refused.text  # a stranger is not told whom it acts as
    assert alice.get("/export?fmt=ndjson").status_code == 401


# ----------------------------------------------------------------- overview


def test_overview_counts_and_plots(owner, seeded: tuple[Memento, Seeded]) -> None:  # type: ignore[no-untyped-def]
    page = owner.get("/")
    assert page.status_code == 200
    census = seeded[0].census()
    assert f"<b>{census.memories}</b> live memories" in page.text
    for user in ("alice", "bob", "carol"):
        assert f"/memories?user={user}" in page.text
    assert 'aria-label="memories written per day"' in page.text
    assert "change feed last read" in page.text


def test_the_overview_of_a_user_counts_only_what_they_see(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    mem, _ = seeded
    page = alice.get("/")
    seen = mem.census(client_scope(alice))
    assert f"<b>{seen.memories}</b> live memories" in page.text
    assert seen.memories < mem.census().memories
    assert "/memories?user=carol" in page.text  # her public memory
    assert seen.by_user.get("carol") == 1 and "bob" in seen.by_user  # his team memory


def client_scope(client):  # type: ignore[no-untyped-def]
    return client.app.state.inspector.scope


# ------------------------------------------------------------------- browse


def test_browse_filters(owner, seeded: tuple[Memento, Seeded]) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    by_user = owner.get("/memories?user=bob")
    assert ids.party in by_user.text and ids.bob_team in by_user.text
    assert ids.coffee not in by_user.text
    tagged = owner.get("/memories?tags=pref:coffee")
    assert ids.coffee in tagged.text and ids.peanuts not in tagged.text
    team = owner.get("/memories?privacy=team&order=oldest")
    assert ids.database in team.text and ids.bob_team in team.text and ids.party not in team.text
    dated = owner.get("/memories?until=2000-01-01")
    assert "0 memories" in dated.text


def test_browse_sorts(owner, seeded: tuple[Memento, Seeded]) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded

    newest = owner.get("/memories?user=alice").text
    assert newest.index(ids.peanuts) < newest.index(ids.coffee)  # coffee: a week old
    oldest = owner.get("/memories?user=alice&order=oldest").text
    assert oldest.index(ids.coffee) < oldest.index(ids.peanuts)
    important = owner.get("/memories?order=importance").text
    assert important.index(ids.peanuts) < important.index(ids.party)  # 0.9 before 0.8


def test_a_user_browses_only_what_they_may_see(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    page = alice.get("/memories?state=all")
    assert ids.coffee in page.text and ids.bob_team in page.text and ids.public in page.text
    assert ids.party not in page.text and ids.carol not in page.text
    assert ids.party not in alice.get("/memories?user=bob").text


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("type=bogus", "memory type"),
        ("privacy=secret", "privacy"),
        ("state=gone", "state"),
        ("pinned=maybe", "pinned"),
        ("since=yesterday", "since"),
        ("since=2026-02-01&until=2026-01-01", "since is after until"),
        ("page=0", "page"),
        ("page=x", "page"),
        ("order=random", "order"),
        ("tags=" + "t" * 200, "tag"),
        ("user=" + "u" * 300, "user filter"),
    ],
)
def test_bad_filters_get_a_clear_message(owner, seeded, query: str, named: str) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(seeded[0])
    response = owner.get(f"/memories?{query}")
    assert response.status_code == 400
    assert named in response.text and 'id="error"' in response.text
    assert snapshot(seeded[0]) == before


# ------------------------------------------------------------------- search


def test_search_explains_each_score(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    page = alice.get("/search?q=coffee")
    assert page.status_code == 200
    assert ids.coffee in page.text and ids.party not in page.text
    assert page.text.count('class="scorebar"') >= 2
    assert "<mark>coffee</mark>" in page.text
    assert "relevance +" in page.text and "importance +" in page.text


def test_search_weights_change_the_ranking(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    zero = "w_relevance=0&w_recency=0&w_usage=0&w_context=0"
    by_importance = alice.get(f"/search?q=Alice&limit=50&{zero}&w_importance=1").text
    first = by_importance.index('href="/memory/')
    assert by_importance[first:].startswith(f'href="/memory/{ids.peanuts}"')  # importance 0.9
    assert 'name="w_importance" value="1.0"' in by_importance


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("q=x&w_recency=abc", "weight recency"),
        ("q=x&w_usage=-1", "weight usage"),
        ("q=x&w_relevance=inf", "weight relevance"),
        ("q=x&limit=1000", "limit"),
        ("q=" + "word " * 500, "characters"),
    ],
)
def test_bad_search_input_gets_a_clear_message(alice, seeded, query: str, named: str) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(seeded[0])
    response = alice.get(f"/search?{query}")
    assert response.status_code == 400 and named in response.text
    assert snapshot(seeded[0]) == before


# ------------------------------------------------------------------- memory


def test_a_memory_page_shows_everything(owner, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    page = owner.get(f"/memory/{ids.coffee}")
    assert page.status_code == 200
    assert "Alice takes her coffee black" in page.text
    assert 'class="graph"' in page.text and "derived_from" in page.text
    assert f'href="/memory/{ids.peanuts}"' in page.text  # the linked memory, in the graph
    assert "helpful" in page.text and "used in a reply" in page.text  # its feedback event
    assert "each use renews it" in page.text or "never" in page.text  # expiry and why
    assert 'id="edit"' in page.text


def test_unknown_and_hidden_memories_are_not_found(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    assert alice.get("/memory/no-such-id").status_code == 404
    hidden = alice.get(f"/memory/{ids.party}")  # Bob's private memory
    assert hidden.status_code == 404 and "Bob" not in hidden.text
    assert alice.get("/nowhere").status_code == 404


def test_a_memory_page_says_only_what_a_change_made_here_did(owner, seeded) -> None:  # type: ignore[no-untyped-def]
    coffee = seeded[1].coffee
    assert "The memory was saved." in owner.get(f"/memory/{coffee}?done=saved").text
    spoofed = owner.get(f"/memory/{coffee}?done=deleted+by+the+admin.+Call+555-0100").text
    assert "admin" not in spoofed and 'id="done"' not in spoofed


def test_a_memory_of_another_user_offers_no_changes(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    page = alice.get(f"/memory/{seeded[1].bob_team}")
    assert page.status_code == 200 and 'id="edit"' not in page.text
    assert "only its owner can change it" in page.text


def test_the_hotword_tester_shows_what_fires_and_where(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    reply = "Sure. Your cat Zephyr sounds lovely."
    assert alice.get("/hotwords").status_code == 200  # the empty tester
    page = alice.post("/hotwords", data={"reply": reply, "csrf": csrf_of(alice)})
    assert page.status_code == 200
    assert f'href="/memory/{seeded[1].hotword}"' in page.text
    at = page.text.index("by character ")
    position = int(page.text[at:].split()[2])
    assert reply[:position].rstrip().endswith("Zephyr")
    too_long = alice.post("/hotwords", data={"reply": "x" * 20_001, "csrf": csrf_of(alice)})
    assert too_long.status_code == 400 and "20000" in too_long.text
    assert alice.post("/hotwords", data={"reply": reply}).status_code == 403  # no CSRF token
    reader = client_for(seeded[0], user="alice", read_only=True)  # testing changes nothing
    tested = reader.post("/hotwords", data={"reply": reply, "csrf": csrf_of(reader)})
    assert tested.status_code == 200 and seeded[1].hotword in tested.text


# ----------------------------------------------------------------- sessions


def test_a_session_shows_window_history_and_archive(alice) -> None:  # type: ignore[no-untyped-def]
    page = alice.get(f"/session?id={SESSION}")
    assert page.status_code == 200
    assert page.text.count("I moved to Lisbon last month.") == 2  # window and history
    assert "archived turn" in page.text
    assert 'id="summaries"' in page.text and "/memory/" in page.text.split('id="summaries"')[1]


def test_another_users_session_answers_as_an_unknown_one(seeded) -> None:  # type: ignore[no-untyped-def]
    bob = client_for(seeded[0], user="bob")
    response = bob.get(f"/session?id={SESSION}")
    unknown = bob.get("/session?id=no-such-chat")
    assert response.status_code == unknown.status_code == 200
    assert response.text.replace(SESSION, "X") == unknown.text.replace("no-such-chat", "X")
    assert "Lisbon" not in response.text


# ------------------------------------------------------------------- export


def test_export_of_a_user_holds_what_they_may_see(alice, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    ndjson = alice.get("/export?fmt=ndjson")
    assert ndjson.status_code == 200
    exported = {json.loads(line)["id"] for line in ndjson.text.splitlines()}
    assert {ids.coffee, ids.bob_team, ids.public} <= exported
    assert ids.party not in exported and ids.carol not in exported
    rows = list(csv.reader(io.StringIO(alice.get("/export?fmt=csv").text)))
    assert rows[0][0] == "id" and {r[0] for r in rows[1:]} == exported
    markdown = alice.get("/export?fmt=markdown").text
    assert "Alice is allergic to peanuts." in markdown and "surprise party" not in markdown


def test_export_of_the_owner_is_the_whole_store(owner, seeded) -> None:  # type: ignore[no-untyped-def]
    response = owner.get("/export?fmt=ndjson")
    assert response.text.splitlines() == "".join(snapshot(seeded[0])).splitlines()
    assert owner.get("/export").status_code == 200  # the page that offers the formats
    bad = owner.get("/export?fmt=xml")
    assert bad.status_code == 400 and "export format" in bad.text


def test_users_page_lists_and_offers_erasure(owner) -> None:  # type: ignore[no-untyped-def]
    page = owner.get("/users")
    assert page.status_code == 200 and page.text.count("Erase user") == 3


def test_the_owner_searches_as_a_chosen_user(owner, seeded) -> None:  # type: ignore[no-untyped-def]
    _, ids = seeded
    nobody = owner.get("/search?q=coffee").text
    assert ids.public in nobody and ids.coffee not in nobody  # no user: public ones only
    as_alice = owner.get("/search?q=coffee&as_user=alice").text
    assert ids.coffee in as_alice and ids.party not in as_alice
    bad = owner.get("/search?q=coffee&as_user=" + "x" * 300)
    assert bad.status_code == 400 and "user_id" in bad.text


def test_pages_say_so_while_the_first_count_runs(
    seeded: tuple[Memento, Seeded], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memento_inspector import viewer

    monkeypatch.setattr(viewer, "FIRST_COUNT_WAIT", 0.0)
    client = client_for(seeded[0])
    inspector = client.app.state.inspector  # type: ignore[attr-defined]
    with inspector._counting:  # a count in progress, as at 100,000 memories
        for path in ("/", "/memories", "/users", f"/session?id={SESSION}"):
            page = client.get(path)
            assert page.status_code == 200 and 'id="counting"' in page.text, path
        assert "Alice" in client.get(f"/memory/{seeded[1].coffee}").text  # not waiting
    inspector.recount()
    assert 'id="counting"' not in client.get("/").text


@pytest.mark.server
def test_over_a_chroma_server(chroma_server: str, embedder: object) -> None:
    """The same pages over a store on the session's ``chroma run``."""
    from uuid import uuid4

    from _inspector_support import seed

    with Memento.open(
        url=chroma_server, collection_prefix=f"i{uuid4().hex[:10]}", embedder=embedder
    ) as mem:  # type: ignore[arg-type]
        ids = seed(mem)
        alice = client_for(mem, user="alice")
        assert ids.coffee in alice.get("/memories").text
        assert ids.party not in alice.get("/memories?state=all").text
        assert ids.coffee in alice.get("/search?q=coffee").text
        assert "change feed last read" in alice.get("/").text
        owner = client_for(mem)
        assert "/memories?user=bob" in owner.get("/").text


@pytest.mark.parametrize(
    ("path", "status", "named"),
    [
        ("/memory/" + "x" * 2000, 400, "memory id"),
        ("/session?id=" + "s" * 400, 400, "session_id"),
        ("/session?id=%01", 400, "control character"),
    ],
)
def test_malformed_ids_get_a_message(owner, seeded, path: str, status: int, named: str) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(seeded[0])
    response = owner.get(path)
    assert response.status_code == status and named in response.text
    assert snapshot(seeded[0]) == before
