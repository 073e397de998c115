"""The ``memento`` entry point of memento-langgraph (found by ``memento_core.plugins``)."""

from __future__ import annotations

from collections.abc import Callable

from memento_core.plugins import AdapterInfo, hookimpl


@hookimpl
def memento_register_adapters(register: Callable[[AdapterInfo], None]) -> None:
    register(
        AdapterInfo(
            name="langgraph",
            framework="LangGraph",
            package="memento-langgraph",
            description="MementoStore (BaseStore), MementoSaver (checkpointer), recall and "
            "remember nodes, hotword events on the custom stream",
            conformance_driver="memento_langgraph.conformance:driver",
        )
    )
