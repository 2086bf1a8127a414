"""What a ``tools/call`` result becomes for the model (reference notes §7.7).

Text content and text resources are joined by blank lines and ``structuredContent`` is appended as JSON; any
other content type (an image, audio, a binary resource, a link) makes the call an error
(``Unsupported MCP content type: <type>``). ``isError`` makes it an error outcome (``MCP tool error: …``). The
text is cut to 50 KB (UTF-8) with a marker saying how much there was.
"""

from __future__ import annotations

import json

from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

from tiny_agent_core.tools.base import MAX_TOOL_OUTPUT, ToolOutcome

__all__ = ["MAX_RESULT_BYTES", "outcome_of", "truncate"]

MAX_RESULT_BYTES = MAX_TOOL_OUTPUT
"""The most bytes of one MCP result the model sees (50 KB)."""


def outcome_of(result: CallToolResult) -> ToolOutcome:
    """The tool outcome of a settled call."""
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, TextContent):
            parts.append(item.text)
        elif isinstance(item, EmbeddedResource) and isinstance(item.resource, TextResourceContents):
            parts.append(item.resource.text)
        else:
            return ToolOutcome.error(f"Unsupported MCP content type: {item.type}")
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n\n".join(parts)
    if result.is_error:
        return ToolOutcome.error(truncate(f"MCP tool error: {text}"))
    return ToolOutcome(truncate(text))


def truncate(text: str, limit: int = MAX_RESULT_BYTES) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes (at a character boundary) with a marker, or unchanged."""
    data = text.encode()
    if len(data) <= limit:
        return text
    kept = data[:limit].decode(errors="ignore")
    return f"{kept}\n\n[MCP result truncated: {len(data)} bytes, the first {len(kept.encode())} shown]"
