"""Anthropic Messages API requests: the canonical transcript and tools → the request body, URL and headers.

The Messages API request wire shapes live here (``POST <base_url>/messages``, API version :data:`ANTHROPIC_VERSION`);
the responses, the stream and the adapter are in :mod:`~tiny_agent_core.providers.anthropic`, the error mapping in
:mod:`~tiny_agent_core.providers.anthropic_errors`.

Request (:func:`build_body`). The canonical transcript is Chat-Completions-shaped; the Messages API differs:

- ``system`` messages become the top-level ``system`` array of text blocks (empty ones are left out).
- A user message becomes a ``user`` message of one text block.
- An assistant message becomes text (when non-empty) then one ``tool_use`` block per call, ``input`` being the
  call's arguments parsed as a JSON object. Arguments that are not a JSON object (the model wrote invalid JSON; the
  agent answered with an invalid-arguments result) are sent as ``{"_invalid_arguments": <text>}``, so the model
  sees what it wrote.
- Consecutive ``tool`` messages are merged into one ``user`` message of ``tool_result`` blocks (``tool_use_id``,
  ``content`` string), as the API requires all results of a turn in the message right after it; a user message
  that directly follows tool results joins that same message, after the results.
- Tools ``{type: function, function: {name, description, parameters}}`` become ``{name, description,
  input_schema}``.
- ``max_tokens`` is required by the API: ``extra["max_tokens"]`` when given, else :data:`DEFAULT_MAX_TOKENS`.
  ``stream: true`` when the profile streams. Other ``extra`` keys (``temperature``, ``thinking``…) pass through,
  but never override the keys above.

Automatic prompt caching (the cache-breakpoint rule). ``cache_control: {"type": "ephemeral"}`` is put on:

1. the last block of ``system``,
2. the last tool,
3. the last block of the last ``user`` message, and
4. the last block of the ``user`` message before it,

skipping any that do not exist, so at most :data:`MAX_CACHE_BREAKPOINTS` (4, the API's limit). The API caches
the whole prefix up to a breakpoint (tools, then system, then messages). In an agent loop every request ends with
a ``user`` message (the prompt or the tool results): breakpoint 3 writes the prefix the *next* step will reuse,
and breakpoint 4 sits where the previous request put its breakpoint 3, so it reads what that request wrote. A
prefix shorter than the model's minimum cacheable length (1024–4096 tokens) is simply not cached by the API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tiny_agent_core.providers.results import parse_json

if TYPE_CHECKING:
    from tiny_agent_core.providers.profiles import ProviderProfile

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent with every request."""
DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` when the caller gives none (the API requires it): every current Claude model allows at least
this many output tokens."""
MAX_CACHE_BREAKPOINTS = 4
"""The most ``cache_control`` breakpoints one request may carry (the API's limit)."""
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
"""The breakpoint marker (5-minute cache)."""


def request_url(profile: ProviderProfile) -> str:
    """``<base_url>/messages``."""
    return f"{profile.base_url}/messages"


def request_headers(profile: ProviderProfile, api_key: str | None) -> dict[str, str]:
    """The profile's extra headers, ``anthropic-version``, and ``x-api-key`` when a key is given (checked as
    :func:`~tiny_agent_core.providers.profiles.check_api_key` does; the key never appears in errors). The client
    adds ``Content-Type`` and ``Accept``."""
    from tiny_agent_core.providers.profiles import check_api_key  # late: the registry imports this module

    out = dict(profile.extra_headers)
    out["anthropic-version"] = ANTHROPIC_VERSION
    if api_key:
        out["x-api-key"] = check_api_key(api_key)
    return out


def _as_mapping(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    value = message.as_dict()
    if not isinstance(value, Mapping):  # pragma: no cover - every canonical message gives a dict
        raise TypeError("a message's as_dict() must give a mapping")
    return value


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            value = parse_json(arguments) if arguments.strip() else {}
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        return {"_invalid_arguments": arguments}
    return {"_invalid_arguments": json.dumps(arguments)}


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks.append({"type": "text", "text": content})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _tool_input(function.get("arguments", "")),
            }
        )
    return blocks


def wire_messages(messages: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The canonical ``messages`` as the Messages API's ``(system blocks, messages)`` (see the module docstring).

    An assistant message with neither text nor calls has no blocks to send and is left out.
    """
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for item in messages:
        message = _as_mapping(item)
        role = message.get("role")
        if role == "system":
            text = message.get("content")
            if isinstance(text, str) and text:
                system.append({"type": "text", "text": text})
            continue
        if role == "assistant":
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
            continue
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": message["content"]}
        elif role == "user":
            block = {"type": "text", "text": message.get("content")}
        else:
            raise ValueError(f"a canonical message cannot have role {role!r}")
        previous = out[-1] if out else None
        joins = previous is not None and previous["role"] == "user" and previous["content"][-1]["type"] == "tool_result"
        if joins and previous is not None:
            previous["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return system, out


def wire_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat-Completions-shaped tool definitions as Messages API tools ``{name, description, input_schema}``."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function = tool.get("function", tool)
        item: dict[str, Any] = {"name": function["name"]}
        if function.get("description"):
            item["description"] = function["description"]
        item["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
        out.append(item)
    return out


def place_cache_breakpoints(body: dict[str, Any]) -> int:
    """Mark the cache breakpoints of the module docstring's rule in ``body`` (in place); return how many."""
    targets: list[dict[str, Any]] = []
    system = body.get("system")
    if isinstance(system, list) and system:
        targets.append(system[-1])
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        targets.append(tools[-1])
    user_turns = [message for message in body.get("messages", ()) if message.get("role") == "user"]
    targets.extend(turn["content"][-1] for turn in reversed(user_turns[-2:]))
    for target in targets[:MAX_CACHE_BREAKPOINTS]:
        target["cache_control"] = dict(CACHE_CONTROL)
    return min(len(targets), MAX_CACHE_BREAKPOINTS)


_CONTROLLED_KEYS = ("model", "messages", "system", "tools", "stream", "stream_options")


def build_body(
    profile: ProviderProfile,
    model: str,
    messages: Sequence[Any],
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    *,
    state: object | None = None,
) -> dict[str, Any]:
    """The Messages API request body for the canonical ``messages`` (see the module docstring).

    ``state`` (server-held conversation state) does not exist in this API and is ignored.
    """
    del state
    body: dict[str, Any] = dict(extra or {})
    for key in _CONTROLLED_KEYS:
        body.pop(key, None)
    body["model"] = model
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    system, wire = wire_messages(messages)
    if system:
        body["system"] = system
    body["messages"] = wire
    if tools:
        body["tools"] = wire_tools(tools)
    if profile.streaming:
        body["stream"] = True
    place_cache_breakpoints(body)
    return body
