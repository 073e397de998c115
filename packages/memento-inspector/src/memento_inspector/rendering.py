"""Pages rendered from the package's Jinja2 templates (autoescaped), error pages among them.

Text from the store is shown with ``shown``: characters that are invisible or reorder what
follows (bidi overrides, zero-width characters, other format and control characters) are
shown as a marked ``U+XXXX`` instead, so an id or a text looks like what it is — a user id
``alice\u202eecila`` or ``bob\u200b`` cannot pass for another. Form fields keep the text as
it is (an edit must not change it).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from memento_inspector.viewer import Inspector

VERSION = "0.1.0"


INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Control, format (bidi controls, zero-width characters, tag characters), lone surrogates,
line and paragraph separators."""
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters that draw nothing (the Hangul fillers, the blank braille pattern)."""
KEPT = frozenset("\t\n\r")
_CANDIDATES = re.compile("[^\\w !-/:-@\\[-`{-~]|[\u115f\u1160\u3164\uffa0]")
"""What may be invisible: not a letter, digit or ASCII mark (a few letters draw nothing)."""
ZWJ = "\u200d"


def _invisible(text: str, at: int) -> bool:
    char = text[at]
    if char in KEPT:
        return False
    if char == ZWJ:  # joins an emoji sequence (👩‍💻): kept there, marked anywhere else
        before = text[at - 1] if at else ""
        after = text[at + 1] if at + 1 < len(text) else ""
        if (
            before
            and after
            and unicodedata.category(before) in ("So", "Sk", "Mn")
            and unicodedata.category(after) == "So"
        ):
            return False
    return char in BLANK_LETTERS or unicodedata.category(char) in INVISIBLE_CATEGORIES


def shown(value: object, element: str = "span") -> Markup:
    """``value`` escaped, each invisible or reordering character as a marked ``U+XXXX``
    (``element``: ``tspan`` inside SVG)."""
    if isinstance(value, Markup):
        return value
    text = "" if value is None else str(value)
    out: list[str] = []
    plain = 0
    for found in _CANDIDATES.finditer(text):
        at = found.start()
        char = text[at]
        if not _invisible(text, at):
            continue
        out.append(escape(text[plain:at]))
        code = f"U+{ord(char):04X}"
        name = unicodedata.name(char, "")
        out.append(
            Markup('<{0} class="invisible" title="{2}">[{1}]</{0}>').format(
                Markup(element), code, name or code
            )
        )
        plain = at + 1
    out.append(escape(text[plain:]))
    return Markup("").join(out)


def segment(value: object) -> str:
    """``value`` as one path segment of an address (``/memory/<id>``): ``?``, ``#`` and ``/``
    in an id stay in the id."""
    return quote(str(value), safe="")


templates = Environment(
    loader=PackageLoader("memento_inspector", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters["shown"] = shown
templates.filters["segment"] = segment
templates.filters["as_json"] = lambda value: json.dumps(value, ensure_ascii=False, default=str)


def render(
    request: Request, name: str, code: int = 200, *, stranger: bool = False, **values: Any
) -> HTMLResponse:
    """The page ``name``; for a ``stranger`` (no token, a foreign host) without saying whom
    the inspector acts as."""
    inspector: Inspector = request.app.state.inspector
    page = templates.get_template(name).render(
        request=request,
        inspector=inspector,
        who=None if stranger else inspector.user or "the store's owner",
        version=VERSION,
        **values,
    )
    return HTMLResponse(page, status_code=code)


def error_page(
    request: Request, status: int, message: str, *, stranger: bool = False
) -> HTMLResponse:
    return render(
        request, "error.html", code=status, stranger=stranger, status_code=status, message=message
    )
