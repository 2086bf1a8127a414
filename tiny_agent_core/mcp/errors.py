"""The typed errors of MCP servers: a catalog that cannot be used, a server that cannot be connected."""

from __future__ import annotations

from typing import Literal

from tiny_agent_core.errors import SettingsError, TinyAgentError

__all__ = ["ConnectCause", "McpCatalogError", "McpConnectError", "McpError", "connect_advice"]

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


_ADVICE: dict[ConnectCause, str] = {
    "timeout": (
        "It did not finish starting within the connect timeout: run its command in a terminal to see whether it "
        "starts (a first npx or uvx run may be downloading), or check that the URL answers."
    ),
    "connection_failed": (
        "Check the command and its arguments (is the program installed and on PATH?) or the URL; the server's own "
        "message is above."
    ),
    "invalid_server": "Offer only some of its tools (allowedTools), or ask its maintainers to stay within the limits.",
    "configuration": "Set its token (Edit › Token, kept in the keyring) or the environment variable it names.",
}


def connect_advice(error: McpConnectError) -> str:
    """What to do next about ``error``, one sentence for a settings page or a banner."""
    return _ADVICE[error.cause]
