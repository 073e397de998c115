"""``remember_tool``: a ``FunctionTool`` with which the agent remembers facts itself."""

from __future__ import annotations

from typing import Annotated

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.tools import FunctionTool

from memento_autogen.memory import MementoMemory

DESCRIPTION = (
    "Remember a fact for later conversations: something the user told you about themselves, "
    "a preference, a decision or a rule worth keeping. Write one self-contained fact per call."
)


def remember_tool(
    memory: MementoMemory, *, name: str = "remember", description: str = DESCRIPTION
) -> FunctionTool:
    """A tool that stores what the model passes as a semantic memory in ``memory``.

    Add it with ``AssistantAgent(tools=[remember_tool(memory)], memory=[memory])``. Invalid
    arguments (an importance outside 0..1, say) raise, and AutoGen reports the error to the
    model. The tool wraps a closure, so unlike the memory it does not survive
    ``dump_component``: after loading an agent, build it again from the loaded memory.
    """

    async def remember(
        fact: Annotated[str, "The fact, written so that it makes sense on its own later"],
        importance: Annotated[float, "How much it matters, from 0 (trivia) to 1 (essential)"] = 0.5,
        tags: Annotated[list[str] | None, "Short labels such as 'pref:coffee'"] = None,
    ) -> str:
        await memory.add(
            MemoryContent(
                content=fact,
                mime_type=MemoryMimeType.TEXT,
                metadata={
                    "memory_type": "semantic",
                    "source": "tool",
                    "importance": importance,
                    "tags": tags or [],
                },
            )
        )
        return f"Remembered: {fact}"

    return FunctionTool(remember, description=description, name=name)
