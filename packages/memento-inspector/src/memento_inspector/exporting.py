"""Downloads of what the viewer may see.

The store's owner gets core's own export (``Memento.export``: lossless NDJSON with links and
feedback, or Markdown, or CSV). A user gets every memory they may see — their own and the team
and public memories of others, soft-deleted ones of their own included — written here, since
core's ``export(user_id=...)`` gives only what a user owns.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from memento_core import InvalidInput, Memento, MemoryItem, Scope

FORMATS = {
    "ndjson": ("application/x-ndjson", "ndjson"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
    "csv": ("text/csv; charset=utf-8", "csv"),
}
CSV_FIELDS = (
    "id",
    "type",
    "user_id",
    "project_id",
    "privacy",
    "importance",
    "pinned",
    "tags",
    "created_at",
    "expires_at",
    "deleted_at",
    "content",
)


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return fmt


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _record(item: MemoryItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "content": item.content,
        "type": item.type.value,
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
        "updated_at": _time(item.updated_at),
        "expires_at": _time(item.expires_at),
        "deleted_at": _time(item.deleted_at),
        "origin_trace": item.origin_trace,
    }


def visible_lines(items: Sequence[MemoryItem], fmt: str) -> Iterator[str]:
    if fmt == "ndjson":
        for item in items:
            yield json.dumps({"kind": "memory", **_record(item)}, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        yield "# Memories\n\n"
        for item in items:
            tags = f" · tags: {', '.join(item.tags)}" if item.tags else ""
            yield (
                f"## {item.title or item.id}\n\n{item.content}\n\n"
                f"*{item.type.value} · {item.privacy.value} · user {item.scope.user_id or '-'} · "
                f"{item.created_at:%Y-%m-%d %H:%M} UTC{tags}*\n\n"
            )
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(CSV_FIELDS)
        for item in items:
            record = _record(item)
            writer.writerow(
                [
                    item.id,
                    record["type"],
                    item.scope.user_id or "",
                    item.scope.project_id or "",
                    record["privacy"],
                    item.importance,
                    item.pinned,
                    ";".join(item.tags),
                    record["created_at"],
                    record["expires_at"] or "",
                    record["deleted_at"] or "",
                    item.content,
                ]
            )
        yield buffer.getvalue()


def export_lines(mem: Memento, scope: Scope | None, fmt: str) -> list[str]:
    """The download's lines (read in a worker thread by the caller)."""
    if scope is None:
        return list(mem.export(fmt))
    visible = mem.items(scope=scope, include_deleted=True)
    # Another user's forgotten memory stays hidden, as on every other page.
    shown = [i for i in visible if i.deleted_at is None or i.scope.user_id == scope.user_id]
    return list(visible_lines(shown, fmt))
