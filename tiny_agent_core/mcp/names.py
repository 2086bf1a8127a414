"""How an MCP tool is named: ``mcp__<base64url(alias)>__<base64url(tool)>`` for the model (at most 64 characters,
reference notes §7.7) and ``mcp:<alias>/<tool>`` for people.

:func:`parse_function_name` reads a function name back, so a view can show a stored call (a session's
``toolStarted`` record) as ``mcp:<alias>/<tool>`` without the server being connected.
"""

from __future__ import annotations

import base64
import binascii

__all__ = ["MAX_FUNCTION_NAME", "display_name", "function_name", "parse_function_name", "shown_name"]

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


def parse_function_name(name: str) -> tuple[str, str] | None:
    """``(alias, tool)`` of an MCP function name (the one :func:`function_name` makes), else ``None``."""
    if not name.startswith("mcp__") or len(name) > MAX_FUNCTION_NAME:
        return None
    body = name[5:]
    index = body.find("__")
    while index >= 0:  # base64url may itself contain "_": try each split until one reads back exactly
        alias, tool = _decode(body[:index]), _decode(body[index + 2 :])
        if alias and tool and function_name(alias, tool) == name:
            return alias, tool
        index = body.find("__", index + 1)
    return None


def shown_name(name: str) -> str:
    """How a view shows the tool ``name``: ``mcp:<alias>/<tool>`` for an MCP function name, else ``name``."""
    parsed = parse_function_name(name)
    return display_name(*parsed) if parsed is not None else name


def _decode(part: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
