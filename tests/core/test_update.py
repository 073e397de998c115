"""Updating a memory in place: fields change, the id and the memory's history stay."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memento_core import InvalidInput, LinkType, Memento, MemoryNotFound, Scope

ANN = Scope(user_id="ann", project_id="apollo")


def test_update_content_is_embedded_again_and_history_stays(mem: Memento) -> None:
    then = datetime(2024, 3, 1, tzinfo=timezone.utc)
    memory_id = mem.remember(
        "The standup is at nine.", scope=ANN, created_at=then, origin_trace={"msg": "m1"}
    )
    other = mem.remember("Deploys happen on Thursdays.", scope=ANN)
    mem.link(memory_id, LinkType.CAUSE_OF, other)
    mem.recall("standup", scope=ANN)

    updated = mem.update(memory_id, content="The standup moved to ten thirty.", tags=["meeting"])

    assert updated.id == memory_id
    assert updated.content == "The standup moved to ten thirty."
    assert updated.tags == ("meeting",)
    assert updated.created_at == then
    assert updated.origin_trace == {"msg": "m1"}
    assert updated.updated_at is not None
    assert [link.target_id for link in mem.links(memory_id)] == [other]
    top = mem.recall("when is the standup now? ten thirty", scope=ANN, limit=1)
    assert top[0].item.id == memory_id
    assert "ten thirty" in top[0].item.content


async def test_aupdate_changes_only_what_is_given(mem: Memento) -> None:
    memory_id = mem.remember("Ben likes green tea.", scope=ANN, importance=0.3, title="tea")
    updated = await mem.aupdate(memory_id, importance=0.9)
    assert updated.content == "Ben likes green tea."
    assert (updated.title, updated.importance) == ("tea", 0.9)


def test_bad_update_names_the_field_and_harms_nothing(mem: Memento) -> None:
    memory_id = mem.remember("The office wifi is tulip-42.", scope=ANN)
    before = mem.get(memory_id)
    with pytest.raises(InvalidInput, match="importance"):
        mem.update(memory_id, importance=7.0)
    with pytest.raises(InvalidInput, match="content"):
        mem.update(memory_id, content="   ")
    with pytest.raises(MemoryNotFound):
        mem.update("no-such-memory", content="x")
    assert mem.get(memory_id) == before


def test_update_of_a_forgotten_memory_keeps_it_hidden(mem: Memento) -> None:
    memory_id = mem.remember("Old parking spot: level 2.", scope=ANN)
    mem.forget(memory_id)
    mem.update(memory_id, content="Old parking spot: level 3.")
    with pytest.raises(MemoryNotFound):
        mem.get(memory_id)
    assert mem.restore(memory_id).content == "Old parking spot: level 3."


def test_items_hide_forgotten_memories_unless_asked(mem: Memento) -> None:
    kept = mem.remember("Keep this one.", scope=ANN)
    gone = mem.remember("Forget this one.", scope=ANN)
    mem.forget(gone)
    assert [i.id for i in mem.items(scope=ANN)] == [kept]
    assert {i.id for i in mem.items(scope=ANN, include_deleted=True)} == {kept, gone}
