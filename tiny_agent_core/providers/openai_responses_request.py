"""OpenAI Responses requests: the canonical transcript and tools → the request body and URL.

The Responses API request wire shapes live here (``POST <base_url>/responses``); the responses, the stream and the
adapter are in :mod:`~tiny_agent_core.providers.openai_responses`, the error mapping in
:mod:`~tiny_agent_core.providers.openai_responses_errors`.

Requests. The canonical transcript becomes ``input`` items: the system prompt is ``instructions`` (sent with every
request: the server never carries it over from a previous response); a user message is a ``message`` item with
``input_text``; an assistant message is a ``message`` item with ``output_text`` when it has text, followed by one
``function_call`` item (``call_id``, ``name``, ``arguments``) per tool call; a tool result is a
``function_call_output`` item (``call_id``, ``output``). Tools become ``{type: "function", name, description,
parameters}``; ``max_tokens`` (the loop's room for the answer) is sent as ``max_output_tokens``.

State. By default every request is stateless: ``store: false`` and the whole transcript as input, like Chat
Completions. A profile with ``server_state`` asks the server to keep each response (``store: true``); given a
:class:`~tiny_agent_core.providers.results.ConversationState` (the server holds the first ``covered`` messages of
the transcript, system prompt excluded, under ``response_id``), the request carries ``previous_response_id`` and
only the messages after ``covered``. The canonical transcript is still what the session file holds, and the
result's ``response_id`` is the id to chain from next. When the server no longer has that response
(:func:`~tiny_agent_core.providers.openai_responses_errors.state_lost`: ``previous_response_not_found``, HTTP
400/404/409), the request is sent once more with the whole transcript and no ``previous_response_id`` (the client
does this, through :attr:`~tiny_agent_core.providers.openai_responses.ResponsesAdapter.state_lost`), and the result
names the outbound repair ``server_state_lost``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tiny_agent_core.providers.profiles import ProviderProfile
    from tiny_agent_core.providers.results import ConversationState


def request_url(profile: ProviderProfile) -> str:
    """``<base_url>/responses``."""
    return f"{profile.base_url}/responses"


def _text_item(role: str, part: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _message_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The input items of one canonical (non-system) message."""
    role = message.get("role")
    if role == "user":
        return [_text_item("user", "input_text", message["content"])]
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}]
    if role == "assistant":
        items: list[dict[str, Any]] = []
        if message.get("content"):
            items.append(_text_item("assistant", "output_text", message["content"]))
        for call in message.get("tool_calls") or ():
            function = call["function"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
        return items
    if role == "system":  # a system message inside the transcript (not the leading prompt)
        return [_text_item("system", "input_text", message["content"])]
    raise ValueError(f"cannot send a message with role {role!r}")


def split_system(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[Mapping[str, Any]]]:
    """The leading system prompt (``None`` when there is none) and the canonical transcript after it."""
    if messages and messages[0].get("role") == "system":
        return messages[0]["content"], list(messages[1:])
    return None, list(messages)


def _tool_json(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool ``{type, function: {name, description, parameters}}`` in the Responses form."""
    function = tool.get("function")
    if not isinstance(function, Mapping):
        return dict(tool)
    out: dict[str, Any] = {"type": "function", "name": function["name"]}
    if function.get("description") is not None:
        out["description"] = function["description"]
    if function.get("parameters") is not None:
        out["parameters"] = function["parameters"]
    return out


_MAX_TOKEN_KEYS = ("max_tokens", "max_completion_tokens")


def build_request_body(
    profile: ProviderProfile,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    *,
    state: ConversationState | None = None,
) -> dict[str, Any]:
    """The JSON request (see the module docstring): stateless unless the profile keeps server state.

    ``messages`` are canonical JSON messages (the system prompt first, if any). ``state`` is used only when the
    profile has ``server_state`` and it covers at most the whole transcript; otherwise the whole transcript is
    sent. ``extra`` adds request parameters but never overrides the ones set here; ``max_tokens`` (or
    ``max_completion_tokens``) becomes ``max_output_tokens``.
    """
    body: dict[str, Any] = dict(extra or {})
    for key in _MAX_TOKEN_KEYS:
        if key in body:
            value = body.pop(key)
            body.setdefault("max_output_tokens", value)
    for key in ("input", "instructions", "tools", "stream", "stream_options", "previous_response_id", "messages"):
        body.pop(key, None)
    instructions, transcript = split_system(messages)
    keep = profile.server_state
    if keep and state is not None and 0 < state.covered <= len(transcript):
        body["previous_response_id"] = state.response_id
        transcript = transcript[state.covered :]
    body["model"] = model
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = [item for message in transcript for item in _message_items(message)]
    if tools:
        body["tools"] = [_tool_json(tool) for tool in tools]
    body["store"] = keep
    if profile.streaming:
        body["stream"] = True
    return body
