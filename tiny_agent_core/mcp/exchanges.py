"""The raw MCP exchanges of a window's calls, for the inspector: bounded, masked copies keyed by the call id.

An :class:`~tiny_agent_core.mcp.tool.McpTool` reports each settled call (:class:`~tiny_agent_core.mcp.tool.McpCall`:
the ``tools/call`` params and the result as the server sent it) without knowing the session's call id. The agent
announces every call it executes (``ToolStarted``: call id and function name) just before it runs the tool, and
runs one tool at a time, so a reported call belongs to the last announced call when the function names agree
(:meth:`McpExchanges.started`, :meth:`McpExchanges.settled`); any other report is dropped.

The session file keeps the arguments and the result text the model saw; these copies add the raw exchange and
live only as long as the window. Each request and response is cut to :data:`MAX_EXCHANGE_BYTES` (50 KB, like a
result) and masked (:class:`~tiny_agent_core.redaction.Redactor`: the provider key, the servers' tokens, secret
environment values) before it is kept; at most :data:`MAX_EXCHANGES` are kept, the oldest go first.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from tiny_agent_core.mcp.names import function_name

if TYPE_CHECKING:
    from tiny_agent_core.mcp.tool import McpCall

__all__ = ["MAX_EXCHANGES", "MAX_EXCHANGE_BYTES", "McpExchange", "McpExchanges", "ServerKind"]

MAX_EXCHANGE_BYTES = 50 * 1024
"""The most bytes of a raw request or response kept (UTF-8)."""
MAX_EXCHANGES = 200
"""The most exchanges one window keeps."""

ServerKind = Literal["stdio", "http"]
"""How a server is reached: a local process on stdio, or Streamable HTTP."""


@dataclass(frozen=True, slots=True)
class McpExchange:
    """One call to an MCP server as the inspector shows it: the settled call (its request, response and error cut
    to :data:`MAX_EXCHANGE_BYTES` and masked) and how the server was reached."""

    call: McpCall
    kind: ServerKind

    @property
    def display_name(self) -> str:
        """``mcp:<alias>/<tool>``."""
        return self.call.display_name

    def request_value(self) -> Any:
        """The request as a JSON value, or ``None`` when it was cut (then only :attr:`request` is shown)."""
        return _value(self.call.request)

    def response_value(self) -> Any:
        """The response as a JSON value, or ``None`` when there is none or it was cut."""
        return _value(self.call.response)


def _value(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None


def _cut(text: str, whole: int | None) -> str:
    """``text`` cut to :data:`MAX_EXCHANGE_BYTES`, the marker naming the size of the whole message (``whole``
    bytes, when the call was already cut before it came here) and how much is kept."""
    data = text.encode()
    if len(data) <= MAX_EXCHANGE_BYTES:
        return text
    kept = data[:MAX_EXCHANGE_BYTES].decode(errors="ignore")
    size = max(len(data), whole or 0)
    return f"{kept}\n\n[cut: {size} bytes, the first {len(kept.encode())} kept]"


class McpExchanges:
    """The exchanges of one window, by call id (see the module docstring)."""

    def __init__(self, *, limit: int = MAX_EXCHANGES, redact: Callable[[str], str] = lambda text: text) -> None:
        self._limit = limit
        self.redact = redact
        """Masks secrets in a kept request or response (the window sets it when it learns its secrets)."""
        self._kept: OrderedDict[str, McpExchange] = OrderedDict()
        self._announced: tuple[str, str] | None = None

    def started(self, call_id: str, name: str) -> None:
        """The agent is about to execute the tool ``name`` (a function name) for the call ``call_id``."""
        self._announced = (call_id, name)

    def settled(self, call: McpCall, kind: ServerKind) -> None:
        """Keep ``call`` (of a server reached as ``kind``) for the call announced last, when it is that call."""
        announced, self._announced = self._announced, None
        if announced is None or announced[1] != function_name(call.alias, call.tool):
            return
        call_id = announced[0]
        self._kept.pop(call_id, None)
        kept = replace(
            call,
            request=_cut(self.redact(call.request), call.request_bytes),
            response=_cut(self.redact(call.response), call.response_bytes),
            error=self.redact(call.error) if call.error is not None else None,
        )
        self._kept[call_id] = McpExchange(kept, kind)
        while len(self._kept) > self._limit:
            self._kept.popitem(last=False)

    def get(self, call_id: str) -> McpExchange | None:
        """The exchange of the call ``call_id``, when this window made it and still keeps it."""
        return self._kept.get(call_id)

    def __len__(self) -> int:
        return len(self._kept)
