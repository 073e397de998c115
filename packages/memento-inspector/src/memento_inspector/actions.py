"""The changes: each a POST with the page's CSRF token, shown first as a confirmation page
(nothing changes until it comes back with ``confirm=yes``), and made through core with the
viewer's scope, so core's ownership rules decide (``NotOwner`` becomes a 403 page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from memento_core import MemoryItem, NotOwner, Privacy, check_scope_value, parse_enum
from memento_inspector import forms
from memento_inspector.guard import local_path
from memento_inspector.rendering import render
from memento_inspector.viewer import Inspector, Refused, inspector_of


def _confirm(
    request: Request, form: FormData, *, title: str, what: str, changes: list[str], back: str
) -> Response:
    fields = {k: str(v) for k, v in form.items() if k not in ("csrf", "confirm")}
    return render(
        request,
        "confirm.html",
        title=title,
        what=what,
        changes=changes,
        fields=fields,
        action=request.url.path,
        back=back,
    )


def _go(path: str, query: str = "") -> Response:
    return RedirectResponse(local_path(path, query), status_code=303)


def _page_of(memory_id: str) -> str:
    return f"/memory/{quote(memory_id, safe='')}"


async def _item(inspector: Inspector, memory_id: str, action: str) -> MemoryItem:
    """The memory about to be changed, as the viewer may see it (a hidden one is not found);
    another user's is refused before the question is asked (core refuses it again)."""
    item = await inspector.get(memory_id)
    if inspector.user is not None and item.scope.user_id != inspector.user:
        raise NotOwner(f"memory {memory_id!r}", action)
    return item


async def edit(request: Request) -> Response:
    inspector = inspector_of(request)
    form = await inspector.form(request)
    memory_id = request.path_params["memory_id"]
    item = await _item(inspector, memory_id, "update")
    changes: dict[str, Any] = {}
    content = forms.content(str(form.get("content", item.content)))
    if content != item.content:
        changes["content"] = content
    importance = forms.importance(str(form.get("importance", item.importance)))
    if abs(importance - item.importance) > 1e-9:
        changes["importance"] = importance
    tags = forms.tag_list(str(form.get("tags", ",".join(item.tags))))
    if tags != item.tags:
        changes["tags"] = list(tags)
    privacy = parse_enum(Privacy, str(form.get("privacy", item.privacy.value)), "privacy")
    if privacy != item.privacy:
        changes["privacy"] = privacy
    pinned = form.get("pinned", "") == "yes"
    if form.get("confirm") != "yes":
        described = [f"{name}: {value}" for name, value in changes.items()]
        if pinned != item.pinned:
            described.append("pin it" if pinned else "unpin it")
        return _confirm(
            request,
            form,
            title="Save these changes?",
            what=item.title or item.content,
            changes=described or ["nothing changes"],
            back=_page_of(memory_id),
        )
    scope = inspector.scope
    if changes:
        await inspector.mem.aupdate(memory_id, scope=scope, **changes)
    if pinned != item.pinned:
        pin = inspector.mem.apin if pinned else inspector.mem.aunpin
        await pin(memory_id, scope=scope)
    await inspector.changed()
    return _go(_page_of(memory_id), "done=saved")


async def forget(request: Request) -> Response:
    inspector = inspector_of(request)
    form = await inspector.form(request)
    memory_id = request.path_params["memory_id"]
    hard = form.get("hard") == "yes"
    item = await _item(inspector, memory_id, "erase" if hard else "forget")
    if form.get("confirm") != "yes":
        change = (
            "erase it for good: its vector, links, feedback and facts derived only from it"
            if hard
            else "hide it (restore brings it back)"
        )
        return _confirm(
            request,
            form,
            title="Erase this memory?" if hard else "Forget this memory?",
            what=item.title or item.content,
            changes=[change],
            back=_page_of(memory_id),
        )
    await inspector.mem.aforget(memory_id, hard=hard, scope=inspector.scope)
    await inspector.changed()
    if hard:
        return _go("/memories", "done=erased")
    return _go(_page_of(memory_id), "done=forgotten")


async def restore(request: Request) -> Response:
    inspector = inspector_of(request)
    form = await inspector.form(request)
    memory_id = request.path_params["memory_id"]
    item = await _item(inspector, memory_id, "restore")
    if form.get("confirm") != "yes":
        return _confirm(
            request,
            form,
            title="Restore this memory?",
            what=item.title or item.content,
            changes=["show it again in recall"],
            back=_page_of(memory_id),
        )
    await inspector.mem.arestore(memory_id, scope=inspector.scope)
    await inspector.changed()
    return _go(_page_of(memory_id), "done=restored")


async def erase_user(request: Request) -> Response:
    inspector = inspector_of(request)
    form = await inspector.form(request)
    user = check_scope_value(str(form.get("user", "")) or None, "user")
    if user is None:
        raise Refused(400, "name the user to erase")
    if inspector.user is not None and user != inspector.user:
        raise Refused(
            403,
            f"user {user!r} is another user; acting as {inspector.user!r}, only they can be erased",
        )
    if form.get("confirm") != "yes":
        return _confirm(
            request,
            form,
            title=f"Erase everything of user {user!r}?",
            what=f"user {user}",
            changes=[
                "every memory, vector, link, feedback event and chat message of the user",
                "facts derived only from them; adapters' records of the user",
                "this cannot be undone",
            ],
            back="/users",
        )
    report = await inspector.mem.aerase_user(user)
    await inspector.changed()
    return render(request, "erased.html", report=report)


def routes() -> list[Route]:
    return [
        Route("/memory/{memory_id:path}/edit", edit, methods=["POST"]),
        Route("/memory/{memory_id:path}/forget", forget, methods=["POST"]),
        Route("/memory/{memory_id:path}/restore", restore, methods=["POST"]),
        Route("/users/erase", erase_user, methods=["POST"]),
    ]
