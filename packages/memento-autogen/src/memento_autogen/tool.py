"""``remember_tool``: a tool with which the agent remembers facts itself.

It is a component (``RememberTool``) whose config is its memory's config, so an agent built with
``tools=[remember_tool(memory)]`` survives ``dump_component`` / ``load_component``: the loaded
tool writes to a memory loaded from the same config (a ``FunctionTool`` would be dumped as
source code, which cannot carry the memory it closes over).
"""

from __future__ import annotations

from typing import Any

from autogen_core import CancellationToken, Component, ComponentModel
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.tools import BaseTool
from pydantic import BaseModel, Field
from typing_extensions import Self

from memento_autogen.memory import MementoMemory

__all__ = ["RememberArgs", "RememberTool", "RememberToolConfig", "remember_tool"]

DESCRIPTION = (
    "Remember a fact for later conversations: something the user told you about themselves, "
    "a preference, a decision or a rule worth keeping. Write one self-contained fact per call."
)


class RememberArgs(BaseModel):
    """What the model passes to the tool."""

    fact: str = Field(description="The fact, written so that it makes sense on its own later")
    importance: float = Field(
        0.5, description="How much it matters, from 0 (trivia) to 1 (essential)"
    )
    tags: list[str] | None = Field(None, description="Short labels such as 'pref:coffee'")


class RememberToolConfig(BaseModel):
    """The tool's name and description, and the config of the memory it writes to."""

    memory: ComponentModel
    name: str = "remember"
    description: str = DESCRIPTION


# ``BaseTool``'s result type is bounded by BaseModel, yet tools answer with text (AutoGen's
# own FunctionTool does): ``Any`` states that without a cast.
class RememberTool(BaseTool[RememberArgs, Any], Component[RememberToolConfig]):
    """Stores what the model passes as a semantic memory in ``memory`` (source ``tool``).

    Invalid arguments (an importance outside 0..1, say) raise, and AutoGen reports the error to
    the model.
    """

    component_config_schema = RememberToolConfig
    component_provider_override = "memento_autogen.RememberTool"

    def __init__(
        self, memory: MementoMemory, *, name: str = "remember", description: str = DESCRIPTION
    ) -> None:
        super().__init__(RememberArgs, str, name, description)
        self.memory = memory

    async def run(self, args: RememberArgs, cancellation_token: CancellationToken) -> str:
        await self.memory.add(
            MemoryContent(
                content=args.fact,
                mime_type=MemoryMimeType.TEXT,
                metadata={
                    "memory_type": "semantic",
                    "source": "tool",
                    "importance": args.importance,
                    "tags": args.tags or [],
                },
            ),
            cancellation_token,
        )
        return f"Remembered: {args.fact}"

    def _to_config(self) -> RememberToolConfig:
        return RememberToolConfig(
            memory=self.memory.dump_component(), name=self.name, description=self.description
        )

    @classmethod
    def _from_config(cls, config: RememberToolConfig) -> Self:
        memory = MementoMemory.load_component(config.memory)
        return cls(memory, name=config.name, description=config.description)


def remember_tool(
    memory: MementoMemory, *, name: str = "remember", description: str = DESCRIPTION
) -> RememberTool:
    """A tool that stores what the model passes as a semantic memory in ``memory``.

    Add it with ``AssistantAgent(tools=[remember_tool(memory)], memory=[memory])``. The agent
    dumps and loads with it (the loaded tool opens the memory from its config).
    """
    return RememberTool(memory, name=name, description=description)
