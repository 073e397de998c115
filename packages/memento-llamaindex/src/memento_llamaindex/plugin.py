"""The adapter's plugin: registers the LlamaIndex adapter with Memento (entry point ``memento``)."""

from __future__ import annotations

from collections.abc import Callable

from memento_core.plugins import AdapterInfo, hookimpl


@hookimpl
def memento_register_adapters(register: Callable[[AdapterInfo], None]) -> None:
    register(
        AdapterInfo(
            name="llamaindex",
            framework="LlamaIndex",
            package="memento-llamaindex",
            description="A durable ChatMemoryBuffer-style memory with long-term recall, a block "
            "and a chat store for Memory, a retriever, and hotwords in LlamaIndex streams.",
            conformance_driver="memento_llamaindex.conformance:driver",
        )
    )
