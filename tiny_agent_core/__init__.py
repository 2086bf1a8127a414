"""tiny-agent desktop core: canonical transcript, provider adapter, sessions, ledger, agent loop. No Qt.

The names below are the core's public API; subpackages (``providers``, ``session``, ``ledger``, ``tools``,
``agent``) export their own detail.

Each name is imported on first use (PEP 562), so ``import tiny_agent_core`` — and every command or module that
needs only a corner of the core, such as ``tiny-agent session check`` — does not pay for the agent, httpx and
pydantic up front.
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tiny_agent_core.agent.events import AgentEvent, EventSink
    from tiny_agent_core.agent.loop import Agent, RequestRecord, RunResult
    from tiny_agent_core.cost_sums import CostSum
    from tiny_agent_core.errors import (
        ContentFilteredError,
        InvalidAssistantMessage,
        MalformedResponseError,
        ProviderError,
        ProviderHTTPError,
        ProviderReportedError,
        SessionCorruption,
        TinyAgentError,
        TranscriptError,
    )
    from tiny_agent_core.messages import AssistantMessage, FunctionCall, Message, ToolCall, ToolMessage, UserMessage
    from tiny_agent_core.pricing import Cost, price_request
    from tiny_agent_core.providers.client import ProviderClient
    from tiny_agent_core.providers.openai_chat import normalize_response_body, normalize_sse_text
    from tiny_agent_core.providers.profiles import ProviderProfile, profile_for_base_url
    from tiny_agent_core.providers.results import NormalizedResponse
    from tiny_agent_core.seam import normalize_assistant_message
    from tiny_agent_core.stop_reasons import StopReason, stop_reason
    from tiny_agent_core.transcript import Transcript
    from tiny_agent_core.usage import Usage
    from tiny_agent_core.workbench import OpenedSession, Workbench

__all__ = [
    "Agent",
    "AgentEvent",
    "AssistantMessage",
    "ContentFilteredError",
    "Cost",
    "CostSum",
    "EventSink",
    "FunctionCall",
    "InvalidAssistantMessage",
    "MalformedResponseError",
    "Message",
    "NormalizedResponse",
    "OpenedSession",
    "ProviderClient",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderProfile",
    "ProviderReportedError",
    "RequestRecord",
    "RunResult",
    "SessionCorruption",
    "StopReason",
    "TinyAgentError",
    "ToolCall",
    "ToolMessage",
    "Transcript",
    "TranscriptError",
    "Usage",
    "UserMessage",
    "Workbench",
    "normalize_assistant_message",
    "normalize_response_body",
    "normalize_sse_text",
    "price_request",
    "profile_for_base_url",
    "stop_reason",
]

_HOMES = {
    "tiny_agent_core.agent.events": ("AgentEvent", "EventSink"),
    "tiny_agent_core.agent.loop": ("Agent", "RequestRecord", "RunResult"),
    "tiny_agent_core.cost_sums": ("CostSum",),
    "tiny_agent_core.errors": (
        "ContentFilteredError",
        "InvalidAssistantMessage",
        "MalformedResponseError",
        "ProviderError",
        "ProviderHTTPError",
        "ProviderReportedError",
        "SessionCorruption",
        "TinyAgentError",
        "TranscriptError",
    ),
    "tiny_agent_core.messages": (
        "AssistantMessage",
        "FunctionCall",
        "Message",
        "ToolCall",
        "ToolMessage",
        "UserMessage",
    ),
    "tiny_agent_core.pricing": ("Cost", "price_request"),
    "tiny_agent_core.providers.client": ("ProviderClient",),
    "tiny_agent_core.providers.openai_chat": ("normalize_response_body", "normalize_sse_text"),
    "tiny_agent_core.providers.profiles": ("ProviderProfile", "profile_for_base_url"),
    "tiny_agent_core.providers.results": ("NormalizedResponse",),
    "tiny_agent_core.seam": ("normalize_assistant_message",),
    "tiny_agent_core.stop_reasons": ("StopReason", "stop_reason"),
    "tiny_agent_core.transcript": ("Transcript",),
    "tiny_agent_core.usage": ("Usage",),
    "tiny_agent_core.workbench": ("OpenedSession", "Workbench"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}
"""Where each public name lives."""


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, and keep it here."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(module)  # the builtin: ``importlib`` itself would cost a start-up more than this whole package
    value = getattr(_sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, every public name included before its first use."""
    return sorted({*globals(), *__all__})
