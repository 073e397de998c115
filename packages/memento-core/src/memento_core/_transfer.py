"""Export (NDJSON, Markdown, CSV) and NDJSON import.

NDJSON is the lossless format: one JSON object a line, ``"kind"`` saying which record it is
(``memory``, ``link``, ``feedback``), keys sorted, records in a fixed order. Exporting,
importing into an empty store and exporting again gives the same bytes. Vectors are not
exported; the importing store embeds the content with its own model.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memento_core import _history as history
from memento_core import _lifecycle as lifecycle
from memento_core import _writing as writing
from memento_core._drafts import MAX_ID_CHARS, MAX_TITLE_CHARS
from memento_core._history import MemoryChange
from memento_core._model import (
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    as_utc,
    check_importance,
    check_json,
    check_scope_value,
    check_tags,
    check_text,
    check_validity,
    parse_enum,
)
from memento_core._storage import (
    check_storable,
    event_metadata,
    item_metadata,
    link_id,
    link_metadata,
    to_micros,
)
from memento_core.errors import InvalidImport, InvalidInput, MementoError
from memento_core.hotwords import check_hotword_variants

if TYPE_CHECKING:
    from memento_core._engine import Engine

FORMATS = ("ndjson", "markdown", "csv")
CSV_COLUMNS = (
    "id", "type", "content", "title", "user_id", "agent_id", "project_id", "session_id",
    "privacy", "importance", "pinned", "tags", "created_at", "deleted_at",
)  # fmt: skip


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def memory_record(item: MemoryItem) -> dict[str, Any]:
    record = {
        "kind": "memory",
        "id": item.id,
        "type": item.type.value,
        "content": item.content,
        "title": item.title,
        "data": item.data,
        "source": item.source,
        "scope": item.scope.as_dict(),
        "privacy": item.privacy.value,
        "importance": item.importance,
        "pinned": item.pinned,
        "tags": list(item.tags),
        "hotwords": list(item.hotwords),
        "created_at": _time(item.created_at),
        "last_accessed_at": _time(item.last_accessed_at),
        "expires_at": _time(item.expires_at),
        "deleted_at": _time(item.deleted_at),
        "access_count": item.access_count,
        "feedback": dict(sorted(item.feedback.items())),
        "origin_trace": item.origin_trace,
        "updated_at": _time(item.updated_at),
        "retention_seconds": int(item.retention.total_seconds()) if item.retention else None,
        "review_due_at": _time(item.review_due_at),
        "review_step": item.review_step,
        "consolidated_at": _time(item.consolidated_at),
        "superseded_by": item.superseded_by,
        "follows": item.follows,
    }
    if item.valid_from is not None or item.valid_to is not None:  # older exports: unchanged
        record["valid_from"] = _time(item.valid_from)
        record["valid_to"] = _time(item.valid_to)
    return record


def link_record(link: Link) -> dict[str, Any]:
    record = {
        "kind": "link",
        "source_id": link.source_id,
        "type": link.type.value,
        "target_id": link.target_id,
        "created_at": _time(link.created_at),
        "note": link.note,
    }
    if link.made_by is not None:  # older exports have no maker; keep them byte-identical
        record["made_by"] = link.made_by
    return record


def feedback_record(event: FeedbackEvent) -> dict[str, Any]:
    record = {
        "kind": "feedback",
        "memory_id": event.memory_id,
        "feedback": event.kind.value,
        "score": event.score,
        "at": _time(event.at),
        "note": event.note,
    }
    if event.by is not None:  # older exports name no giver; keep them byte-identical
        record["by"] = event.by
    return record


# Characters JSON leaves unescaped (with ensure_ascii=False) that ``str.splitlines`` ends a line
# at: inside a record they would cut it in two when an export is read back line by line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _line(record: dict[str, Any]) -> str:
    """One NDJSON line: sorted keys, no spaces, UTF-8 text, and no line break but the last."""
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.translate(_LINE_BREAKS) + "\n"


def export_lines(
    engine: Engine, fmt: str = "ndjson", *, user_id: str | None = None
) -> Iterator[str]:
    """The whole store in ``fmt`` (``ndjson``, ``markdown`` or ``csv``), line by line; with
    ``user_id``, only that user's memories, the links between them and their feedback."""
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")
    owner = None if user_id is None else check_scope_value(user_id, "user_id")
    engine.usage.flush()
    where = None if owner is None else {"user_id": owner}
    items = sorted(engine.store.find_items(where), key=lambda i: (i.created_at, i.id))
    if fmt == "ndjson":
        ids = {item.id for item in items}
        links = sorted(
            (
                link
                for link in engine.store.find_links()
                if owner is None or (link.source_id in ids and link.target_id in ids)
            ),
            key=link_id,
        )
        events = sorted(
            engine.store.find_events(None if owner is None else sorted(ids)),
            key=lambda e: (e.memory_id, e.at, e.kind.value),
        )
        yield from (_line(memory_record(i)) for i in items)
        yield from (_line(link_record(link)) for link in links)
        yield from (_line(feedback_record(e)) for e in events)
        yield from (_line(r) for r in history.export_records(engine, [i.id for i in items]))
    elif fmt == "markdown":
        yield from _markdown(items)
    else:
        yield from _csv(items)


def _markdown(items: Iterable[MemoryItem]) -> Iterator[str]:
    yield "# Memento export\n"
    for item in items:
        if item.deleted_at:
            continue
        heading = item.title or item.content.splitlines()[0][:80]
        yield f"\n## {heading}\n\n"
        facts = [item.type.value, item.privacy.value, f"importance {item.importance:g}"]
        if item.scope.user_id:
            facts.append(f"user {item.scope.user_id}")
        if item.tags:
            facts.append("tags " + ", ".join(item.tags))
        yield f"*{' · '.join(facts)} · {item.created_at:%Y-%m-%d %H:%M} UTC · `{item.id}`*\n\n"
        yield item.content.rstrip() + "\n"


# What a spreadsheet may read as the start of a formula (OWASP's list, with line breaks and the
# full-width forms some spreadsheets also take): such a cell gets a leading apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _inert(cell: object) -> object:
    if isinstance(cell, str) and cell.startswith(_FORMULA_STARTS):
        return "'" + cell
    return cell


def _csv(items: Iterable[MemoryItem]) -> Iterator[str]:
    """CSV for spreadsheets: every cell quoted, none a live formula (CSV is not re-imported)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    for item in items:
        writer.writerow(map(_inert,
            [item.id, item.type.value, item.content, item.title or "", item.scope.user_id or "",
             item.scope.agent_id or "", item.scope.project_id or "", item.scope.session_id or "",
             item.privacy.value, item.importance, item.pinned, ";".join(item.tags),
             _time(item.created_at), _time(item.deleted_at) or ""])
        )  # fmt: skip
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.getvalue():
        yield buffer.getvalue()


def _parse_time(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be an ISO 8601 string")
    try:
        return as_utc(datetime.fromisoformat(value), what)
    except ValueError as err:
        raise InvalidInput(f"{what} is not an ISO 8601 time: {value!r}") from err


def parse_memory(record: dict[str, Any]) -> MemoryItem:
    scope = record.get("scope") or {}
    if not isinstance(scope, dict):
        raise InvalidInput("scope must be an object")
    feedback = record.get("feedback") or {}
    if not isinstance(feedback, dict) or not all(
        k in {f.value for f in FeedbackKind} and isinstance(v, int) and v >= 0
        for k, v in feedback.items()
    ):
        raise InvalidInput("feedback must map feedback kinds to counts")
    access_count = record.get("access_count", 0)
    if isinstance(access_count, bool) or not isinstance(access_count, int) or access_count < 0:
        raise InvalidInput("access_count must be a whole number ≥ 0")
    memory_id = record.get("id")
    if not isinstance(memory_id, str) or not memory_id or len(memory_id) > MAX_ID_CHARS:
        raise InvalidInput("id must be a non-empty string")
    check_scope_value(memory_id, "id")  # no control character or lone surrogate
    pinned = record.get("pinned", False)
    if not isinstance(pinned, bool):
        raise InvalidInput(f"pinned must be true or false, got {pinned!r}")
    source = record.get("source", "import")
    check_text(source, "source", max_chars=MAX_TITLE_CHARS)
    title = record.get("title")
    hotwords = record.get("hotwords")
    data = record.get("data")
    if data is not None and not isinstance(data, dict):
        raise InvalidInput("data must be an object or null")
    validity = check_validity(
        _parse_time(record.get("valid_from"), "valid_from"),
        _parse_time(record.get("valid_to"), "valid_to"),
    )
    return MemoryItem(
        id=memory_id,
        content=check_text(record.get("content"), "content"),
        type=parse_enum(MemoryType, record.get("type"), "memory type"),
        title=check_text(title, "title", max_chars=MAX_TITLE_CHARS) if title is not None else None,
        data=check_json(data, "data") if data is not None else None,
        source=source,
        scope=Scope(
            **{k: scope.get(k) for k in ("user_id", "agent_id", "project_id", "session_id")}
        ),
        privacy=parse_enum(Privacy, record.get("privacy"), "privacy"),
        importance=check_importance(record.get("importance")),
        pinned=pinned,
        tags=check_tags(record.get("tags") or ()),
        # The hotword rules, as ``remember`` checks them (not the tag rules).
        hotwords=check_hotword_variants(hotwords, uid=memory_id) if hotwords else (),
        created_at=_parse_time(record.get("created_at"), "created_at") or _missing("created_at"),
        last_accessed_at=_parse_time(record.get("last_accessed_at"), "last_accessed_at"),
        expires_at=_parse_time(record.get("expires_at"), "expires_at"),
        deleted_at=_parse_time(record.get("deleted_at"), "deleted_at"),
        access_count=access_count,
        feedback=feedback,
        origin_trace=check_json(record.get("origin_trace"), "origin_trace"),
        updated_at=_parse_time(record.get("updated_at"), "updated_at"),
        retention=_parse_retention(record.get("retention_seconds")),
        review_due_at=_parse_time(record.get("review_due_at"), "review_due_at"),
        review_step=_whole(record.get("review_step", 0), "review_step"),
        consolidated_at=_parse_time(record.get("consolidated_at"), "consolidated_at"),
        superseded_by=_optional_id(record.get("superseded_by"), "superseded_by"),
        follows=_optional_id(record.get("follows"), "follows"),
        valid_from=validity[0],
        valid_to=validity[1],
    )


def _optional_id(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_ID_CHARS:
        raise InvalidInput(f"{what} must be a memory id (a string) or null, got {value!r}")
    check_scope_value(value, what)
    return value


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be a whole number ≥ 0")
    return value


def _parse_retention(value: Any) -> timedelta | None:
    seconds = _whole(value or 0, "retention_seconds")
    if seconds > timedelta.max.total_seconds():
        raise InvalidInput("retention_seconds is too large to store")
    return timedelta(seconds=seconds) if seconds else None


def _missing(field: str) -> datetime:
    raise InvalidInput(f"{field} is required")


def parse_link(record: dict[str, Any]) -> Link:
    ends = (record.get("source_id"), record.get("target_id"))
    if not all(isinstance(end, str) and end for end in ends):
        raise InvalidInput("a link needs source_id and target_id strings")
    return Link(
        source_id=str(ends[0]),
        type=parse_enum(LinkType, record.get("type"), "link type"),
        target_id=str(ends[1]),
        created_at=_parse_time(record.get("created_at"), "created_at") or _missing("created_at"),
        note=_note(record.get("note")),
        made_by=check_scope_value(record.get("made_by"), "made_by"),
    )


def parse_feedback(record: dict[str, Any]) -> FeedbackEvent:
    score = record.get("score", 1.0)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise InvalidInput(f"score must be a finite number, got {score!r}")
    memory_id = record.get("memory_id")
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInput("memory_id must be a non-empty string")
    return FeedbackEvent(
        memory_id=memory_id,
        kind=parse_enum(FeedbackKind, record.get("feedback"), "feedback kind"),
        score=float(score),
        at=_parse_time(record.get("at"), "at") or _missing("at"),
        note=_note(record.get("note")),
        by=check_scope_value(record.get("by"), "by"),
    )


def parse_change(record: dict[str, Any]) -> MemoryChange:
    memory_id = record.get("memory_id")
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInput("memory_id must be a non-empty string")
    seq = record.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= 10**8:
        raise InvalidInput(f"seq must be a whole number from 1, got {seq!r}")
    before, after = record.get("before"), record.get("after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        raise InvalidInput("before and after must be objects")
    return MemoryChange(
        memory_id=memory_id,
        kind=parse_enum(history.ChangeKind, record.get("change"), "change"),
        at=_parse_time(record.get("at"), "at") or _missing("at"),
        actor=history.parse_actor(record.get("actor")),
        before=check_json(before, "before"),
        after=check_json(after, "after"),
        related=_optional_id(record.get("related"), "related"),
        seq=seq,
    )


def _note(value: Any) -> str | None:
    return None if value is None else check_text(value, "note", max_chars=MAX_TITLE_CHARS)


PARSERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "memory": parse_memory,
    "link": parse_link,
    "feedback": parse_feedback,
    "change": parse_change,
}


def import_ndjson(
    engine: Engine,
    lines: Iterable[str],
    *,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Load an NDJSON export. Every line is checked before anything is written.

    Memories already in the store (same id) are left as they are. Links and feedback must
    name memories in the file or in the store. Returns counts per record kind
    (``changes``: history records, counted when the file holds any).
    """
    items: list[MemoryItem] = []
    links: list[Link] = []
    events: list[FeedbackEvent] = []
    changes: list[MemoryChange] = []
    numbered: set[tuple[str, int]] = set()
    known: set[str] = set()
    first_line: dict[str, int] = {}  # the first line naming each memory id
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise InvalidInput("a line must hold a JSON object")
            parser = PARSERS.get(record.get("kind", ""))
            if parser is None:
                raise InvalidInput(f"unknown record kind {record.get('kind')!r}")
            parsed = parser(record)
            _check_storable(parsed)  # every value fits the store, before anything is written
        except (ValueError, TypeError, MementoError) as err:
            raise InvalidImport(str(err), line=number) from err
        except (OverflowError, RecursionError) as err:  # huge numbers, absurdly deep nesting
            raise InvalidImport(
                f"a value is out of range or nested too deeply ({err})", line=number
            ) from err
        if isinstance(parsed, MemoryItem):
            if parsed.id in known:
                raise InvalidImport(f"memory {parsed.id!r} appears twice", line=number)
            known.add(parsed.id)
            items.append(parsed)
            named = [parsed.id]
        elif isinstance(parsed, Link):
            links.append(parsed)
            named = [parsed.source_id, parsed.target_id]
        elif isinstance(parsed, MemoryChange):
            if parsed.memory_id not in known:
                raise InvalidImport(
                    f"a change names memory {parsed.memory_id!r}, which no earlier line holds",
                    line=number,
                )
            if (parsed.memory_id, parsed.seq) in numbered:
                raise InvalidImport(f"change {parsed.seq} of {parsed.memory_id!r} appears twice",
                                    line=number)  # fmt: skip
            numbered.add((parsed.memory_id, parsed.seq))
            changes.append(parsed)
            named = []
        else:
            events.append(parsed)
            named = [parsed.memory_id]
        for memory_id in named:
            first_line.setdefault(memory_id, number)
    needed = {link.source_id for link in links} | {link.target_id for link in links}
    needed |= {e.memory_id for e in events}
    for memory_id in sorted(needed - known, key=first_line.__getitem__):
        try:
            engine.get(memory_id, include_deleted=True)
        except MementoError as err:
            raise InvalidImport(
                f"a link or feedback names unknown memory {memory_id!r}",
                line=first_line[memory_id],
            ) from err
    engine.check_writable()
    restore_records(engine, items, links, events, changes, on_progress=on_progress)
    counts = {"memories": len(items), "links": len(links), "feedback": len(events)}
    return {**counts, "changes": len(changes)} if changes else counts  # as before without


def _check_storable(parsed: MemoryItem | Link | FeedbackEvent | MemoryChange) -> None:
    if isinstance(parsed, MemoryItem):
        item_metadata(parsed, "")
    elif isinstance(parsed, Link):
        link_metadata(parsed)
    elif isinstance(parsed, FeedbackEvent):
        event_metadata(parsed)
    else:
        check_storable(history.change_metadata(parsed))


def restore_records(
    engine: Engine,
    items: Sequence[MemoryItem],
    links: Sequence[Link],
    events: Sequence[FeedbackEvent],
    changes: Sequence[MemoryChange] = (),
    *,
    on_progress: Callable[[int], None] | None = None,
) -> None:
    """Write exported records back as they were (ids, counters and timestamps kept). The
    history of a memory already stored is left as it is, like the memory.

    All or nothing: if the store fails midway (a full disk, a server gone), what was written
    is undone before the error goes on — links first (those replaced get their old record
    back), then feedback events, then the new memories with their history, erased as
    ``forget(hard=True)`` erases, so no id of theirs stays in the change feed or the
    partition directory.
    """
    store = engine.store
    with store.lock:
        known = store.existing_ids([i.id for i in items])
        fresh = [i for i in items if i.id not in known]
        replaced = store.links_by_key([link_id(link) for link in links])
        # Events already stored (say, this store's own export coming back) aren't doubled.
        present = set(store.find_events(sorted({e.memory_id for e in events})))
        added: list[str] = []
        try:
            # Log records first, then the memories with their heads: history commits with them.
            fresh_changes = [c for c in changes if c.memory_id not in known]
            heads = history.import_records(engine, fresh_changes)
            if fresh:
                writing.store_items(engine, fresh, (), writing.BATCH_SIZE, on_progress, extra=heads)
            store.put_links(links)
            for n, event in enumerate(events):
                if event not in present:
                    key = f"{event.memory_id}:{to_micros(event.at)}:import{n}"
                    added.append(key)
                    store.add_event(event, key=key)
        except BaseException:
            new_links = [link for link in links if link_id(link) not in replaced]
            store.delete_links(new_links)
            store.put_links(list(replaced.values()))
            store.delete_events(added)
            lifecycle.erase_records(engine, [i.id for i in fresh])
            raise
