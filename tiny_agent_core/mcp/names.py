"""How an MCP tool is named: ``mcp__<base64url(alias)>__<base64url(tool)>`` for the model (at most 64 characters,
reference notes §7.7) and ``mcp:<alias>/<tool>`` for people."""

from __future__ import annotations

import base64

__all__ = ["MAX_FUNCTION_NAME", "display_name", "function_name"]

MAX_FUNCTION_NAME = 64
"""The longest function name a provider accepts."""


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def function_name(alias: str, tool: str) -> str | None:
    """The model-facing function name of ``tool`` on server ``alias``; ``None`` when it would exceed 64 characters."""
    name = f"mcp__{_b64(alias)}__{_b64(tool)}"
    return name if len(name) <= MAX_FUNCTION_NAME else None


def display_name(alias: str, tool: str) -> str:
    """``mcp:<alias>/<tool>``: how views, approval prompts and ``--allow`` name the tool."""
    return f"mcp:{alias}/{tool}"
