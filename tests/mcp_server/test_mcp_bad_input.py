"""Bad input: every mistake is an MCP error that says what was wrong, and nothing is harmed.

Tool calls answer with ``isError`` and a message; resource reads and prompts with a JSON-RPC
error (-32602, invalid params). After each, Alice's export is byte for byte what it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from mcp import MCPError

from memento_core import MAX_CONTENT_CHARS

if TYPE_CHECKING:
    from _mcp_support import Seeded, SyncSession

INVALID_PARAMS = -32602

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {}, "content\n  Field required"),
    ("remember", {"content": 42}, "content\n  Input should be a valid string"),
    ("remember", {"content": "x" * (MAX_CONTENT_CHARS + 1)},
     f"content is {MAX_CONTENT_CHARS + 1} characters; the maximum is {MAX_CONTENT_CHARS}"),
    ("remember", {"content": " \n "}, "content is empty or only whitespace"),
    ("remember", {"content": "ok", "importance": 2}, "less than or equal to 1"),
    ("remember", {"content": "ok", "importance": "high"}, "importance\n  Input should be a valid"),
    ("remember", {"content": "ok", "type": "dream"}, "type\n  Input should be 'episodic'"),
    ("remember", {"content": "ok", "tags": "pref:tea"}, "tags\n  Input should be a valid list"),
    ("remember", {"content": "ok", "tags": ["ok", ""]}, "every tag must be a non-empty string"),
    ("remember", {"content": "ok", "privacy_scope": "secret"}, "privacy_scope\n  Input should be"),
    ("remember", {"content": "ok", "user_id": "bob"}, "unknown argument(s) 'user_id'"),
    ("remember", {"content": "ok", "scope": {"user_id": "bob"}}, "unknown argument(s) 'scope'"),
    ("recall", {}, "query\n  Field required"),
    ("recall", {"query": "  "}, "query is empty or only whitespace"),
    ("recall", {"query": "x", "limit": 0}, "limit\n  Input should be greater than or equal to 1"),
    ("recall", {"query": "x", "limit": "many"}, "limit\n  Input should be a valid integer"),
    ("recall", {"query": "x", "filters": {"user_id": "bob"}}, "Extra inputs are not permitted"),
    ("recall", {"query": "x", "filters": {"type": "dream"}}, "Input should be 'episodic'"),
    ("recall", {"query": "x", "filters": {"tags": {"$ne": "x"}}}, "Input should be a valid list"),
    ("recall", {"query": "x", "filters": {"time_from": "last week"}}, "valid datetime"),
    ("recall", {"query": "x", "filters": {"time_from": "2026-02-01T00:00:00Z",
                                          "time_to": "2026-01-01T00:00:00Z"}},
     "time_from (2026-02-01 00:00:00+00:00) is after time_to"),
    ("pin", {}, "memory_id\n  Field required"),
    ("pin", {"memory_id": 7}, "memory_id\n  Input should be a valid string"),
    ("pin", {"memory_id": "does-not-exist"}, "no memory with id 'does-not-exist'"),
    ("pin", {"memory_id": ""}, "a memory id is a non-empty string"),
    ("unpin", {"memory_id": "does-not-exist"}, "no memory with id 'does-not-exist'"),
    ("forget", {"memory_id": "does-not-exist", "hard": True}, "no memory with id"),
    ("forget", {"memory_id": "x", "hrad": True},
     "unknown argument(s) 'hrad'; it takes memory_id, hard"),
    ("forget", {"memory_id": "x", "hard": "maybe"}, "hard\n  Input should be a valid boolean"),
    ("export", {"format": "pdf"}, "format\n  Input should be 'ndjson', 'markdown' or 'csv'"),
    ("feedback", {"memory_id": "does-not-exist", "kind": "used"}, "no memory with id"),
    ("feedback", {"memory_id": "x", "kind": "loved"}, "kind\n  Input should be 'used'"),
    ("review", {"memory_id": "x", "grade": 9}, "grade\n  Input should be less than or equal to 5"),
    ("review", {"memory_id": "does-not-exist", "grade": 3}, "no memory with id"),
    ("review_due", {"limit": -1}, "limit\n  Input should be greater than or equal to 1"),
    ("summarize_thread", {"session_id": ""}, "session_id is empty"),
    ("summarize_thread", {}, "give a session_id, or messages to summarise"),
    ("summarize_thread", {"messages": [{"role": "robot", "content": "hi"}]}, "role"),
    ("summarize_thread", {"messages": [{"role": "user", "content": "  "}]}, "needs text"),
    ("get", {"memory_id": "no-such-id"}, "no memory with id"),
    ("restore", {"memory_id": "no-such-id"}, "no memory with id"),
    ("update", {"memory_id": "no-such-id", "title": "x"}, "no memory with id"),
    ("update", {"memory_id": "no-such-id", "privacy_scope": "everyone"}, "privacy_scope"),
    ("sleep", {"since": "last tuesday"}, "since\n  Input should be a valid datetime"),
    ("link", {"source_id": "a", "type": "causes", "target_id": "b"}, "type\n  Input should be"),
    ("no_such_tool", {}, "Unknown tool: no_such_tool"),
]  # fmt: skip


@pytest.fixture
def untouched(stdio: SyncSession) -> str:
    """Alice's export before the test's bad calls."""
    return stdio.export()


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    BAD_CALLS,
    ids=[f"{tool}-{n}" for n, (tool, _, _) in enumerate(BAD_CALLS)],
)
def test_a_bad_tool_call_is_an_error_that_says_why(
    stdio: SyncSession, untouched: str, tool: str, arguments: dict[str, Any], says: str
) -> None:
    message = stdio.error(tool, arguments)
    assert says in message
    assert stdio.export() == untouched


def test_bad_links_between_real_memories(stdio: SyncSession, untouched: str, ids: Seeded) -> None:
    coffee = ids.alice_coffee
    message = stdio.error("link", {"source_id": coffee, "type": "cause_of", "target_id": coffee})
    assert "a memory cannot link to itself" in message
    message = stdio.error(
        "link",
        {"source_id": coffee, "type": "cause_of", "target_id": ids.alice_due, "note": " "},
    )
    assert "note is empty or only whitespace" in message
    assert stdio.export() == untouched


BAD_URIS: list[tuple[str, str]] = [
    ("memory://search", "the search resource needs a query; use memory://search?query=<text>"),
    ("memory://search?q=coffee", "unknown search parameter 'q'; known: query, limit, type, tag"),
    ("memory://search?query=a&query=b", "search parameter 'query' is given more than once"),
    ("memory://search?query=", "query is empty or only whitespace"),
    ("memory://search?query=x&limit=0", "limit must be a whole number from 1 to 100, got '0'"),
    ("memory://search?query=x&limit=ten", "limit must be a whole number from 1 to 100"),
    ("memory://search?query=x&type=dream", "unknown memory type 'dream'"),
    ("memory://search?query=x&&limit=3", "malformed query string"),
    ("memory://does-not-exist", "no memory with id 'does-not-exist'"),
    ("memory://a/b", "Unknown resource: memory://a/b"),
    ("other://thing", "Unknown resource: other://thing"),
]


@pytest.mark.parametrize(("uri", "says"), BAD_URIS)
def test_a_bad_resource_uri_is_an_invalid_params_error(
    stdio: SyncSession, untouched: str, uri: str, says: str
) -> None:
    with pytest.raises(MCPError) as refused:
        stdio.read(uri)
    assert refused.value.error.code == INVALID_PARAMS
    assert says in refused.value.error.message
    assert stdio.export() == untouched


BAD_PROMPTS: list[tuple[str, dict[str, str], str]] = [
    ("memory_injection", {}, "Missing required arguments: {'query'}"),
    ("memory_injection", {"query": " "}, "query is empty or only whitespace"),
    ("memory_injection", {"query": "x", "token_budget": "lots"}, "valid integer"),
    ("memory_injection", {"query": "x", "token_budget": "0"}, "token_budget must be a whole"),
    ("no_such_prompt", {}, "Unknown prompt: no_such_prompt"),
]


@pytest.mark.parametrize(("name", "arguments", "says"), BAD_PROMPTS)
def test_bad_prompt_arguments_are_an_invalid_params_error(
    stdio: SyncSession, untouched: str, name: str, arguments: dict[str, str], says: str
) -> None:
    with pytest.raises(MCPError) as refused:
        stdio.run(lambda s: s.get_prompt(name, arguments))
    assert refused.value.error.code == INVALID_PARAMS
    assert says in refused.value.error.message
    assert stdio.export() == untouched
