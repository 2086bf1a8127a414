"""The limits a server's tool list must keep (reference notes §7.7): a refusal names the tool and the limit.

At most 64 tools, no duplicate names, each offered tool's input schema an object of at most 50 KB (as JSON) nested
at most 20 deep, its description at most 8 KB, its function name at most 64 characters, and every
``allowedTools`` entry present on the server.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp_types import Tool as RemoteTool

from tiny_agent_core.mcp.names import function_name

__all__ = ["MAX_DESCRIPTION_BYTES", "MAX_SCHEMA_BYTES", "MAX_SCHEMA_DEPTH", "MAX_TOOLS", "check_tools"]

MAX_TOOLS = 64
"""The most tools one server may list."""
MAX_SCHEMA_BYTES = 50 * 1024
"""The largest input schema, as compact JSON."""
MAX_SCHEMA_DEPTH = 20
"""The deepest nesting of objects and arrays in an input schema."""
MAX_DESCRIPTION_BYTES = 8 * 1024
"""The longest tool description (UTF-8)."""


def check_tools(alias: str, listed: Sequence[RemoteTool], allowed: Sequence[str] | None) -> list[RemoteTool]:
    """The tools to offer from ``listed`` (those in ``allowed`` when given); a broken limit raises ``ValueError``."""
    if len(listed) > MAX_TOOLS:
        raise ValueError(f"it lists {len(listed)} tools; at most {MAX_TOOLS} are allowed")
    names = [tool.name for tool in listed]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"it lists duplicate tools: {', '.join(duplicates)}")
    if allowed is not None:
        missing = [name for name in allowed if name not in names]
        if missing:
            raise ValueError(f"allowedTools names tools it does not have: {', '.join(missing)}")
    offered = [tool for tool in listed if allowed is None or tool.name in allowed]
    for tool in offered:
        _check_tool(alias, tool)
    return offered


def _check_tool(alias: str, tool: RemoteTool) -> None:
    if not tool.name or function_name(alias, tool.name) is None:
        raise ValueError(f"the tool name {tool.name[:80]!r} is empty or too long for a function name")
    if len((tool.description or "").encode()) > MAX_DESCRIPTION_BYTES:
        raise ValueError(f"the description of {tool.name} is larger than {MAX_DESCRIPTION_BYTES} bytes")
    schema = tool.input_schema
    if schema.get("type", "object") != "object":
        raise ValueError(f"the input schema of {tool.name} is not an object schema")
    if len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode()) > MAX_SCHEMA_BYTES:
        raise ValueError(f"the input schema of {tool.name} is larger than {MAX_SCHEMA_BYTES} bytes")
    if _depth(schema, MAX_SCHEMA_DEPTH + 1) > MAX_SCHEMA_DEPTH:
        raise ValueError(f"the input schema of {tool.name} is nested deeper than {MAX_SCHEMA_DEPTH}")


def _depth(value: Any, stop: int) -> int:
    """The nesting depth of ``value`` (a scalar is 0), counted no further than ``stop``."""
    if stop <= 0 or not isinstance(value, dict | list):
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(item, stop - 1) for item in items), default=0)
