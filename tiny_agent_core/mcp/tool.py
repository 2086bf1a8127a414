"""An MCP server's tool as a :class:`~tiny_agent_core.tools.base.Tool`, so it goes through the approval policy and
the agent loop exactly as a built-in does (replay ``never``).

Each settled call is also reported as an :class:`McpCall` (server, tool, duration, the raw ``tools/call`` params
and the result as the server sent it) to the ``on_call`` callback, for an inspector.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcp_types import CallToolResult
from mcp_types import Tool as RemoteTool

from tiny_agent_core.mcp.connection import Connection, McpCallError
from tiny_agent_core.mcp.names import display_name, function_name
from tiny_agent_core.mcp.results import outcome_of, truncate
from tiny_agent_core.tools.base import ToolOutcome, check_cancel

__all__ = ["MAX_RAW_BYTES", "McpCall", "McpTool"]

_log = logging.getLogger(__name__)

MAX_RAW_BYTES = 256 * 1024
"""The most bytes of a raw request or response an :class:`McpCall` keeps."""


@dataclass(frozen=True, slots=True)
class McpCall:
    """One settled call, for an inspector."""

    alias: str
    tool: str
    """The tool's name on its server."""
    started_at_ms: int
    duration_ms: int
    request: str
    """The ``tools/call`` params as JSON: ``{"name", "arguments"}`` (cut to :data:`MAX_RAW_BYTES`)."""
    response: str
    """The result as the server sent it, as JSON (cut to :data:`MAX_RAW_BYTES`); empty when there is none."""
    error: str | None = None
    """Why there is no result (timed out, the server is gone, it refused), or ``None``."""
    request_bytes: int | None = None
    """The size of the whole request in UTF-8 bytes, before any cut (``None``: the size of :attr:`request`)."""
    response_bytes: int | None = None
    """The size of the whole response in UTF-8 bytes, before any cut (``None``: the size of :attr:`response`)."""

    @property
    def display_name(self) -> str:
        """``mcp:<alias>/<tool>``."""
        return display_name(self.alias, self.tool)


class McpTool:
    """The tool ``remote_name`` of a connected server, offered to the model as :attr:`name`."""

    replay: Literal["never"] = "never"

    def __init__(
        self, connection: Connection, remote: RemoteTool, on_call: Callable[[McpCall], None] | None = None
    ) -> None:
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
        self._on_call = on_call

    @property
    def alias(self) -> str:
        """The server's alias."""
        return self.connection.alias

    @property
    def secrets(self) -> list[str]:
        """The server's token and configured secret values (:attr:`Connection.secrets`): masked in what the agent
        persists or sends."""
        return self.connection.secrets

    @property
    def display_name(self) -> str:
        """``mcp:<alias>/<tool>``."""
        return display_name(self.alias, self.remote_name)

    async def execute(self, args: Mapping[str, Any], *, cancel: asyncio.Event | None = None) -> ToolOutcome:
        """Call the tool; an error of the call or the tool is an error outcome (see :mod:`.results`)."""
        check_cancel(cancel)
        if not isinstance(args, Mapping):
            return ToolOutcome.error("arguments must be an object")
        arguments = dict(args)
        started_at_ms, started = int(time.time() * 1000), time.monotonic()
        try:
            result = await self.connection.call(self.remote_name, arguments, cancel=cancel)
        except McpCallError as error:
            self._report(arguments, started_at_ms, started, None, str(error))
            return ToolOutcome.error(str(error))
        self._report(arguments, started_at_ms, started, result, None)
        check_cancel(cancel)
        return outcome_of(result)

    def _report(
        self,
        arguments: dict[str, Any],
        started_at_ms: int,
        started: float,
        result: CallToolResult | None,
        error: str | None,
    ) -> None:
        if self._on_call is None:
            return
        request = json.dumps({"name": self.remote_name, "arguments": arguments}, ensure_ascii=False, default=str)
        response = result.model_dump_json(by_alias=True, exclude_none=True) if result is not None else ""
        call = McpCall(
            self.alias,
            self.remote_name,
            started_at_ms,
            int((time.monotonic() - started) * 1000),
            truncate(request, MAX_RAW_BYTES),
            truncate(response, MAX_RAW_BYTES),
            error,
            request_bytes=len(request.encode()),
            response_bytes=len(response.encode()),
        )
        try:
            self._on_call(call)
        except Exception:  # a view's bug must not change the call's outcome
            _log.exception("the on_call callback of %s failed", call.display_name)
