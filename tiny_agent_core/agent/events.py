"""Plain-Python events the agent emits while it works, for a view (the window, the CLI) to follow.

Events are immutable dataclasses delivered synchronously, in order, to an :data:`EventSink` callback. They are
published *after* the fact they describe is durable (a ``StepFinished`` follows the committed assistant entry),
except the streaming deltas, which describe bytes in flight. A sink must be quick and must not raise; the agent
isolates sink failures so a broken view never breaks a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tiny_agent_core.messages import AssistantMessage
from tiny_agent_core.usage import Usage


@dataclass(frozen=True)
class RunStarted:
    """A prompt was accepted and the run is durable."""

    session_id: str
    operation_id: str
    prompt: str


@dataclass(frozen=True)
class StepStarted:
    """A model request is about to be sent (``attempt`` 2 is a recovery retry)."""

    step_id: str
    attempt_id: str
    attempt: int
    model: str


@dataclass(frozen=True)
class TextDelta:
    """Assistant text as it streams in."""

    step_id: str
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a tool call as it streams in."""

    step_id: str
    index: int
    name: str | None
    arguments: str


@dataclass(frozen=True)
class StepFinished:
    """The model answered and the answer is durable."""

    step_id: str
    attempt_id: str
    message: AssistantMessage
    stop_reason: str
    usage: Usage | None
    """``None`` when the provider reported no usage (unknown)."""
    cost: Decimal | None
    """``None`` when the cost is unknown."""
    cost_source: str | None
    repairs: tuple[str, ...]
    dropped: tuple[str, ...]
    latency_ms: float | None
    ttft_ms: float | None
    outbound_repairs: tuple[str, ...] = ()
    """Outbound repairs applied to the request (its API kind's ``OUTBOUND_REPAIRS``), as ``repairs`` for the answer."""
    streamed: bool = True
    """The answer was streamed (else it came as one JSON body, so ``ttft_ms`` is the whole wait)."""
    context_window: int | None = None
    """The model's context window in tokens when known (profile setting or the server's word), else ``None``."""

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens per second of this answer (see :func:`tokens_per_second`); ``None`` when unknown."""
        output = self.usage.output if self.usage is not None else None
        return tokens_per_second(output, self.latency_ms, self.ttft_ms, streamed=self.streamed)


def tokens_per_second(
    output_tokens: int | None, latency_ms: float | None, ttft_ms: float | None, *, streamed: bool
) -> float | None:
    """Output tokens per second: over the generation time (first token to last) when streamed, else over the whole
    request; ``None`` when the token count or the time is unknown or zero."""
    seconds = generation_seconds(latency_ms, ttft_ms, streamed=streamed)
    return round(output_tokens / seconds, 1) if output_tokens and seconds else None


def generation_seconds(latency_ms: float | None, ttft_ms: float | None, *, streamed: bool) -> float | None:
    """The time :func:`tokens_per_second` divides by: first token to last when streamed, else the whole request;
    ``None`` when unknown or not above zero."""
    if latency_ms is None:
        return None
    seconds = latency_ms / 1000
    if streamed and ttft_ms is not None and latency_ms > ttft_ms:
        seconds = (latency_ms - ttft_ms) / 1000
    return seconds if seconds > 0 else None


@dataclass(frozen=True)
class DialectLearned:
    """The server refused a valid form of a request and accepted it repaired: the profile's dialect changed.

    ``changes`` maps the :class:`~tiny_agent_core.providers.openai_dialect.Dialect` field to its new value (e.g.
    ``{"stream_tools": False}``); the window can store it in the profile so the next session starts with it.
    """

    profile_id: str
    base_url: str
    changes: dict[str, bool]
    repairs: tuple[str, ...]
    """The outbound repairs the changes govern (``tools_not_streamed``, ``tool_call_content_empty_string``)."""


@dataclass(frozen=True)
class ToolsDropped:
    """Tools were offered, but the server seems to have left them out of the prompt: no call was made and the
    prompt had fewer tokens than the tool definitions alone need. The model cannot call tools through this server
    as configured (e.g. llama-cpp-python without ``tool_choice``, or a chat template without tool support)."""

    step_id: str
    prompt_tokens: int
    """What the server reported the prompt cost."""
    expected_at_least: int
    """A low estimate of the tokens the messages and tool definitions need."""
    message: str


@dataclass(frozen=True)
class ToolCallProposed:
    """The model asked for a tool call (before any approval or execution)."""

    step_id: str
    index: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ApprovalNeeded:
    """The approval policy asks the user before running a side-effecting call."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    preview: str


@dataclass(frozen=True)
class ToolStarted:
    """A tool call is durable as started and begins executing."""

    tool_started_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolOutput:
    """Output a running tool produced (``bash``'s stdout/stderr as it arrives); not yet the final result."""

    call_id: str
    name: str
    text: str


@dataclass(frozen=True)
class ToolFinished:
    """A tool call has a durable result: ``outcome`` is ``success``, ``error`` or a synthetic reason."""

    call_id: str
    name: str
    content: str
    outcome: str
    duration_ms: float | None


@dataclass(frozen=True)
class RunFinished:
    """The operation ended: ``outcome`` is ``completed``, ``aborted`` or ``failed``."""

    operation_id: str
    outcome: str
    answer: str | None = None
    error: str | None = None
    error_kind: str | None = None
    retry_after: float | None = None
    usage: Usage | None = None
    cost: Decimal | None = None
    details: dict[str, Any] = field(default_factory=dict)


AgentEvent = (
    RunStarted
    | StepStarted
    | TextDelta
    | ToolCallDelta
    | StepFinished
    | ToolCallProposed
    | ApprovalNeeded
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | RunFinished
    | DialectLearned
    | ToolsDropped
)
"""Everything a view may receive."""

EventSink = Callable[[AgentEvent], None]
"""Receives events in order; must not block."""
