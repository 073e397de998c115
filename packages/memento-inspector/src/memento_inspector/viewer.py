"""Who the inspector acts as, and what it keeps: the viewer's scope, the counts and lists of
what the viewer may see (a census, taken in a thread), and the CSRF token its forms carry.

What a page shows is what core lets the viewer see, with one rule on top, the one ``recall`` and
the export keep: a forgotten (soft-deleted) memory is shown only to whoever may restore it — its
owner, or the store's owner (``Inspector.shows``)."""

from __future__ import annotations

import asyncio
import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

from starlette.datastructures import FormData
from starlette.requests import Request

from memento_core import Census, Memento, MemoryItem, MemoryNotFound, Scope
from memento_inspector.browsing import Catalog, restorable_only

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
CENSUS_SECONDS = 30.0
"""Counts older than this are recounted in the background (``Inspector.census``) ..."""
COUNT_SHARE = 10
"""... or older than this many times the last count took: counting takes at most a tenth of
the time (a census of 100,000 memories takes seconds of CPU)."""
FIRST_COUNT_WAIT = 3.0
"""How long a page waits for the first count before it says it is counting."""
QUICK_COUNT = 1.0
"""A census quicker than this (seconds) is redone at once after a change made here."""


class Refused(Exception):
    """A request the inspector will not serve: ``status`` and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Inspector:
    """One inspector over one store, acting as ``user`` (None: the store's owner); ``token``
    (None: none asked for, a user-mode inspector started with ``--no-token``)."""

    mem: Memento
    user: str | None = None
    project: str | None = None
    read_only: bool = False
    token: str | None = None
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    _census: tuple[float, Census] | None = None
    catalog: Catalog | None = None
    """The last census's listing as arrays, for the browse page."""
    _counting: threading.Lock = field(default_factory=threading.Lock)
    _first_count: threading.Event = field(default_factory=threading.Event)
    _count_seconds: float = 0.0

    @property
    def scope(self) -> Scope | None:
        """What core is told about the caller: None acts as the store's owner."""
        if self.user is None:
            return None
        return Scope(user_id=self.user, project_id=self.project)

    def shows(self, item: MemoryItem) -> bool:
        """Whether a memory core let the viewer read (``include_deleted=True``) is shown: a
        forgotten one only to whoever may restore it (core's ownership rule: its user)."""
        return self.user is None or item.deleted_at is None or item.scope.user_id == self.user

    def shown(self, items: list[MemoryItem]) -> list[MemoryItem]:
        return [item for item in items if self.shows(item)]

    async def get(self, memory_id: str) -> MemoryItem:
        """The memory as the viewer may see it; a hidden one is ``MemoryNotFound``, the very
        error of an unknown id, so a page tells the two apart by nothing."""
        item = await self.mem.aget(memory_id, scope=self.scope, include_deleted=True)
        if not self.shows(item):
            raise MemoryNotFound(memory_id)
        return item

    async def get_many(self, memory_ids: list[str]) -> list[MemoryItem]:
        """``get`` for many ids in one read, leaving out unknown and hidden ones."""
        found = await self.mem.aget_many(memory_ids, scope=self.scope, include_deleted=True)
        return self.shown(found)

    async def census(self) -> tuple[Census, float] | None:
        """The counts of what the viewer may see and how many seconds old they are; None
        while the first count is still running after ``FIRST_COUNT_WAIT`` seconds.

        A census reads every visible memory's fields (tens of seconds at 100,000 memories),
        so it runs in a thread: pages show the last one, a stale one is recounted in the
        background, and a page asked for before the first one is done says so and reloads."""
        cached = self._census
        if cached is None:
            self.count_in_background()
            await asyncio.to_thread(self._first_count.wait, FIRST_COUNT_WAIT)
            cached = self._census
            if cached is None:
                return None
        elif time.monotonic() - cached[0] > max(CENSUS_SECONDS, COUNT_SHARE * self._count_seconds):
            self.count_in_background()
        return cached[1], time.monotonic() - cached[0]

    def count_in_background(self) -> None:
        if not self._counting.locked():
            threading.Thread(target=self.recount, name="inspector-census", daemon=True).start()

    def recount(self) -> None:
        if not self._counting.acquire(blocking=False):
            return  # a count is running: its result will do
        try:
            started = time.monotonic()
            fresh = self.mem.census(self.scope)
            if self.user is not None:
                fresh = restorable_only(fresh, self.user)
            catalog = Catalog(fresh)
            self._count_seconds = time.monotonic() - started
            self._census = (started, fresh)
            self.catalog = catalog
        finally:
            self._counting.release()
            self._first_count.set()

    async def changed(self) -> None:
        """A change went through: the counts and lists are recounted — at once where a count
        is quick (under ``QUICK_COUNT`` seconds), else in the background while pages show the
        last ones."""
        if self._count_seconds < QUICK_COUNT and self._census is not None:
            await asyncio.to_thread(self._counting.acquire)  # a background count may be on
            self._counting.release()
            await asyncio.to_thread(self.recount)
        elif self._census is not None:
            self._census = (time.monotonic() - 2 * CENSUS_SECONDS, self._census[1])

    async def form(self, request: Request, *, change: bool = True) -> FormData:
        """A POST's form, once its CSRF token checks out (and, for a change, the inspector is
        not read-only)."""
        form = await request.form()
        sent = str(form.get("csrf", "")) or request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(sent.encode(), self.csrf.encode()):
            raise Refused(403, "the form's CSRF token is missing or wrong; reload the page")
        if change and self.read_only:
            raise Refused(403, "this inspector is read-only (--read-only): nothing was changed")
        return form


def inspector_of(request: Request) -> Inspector:
    inspector: Inspector = request.app.state.inspector
    return inspector
