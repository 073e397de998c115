"""``build_server``: a Memento store as an MCP server (tools, resources and a prompt) for one user.

The user comes from the server's configuration (``scope``), never from a request: see
``memento_mcp.scoped``. Errors a client caused come back as MCP errors that say what was wrong:
a tool call answers with ``isError`` and the message; a resource read or a prompt answers with a
JSON-RPC error (``-32602``, invalid params). Anything else is a crash and says only that.
"""

from collections.abc import Iterable
from typing import Any, Literal

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult
from pydantic import AnyUrl, ValidationError

from memento_core import Memento, MementoError, MemoryNotFound, Scope
from memento_mcp.prompts import register_prompts
from memento_mcp.resources import register_resources
from memento_mcp.scoped import ScopedMemento
from memento_mcp.tools import register_tools

SERVER_NAME = "memento"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

INSTRUCTIONS = """\
Memento is long-term memory for the user {user}. Use `recall` before answering anything that
may depend on what the user said, decided or prefers; use `remember` for facts, preferences,
decisions and events worth keeping (one idea per memory, written so it stands on its own).
Every result has an id; `memory://<id>` reads one memory, and
`memory://search?query=<text>` searches like `recall`."""


class MementoMCPServer(MCPServer[Any]):
    """``MCPServer`` that refuses unknown tool arguments and reports Memento's errors clearly.

    The SDK ignores arguments a tool does not declare (a misspelt ``hard`` would turn a hard
    forget into a soft one) and hides every unexpected exception behind "Error executing tool".
    Here an unknown argument is an error, and a ``MementoError`` — always the caller's mistake
    or an unknown id — is passed on with its message.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        await self._check_arguments(name, arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as err:
            if isinstance(err.__cause__, MementoError):
                raise ToolError(f"Error executing tool {name}: {err.__cause__}") from err.__cause__
            raise

    async def read_resource(
        self, uri: AnyUrl | str, context: Context | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        try:
            return await super().read_resource(uri, context)
        except UnexpectedResourceError as err:
            cause = err.__cause__
            if isinstance(cause, MemoryNotFound):
                raise ResourceNotFoundError(str(cause)) from cause
            if isinstance(cause, MementoError):
                raise MCPError(INVALID_PARAMS, str(cause), {"uri": str(uri)}) from cause
            raise

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as err:
            # The SDK wraps every failure as a ValueError ("Error rendering prompt <name>",
            # "Missing required arguments: …"); the innermost cause says what was wrong.
            cause = _root_cause(err)
            if isinstance(cause, (MementoError, ValidationError)) or type(cause) is ValueError:
                raise MCPError(INVALID_PARAMS, f"prompt {name}: {cause}") from cause
            raise

    async def _check_arguments(self, name: str, arguments: dict[str, Any]) -> None:
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        if tool is None:
            return  # the SDK answers "Unknown tool"
        known = tool.input_schema.get("properties", {})
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            raise ToolError(
                f"Error executing tool {name}: unknown argument(s) "
                f"{', '.join(map(repr, unknown))}; it takes {', '.join(known) or 'none'}"
            )


def _root_cause(err: BaseException) -> BaseException:
    while err.__cause__ is not None:
        err = err.__cause__
    return err


def build_server(
    mem: Memento,
    scope: Scope,
    *,
    name: str = SERVER_NAME,
    log_level: LogLevel = "WARNING",
) -> MCPServer[Any]:
    """An MCP server over ``mem`` acting for ``scope`` (a user, optionally an agent and project).

    Every read is limited to what ``scope`` may see and every write lands in ``scope``; no tool
    or resource argument can widen it. Run it with ``.run("stdio")`` or serve
    ``.streamable_http_app()`` (see ``memento_mcp.cli``).
    """
    from memento_mcp import __version__

    scoped = ScopedMemento(mem, scope)
    server = MementoMCPServer(
        name,
        title="Memento",
        description="Long-term memory for AI agents: remember, recall, forget.",
        instructions=INSTRUCTIONS.format(user=scoped.user_id),
        version=__version__,
        log_level=log_level,
    )
    register_tools(server, scoped)
    register_resources(server, scoped)
    register_prompts(server, scoped)
    return server
