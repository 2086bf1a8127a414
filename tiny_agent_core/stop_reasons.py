"""``finish_reason`` → internal stop reason, cross-validated with the message (reference notes §3, SPEC §3).

The internal reasons are ``stop``, ``length`` and ``toolUse``. ``length`` wins whatever the calls; a tool-type
reason requires calls; a missing/empty/``stop`` reason becomes ``toolUse`` when there are calls. Aliases used by
other providers map onto the OpenAI names. ``content_filter`` and ``error`` are provider refusals/errors, not
stop reasons. Anything else is rejected (fail closed).
"""

from __future__ import annotations

from typing import Any, Literal

from tiny_agent_core.errors import ContentFilteredError, MalformedResponseError, ProviderReportedError
from tiny_agent_core.messages import AssistantMessage

StopReason = Literal["stop", "length", "toolUse"]
"""Why the model stopped: a final answer, the token limit, or to call tools."""

FINISH_REASON_ALIASES: dict[str, str] = {
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_length": "length",
    "tool_use": "tool_calls",
}
"""Provider-specific finish reasons with an unambiguous OpenAI meaning."""

_FAILURE_REASONS = {"error", "network_error"}


def stop_reason(finish_reason: Any, message: AssistantMessage) -> StopReason:
    """The internal stop reason for ``finish_reason`` given the canonical ``message``.

    Raises :class:`ContentFilteredError` for ``content_filter``, :class:`ProviderReportedError` for ``error``
    and ``network_error``, and :class:`MalformedResponseError` for a tool reason without calls or any value
    that is not a known reason.
    """
    has_calls = bool(message.tool_calls)
    if finish_reason is None or finish_reason == "":
        return "toolUse" if has_calls else "stop"
    if not isinstance(finish_reason, str):
        raise MalformedResponseError(f"Unknown provider finish_reason: {finish_reason!r}")
    reason = FINISH_REASON_ALIASES.get(finish_reason, finish_reason)
    if reason == "length":
        return "length"
    if reason in ("tool_calls", "function_call"):
        if not has_calls:
            raise MalformedResponseError(f"Provider finish_reason {finish_reason} requires tool calls")
        return "toolUse"
    if reason == "stop":
        return "toolUse" if has_calls else "stop"
    if reason == "content_filter":
        raise ContentFilteredError(
            "The provider's content filter stopped the response (finish_reason: content_filter)."
        )
    if reason in _FAILURE_REASONS:
        raise ProviderReportedError(f"Provider finish_reason: {finish_reason}")
    raise MalformedResponseError(f"Unknown provider finish_reason: {finish_reason}")
