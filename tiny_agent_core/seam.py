"""The normalization seam: provider output becomes canonical only by validation and a whitelist rebuild.

:func:`normalize_assistant_message` performs the reference's checks in the reference's order, with its error
texts (reference notes §2), and rebuilds the message from ``role``/``content``/``tool_calls`` and each call from
``id``/``type``/``function.name``/``function.arguments``. Nothing else is ever copied: ``reasoning``,
``refusal``, ``annotations``, ``audio``, ``function_call``, a call's ``index`` and any vendor extra are dropped.
The seam does no repairs; dialect repairs happen in the provider adapter, before it, and are recorded there.

One check goes beyond the reference: a lone surrogate is rejected wherever it appears, including inside the
``arguments`` JSON text once decoded (``"\\ud800"`` in a key or a string value). A session file cannot hold one,
so such a call could never be recorded as started and would block its session on every recovery.
"""

from __future__ import annotations

import re
from typing import Any

from tiny_agent_core.errors import InvalidAssistantMessage
from tiny_agent_core.messages import AssistantMessage, FunctionCall, ToolCall
from tiny_agent_core.session.framing import ESCAPED_SURROGATE, has_surrogate, parse_js_json

_SURROGATE = re.compile("[\ud800-\udfff]")

ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls"})
"""The message keys the seam reads; every other key is dropped."""
TOOL_CALL_KEYS = frozenset({"id", "type", "function"})
"""The tool-call keys the seam reads."""
FUNCTION_KEYS = frozenset({"name", "arguments"})
"""The function keys the seam reads."""


def normalize_assistant_message(value: Any) -> AssistantMessage:
    """Validate a provider assistant message and rebuild it from the whitelist.

    Raises :class:`InvalidAssistantMessage` with the reference's message for the first failed check.
    """
    if not isinstance(value, dict):
        raise InvalidAssistantMessage("invalid assistant message")
    if value.get("role") != "assistant":
        raise InvalidAssistantMessage("invalid assistant message role")
    content = value.get("content")
    if "content" not in value or (content is not None and not isinstance(content, str)):
        raise InvalidAssistantMessage("invalid assistant content")
    if content is not None:
        content = _scalar_text(content, "invalid assistant content")
    raw_calls = value.get("tool_calls")
    if raw_calls is None:
        return AssistantMessage(content=content)
    if not isinstance(raw_calls, list) or not raw_calls:
        raise InvalidAssistantMessage("invalid assistant tool_calls")
    calls = tuple(_normalize_tool_call(call) for call in raw_calls)
    if len({call.id for call in calls}) != len(calls):
        raise InvalidAssistantMessage("invalid assistant tool_calls: duplicate tool call id")
    return AssistantMessage(content=content, tool_calls=calls)


def _normalize_tool_call(call: Any) -> ToolCall:
    if not isinstance(call, dict):
        raise InvalidAssistantMessage("invalid assistant tool call")
    call_id = call.get("id")
    function = call.get("function")
    if not isinstance(call_id, str) or not call_id or call.get("type") != "function" or not isinstance(function, dict):
        raise InvalidAssistantMessage("invalid assistant tool call")
    name = function.get("name")
    arguments = function.get("arguments")
    if not isinstance(name, str) or not name or not isinstance(arguments, str):
        raise InvalidAssistantMessage("invalid assistant tool call function")
    return ToolCall(
        id=_scalar_text(call_id, "invalid assistant tool call"),
        function=FunctionCall(
            name=_scalar_text(name, "invalid assistant tool call function"),
            arguments=_arguments_text(arguments),
        ),
    )


def _arguments_text(arguments: str) -> str:
    """The arguments text as scalar values, refused when its decoded JSON holds an escaped lone surrogate.

    Text that is not JSON passes: the planner answers it with an ``invalidArguments`` synthetic result.
    """
    text = _scalar_text(arguments, "invalid assistant tool call function")
    if ESCAPED_SURROGATE.search(text) is None:
        return text
    try:
        decoded = parse_js_json(text)
    except ValueError:
        return text
    if has_surrogate(decoded):
        raise InvalidAssistantMessage("invalid assistant tool call function: lone surrogate in arguments")
    return text


def _scalar_text(text: str, message: str) -> str:
    """``text`` as Unicode scalar values: escaped surrogate pairs (``\\ud83d\\ude00``, possibly split across stream
    chunks) are joined into their character; a lone surrogate cannot be stored or sent and is rejected."""
    if _SURROGATE.search(text) is None:
        return text
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise InvalidAssistantMessage(f"{message}: lone surrogate") from None
