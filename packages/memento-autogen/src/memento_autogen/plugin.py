"""The ``memento`` entry point of memento-autogen (found by ``memento_core.plugins``)."""

from __future__ import annotations

from collections.abc import Callable

from memento_core.plugins import AdapterInfo, hookimpl


@hookimpl
def memento_register_adapters(register: Callable[[AdapterInfo], None]) -> None:
    register(
        AdapterInfo(
            name="autogen",
            framework="AutoGen",
            package="memento-autogen",
            description="MementoMemory (autogen_core Memory component), remember_tool, "
            "hotwords in run_stream",
            conformance_driver="memento_autogen.conformance:driver",
        )
    )
