"""Async twins of sync methods: same name with an ``a``, same signature and docstring."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def async_twin(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Awaitable[R]]:
    """The async twin of a sync method. It runs the method in a worker thread, so the event
    loop never blocks on the store or the embedding model."""

    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    functools.update_wrapper(twin, method)
    twin.__name__ = f"a{method.__name__}"
    twin.__qualname__ = method.__qualname__.rsplit(".", 1)[0] + "." + twin.__name__
    return twin


__all__ = ["async_twin"]
