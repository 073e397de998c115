"""Downloads of what the viewer may see.

The store's owner gets core's own export (``Memento.export``: lossless NDJSON with links and
feedback, or Markdown, or CSV). A user gets every memory they may see — their own and the team
and public memories of others, soft-deleted ones of their own included — written here, since
core's ``export(user_id=...)`` gives only what a user owns.

CSV cells that a spreadsheet would take for a formula (starting with ``=``, ``+``, ``-``, ``@``,
a tab or a line break, or their full-width forms) get a leading ``'``, as OWASP recommends
against CSV injection: the cell shows as text, its formula is never run. The owner's CSV is
core's, rewritten so.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from memento_core import InvalidInput, Memento, MemoryItem, Scope

FORMATS = {
    "ndjson": ("application/x-ndjson; charset=utf-8", "ndjson"),
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


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""What a spreadsheet may read as the start of a formula (OWASP's list, with line breaks and
the full-width forms some spreadsheets also take)."""


def inert(cell: str) -> str:
    """A CSV cell that no spreadsheet runs as a formula."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def attachment(filename: str) -> str:
    """A ``Content-Disposition`` for a download named ``filename``, as RFC 6266 says: the name
    in UTF-8 (``filename*``, RFC 8187), and an ASCII stand-in for clients that do not read it.
    Quotes, semicolons and line breaks in a user id never reach the header as they are."""
    fallback = re.sub(r"[^A-Za-z0-9._-]", "_", filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


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
        rows: list[list[str]] = [list(CSV_FIELDS)]
        for item in items:
            record = _record(item)
            rows.append(
                [
                    item.id,
                    record["type"],
                    item.scope.user_id or "",
                    item.scope.project_id or "",
                    record["privacy"],
                    str(item.importance),
                    str(item.pinned),
                    ";".join(item.tags),
                    record["created_at"],
                    record["expires_at"] or "",
                    record["deleted_at"] or "",
                    item.content,
                ]
            )
        yield inert_csv(rows)


def inert_csv(rows: Iterable[Sequence[str]]) -> str:
    """``rows`` as CSV, every cell quoted and none a live formula (``inert``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)
    writer.writerows([inert(cell) for cell in row] for row in rows)
    return buffer.getvalue()


def export_lines(mem: Memento, scope: Scope | None, fmt: str) -> list[str]:
    """The download's lines (read in a worker thread by the caller)."""
    if scope is None:
        if fmt == "csv":  # core's CSV, its cells made inert
            text = "".join(mem.export(fmt))
            return [inert_csv(csv.reader(io.StringIO(text, newline="")))]
        return list(mem.export(fmt))
    visible = mem.items(scope=scope, include_deleted=True)
    # Another user's forgotten memory stays hidden, as on every other page.
    shown = [i for i in visible if i.deleted_at is None or i.scope.user_id == scope.user_id]
    return list(visible_lines(shown, fmt))
