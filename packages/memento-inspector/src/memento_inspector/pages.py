"""The pages: what the viewer may see, read through core's public API. Nothing here changes
the store (the command opens it with ``track_usage=False``: a search is no access)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from memento_core import (
    FOREVER,
    HotwordDetected,
    Memento,
    MemoryItem,
    NotOwner,
    Recalled,
    Scope,
    WindowPolicy,
    detect_stream,
)
from memento_inspector import browsing, exporting, forms, plots
from memento_inspector.rendering import render, shown
from memento_inspector.viewer import Inspector, inspector_of


def counting(request: Request) -> Response:
    """The page asked for needs the first count, still running: it reloads itself."""
    return render(request, "counting.html")


async def overview(request: Request) -> Response:
    inspector = inspector_of(request)
    counted = await inspector.census()
    if counted is None:
        return counting(request)
    census, age = counted
    status = inspector.mem.index_status()
    return render(
        request,
        "overview.html",
        census=census,
        census_age=age,
        status=status,
        plot=plots.per_day(census.written_per_day),
        location=inspector.mem.location,
    )


async def browse(request: Request) -> Response:
    inspector = inspector_of(request)
    query = forms.browse_query(request.query_params)
    counted = await inspector.census()
    if counted is None or inspector.catalog is None:
        return counting(request)
    age = counted[1]
    found = await browsing.page(inspector.get_many, inspector.catalog, query)
    return render(
        request, "browse.html", query=query, page=found, pages=found.pages, census_age=age
    )


def highlight(text: str, terms: Sequence[str]) -> Markup:
    """``text`` with every word that starts with a matched term (terms are stems) marked."""
    if not terms:
        return shown(text)
    stems = tuple(t.lower() for t in terms if t)
    out = []
    for piece in re.split(r"(\w+)", text):
        if piece and piece.lower().startswith(stems) and re.fullmatch(r"\w+", piece):
            out.append(Markup("<mark>{}</mark>").format(shown(piece)))
        else:
            out.append(shown(piece))
    return Markup("").join(out)


def components(result: Recalled) -> list[tuple[str, float]]:
    why = result.reason
    w = why.weights
    parts = [
        ("relevance", w.relevance * why.relevance),
        ("recency", w.recency * why.recency),
        ("importance", w.importance * why.importance),
        ("usage", w.usage * why.usage),
        ("context", w.context * why.context),
    ]
    if why.expansion and w.expansion:  # shares rare terms with the first hits ("via: …")
        parts.append(("expansion", w.expansion * why.expansion))
    if why.duplication:
        parts.append(("duplication", -w.duplication * why.duplication))
    return parts


async def search(request: Request) -> Response:
    inspector = inspector_of(request)
    params = request.query_params
    query = forms.query_text(params.get("q", ""))
    limit = forms.whole_number(params.get("limit", "10"), "limit", low=1, high=50)
    weights = forms.weights_from(params, inspector.mem.weights)
    # Recall always has a viewer: the owner picks whose view to search (none: memories stored
    # without a user, and public ones), a user searches their own.
    viewer = inspector.scope
    as_user = params.get("as_user", "") if viewer is None else ""
    if as_user:
        viewer = Scope(user_id=as_user, project_id=params.get("as_project") or None)
    results: list[Recalled] = []
    if query.strip():
        results = await inspector.mem.arecall(query, scope=viewer, limit=limit, weights=weights)
    scale = max((sum(max(v, 0) for _, v in components(r)) for r in results), default=1.0)
    rows = [
        {
            "result": r,
            "parts": components(r),
            "bar": plots.score_bar(components(r), scale=scale),
            "text": highlight(r.item.content, r.reason.matched_terms),
        }
        for r in results
    ]
    return render(
        request,
        "search.html",
        q=query,
        as_user=as_user,
        as_project=params.get("as_project", ""),
        limit=limit,
        limits=forms.SEARCH_LIMITS,
        weights=weights,
        weight_names=forms.WEIGHT_NAMES,
        rows=rows,
    )


async def _labels(inspector: Inspector, memory_ids: list[str]) -> dict[str, str]:
    """Each memory's title or text, for those the viewer may see, read at once."""
    return {item.id: item.title or item.content for item in await inspector.get_many(memory_ids)}


def expiry(mem: Memento, item: MemoryItem) -> str:
    """When the memory expires, and the rule that says so."""
    if item.pinned:
        return "never: it is pinned"
    rule = mem.retention.retention_for(item.type, item.tags)
    tagged = [t for t in item.tags if t in mem.retention.by_tag]
    source = f"the rule for tag {tagged[0]!r}" if tagged else f"the rule for {item.type.value}"
    if item.expires_at is None:
        return f"never: kept for good ({source})"
    kept = item.retention or rule
    span = f"{kept.days} days without use" if kept not in (None, FOREVER) else "an expiry date"
    state = "expired" if item.expires_at <= datetime.now(timezone.utc) else "expires"
    return f"{state} {item.expires_at:%Y-%m-%d %H:%M} UTC: {span} ({source}); each use renews it"


DONE = ("saved", "forgotten", "restored")
"""What a change made here says on the memory's page after it (``?done=``): nothing else."""


def _done(value: str) -> str:
    return value if value in DONE else ""


async def memory(request: Request) -> Response:
    inspector = inspector_of(request)
    memory_id = request.path_params["memory_id"]
    item = await inspector.get(memory_id)
    mem = inspector.mem
    every_link, events = await asyncio.gather(
        mem.alinks(memory_id), mem.afeedback_events(memory_id)
    )
    related: list[tuple[str, str, bool]] = [
        (
            link.target_id if link.source_id == memory_id else link.source_id,
            link.type.value,
            link.source_id == memory_id,
        )
        for link in every_link
    ]
    if item.follows:
        related.append((item.follows, "follows", True))
    if item.superseded_by:
        related.append((item.superseded_by, "superseded by", True))
    # Links are read without a scope: a link whose other end the viewer may not see is left
    # out, with its note — not even its id or that it exists is shown.
    labels = await _labels(inspector, [other for other, _, _ in related])
    links = [link for link, (other, _, _) in zip(every_link, related) if other in labels]
    neighbours = [
        (other, labels[other], relation, outgoing)
        for other, relation, outgoing in related
        if other in labels
    ]
    return render(
        request,
        "memory.html",
        item=item,
        links=links,
        events=events,
        graph=plots.link_graph(item.title or item.content, neighbours),
        expiry=expiry(mem, item),
        now=datetime.now(timezone.utc),
        done=_done(request.query_params.get("done", "")),
        owned=inspector.user is None or item.scope.user_id == inspector.user,
    )


def _chunks(text: str) -> list[str]:
    """The reply cut as a model would stream it: a word and its space at a time."""
    return re.findall(r"\S+\s*|\s+", text)


async def hotwords(request: Request) -> Response:
    inspector = inspector_of(request)
    given = ""
    if request.method == "POST":  # a reply is too long for an address; it changes nothing
        given = str((await inspector.form(request, change=False)).get("reply", ""))
    reply = forms.query_text(given, "reply", limit=forms.MAX_REPLY_CHARS)
    fired: list[dict[str, Any]] = []
    marked = Markup("")
    if reply:
        detector = await inspector.mem.ahotword_detector(inspector.scope, word_boundary=True)
        conversation = detector.conversation("inspector")
        position = 0
        cuts: list[int] = []
        waiting: list[dict[str, Any]] = []
        # An event comes just before the chunk that completed its hotword: it fired where
        # that chunk ends.
        for piece in detect_stream(conversation, _chunks(reply)):
            if isinstance(piece, HotwordDetected):
                waiting.append({"event": piece, "at": position})
            elif isinstance(piece, str):
                position += len(piece)
                for entry in waiting:
                    entry["at"] = position
                    cuts.append(position)
                fired.extend(waiting)
                waiting = []
        fired.extend(waiting)
        out, last = [], 0
        for n, cut in enumerate(cuts, 1):
            out.append(shown(reply[last:cut]))
            out.append(Markup('<sup class="fired">{}</sup>').format(n))
            last = cut
        out.append(shown(reply[last:]))
        marked = Markup("").join(out)
        labels = await _labels(inspector, [entry["event"].hotword_uid for entry in fired])
        # The detector holds live memories the viewer may see; one forgotten since is left out.
        fired = [entry for entry in fired if entry["event"].hotword_uid in labels]
        for entry in fired:
            entry["label"] = labels[entry["event"].hotword_uid]
    return render(request, "hotwords.html", reply=reply, fired=fired, marked=marked)


async def session(request: Request) -> Response:
    inspector = inspector_of(request)
    session_id = request.query_params.get("id", "")
    if not session_id:
        return render(request, "session.html", session_id="", window=[], history=[])
    mem = inspector.mem
    try:
        history = await mem.ahistory(session_id, scope=inspector.scope)
        readable = True
    except NotOwner:
        # Another user's session answers as an unknown one does: the answer must not tell
        # that the id exists.
        history, readable = [], False
    # A view only: no eviction, no archive, no expiry, whatever the session's own policy.
    viewer = mem.chat(
        session_id,
        scope=inspector.scope,
        policy=WindowPolicy(
            max_messages=1_000_000, ttl=None, snapshot_on_overflow=False, archive_on_end=False
        ),
    )
    window = await viewer.awindow() if history else []
    if await inspector.census() is None or inspector.catalog is None:
        return counting(request)
    archived = await inspector.get_many(
        inspector.catalog.in_session(session_id) if readable else []
    )
    turn_of: dict[str, MemoryItem] = {}
    summaries: list[MemoryItem] = []
    for item in archived:
        trace = item.origin_trace if isinstance(item.origin_trace, dict) else {}
        if "chat-turn" in item.tags:
            for message_id in trace.get("messages", []):
                turn_of[message_id] = item
        elif trace.get("session_id") == session_id:
            summaries.append(item)
    window_ids = {m.id for m in window}
    return render(
        request,
        "session.html",
        session_id=session_id,
        window=window,
        history=history,
        window_ids=window_ids,
        turn_of=turn_of,
        summaries=summaries,
    )


async def export(request: Request) -> Response:
    inspector = inspector_of(request)
    fmt = request.query_params.get("fmt", "")
    if not fmt:
        return render(request, "export.html", formats=exporting.FORMATS)
    exporting.check_format(fmt)
    lines = await asyncio.to_thread(exporting.export_lines, inspector.mem, inspector.scope, fmt)
    media, suffix = exporting.FORMATS[fmt]
    name = f"memento-{inspector.user or 'store'}.{suffix}"
    return StreamingResponse(
        iter(lines),
        media_type=media,
        headers={"content-disposition": exporting.attachment(name)},
    )


async def users(request: Request) -> Response:
    inspector = inspector_of(request)
    counted = await inspector.census()
    if counted is None:
        return counting(request)
    return render(request, "users.html", census=counted[0])


def routes() -> list[Route]:
    return [
        Route("/", overview, methods=["GET"]),
        Route("/memories", browse, methods=["GET"]),
        Route("/search", search, methods=["GET"]),
        Route("/memory/{memory_id:path}", memory, methods=["GET"]),
        Route("/hotwords", hotwords, methods=["GET", "POST"]),
        Route("/session", session, methods=["GET"]),
        Route("/export", export, methods=["GET"]),
        Route("/users", users, methods=["GET"]),
    ]
