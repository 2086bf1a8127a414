"""``--allow mcp:ALIAS`` and ``--allow mcp:ALIAS/TOOL``: which MCP tools a non-interactive run may call.

The approver of ``tiny-agent run`` allows calls by function name, so :func:`allowed_names` turns the specs into the
function names of the matching connected tools; a spec naming a server that is not connected, or a tool it does
not offer, is an error rather than a silent no-op.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiny_agent_core.mcp.tool import McpTool

__all__ = ["PREFIX", "McpAllow", "allowed_names", "is_mcp_spec", "parse_allow", "split_allow"]

PREFIX = "mcp:"
"""What starts an MCP ``--allow`` spec."""


@dataclass(frozen=True, slots=True)
class McpAllow:
    """Every tool of the server ``alias``, or only ``tool``."""

    alias: str
    tool: str | None = None

    def matches(self, tool: McpTool) -> bool:
        """Whether ``tool`` is covered."""
        return tool.alias == self.alias and self.tool in (None, tool.remote_name)


def is_mcp_spec(spec: str) -> bool:
    """Whether an ``--allow`` value names MCP tools rather than a built-in."""
    return spec.startswith(PREFIX)


def parse_allow(spec: str) -> McpAllow:
    """``mcp:ALIAS`` or ``mcp:ALIAS/TOOL``; ``ValueError`` says what is wrong."""
    if not is_mcp_spec(spec):
        raise ValueError(f"{spec!r} does not start with {PREFIX}")
    alias, slash, tool = spec.removeprefix(PREFIX).partition("/")
    if not alias or (slash and not tool):
        raise ValueError(f"{spec!r} must be mcp:ALIAS or mcp:ALIAS/TOOL")
    return McpAllow(alias, tool or None)


def split_allow(values: Sequence[str]) -> tuple[list[str], list[McpAllow]]:
    """``--allow`` values split into the other names (built-ins, in order) and the MCP specs (parsed)."""
    return [value for value in values if not is_mcp_spec(value)], [
        parse_allow(value) for value in values if is_mcp_spec(value)
    ]


def allowed_names(specs: Iterable[McpAllow], tools: Iterable[McpTool]) -> list[str]:
    """The function names of the ``tools`` the ``specs`` cover; ``ValueError`` for a spec that covers nothing."""
    tools = list(tools)
    names: list[str] = []
    for spec in specs:
        matched = [tool.name for tool in tools if spec.matches(tool)]
        if not matched:
            what = f"server {spec.alias}" if spec.tool is None else f"tool {spec.tool} of server {spec.alias}"
            raise ValueError(f"--allow mcp:{spec.alias}{'/' + spec.tool if spec.tool else ''}: no connected {what}")
        names.extend(name for name in matched if name not in names)
    return names
