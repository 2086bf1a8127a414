"""An MCP server's tool as a :class:`~tiny_agent_core.tools.base.Tool`, so it goes through the approval policy and
the agent loop exactly as a built-in does (replay ``never``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

from mcp_types import Tool as RemoteTool

from tiny_agent_core.mcp.connection import Connection, McpCallError
from tiny_agent_core.mcp.names import display_name, function_name
from tiny_agent_core.mcp.results import outcome_of
from tiny_agent_core.tools.base import ToolOutcome, check_cancel

__all__ = ["McpTool"]


class McpTool:
    """The tool ``remote_name`` of a connected server, offered to the model as :attr:`name`."""

    replay: Literal["never"] = "never"

    def __init__(self, connection: Connection, remote: RemoteTool) -> None:
        name = function_name(connection.alias, remote.name)
        if name is None:  # limits.check_tools refuses such a tool first
            raise ValueError(f"the tool name {remote.name!r} is too long")
        self.connection = connection
        self.remote_name = remote.name
        """The tool's name on its server."""
        self.name = name
        self.description = remote.description or f"The tool {remote.name} of the MCP server {connection.alias}."
        self.parameters: Mapping[str, Any] = {"type": "object", **remote.input_schema}
        self.replay_key = f"mcp:{connection.identity}:{remote.name}"
        """Changes with the server's transport, address, auth kind or protocol version (notes §7.7)."""

    @property
    def alias(self) -> str:
        """The server's alias."""
        return self.connection.alias

    @property
    def display_name(self) -> str:
        """``mcp:<alias>/<tool>``."""
        return display_name(self.alias, self.remote_name)

    async def execute(self, args: Mapping[str, Any], *, cancel: asyncio.Event | None = None) -> ToolOutcome:
        """Call the tool; an error of the call or the tool is an error outcome (see :mod:`.results`)."""
        check_cancel(cancel)
        if not isinstance(args, Mapping):
            return ToolOutcome.error("arguments must be an object")
        try:
            result = await self.connection.call(self.remote_name, dict(args), cancel=cancel)
        except McpCallError as error:
            return ToolOutcome.error(str(error))
        check_cancel(cancel)
        return outcome_of(result)
