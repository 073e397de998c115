"""Group commit: work handed in by concurrent callers is done together, in one call.

A LangGraph app's nodes put and search from many threads at once. Each put costs a Chroma write
(and a change-feed entry) under the store's lock; done one by one, the callers queue behind each
other. ``Group`` lets the first caller do everything that is waiting
(its own work and whatever other threads handed in meanwhile) in one call, while the others
wait; when that call ends, the next waiting caller takes whatever arrived during it. A caller
returns once its own work is done, and sees its own error only.

A caller still preparing its work (embedding it) says so (``coming``); a caller about to start a
call waits for it, up to ``linger`` seconds, so both go in one call. Each call costs a Chroma
write that holds the GIL for its whole length (fsync included), so fewer, larger calls let the
other threads run.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Group"]

T = TypeVar("T")


@dataclass
class _Ticket(Generic[T]):
    work: list[T]
    done: bool = False
    error: BaseException | None = field(default=None)


class Group(Generic[T]):
    """Runs ``apply`` on the work of every caller waiting at once (see the module docstring).

    ``apply`` receives the callers' work concatenated, in arrival order. If it raises, each
    caller's work is applied again on its own, so an error reaches only the caller it is about.
    """

    def __init__(self, apply: Callable[[list[T]], None], *, linger: float = 0.0) -> None:
        self._apply = apply
        self._linger = linger
        self._changed = threading.Condition()
        self._waiting: list[_Ticket[T]] = []
        self._busy = False
        self._coming = 0  # callers preparing work they will submit
        self._mine = threading.local()  # whether this thread is counted in ``_coming``

    @contextlib.contextmanager
    def coming(self) -> Iterator[None]:
        """Around a caller's preparation and submission: until it submits (or leaves), a call
        about to start waits for it, at most ``linger`` seconds."""
        with self._changed:
            counted = not getattr(self._mine, "coming", False)  # once per thread, if nested
            if counted:
                self._coming += 1
                self._mine.coming = True
        try:
            yield
        finally:
            if counted:
                with self._changed:
                    self._arrived()
                    self._changed.notify_all()

    def _arrived(self) -> None:
        """This thread's work is in (or it left): ``_coming`` counts the threads flagged."""
        if getattr(self._mine, "coming", False):
            self._mine.coming = False
            self._coming -= 1

    def submit(self, work: Sequence[T]) -> None:
        """Apply ``work`` (with whatever other callers submit meanwhile); raise its error."""
        if not work:
            return
        ticket: _Ticket[T] = _Ticket(list(work))
        with self._changed:
            self._waiting.append(ticket)
            self._arrived()
            self._changed.notify_all()  # a leader lingering for this caller may start
            while not ticket.done:
                if self._busy:
                    self._changed.wait()
                    continue
                self._busy = True
                deadline = time.monotonic() + self._linger
                while self._coming and (left := deadline - time.monotonic()) > 0:
                    self._changed.wait(left)  # callers arriving meanwhile queue behind
                taken, self._waiting = self._waiting, []
                self._changed.release()
                try:
                    self._run(taken)
                finally:
                    self._changed.acquire()
                    self._busy = False
                    self._changed.notify_all()
        if ticket.error is not None:
            raise ticket.error

    def _run(self, tickets: list[_Ticket[T]]) -> None:
        try:
            try:
                self._apply([item for ticket in tickets for item in ticket.work])
            except Exception as merged:
                if len(tickets) == 1:
                    tickets[0].error = merged
                else:
                    for ticket in tickets:
                        try:
                            self._apply(ticket.work)
                        except Exception as own:  # handed to the caller it belongs to
                            ticket.error = own
        except BaseException as fatal:  # an interrupt: every waiting caller hears of it
            for ticket in tickets:
                ticket.error = ticket.error or fatal
            raise
        finally:
            for ticket in tickets:
                ticket.done = True
