"""Between AutoGen's ``MemoryContent`` and Memento's drafts and recall results.

Adding, ``MemoryContent`` → ``MemoryDraft``:

- ``text/plain``, ``text/markdown`` and any other ``text/*`` type: the string is the memory.
- ``application/json``: a dict (or a string holding a JSON object) becomes a dictionary memory;
  ``data`` is the dict and the searchable content is its JSON text.
- Images and binary content are refused: Memento embeds and searches text.
- Metadata keys ``memory_type``, ``tags``, ``importance``, ``privacy``, ``source``,
  ``created_at`` (ISO 8601) and the scope fields ``user_id``, ``agent_id``, ``project_id``,
  ``session_id`` set the memory's fields. Keys that only a query result carries (``id``,
  ``score``, ``rank_score``, ``relevance``, ``similarity``, ``reason``, ``matched_terms``) are
  dropped, so a
  result can be added elsewhere as it is. Every other key is kept and comes back on query.

The MIME type and the kept metadata travel in the item's ``origin_trace`` under ``"autogen"``:
they describe the AutoGen object the memory came from. The caller's objects are only read.

Querying, ``Recalled`` → ``MemoryContent``: the original MIME type (known types as
``MemoryMimeType`` members) and content (a dict for a dictionary memory), with the kept metadata,
the memory's fields and why it came back (``score`` = ``relevance``, the number
``score_threshold`` bounds; ``rank_score``, the order; ``similarity``; ``reason``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from autogen_core import Image
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import LLMMessage, UserMessage

from memento_core import (
    MAX_CONTENT_CHARS,
    InvalidContent,
    InvalidInput,
    InvalidScope,
    MemoryDraft,
    MemoryType,
    Privacy,
    Recalled,
    Scope,
    parse_enum,
)

TRACE_KEY = "autogen"
"""The key of the AutoGen provenance in a memory's ``origin_trace``."""
SCOPE_FIELDS = ("user_id", "agent_id", "project_id", "session_id")
MAPPED_KEYS = frozenset(
    {"memory_type", "tags", "importance", "privacy", "source", "created_at", *SCOPE_FIELDS}
)
RESULT_KEYS = frozenset(
    {"id", "score", "rank_score", "relevance", "similarity", "reason", "matched_terms"}
)
SOURCE = "autogen"
"""The ``source`` of memories added through ``MementoMemory.add`` unless metadata names one."""


def draft_from_content(
    content: MemoryContent, *, scope: Scope, privacy: Privacy, memory_type: MemoryType
) -> MemoryDraft:
    """The draft a ``MemoryContent`` is stored as, under this memory's scope and defaults."""
    mime_type = mime_value(content.mime_type)
    text, data = _text_and_data(content.content, mime_type)
    metadata: Mapping[str, Any] = content.metadata or {}
    kept = {k: v for k, v in metadata.items() if k not in MAPPED_KEYS and k not in RESULT_KEYS}
    try:
        kept = json.loads(json.dumps(kept, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"metadata must be JSON-serialisable: {err}") from err
    draft_scope = scope_with(scope, metadata)
    draft_privacy = parse_enum(Privacy, metadata.get("privacy", privacy), "privacy")
    # Fields the metadata leaves out keep core's defaults.
    given = {name: metadata[name] for name in ("importance", "tags") if name in metadata}
    return MemoryDraft(
        content=text,
        type=metadata.get("memory_type", memory_type),
        scope=draft_scope,
        data=data,
        source=metadata.get("source", SOURCE),
        privacy=draft_privacy,
        created_at=_timestamp(metadata.get("created_at")),
        origin_trace={TRACE_KEY: {"mime_type": mime_type, "metadata": kept}},
        **given,
    )


def content_from_recalled(recalled: Recalled) -> MemoryContent:
    """A recall result as AutoGen sees it: original content and MIME type, plus the reason."""
    item, reason = recalled.item, recalled.reason
    trace = item.origin_trace.get(TRACE_KEY) if isinstance(item.origin_trace, Mapping) else None
    if isinstance(trace, Mapping):
        mime_type = str(trace.get("mime_type", MemoryMimeType.TEXT.value))
        kept = dict(trace.get("metadata") or {})
    else:  # written by core or another adapter: a dictionary memory is JSON, the rest text
        mime_type = (MemoryMimeType.JSON if item.data is not None else MemoryMimeType.TEXT).value
        kept = {}
    body: str | dict[str, Any] = item.content
    if mime_type == MemoryMimeType.JSON.value and item.data is not None:
        body = dict(item.data)
    fields = {name: value for name, value in item.scope.as_dict().items() if value is not None}
    metadata = {
        **kept,
        **fields,
        "memory_type": item.type.value,
        "tags": list(item.tags),
        "importance": item.importance,
        "privacy": item.privacy.value,
        "source": item.source,
        "created_at": item.created_at.isoformat(),
        "id": item.id,
        # ``score`` is what ``score_threshold`` bounds (as upstream's similarity score is);
        # the order comes from Memento's ranking score.
        "score": reason.relevance,
        "rank_score": recalled.score,
        "relevance": reason.relevance,
        "similarity": reason.dense,
        "reason": str(reason),
        "matched_terms": list(reason.matched_terms),
    }
    return MemoryContent(content=body, mime_type=mime_member(mime_type), metadata=metadata)


def mime_value(mime_type: MemoryMimeType | str) -> str:
    return mime_type.value if isinstance(mime_type, MemoryMimeType) else str(mime_type)


def mime_member(mime_type: str) -> MemoryMimeType | str:
    """A known MIME type as its ``MemoryMimeType`` member, any other as the string."""
    try:
        return MemoryMimeType(mime_type)
    except ValueError:
        return mime_type


def scope_with(scope: Scope, metadata: Mapping[str, Any]) -> Scope:
    """This memory's scope, with the fields it leaves open filled from metadata.

    The user is never open: a memory without a user_id belongs to the store's anonymous user,
    and a memory for one user must not write another's. Other fields this memory sets cannot
    be changed either; the ones it leaves open (say, the session) can be set per memory.
    """
    fields = scope.as_dict()
    for name in SCOPE_FIELDS:
        value = metadata.get(name)
        if value is None or value == fields[name]:
            continue
        if fields[name] is not None or name == "user_id":
            raise InvalidScope(
                f"metadata {name}={value!r} conflicts with this memory's {name}={fields[name]!r}"
            )
        fields[name] = value
    return Scope(**fields)


def query_text(query: str | MemoryContent) -> str:
    """The text to recall with: a string, or the searchable text of a ``MemoryContent``."""
    if isinstance(query, str):
        return query
    text, _ = _text_and_data(query.content, mime_value(query.mime_type))
    return text


def latest_user_text(messages: Sequence[LLMMessage]) -> str | None:
    """The text of the newest user message (images left out), or None if there is none."""
    for message in reversed(messages):
        if not isinstance(message, UserMessage):
            continue
        if isinstance(message.content, str):
            text = message.content
        else:
            text = "\n".join(part for part in message.content if isinstance(part, str))
        return text[:MAX_CONTENT_CHARS] if text.strip() else None
    return None


def memory_listing(results: Sequence[MemoryContent]) -> str:
    """The system message that hands recalled memories to the model, best first."""
    lines = [f"{n}. {_as_text(result.content)}" for n, result in enumerate(results, 1)]
    return "Relevant memories, most relevant first:\n" + "\n".join(lines)


def _text_and_data(content: object, mime_type: str) -> tuple[str, dict[str, Any] | None]:
    if mime_type == MemoryMimeType.JSON.value:
        data = content
        if isinstance(content, str):
            try:
                data = json.loads(content)
            except ValueError as err:
                raise InvalidContent(f"application/json content is not valid JSON: {err}") from err
        if not isinstance(data, dict):
            raise InvalidContent(
                "application/json content must be a JSON object (a dict), "
                f"got {type(data).__name__}"
            )
        return json.dumps(data, ensure_ascii=False), data
    if not mime_type.startswith("text/"):
        raise InvalidContent(
            f"Memento remembers text and JSON; {mime_type} content cannot be embedded"
        )
    if not isinstance(content, str):
        kind = "an image" if isinstance(content, Image) else type(content).__name__
        raise InvalidContent(f"{mime_type} content must be a string, got {kind}")
    return content, None


def _timestamp(value: object) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            # Python 3.10's fromisoformat does not read the "Z" suffix.
            return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
        except ValueError as err:
            raise InvalidInput(f"created_at must be an ISO 8601 timestamp, got {value!r}") from err
    raise InvalidInput(f"created_at must be an ISO 8601 string, got {type(value).__name__}")


def _as_text(content: object) -> str:
    if isinstance(content, dict):
        return json.dumps(content, ensure_ascii=False)
    return str(content)
