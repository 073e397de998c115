"""Pages rendered from the package's Jinja2 templates (autoescaped), error pages among them."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from memento_inspector.viewer import Inspector

VERSION = "0.1.0"


templates = Environment(
    loader=PackageLoader("memento_inspector", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(request: Request, name: str, code: int = 200, **values: Any) -> HTMLResponse:
    inspector: Inspector = request.app.state.inspector
    page = templates.get_template(name).render(
        request=request,
        inspector=inspector,
        who=inspector.user or "the store's owner",
        version=VERSION,
        **values,
    )
    return HTMLResponse(page, status_code=code)


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", code=status, status_code=status, message=message)
