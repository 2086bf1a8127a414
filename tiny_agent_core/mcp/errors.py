"""The typed errors of MCP servers: a catalog that cannot be used, a server that cannot be connected."""

from __future__ import annotations

from typing import Literal

from tiny_agent_core.errors import SettingsError, TinyAgentError

__all__ = ["ConnectCause", "McpCatalogError", "McpConnectError", "McpError"]

ConnectCause = Literal["timeout", "connection_failed", "invalid_server", "configuration"]
"""Why connecting failed: no answer within the connect timeout, the server could not be started or reached (or
hung up), it offered tools beyond the limits, or its configuration cannot be used (e.g. its token is not set)."""


class McpError(TinyAgentError):
    """Base of the MCP errors."""


class McpCatalogError(McpError, SettingsError):
    """The MCP catalog file is unreadable, not JSON, or not a catalog; the message names the offending place."""


class McpConnectError(McpError):
    """A server could not be connected; ``alias`` names it and ``cause`` says why (:data:`ConnectCause`)."""

    def __init__(self, alias: str, cause: ConnectCause, message: str) -> None:
        super().__init__(f"MCP server {alias}: {message}")
        self.alias = alias
        self.cause: ConnectCause = cause
        self.detail = message
        """The sentence without the server's name."""
