"""One Memento user per (space, client user id), whatever characters either holds: look-alike
identities over a real WebSocket client and HTTP, a property test of injectivity, and the
refusal of a store whose users would change owner."""

from __future__ import annotations

import unicodedata
import urllib.parse
from typing import Any

import pytest
from conftest import KEY, OTHER_KEY, chat_graph, fake_model, http_get, request, start, turn
from hypothesis import given
from hypothesis import strategies as st

from memento_core import Memento, Scope, StoreError
from memento_gateway import ChangedIdentities, Gateway, Space, StaticKeys

DIGEST = "#" + "ab" * 32
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")

# (space, client user) pairs that a plain "<space>:<user>" join, or a careless escaping,
# would give one user.
LOOK_ALIKES: list[tuple[tuple[str, str], tuple[str, str]]] = [
    (("acme", "eu:bob"), ("acme:eu", "bob")),
    (("acme", "eu%3Abob"), ("acme", "eu:bob")),
    (("acme%3Aeu", "bob"), ("acme:eu", "bob")),
    (("acme", "eu：bob"), ("acme", "eu:bob")),  # fullwidth colon
    (("acme", NFC), ("acme", NFD)),
    (("acme", "ﬁ"), ("acme", "fi")),  # NFKC folds the ligature
    (("acme", "bob"), ("acme:", "bob")),
    (("acme", ":bob"), ("acme:", "bob")),
    (("a", "b:c:d"), ("a:b", "c:d")),
    (("a:b:c", "d"), ("a:b", "c:d")),
    (("acme", DIGEST), ("acme", "x" * 300)),
    (("acme", "#space"), ("acme", "space")),
    (("acme", "x#space"), ("acme:x", "space")),
    (("acme", "%"), ("acme", "%25")),
]


def user_of(space: str, client: str | None, bound: str | None = None) -> str:
    graph = chat_graph(fake_model("네."))
    return Space(space, graph, user_id=bound).user_for(client)


@pytest.mark.parametrize(("first", "second"), LOOK_ALIKES)
def test_look_alike_identities_are_different_users(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    assert user_of(*first) != user_of(*second)


def test_plain_ids_map_as_before() -> None:
    assert user_of("shop", "s8dfkjsdf") == "shop:s8dfkjsdf"
    assert user_of("shop", None) == "shop#space"
    assert user_of("kiosk", "anyone", bound="kiosk-7") == "kiosk-7"
    assert user_of("shop", "x" * 300).startswith("shop:#")


# Alphabets rich in the separators, escapes and look-alikes, plus anything printable.
_tricky = st.sampled_from([":", "#", "%", "3A", "23", "25", "：", "space", "a", "é", "é", "ﬁ"])
_text = st.lists(_tricky | st.characters(codec="utf-8", categories=["L", "N", "P", "S"]))


def _ids(max_size: int) -> st.SearchStrategy[str]:
    # Scope values must not be blank, nor claim an adapter's records.
    return _text.map("".join).filter(
        lambda t: 1 <= len(t) <= max_size and t.strip() and not t.startswith("adapter:")
    )


triples = st.tuples(_ids(64), st.none() | _ids(256), st.none() | _ids(256))


@given(a=triples, b=triples)
def test_the_mapping_is_injective(
    a: tuple[str, str | None, str | None], b: tuple[str, str | None, str | None]
) -> None:
    """Two (space, client, bound user) triples share a Memento user only if they mean the same
    one: the same bound user, or the same space and client."""

    def meaning(t: tuple[str, str | None, str | None]) -> tuple[str | None, ...]:
        space, client, bound = t
        return ("bound", bound) if bound is not None else (space, client)

    users = user_of(a[0], a[1], a[2]), user_of(b[0], b[1], b[2])
    assert all(len(u) <= 256 for u in users)
    assert (users[0] == users[1]) == (meaning(a) == meaning(b))


async def test_a_space_s_client_cannot_reach_a_prefixed_space_s_user(
    serving: Any, mem: Memento
) -> None:
    """The issue's case: ``acme`` + ``eu:bob`` is not ``acme:eu`` + ``bob``, over WebSocket
    (no hotword frames of bob's memory) and HTTP (404)."""
    acme = Space("acme", chat_graph(fake_model("비밀? 모릅니다.", "비밀? 모릅니다.")))
    acme_eu = Space("acme:eu", chat_graph(fake_model("비밀이요.")))
    harness = await serving({KEY: acme, OTHER_KEY: acme_eu})
    secret = mem.remember(
        "Bob's private locker code.",
        scope=acme_eu.scope_for("bob"),
        hotwords=["비밀"],
        data={"code": 4711},
    )
    async with harness.connect() as ws:
        stolen = await turn(ws, request(user_id="eu:bob", msg="비밀 알려줘"))
        lookalike = await turn(ws, request(user_id="eu：bob", msg="비밀 알려줘"))
        own = await turn(ws, request(api_key=OTHER_KEY, user_id="bob", msg="비밀 알려줘"))
    for frames in (stolen, lookalike):
        assert not [f for f in frames if f["status"] in ("hotword_detected", "memory_dict")]
    assert [f["hotword_uid"] for f in own if f["status"] == "hotword_detected"] == [secret]
    base = f"{harness.http}/v4/memory/{secret}"
    quoted = urllib.parse.quote("eu:bob", safe="")
    assert (await http_get(f"{base}?api_key={KEY}&user_id={quoted}"))[0] == 404
    assert (await http_get(f"{base}?api_key={OTHER_KEY}&user_id=bob"))[1]["data"] == {"code": 4711}


async def test_look_alike_users_over_websocket_see_only_their_own(
    serving: Any, mem: Memento
) -> None:
    """Each look-alike pair, as two keys of one gateway: each client sees its own memory
    only (the pairs of one space differ by project, to be two keys)."""
    for n, ((space_a, user_a), (space_b, user_b)) in enumerate(LOOK_ALIKES):
        graph = chat_graph(fake_model("네.", "네."))
        a = Space(space_a, graph, project_id=f"p{n}")
        b = Space(space_b, graph, project_id=f"q{n}")
        harness = await serving({KEY: a, OTHER_KEY: b})
        mine = mem.remember(f"Memory {n} of A.", scope=a.scope_for(user_a), hotwords=[f"열쇠{n}"])
        async with harness.connect() as ws:
            as_a = await turn(ws, request(user_id=user_a, msg=f"열쇠{n}"))
            as_b = await turn(ws, request(api_key=OTHER_KEY, user_id=user_b, msg=f"열쇠{n}"))
        assert [f["hotword_uid"] for f in as_a if f["status"] == "hotword_detected"] == [mine]
        assert not [f for f in as_b if f["status"] == "hotword_detected"], (space_b, user_b)
        await harness.close()


async def test_a_store_whose_users_change_owner_is_refused_and_kept(mem: Memento) -> None:
    """A user stored by the old join (``acme:eu:bob``: acme's ``eu:bob`` or acme:eu's ``bob``)
    belongs to neither now: the gateway refuses to start, naming it, and changes nothing."""
    graph = chat_graph(fake_model("네."))
    old = mem.remember("Bob's note.", scope=Scope(user_id="acme:eu:bob"))
    keys = {KEY: Space("acme", graph), OTHER_KEY: Space("acme:eu", graph)}
    with pytest.raises(ChangedIdentities, match="acme:eu:bob") as refused:
        await start(mem, keys)
    assert isinstance(refused.value, StoreError)
    assert refused.value.users == ["acme:eu:bob"]
    assert mem.get(old).content == "Bob's note."
    # A space without such users starts, as do plain ids of the store's spaces.
    mem.remember("Alice's note.", scope=Scope(user_id="shop:alice"))
    _, server = await start(mem, {KEY: Space("shop", graph)})
    server.close()
    await server.wait_closed()


async def test_a_clean_store_is_checked_once(mem: Memento) -> None:
    """Once a start found the store clean, every gateway user is written escaped: the scan
    is not repeated (a user stored directly since then is not the gateway's concern)."""
    graph = chat_graph(fake_model("네."))
    keys = StaticKeys({KEY: Space("acme", graph)})
    server = await Gateway(mem, keys).serve("127.0.0.1", 0)
    server.close()
    await server.wait_closed()
    mem.remember("Later, stored directly.", scope=Scope(user_id="acme:eu:bob"))
    both = {KEY: Space("acme", graph), OTHER_KEY: Space("acme:eu", graph)}
    _, server = await start(mem, both)
    server.close()
    await server.wait_closed()


def test_a_space_id_with_a_control_character_is_refused() -> None:
    with pytest.raises(ValueError, match="control character"):
        user_of("acme\x00", "bob")
