"""Every change the inspector makes, through the ASGI test client: the confirmation first,
then the change through core; and every refusal — no CSRF token, read-only, another user's
memory, bad values, unknown ids — as a clear page that leaves the store as it was."""

from __future__ import annotations

import pytest
from _inspector_support import Seeded, client_for, csrf_of
from starlette.testclient import TestClient

from memento_core import Memento, MemoryNotFound


def snapshot(mem: Memento) -> list[str]:
    return list(mem.export("ndjson"))


def post(client: TestClient, path: str, **fields: str) -> object:
    return client.post(path, data={"csrf": csrf_of(client), **fields})


EDIT = {
    "content": "Alice takes her coffee with oat milk now.",
    "importance": "0.7",
    "tags": "pref:coffee,milk",
    "privacy": "team",
    "pinned": "yes",
}


def test_an_edit_is_confirmed_then_made(fresh: tuple[Memento, Seeded]) -> None:
    mem, ids = fresh
    alice = client_for(mem, user="alice")
    before = snapshot(mem)
    asked = alice.post(f"/memory/{ids.coffee}/edit", data={"csrf": csrf_of(alice), **EDIT})
    assert asked.status_code == 200 and 'id="confirm"' in asked.text
    assert "pin it" in asked.text and "oat milk" in asked.text
    assert snapshot(mem) == before  # asking changed nothing
    done = alice.post(
        f"/memory/{ids.coffee}/edit", data={"csrf": csrf_of(alice), **EDIT, "confirm": "yes"}
    )
    assert done.status_code == 303 and done.headers["location"].endswith("done=saved")
    item = mem.get(ids.coffee)
    assert item.content == EDIT["content"] and item.importance == 0.7
    assert item.tags == ("pref:coffee", "milk") and item.privacy.value == "team" and item.pinned
    assert "oat milk" in alice.get(done.headers["location"]).text


def test_forget_restore_and_erase(fresh: tuple[Memento, Seeded]) -> None:
    mem, ids = fresh
    owner = client_for(mem)
    assert post(owner, f"/memory/{ids.peanuts}/forget").status_code == 200  # the question
    assert mem.get(ids.peanuts).deleted_at is None
    forgot = post(owner, f"/memory/{ids.peanuts}/forget", confirm="yes")
    assert forgot.status_code == 303  # type: ignore[attr-defined]
    with pytest.raises(MemoryNotFound):
        mem.get(ids.peanuts)
    assert "Restore" in owner.get(f"/memory/{ids.peanuts}").text
    assert ids.peanuts in owner.get("/memories?state=forgotten").text
    post(owner, f"/memory/{ids.peanuts}/restore", confirm="yes")
    assert mem.get(ids.peanuts).deleted_at is None
    erased = post(owner, f"/memory/{ids.peanuts}/forget", hard="yes", confirm="yes")
    assert erased.headers["location"] == "/memories?done=erased"  # type: ignore[attr-defined]
    with pytest.raises(MemoryNotFound):
        mem.get(ids.peanuts, include_deleted=True)
    assert mem.links(ids.coffee) == []  # its link went with it


def test_erasing_a_user_shows_the_report(fresh: tuple[Memento, Seeded]) -> None:
    mem, ids = fresh
    owner = client_for(mem)
    asked = post(owner, "/users/erase", user="bob")
    assert "cannot be undone" in asked.text  # type: ignore[attr-defined]
    assert mem.get(ids.party).scope.user_id == "bob"
    report = post(owner, "/users/erase", user="bob", confirm="yes")
    assert report.status_code == 200 and "User bob erased" in report.text  # type: ignore[attr-defined]
    assert "bob" not in mem.census().by_user and "alice" in mem.census().by_user


def test_a_user_may_erase_only_themselves(fresh: tuple[Memento, Seeded]) -> None:
    mem, _ = fresh
    alice = client_for(mem, user="alice")
    before = snapshot(mem)
    refused = post(alice, "/users/erase", user="bob", confirm="yes")
    assert refused.status_code == 403 and "another user" in refused.text  # type: ignore[attr-defined]
    assert snapshot(mem) == before
    post(alice, "/users/erase", user="alice", confirm="yes")
    assert "alice" not in mem.census().by_user


def test_another_users_memory_is_refused_as_not_owner(fresh: tuple[Memento, Seeded]) -> None:
    mem, ids = fresh
    alice = client_for(mem, user="alice")
    before = snapshot(mem)
    for path, fields in [
        (f"/memory/{ids.bob_team}/edit", {**EDIT, "confirm": "yes"}),
        (f"/memory/{ids.bob_team}/forget", {"confirm": "yes"}),
        (f"/memory/{ids.bob_team}/forget", {"hard": "yes", "confirm": "yes"}),
    ]:
        refused = post(alice, path, **fields)
        assert refused.status_code == 403  # type: ignore[attr-defined]
        assert "belongs to another user" in refused.text  # type: ignore[attr-defined]
    hidden = post(alice, f"/memory/{ids.party}/forget", confirm="yes")  # Bob's private one
    assert hidden.status_code == 404  # type: ignore[attr-defined]
    assert snapshot(mem) == before


@pytest.mark.parametrize(
    ("fields", "status", "named"),
    [
        ({"importance": "2"}, 400, "importance"),
        ({"importance": "lots"}, 400, "importance"),
        ({"content": "   "}, 400, "content is empty"),
        ({"privacy": "secret"}, 400, "privacy"),
        ({"tags": "x" * 200}, 400, "tag"),
    ],
)
def test_bad_edits_change_nothing(
    fresh: tuple[Memento, Seeded], fields: dict[str, str], status: int, named: str
) -> None:
    mem, ids = fresh
    owner = client_for(mem)
    before = snapshot(mem)
    response = post(owner, f"/memory/{ids.coffee}/edit", **{**EDIT, **fields, "confirm": "yes"})
    assert response.status_code == status and named in response.text  # type: ignore[attr-defined]
    assert snapshot(mem) == before


def test_refusals_before_core_is_called(fresh: tuple[Memento, Seeded]) -> None:
    mem, ids = fresh
    before = snapshot(mem)
    owner = client_for(mem)
    no_csrf = owner.post(f"/memory/{ids.coffee}/forget", data={"confirm": "yes"})
    assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
    wrong = owner.post(f"/memory/{ids.coffee}/forget", data={"csrf": "x", "confirm": "yes"})
    assert wrong.status_code == 403
    unknown = post(owner, "/memory/no-such-id/forget", confirm="yes")
    assert unknown.status_code == 404  # type: ignore[attr-defined]
    assert owner.get(f"/memory/{ids.coffee}/forget").status_code in (404, 405)  # no change
    nobody = post(owner, "/users/erase", confirm="yes")
    assert nobody.status_code == 400  # type: ignore[attr-defined]
    reader = client_for(mem, read_only=True)
    page = reader.get(f"/memory/{ids.coffee}")
    assert page.status_code == 200 and 'id="edit"' not in page.text and "read-only" in page.text
    for path in (f"/memory/{ids.coffee}/edit", f"/memory/{ids.coffee}/forget", "/users/erase"):
        refused = post(reader, path, user="alice", confirm="yes", **EDIT)
        assert refused.status_code == 403 and "read-only" in refused.text  # type: ignore[attr-defined]
    assert snapshot(mem) == before
