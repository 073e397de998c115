"""The tools, resources and prompt through the SDK's client over stdio, on a real store."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest
from _mcp_support import text_of

if TYPE_CHECKING:
    from _mcp_support import Seeded, SyncSession

TOOLS = {
    "remember", "recall", "pin", "unpin", "forget", "summarize_thread", "link", "export",
    "feedback", "review_due", "review", "sleep",
}  # fmt: skip


def test_the_client_sees_every_tool_with_typed_arguments(stdio: SyncSession) -> None:
    tools = {t.name: t for t in stdio.run(lambda s: s.list_tools()).tools}
    assert set(tools) == TOOLS
    remember = tools["remember"].input_schema
    assert remember["required"] == ["content"]
    assert remember["properties"]["importance"]["maximum"] == 1.0
    assert "privacy_scope" in remember["properties"]
    recall = tools["recall"]
    assert recall.input_schema["required"] == ["query"]
    filters = json.dumps(recall.input_schema)
    for field in ("type", "tags", "project_id", "time_from", "time_to"):
        assert f'"{field}"' in filters
    assert recall.output_schema is not None and "items" in recall.output_schema["properties"]
    assert tools["forget"].annotations is not None and tools["forget"].annotations.destructive_hint


def test_remember_then_recall_gives_snippet_score_and_reason(stdio: SyncSession) -> None:
    stored = stdio.ok(
        "remember",
        {"content": "Alice's dentist appointment is on Friday at 3pm.", "tags": ["health"]},
    )
    memory_id = stored["memory_id"]
    assert stored["uri"] == f"memory://{memory_id}"

    found = stdio.ok("recall", {"query": "when is the dentist appointment", "limit": 3})
    assert found["query"] == "when is the dentist appointment"
    top = found["items"][0]
    assert top["id"] == memory_id
    assert top["snippet"] == "Alice's dentist appointment is on Friday at 3pm."
    assert top["score"] > 0
    assert "relevance" in top["recall_reason"] and "dentist" in top["matched_terms"]
    assert top["tags"] == ["health"]
    assert len(found["items"]) <= 3


def test_remembering_the_same_content_again_returns_the_same_id(stdio: SyncSession) -> None:
    content = {"content": "The spare key is under the blue flowerpot."}
    assert stdio.ok("remember", content)["memory_id"] == stdio.ok("remember", content)["memory_id"]


def test_writes_land_in_the_configured_scope(stdio: SyncSession) -> None:
    memory_id = stdio.ok(
        "remember",
        {
            "content": "Project apollo ships its beta on the 14th.",
            "type": "semantic",
            "importance": 0.8,
            "source": "chat",
            "privacy_scope": "team",
            "title": "apollo beta",
        },
    )["memory_id"]
    memory = stdio.read(f"memory://{memory_id}")
    assert (memory["user_id"], memory["agent_id"], memory["project_id"]) == (
        "alice",
        "claude",
        "apollo",
    )
    assert memory["session_id"] is None
    assert (memory["type"], memory["privacy"], memory["importance"]) == ("semantic", "team", 0.8)
    assert (memory["source"], memory["title"]) == ("chat", "apollo beta")


def test_recall_filters_by_type_tags_project_and_time(stdio: SyncSession, ids: Seeded) -> None:
    def recalled(filters: dict[str, object]) -> list[str]:
        found = stdio.ok("recall", {"query": "coffee", "filters": filters, "limit": 50})
        return [item["id"] for item in found["items"]]

    semantic = recalled({"type": "semantic"})
    assert ids.alice_coffee in semantic
    assert ids.alice_hikes[0] not in recalled({"type": ["semantic", "procedural"]})
    assert recalled({"tags": ["pref:coffee"]}) == [ids.alice_coffee]
    assert ids.carol_team_apollo in recalled({"project_id": "apollo", "type": "semantic"})
    assert ids.bob_public not in recalled({"project_id": "apollo"})
    future = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
    assert recalled({"time_from": future}) == []
    assert ids.alice_coffee in recalled({"time_to": future})


def test_pin_and_unpin(stdio: SyncSession) -> None:
    memory_id = stdio.ok("remember", {"content": "Alice's passport expires in 2031."})["memory_id"]
    assert stdio.ok("pin", {"memory_id": memory_id}) == {"memory_id": memory_id, "pinned": True}
    assert stdio.read(f"memory://{memory_id}")["pinned"] is True
    assert stdio.ok("unpin", {"memory_id": memory_id})["pinned"] is False
    assert stdio.read(f"memory://{memory_id}")["pinned"] is False


def test_forget_soft_hides_and_hard_erases(stdio: SyncSession) -> None:
    soft = stdio.ok("remember", {"content": "Alice once lived on Rue des Lilas."})["memory_id"]
    hard = stdio.ok("remember", {"content": "Alice's old locker code was 3-1-4."})["memory_id"]

    assert stdio.ok("forget", {"memory_id": soft}) == {
        "memory_id": soft,
        "hard": False,
        "restorable": True,
    }
    assert soft not in [i["id"] for i in stdio.ok("recall", {"query": "Rue des Lilas"})["items"]]
    assert "no memory with id" in stdio.error("pin", {"memory_id": soft})
    assert soft in stdio.export()  # a soft forget keeps the record

    stdio.ok("forget", {"memory_id": hard, "hard": True})
    assert hard not in stdio.export()
    assert "no memory with id" in stdio.error("forget", {"memory_id": hard, "hard": True})


def test_link_shows_on_the_memory_resource(stdio: SyncSession, ids: Seeded) -> None:
    cause = stdio.ok("remember", {"content": "Alice missed the 7:10 bus on Monday."})["memory_id"]
    effect = stdio.ok("remember", {"content": "Alice was late to the Monday review."})["memory_id"]
    link = stdio.ok(
        "link", {"source_id": cause, "type": "cause_of", "target_id": effect, "note": "bus"}
    )
    assert (link["source_id"], link["type"], link["target_id"]) == (cause, "cause_of", effect)

    links = stdio.read(f"memory://{effect}")["links"]
    assert [(x["source_id"], x["type"], x["note"]) for x in links] == [(cause, "cause_of", "bus")]
    # A visible memory of another user can be linked to; the link shows from both ends.
    stdio.ok("link", {"source_id": effect, "type": "derived_from", "target_id": ids.bob_public})
    assert len(stdio.read(f"memory://{effect}")["links"]) == 2


def test_feedback_is_counted_on_the_memory(stdio: SyncSession) -> None:
    memory_id = stdio.ok("remember", {"content": "Alice likes window seats."})["memory_id"]
    event = stdio.ok("feedback", {"memory_id": memory_id, "kind": "helpful"})
    assert (event["memory_id"], event["kind"], event["score"]) == (memory_id, "helpful", 1.0)
    stdio.ok("feedback", {"memory_id": memory_id, "kind": "helpful", "note": "spot on"})
    assert stdio.read(f"memory://{memory_id}")["feedback"] == {"helpful": 2}


def test_export_holds_only_alices_memories_in_every_format(stdio: SyncSession, ids: Seeded) -> None:
    records = [json.loads(line) for line in stdio.export().splitlines()]
    memories = [r for r in records if r["kind"] == "memory"]
    assert {r["scope"]["user_id"] for r in memories} == {"alice"}
    exported = {r["id"] for r in memories}
    assert {ids.alice_coffee, ids.alice_due, *ids.alice_hikes} <= exported
    assert not exported & {ids.bob_public, ids.carol_team_apollo, *ids.invisible}

    markdown = str(stdio.ok("export", {"format": "markdown"}))
    assert markdown.startswith("# Memento export")
    assert "oat milk" in markdown and "PIN" not in markdown and "coffee machine" not in markdown

    rows = list(csv.DictReader(io.StringIO(str(stdio.ok("export", {"format": "csv"})))))
    assert rows and {row["user_id"] for row in rows} == {"alice"}


def test_summarize_thread_writes_an_episodic_memory_of_the_session(stdio: SyncSession) -> None:
    summary = stdio.ok("summarize_thread", {"session_id": "alice-trip"})
    assert "Zermatt" in summary["summary"]
    memory = stdio.read(summary["uri"])
    assert (memory["type"], memory["user_id"], memory["session_id"]) == (
        "episodic",
        "alice",
        "alice-trip",
    )
    again = stdio.ok("summarize_thread", {"session_id": "alice-trip"})
    assert again["memory_id"] == summary["memory_id"]


def test_review_due_lists_due_cards_and_review_reschedules(stdio: SyncSession, ids: Seeded) -> None:
    due = [item["id"] for item in stdio.ok("review_due")["items"]]
    assert ids.alice_due in due
    assert ids.bob_due not in due

    reviewed = stdio.ok("review", {"memory_id": ids.alice_due, "grade": 4})
    assert reviewed["review_step"] == 1
    next_review = datetime.fromisoformat(reviewed["next_review_at"].replace("Z", "+00:00"))
    assert next_review > datetime.now(timezone.utc) + timedelta(days=2)
    assert ids.alice_due not in [item["id"] for item in stdio.ok("review_due")["items"]]


def test_sleep_consolidates_alices_episodes_only(stdio: SyncSession, ids: Seeded) -> None:
    report = stdio.ok("sleep")
    assert set(ids.alice_hikes) <= set(report["consolidated"])
    assert ids.bob_hike not in report["consolidated"]
    assert report["written"]
    fact = stdio.read(f"memory://{report['written'][0]}")
    assert (fact["type"], fact["user_id"]) == ("semantic", "alice")
    assert {link["type"] for link in fact["links"]} == {"derived_from"}

    again = stdio.ok("sleep")
    assert again["written"] == [] and again["consolidated"] == []


def test_search_resource_returns_what_recall_returns(stdio: SyncSession, ids: Seeded) -> None:
    found = stdio.read("memory://search?query=oat+milk+coffee&limit=2")
    assert found["query"] == "oat milk coffee"
    assert found["items"][0]["id"] == ids.alice_coffee
    assert len(found["items"]) <= 2
    typed = stdio.read("memory://search?query=coffee&type=semantic&tag=pref%3Acoffee")
    assert [item["id"] for item in typed["items"]] == [ids.alice_coffee]
    # Search text never reaches a file system: a path-like query is just text.
    assert stdio.read("memory://search?query=/etc/passwd")["items"] is not None


def test_memory_injection_prompt_packs_relevant_memories(stdio: SyncSession) -> None:
    query = "how does Alice take her coffee"
    text = stdio.prompt("memory_injection", {"query": query})
    assert text.startswith("Relevant memories") and "oat milk" in text
    assert "4921" not in text  # bob's private memory

    small = stdio.prompt("memory_injection", {"query": query, "token_budget": "40"})
    assert len(small) < len(text)


@pytest.mark.parametrize("fmt", ["ndjson", "markdown", "csv"])
def test_export_is_text_without_a_structured_copy(stdio: SyncSession, fmt: str) -> None:
    result = stdio.call("export", {"format": fmt})
    assert not result.is_error and result.structured_content is None
    assert text_of(result)
