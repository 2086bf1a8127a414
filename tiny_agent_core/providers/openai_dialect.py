"""Outbound repairs of Chat Completions requests: what one server needs of a request beyond the OpenAI API.

Outbound repairs (:data:`OUTBOUND_REPAIRS`) change what is *sent*, for servers that refuse or mishandle a valid
request; each one follows from the profile's :class:`Dialect` (set per profile, or learned from the server's answer
by :func:`dialect_fallback`) and is reported with the result (``outbound_repairs``):

- ``tool_choice_auto``: ``tool_choice: "auto"`` is sent with the tools (llama-cpp-python leaves the tools out of the
  prompt without it; ``"auto"`` is the API's default, so the meaning is unchanged).
- ``tools_not_streamed``: a request offering tools is sent without streaming (llama-cpp-python cannot stream an
  automatic tool choice: it answers 200 with an empty body); the same events are produced from the JSON body.
- ``tool_call_content_empty_string``: an assistant tool-call message's ``content: null`` is sent as ``""``
  (llama-cpp-python refuses ``null``: HTTP 500 "Input should be a valid string"); no text either way.

These repairs belong to the ``openai-chat`` API kind only; the other kinds send their requests as built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tiny_agent_core.errors import EmptyStreamError, ProviderError, ProviderHTTPError

OUTBOUND_REPAIRS = ("tool_choice_auto", "tools_not_streamed", "tool_call_content_empty_string")
"""Every outbound repair :func:`repair_request` may apply to a request, by name."""


@dataclass(frozen=True)
class Dialect:
    """What one server needs of a request beyond the OpenAI API (see the module docstring's outbound repairs)."""

    tool_choice_auto: bool = False
    """Send ``tool_choice: "auto"`` with the tools (``tool_choice_auto``)."""
    stream_tools: bool = True
    """A request offering tools may be streamed; when off, it is sent without streaming (``tools_not_streamed``)."""
    null_content: bool = True
    """The server accepts ``content: null`` in an assistant tool-call message; when off it is sent as ``""``
    (``tool_call_content_empty_string``)."""


DIALECT_REPAIRS = {
    "tool_choice_auto": "tool_choice_auto",
    "stream_tools": "tools_not_streamed",
    "null_content": "tool_call_content_empty_string",
}
"""The outbound repair each :class:`Dialect` field governs, by field name."""

LOCAL_DIALECT = Dialect(tool_choice_auto=True, null_content=False)
"""The dialect assumed for a local server (llama.cpp, llama-cpp-python, Ollama, LM Studio, vLLM): each repair is
also valid for OpenAI-compatible servers that do not need it."""


def repair_request(body: Mapping[str, Any], dialect: Dialect) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The request ``body`` as ``dialect`` needs it to be sent, and the names of the outbound repairs applied."""
    out = dict(body)
    names: list[str] = []
    if out.get("tools"):
        if dialect.tool_choice_auto and "tool_choice" not in out:
            out["tool_choice"] = "auto"
            names.append("tool_choice_auto")
        if not dialect.stream_tools and out.get("stream"):
            del out["stream"]
            out.pop("stream_options", None)
            names.append("tools_not_streamed")
    if not dialect.null_content:
        messages = [
            {**message, "content": ""} if _null_content_call(message) else message
            for message in out.get("messages", ())
        ]
        if messages != out.get("messages", []):
            out["messages"] = messages
            names.append("tool_call_content_empty_string")
    return out, tuple(names)


def _null_content_call(message: Any) -> bool:
    return (
        isinstance(message, Mapping)
        and message.get("role") == "assistant"
        and bool(message.get("tool_calls"))
        and message.get("content") is None
    )


_STREAMING_TOOLS_REFUSED = re.compile(r"streaming tool choice is not supported", re.IGNORECASE)
_NOT_A_STRING = re.compile(r"input should be a valid string", re.IGNORECASE)


def dialect_fallback(error: ProviderError, body: Mapping[str, Any], dialect: Dialect) -> Dialect | None:
    """The dialect to resend ``body`` with when ``error`` shows the server refused a valid form it used, else ``None``.

    - A streamed request offering tools that ended empty (:class:`~tiny_agent_core.errors.EmptyStreamError`) or was
      refused with "streaming tool choice is not supported": resend without streaming.
    - An HTTP 400/422/500 saying "Input should be a valid string" for a request with an assistant tool-call message
      whose ``content`` is ``null``: resend it as ``""``.

    Each fallback happens at most once per request (the returned dialect no longer uses the refused form).
    """
    refused_stream = isinstance(error, EmptyStreamError) or _STREAMING_TOOLS_REFUSED.search(_error_text(error))
    if refused_stream and dialect.stream_tools and body.get("stream") and body.get("tools"):
        return replace(dialect, stream_tools=False)
    if (
        dialect.null_content
        and isinstance(error, ProviderHTTPError)
        and error.status in (400, 422, 500)
        and _NOT_A_STRING.search(_error_text(error))
        and any(_null_content_call(message) for message in body.get("messages", ()))
    ):
        return replace(dialect, null_content=False)
    return None


def _error_text(error: ProviderError) -> str:
    return f"{error} {error.body}" if isinstance(error, ProviderHTTPError) else str(error)
