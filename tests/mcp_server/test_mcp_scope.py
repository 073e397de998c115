"""The security rule: the server acts for its configured user, and no argument widens that.

Bob's and Carol's memories were written through core into the same store as Alice's. Alice's
server must never return Bob's private memories (or another project's team memories) through
any tool, resource or prompt, and must not let her change them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from _mcp_support import store_export
from mcp import MCPError

if TYPE_CHECKING:
    from pathlib import Path

    from _mcp_support import Seeded, SyncSession

PROBES = [
    "bank PIN 4921",
    "coffee black with sugar",
    "production database password",
    "hiking in the Alps glacier trail",
    "zeus team stand-up red room",
    "surprise party plan for Dana",
]


def _recalled(stdio: SyncSession, query: str, **arguments: Any) -> set[str]:
    found = stdio.ok("recall", {"query": query, "limit": 100, **arguments})
    return {item["id"] for item in found["items"]}


@pytest.mark.parametrize("query", PROBES)
def test_recall_never_returns_another_users_private_memories(
    stdio: SyncSession, ids: Seeded, query: str
) -> None:
    found = _recalled(stdio, query)
    assert found, "the probe should find alice's own or shared memories"
    assert not found & set(ids.invisible)


def test_filters_cannot_widen_the_scope(stdio: SyncSession, ids: Seeded) -> None:
    for filters in ({"project_id": "zeus"}, {"tags": ["pref:coffee"]}, {"type": "procedural"}):
        assert not _recalled(stdio, "coffee PIN password", filters=filters) & set(ids.invisible)


def test_shared_memories_are_visible(stdio: SyncSession, ids: Seeded) -> None:
    assert ids.bob_public in _recalled(stdio, "where is the office coffee machine")
    assert ids.carol_team_apollo in _recalled(stdio, "apollo team stand-up")
    assert stdio.read(f"memory://{ids.bob_public}")["user_id"] == "bob"


def test_the_memory_resource_hides_other_users_private_memories(
    stdio: SyncSession, ids: Seeded
) -> None:
    for memory_id in ids.invisible:
        with pytest.raises(MCPError) as hidden:
            stdio.read(f"memory://{memory_id}")
        with pytest.raises(MCPError) as unknown:
            stdio.read("memory://0123456789abcdef0123456789abcdef")
        # The same answer as for an id that does not exist: an id leaks nothing.
        assert hidden.value.error.code == unknown.value.error.code
        assert hidden.value.error.message == f"no memory with id {memory_id!r}"


def test_the_search_resource_never_returns_them(stdio: SyncSession, ids: Seeded) -> None:
    for query in PROBES:
        found = stdio.read(f"memory://search?query={query.replace(' ', '+')}&limit=100")
        assert not {item["id"] for item in found["items"]} & set(ids.invisible)


def test_links_to_hidden_memories_are_not_shown(stdio: SyncSession, ids: Seeded) -> None:
    own = stdio.ok("remember", {"content": "Alice asked Bob about the glacier trail."})
    shown = stdio.read(own["uri"])["links"]
    assert shown == []
    assert "no memory with id" in stdio.error(
        "link", {"source_id": own["memory_id"], "type": "cause_of", "target_id": ids.bob_hike}
    )


def test_the_prompt_never_injects_them(stdio: SyncSession) -> None:
    for query in PROBES:
        text = stdio.prompt("memory_injection", {"query": query})
        for secret in ("4921", "production database", "Bob went hiking", "red room"):
            assert secret not in text


def test_summarize_thread_refuses_another_users_session(stdio: SyncSession) -> None:
    before = stdio.export()
    message = stdio.error("summarize_thread", {"session_id": "bob-plans"})
    assert "session 'bob-plans' has no messages to summarise" in message
    # The same answer as for a session that does not exist.
    assert "has no messages to summarise" in stdio.error(
        "summarize_thread", {"session_id": "no-such-session"}
    )
    after = stdio.export()
    assert after == before and "Dana" not in after


def test_changes_to_hidden_memories_are_refused_as_not_found(
    stdio: SyncSession, ids: Seeded, seeded_store: tuple[Path, Seeded]
) -> None:
    path, _ = seeded_store
    hidden_before = _records(path, ids.invisible)
    for memory_id in ids.invisible:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("pin", {"memory_id": memory_id}),
            ("unpin", {"memory_id": memory_id}),
            ("forget", {"memory_id": memory_id}),
            ("forget", {"memory_id": memory_id, "hard": True}),
            ("feedback", {"memory_id": memory_id, "kind": "not_helpful"}),
            ("review", {"memory_id": memory_id, "grade": 5}),
            ("link", {"source_id": ids.alice_coffee, "type": "cause_of", "target_id": memory_id}),
            ("link", {"source_id": memory_id, "type": "duplicates", "target_id": ids.alice_coffee}),
        ]
        for tool, arguments in calls:
            assert f"no memory with id {memory_id!r}" in stdio.error(tool, arguments), tool
    assert _records(path, ids.invisible) == hidden_before


def test_shared_memories_of_others_cannot_be_changed(stdio: SyncSession, ids: Seeded) -> None:
    for tool in ("pin", "unpin", "forget"):
        message = stdio.error(tool, {"memory_id": ids.bob_public})
        assert "belongs to another user" in message and f"only its owner can {tool}" in message
    message = stdio.error("forget", {"memory_id": ids.carol_team_apollo, "hard": True})
    assert "belongs to another user" in message
    assert stdio.read(f"memory://{ids.carol_team_apollo}")["pinned"] is False


def _records(path: Path, memory_ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every exported record (memory, link or feedback) that names one of ``memory_ids``."""
    wanted = set(memory_ids)
    return [
        record
        for record in store_export(path)
        if wanted & {record.get("id"), record.get("memory_id"), record.get("source_id"),
                     record.get("target_id")}
    ]  # fmt: skip


def test_a_link_never_lets_a_hard_forget_erase_another_users_memory(
    stdio: SyncSession, ids: Seeded
) -> None:
    own = stdio.ok("remember", {"content": "Alice's scratch note to link from"})["memory_id"]
    for other in (ids.bob_public, ids.carol_team_apollo):
        stdio.ok("link", {"source_id": other, "type": "derived_from", "target_id": own})
    stdio.ok("forget", {"memory_id": own, "hard": True})
    for other in (ids.bob_public, ids.carol_team_apollo):
        assert stdio.read(f"memory://{other}")["id"] == other
