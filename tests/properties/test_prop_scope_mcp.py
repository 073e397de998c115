"""Scope isolation through the MCP server: the ``recall`` tool's ``filters`` and the
``memory://search?…`` resource, with hostile arguments.

Each example serves a random user (hostile ids) with ``build_server`` over one shared store,
talked to in-process with the SDK's own ``Client``. Another user's private memory (and another
project's team memory) never comes back, and a bad argument is an error that says what was
wrong: a tool error with a message, or a resource error other than "internal error" (a crash
would hide its cause behind a bare "Error executing tool recall" or -32603).

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote
from uuid import uuid4

from _prop_support import (
    INJECTIONS,
    budget,
    ids,
    json_values,
    may_see,
    maybe_ids,
    nasty_strings,
    operator_dicts,
)
from hypothesis import event, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp_types import INTERNAL_ERROR

from memento_core import Memento, MemoryDraft, Scope
from memento_mcp.server import build_server
from memento_mcp.tools import RecallFilters

TYPES = ["episodic", "semantic", "procedural", "working"]
filter_values: dict[str, Any] = {
    "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), max_size=2),
    "tags": st.lists(st.sampled_from(["t1", "t2", "$ne", "*"]), max_size=2),
    "project_id": ids,
    "time_from": st.sampled_from(["2020-01-01T00:00:00Z", "2100-01-01T00:00:00+09:00"]),
    "time_to": st.sampled_from(["2020-01-01T00:00:00Z", "2100-01-01T00:00:00"]),
}
junk = st.one_of(nasty_strings, operator_dicts, json_values, st.sampled_from([None, 0, "", []]))
junk_keys = ["user_id", "$or", "$where", "scope", "privacy", "include_deleted", "agent_id"]


@st.composite
def recall_filters(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(junk)  # not even an object
    result: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(sorted(filter_values)), max_size=3, unique=True)):
        result[name] = draw(filter_values[name] if draw(st.booleans()) else junk)
    for name in draw(st.lists(st.sampled_from(junk_keys), max_size=1)):
        result[name] = draw(junk)
    return result


search_params = st.lists(
    st.tuples(
        st.sampled_from(["query", "query", "limit", "type", "tag", "user_id", "$or", "filter"]),
        st.one_of(
            st.sampled_from(["canary", "5", "100", "0", "episodic", "t1", *INJECTIONS]),
            nasty_strings,
        ),
        st.booleans(),  # quoted or raw
    ),
    max_size=4,
)


def search_uri(canary: str, params: list[tuple[str, str, bool]]) -> str:
    parts = [f"query={quote(canary)}"] if not any(p[0] == "query" for p in params) else []
    for name, value, quoted in params:
        value = canary if value == "canary" else value
        parts.append(f"{quote(name)}={quote(value) if quoted else value}")
    return "memory://search?" + "&".join(parts)


async def ask(
    server: Any, filters: Any, canary: str, uri: str
) -> tuple[list[str] | str, list[str] | tuple[int, str]]:
    """(recall's ids or its error text, search's ids or its error code and message)."""
    async with Client(server) as client:
        arguments: dict[str, Any] = {"query": canary, "limit": 50}
        if filters is not None:
            arguments["filters"] = filters
        result = await client.call_tool("recall", arguments)
        if result.is_error:
            recalled: list[str] | str = "\n".join(getattr(b, "text", "") for b in result.content)
        else:
            recalled = [item["id"] for item in (result.structured_content or {})["items"]]
        try:
            read = await client.read_resource(uri)
        except MCPError as err:
            return recalled, (err.error.code, err.error.message)
        text = getattr(read.contents[0], "text", "")
        return recalled, [item["id"] for item in json.loads(text)["items"]]


@settings(max_examples=budget(25, share=0.002))
@given(
    owner=ids,
    viewer=ids,
    viewer_agent=maybe_ids,
    project=maybe_ids,
    shared_project=st.booleans(),
    filters=st.none() | recall_filters(),
    params=search_params,
)
def test_no_argument_reaches_another_users_private_memories(
    minilm_store: Memento,
    owner: str,
    viewer: str,
    viewer_agent: str | None,
    project: str | None,
    shared_project: bool,
    filters: Any,
    params: list[tuple[str, str, bool]],
) -> None:
    mem = minilm_store
    canary = f"canary{uuid4().hex} mcp"
    owner_scope = Scope(user_id=owner, project_id=project)
    private, _team = mem.remember_many(
        [
            MemoryDraft(canary, scope=owner_scope, tags=["t1"]),
            MemoryDraft(canary + " team", scope=owner_scope, privacy="team", tags=["t1"]),
        ]
    )
    seen_by = Scope(
        user_id=viewer, agent_id=viewer_agent, project_id=project if shared_project else None
    )
    uri = search_uri(canary, params)

    recalled, searched = asyncio.run(ask(build_server(mem, seen_by), filters, canary, uri))

    event(f"recall {'refused' if isinstance(recalled, str) else 'answered'}")
    event(f"search {'refused' if isinstance(searched, tuple) else 'answered'}")
    if isinstance(recalled, str):
        assert recalled != "Error executing tool recall", "a crash, not a clear error"
        assert recalled.startswith("Error executing tool recall: ") or "validation" in recalled
    else:
        assert filters is None or isinstance(filters, dict)
        assert not set(filters or {}) - set(RecallFilters.model_fields)
        hidden = [i for i in recalled if not may_see(seen_by, mem.get(i))]
        assert not hidden
    if isinstance(searched, tuple):
        code, message = searched
        assert code != INTERNAL_ERROR, f"{uri!r} crashed the search resource: {message}"
    else:
        assert not [i for i in searched if not may_see(seen_by, mem.get(i))]
    if viewer != owner:
        for found in (recalled, searched):
            assert not isinstance(found, list) or private not in found
