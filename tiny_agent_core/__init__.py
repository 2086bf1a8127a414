"""tiny-agent desktop core: canonical transcript, provider adapter, sessions, ledger, agent loop. No Qt.

The names below are the core's public API; subpackages (``providers``, ``session``, ``ledger``, ``tools``,
``agent``) export their own detail.
"""

from tiny_agent_core.agent.events import AgentEvent, EventSink
from tiny_agent_core.agent.loop import Agent, RequestRecord, RunResult
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
from tiny_agent_core.providers.openai_chat import NormalizedResponse, normalize_response_body, normalize_sse_text
from tiny_agent_core.seam import normalize_assistant_message
from tiny_agent_core.stop_reasons import StopReason, stop_reason
from tiny_agent_core.transcript import Transcript
from tiny_agent_core.usage import Usage

__all__ = [
    "Agent",
    "AgentEvent",
    "AssistantMessage",
    "ContentFilteredError",
    "Cost",
    "EventSink",
    "FunctionCall",
    "InvalidAssistantMessage",
    "MalformedResponseError",
    "Message",
    "NormalizedResponse",
    "ProviderError",
    "ProviderHTTPError",
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
    "normalize_assistant_message",
    "normalize_response_body",
    "normalize_sse_text",
    "price_request",
    "stop_reason",
]
