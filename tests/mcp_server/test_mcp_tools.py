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
    "feedback", "review_due", "review", "sleep", "get", "restore", "update", "memory_changes",
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
    for field in ("type", "tags", "project_id", "agent_id", "session_id", "time_from", "time_to"):
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
    exported = [json.loads(line) for line in stdio.export().splitlines()]
    assert soft in [r["id"] for r in exported if r["kind"] == "memory"]  # the record stays

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


# ------------------------------------------------------------------ reading whole, restore, update


def test_recall_says_when_it_cut_a_memory_and_get_returns_it_whole(stdio: SyncSession) -> None:
    long = "Alice's packing list for the Lofoten trip: " + ", ".join(
        f"item {n} (wool socks, spare batteries, headlamp)" for n in range(12)
    )
    short = "Alice's Lofoten ferry leaves Bodø at 15:00."
    long_id = stdio.ok("remember", {"content": long})["memory_id"]
    short_id = stdio.ok("remember", {"content": short})["memory_id"]

    hits = {h["id"]: h for h in stdio.ok("recall", {"query": "Lofoten trip", "limit": 5})["items"]}

    assert hits[long_id]["truncated"] is True and hits[long_id]["content_chars"] == len(long)
    assert len(hits[long_id]["snippet"]) <= 240 and hits[long_id]["snippet"].endswith("…")
    assert hits[short_id]["truncated"] is False and hits[short_id]["snippet"] == short
    whole = stdio.ok("get", {"memory_id": long_id})
    assert whole["content"] == long and whole["uri"] == f"memory://{long_id}"


def test_get_shows_data_hotwords_and_links_and_hides_other_users(
    stdio: SyncSession, ids: Seeded
) -> None:
    memory_id = stdio.ok("remember", {"content": "Alice's gym locker is number 214."})["memory_id"]
    payload = {"locker": 214, "gym": "Northside", "combo": [4, 1, 9]}
    stdio.ok("update", {"memory_id": memory_id, "data": payload, "hotwords": ["locker", "사물함"]})
    stdio.ok("link", {"source_id": memory_id, "type": "derived_from", "target_id": ids.bob_public})

    view = stdio.ok("get", {"memory_id": memory_id})

    assert view["data"] == payload and view["hotwords"] == ["locker", "사물함"]
    assert [link["target_id"] for link in view["links"]] == [ids.bob_public]
    assert stdio.read(f"memory://{memory_id}")["data"] == payload
    assert stdio.ok("get", {"memory_id": ids.bob_public})["user_id"] == "bob"  # public
    for hidden in ids.invisible:
        assert "no memory with id" in stdio.error("get", {"memory_id": hidden})


def test_restore_brings_back_a_soft_forgotten_memory(stdio: SyncSession, ids: Seeded) -> None:
    memory_id = stdio.ok("remember", {"content": "Alice's bike lock code is 5-5-2."})["memory_id"]
    stdio.ok("forget", {"memory_id": memory_id})
    assert "no memory with id" in stdio.error("get", {"memory_id": memory_id})

    assert stdio.ok("restore", {"memory_id": memory_id}) == {
        "memory_id": memory_id,
        "restored": True,
    }
    found = stdio.ok("recall", {"query": "bike lock code"})["items"]
    assert memory_id in [h["id"] for h in found]
    assert stdio.ok("get", {"memory_id": memory_id})["forgotten"] is False

    stdio.ok("forget", {"memory_id": memory_id, "hard": True})
    assert "no memory with id" in stdio.error("restore", {"memory_id": memory_id})
    assert "only its owner can restore" in stdio.error("restore", {"memory_id": ids.bob_public})


def test_update_changes_a_memory_in_place(stdio: SyncSession, ids: Seeded) -> None:
    memory_id = stdio.ok("remember", {"content": "Alice's standup is at 9:30.", "tags": ["work"]})[
        "memory_id"
    ]

    view = stdio.ok(
        "update",
        {"memory_id": memory_id, "content": "Alice's standup moved to 10:15.", "importance": 0.9},
    )

    assert (view["id"], view["content"], view["importance"]) == (
        memory_id,
        "Alice's standup moved to 10:15.",
        0.9,
    )
    assert view["tags"] == ["work"]  # left out: kept
    top = stdio.ok("recall", {"query": "when is the standup now", "limit": 1})["items"][0]
    assert (top["id"], top["snippet"]) == (memory_id, "Alice's standup moved to 10:15.")
    assert "only its owner can update" in stdio.error(
        "update", {"memory_id": ids.bob_public, "content": "hijacked"}
    )
    assert "importance" in stdio.error("update", {"memory_id": memory_id, "importance": 3})
    assert stdio.ok("get", {"memory_id": memory_id})["content"] == "Alice's standup moved to 10:15."

    log = stdio.ok("memory_changes", {"memory_id": memory_id})["changes"]
    assert [c["change"] for c in log] == ["created", "updated"]
    assert log[0]["after"]["content"] == "Alice's standup is at 9:30."
    assert log[1]["before"] == {"content": "Alice's standup is at 9:30.", "importance": 0.5}
    assert log[1]["actor"] == "alice"
    hidden = stdio.error("memory_changes", {"memory_id": ids.bob_secret})
    assert hidden == stdio.error("memory_changes", {"memory_id": "f" * 32}).replace(
        "f" * 32, ids.bob_secret
    )


def test_summarize_thread_takes_the_callers_recent_messages(stdio: SyncSession) -> None:
    turns = [
        {"role": "user", "content": "I'm planning a week of climbing in Kalymnos in May."},
        {"role": "assistant", "content": "Kalymnos in May is a great choice for limestone."},
        {"role": "user", "content": "Book the studio near Masouri beach, please."},
    ]
    summary = stdio.ok("summarize_thread", {"messages": turns})
    session_id = summary["session_id"]
    assert session_id.startswith("mcp-") and "Kalymnos" in summary["summary"]
    memory = stdio.ok("get", {"memory_id": summary["memory_id"]})
    assert (memory["type"], memory["user_id"], memory["session_id"]) == (
        "episodic",
        "alice",
        session_id,
    )
    again = stdio.ok("summarize_thread", {"session_id": session_id})
    assert again["memory_id"] == summary["memory_id"]  # unchanged session, same memory
    assert "session_id, or messages" in stdio.error("summarize_thread", {})
    # Messages never go into an existing session (another user's least of all).
    assert "leave session_id out" in stdio.error(
        "summarize_thread", {"session_id": "bob-plans", "messages": turns[:1]}
    )
    assert "no messages to summarise" in stdio.error(
        "summarize_thread", {"session_id": "bob-plans"}
    )


def test_recall_filters_by_agent(stdio: SyncSession, ids: Seeded) -> None:
    mine = stdio.ok("remember", {"content": "Alice's Aurora room booking is for Tuesday."})
    by_claude = stdio.ok(
        "recall", {"query": "room booking", "filters": {"agent_id": "claude"}, "limit": 20}
    )["items"]
    assert mine["memory_id"] in [h["id"] for h in by_claude]
    by_cursor = stdio.ok(
        "recall", {"query": "coffee", "filters": {"agent_id": "cursor"}, "limit": 20}
    )["items"]
    assert {h["id"] for h in by_cursor} == {ids.bob_public}  # none of alice's, by claude
