"""This adapter's driver for the cross-adapter conformance suite (``memento_core.testing``).

Every step goes through AutoGen's ``Memory`` interface on a ``MementoMemory`` per user:
``add``, ``query`` (ids and scores from the results' metadata) and ``clear`` (AutoGen's only
way to forget); hotwords come from an ``AssistantAgent`` streaming a replayed reply through
``with_hotwords``. The driver is synchronous, so each call runs its own event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_core.memory import MemoryContent, MemoryMimeType

from memento_autogen.config import MementoMemoryConfig
from memento_autogen.hotwords import with_hotwords
from memento_autogen.memory import MementoMemory
from memento_core import Memento, Scope
from memento_core.hotwords import HotwordEvent
from memento_core.testing import Hit


class AutoGenDriver:
    name = "autogen"
    streams_hotwords = True

    def __init__(self, mem: Memento) -> None:
        self.mem = mem

    def _memory(self, user_id: str, k: int = 10) -> MementoMemory:
        return MementoMemory(MementoMemoryConfig(user_id=user_id, k=k), store=self.mem)

    def remember(self, text: str, *, user_id: str) -> str:
        content = MemoryContent(content=text, mime_type=MemoryMimeType.TEXT)
        asyncio.run(self._memory(user_id).add(content))
        # add() returns nothing: the id is found by the content in the user's scope.
        mine = self.mem.items(scope=Scope(user_id=user_id), include_deleted=False)
        return next(item.id for item in mine if item.content == text)

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        found = asyncio.run(self._memory(user_id, k=limit).query(query))
        # The conformance suite compares ranking scores; ``score`` is the relevance.
        return [
            Hit(r.metadata["id"], r.metadata["rank_score"]) for r in found.results if r.metadata
        ]

    def forget(self, memory_id: str, *, user_id: str) -> None:
        asyncio.run(self._memory(user_id).clear())

    def hotword_events(self, chunks: Sequence[str], *, connection_id: str) -> list[dict[str, Any]]:
        # autogen-ext (the replay model) is a test dependency, not one of this package's.
        from autogen_ext.models.replay import ReplayChatCompletionClient

        async def run() -> list[dict[str, Any]]:
            client = ReplayChatCompletionClient(["".join(chunks)])
            agent = AssistantAgent("assistant", model_client=client, model_client_stream=True)
            stream = with_hotwords(
                agent.run_stream(task="Tell me about your summer."),
                self.mem,
                connection_id=connection_id,
            )
            return [item.to_dict() async for item in stream if isinstance(item, HotwordEvent)]

        return asyncio.run(run())


def driver(mem: Memento) -> AutoGenDriver:
    return AutoGenDriver(mem)
