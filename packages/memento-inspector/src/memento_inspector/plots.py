"""Small inline SVG pictures, drawn on the server: no script, no library, nothing fetched."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from urllib.parse import quote

from markupsafe import Markup, escape

from memento_inspector.rendering import shown

COMPONENT_COLOURS = {
    "relevance": "#3b6fb6",
    "recency": "#e0a030",
    "importance": "#c04848",
    "usage": "#4a9a5a",
    "context": "#8a5ab0",
    "expansion": "#2a9d9a",
    "duplication": "#999999",
}


def per_day(counts: Mapping[date, int], *, days: int = 60, width: int = 640) -> Markup:
    """Memories written per day over the last ``days`` days that have any, as bars."""
    if not counts:
        return Markup('<p class="muted">No memories yet.</p>')
    last = max(counts)
    first = max(min(counts), last - timedelta(days=days - 1))
    span = (last - first).days + 1
    height, bottom = 140, 20
    top = max(counts.get(first + timedelta(days=n), 0) for n in range(span)) or 1
    bar = width / span
    parts = [
        f'<svg class="plot" role="img" aria-label="memories written per day" '
        f'viewBox="0 0 {width} {height + bottom}" width="{width}" height="{height + bottom}">'
    ]
    for n in range(span):
        day = first + timedelta(days=n)
        value = counts.get(day, 0)
        h = (height - 10) * value / top
        parts.append(
            f'<rect x="{n * bar:.1f}" y="{height - h:.1f}" width="{max(bar - 1, 1):.1f}" '
            f'height="{h:.1f}" fill="#3b6fb6"><title>{day}: {value}</title></rect>'
        )
    parts.append(f'<text x="0" y="{height + 15}" class="axis">{first}</text>')
    parts.append(
        f'<text x="{width}" y="{height + 15}" text-anchor="end" class="axis">{last}</text>'
    )
    parts.append(f'<text x="{width}" y="12" text-anchor="end" class="axis">max {top}/day</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def score_bar(parts: Sequence[tuple[str, float]], *, scale: float, width: int = 300) -> Markup:
    """A score as a stacked bar of its weighted components; a penalty drawn after, hatched."""
    height = 14
    x = 0.0
    out = [
        f'<svg class="scorebar" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="score components">'
    ]
    for name, value in parts:
        w = max(0.0, abs(value)) * width / (scale or 1)
        colour = COMPONENT_COLOURS.get(name, "#666")
        opacity = ' fill-opacity="0.35"' if value < 0 else ""
        out.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" fill="{colour}"{opacity}>'
            f"<title>{escape(name)} {value:+.3f}</title></rect>"
        )
        x += w
    out.append("</svg>")
    return Markup("".join(out))


def link_graph(
    centre: str, neighbours: Sequence[tuple[str, str, str, bool]], *, size: int = 320
) -> Markup:
    """The memory in the middle, its linked memories around it: (id, label, relation, outgoing)."""
    if not neighbours:
        return Markup('<p class="muted">No links.</p>')
    middle = size / 2
    radius = size / 2 - 50
    out = [
        f'<svg class="graph" viewBox="0 0 {size} {size}" width="{size}" height="{size}" '
        f'role="img" aria-label="links">'
    ]
    nodes = []
    for n, (memory_id, label, relation, outgoing) in enumerate(neighbours):
        angle = 2 * math.pi * n / len(neighbours) - math.pi / 2
        x, y = middle + radius * math.cos(angle), middle + radius * math.sin(angle)
        arrow = "→" if outgoing else "←"
        out.append(
            f'<line x1="{middle}" y1="{middle}" x2="{x:.1f}" y2="{y:.1f}" class="edge"/>'
            f'<text x="{(middle + x) / 2:.1f}" y="{(middle + y) / 2:.1f}" class="edge-label">'
            f"{arrow} {escape(relation)}</text>"
        )
        nodes.append(
            f'<a href="/memory/{escape(quote(memory_id, safe=""))}"><circle cx="{x:.1f}" '
            f'cy="{y:.1f}" r="9" class="node"/><text x="{x:.1f}" y="{y + 22:.1f}" '
            f'class="node-label">{shown(label[:28], "tspan")}</text></a>'
        )
    out.extend(nodes)
    out.append(
        f'<circle cx="{middle}" cy="{middle}" r="12" class="node centre"/>'
        f'<text x="{middle}" y="{middle + 26}" class="node-label">'
        f"{shown(centre[:28], 'tspan')}</text>"
    )
    out.append("</svg>")
    return Markup("".join(out))
