"""HTTP error responses → typed errors, with the provider's own explanation and the way out.

Reusable by every API kind: :func:`status_error` maps a status to its typed error and advice,
:func:`retry_after_header` / :func:`retry_after_body` read when to retry, :func:`is_context_overflow` and
:func:`context_length_error` recognise a context-window overflow
(:class:`~tiny_agent_core.errors.ContextLengthError`, kind ``context_length``) and say how to get out of it, and
:func:`error_message` finds the useful text in nested provider ``error`` objects. :func:`http_error` is the whole
mapping for OpenAI-style error bodies (Chat Completions and the many servers that copy it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from tiny_agent_core.errors import (
    AuthenticationError,
    ContextLengthError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderHTTPError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.results import parse_json


def error_message(error: Any) -> str:
    """The most useful human text inside a provider ``error`` value (handles nested and metadata forms)."""
    if isinstance(error, str):
        return error
    if not isinstance(error, dict):
        return json.dumps(error)[:500]
    inner = error.get("error")
    if isinstance(inner, dict | str) and not error.get("message"):
        return error_message(inner)
    message = error.get("message")
    text = message if isinstance(message, str) and message else json.dumps(error)[:500]
    metadata = error.get("metadata")
    if isinstance(metadata, dict):
        provider = metadata.get("provider_name")
        raw = metadata.get("raw")
        if isinstance(raw, str) and raw and raw not in text:
            text = f"{text} ({raw[:300]})"
        if isinstance(provider, str) and provider:
            text = f"{text} [upstream: {provider}]"
    return text


_RETRY_IN = re.compile(r"(?:try again|retry) in\s+(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)(ms|s))?", re.IGNORECASE)


def retry_after_header(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date, against the response's
    ``Date`` header when present), never negative; ``None`` when neither says."""
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    try:
        reference = parsedate_to_datetime(lowered["date"]) if "date" in lowered else datetime.now(UTC)
    except (TypeError, ValueError):
        reference = datetime.now(UTC)
    return max(0.0, (moment - reference).total_seconds())


def retry_after_body(payload: Any, text: str) -> float | None:
    """Seconds to wait from an error body: OpenRouter's ``error.availability.retry_after``, else a "try again in
    20s" / "7m54.3s" / "120ms" text; ``None`` when it says nothing."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        availability = error.get("availability")
        if isinstance(availability, dict):
            value = availability.get("retry_after")
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                return float(value)
    match = _RETRY_IN.search(text)
    if not match or not any(match.groups()):
        return None
    hours, minutes, amount, unit = match.groups()
    seconds = float(hours or 0) * 3600 + float(minutes or 0) * 60
    if amount:
        seconds += float(amount) / (1000 if unit == "ms" else 1)
    return seconds


_HTTP_CLASSES: dict[int, tuple[type[ProviderHTTPError], str]] = {
    401: (AuthenticationError, "Check the API key for this provider in Settings."),
    403: (
        AuthenticationError,
        "The key is not allowed to use this model or endpoint; check its permissions.",
    ),
    402: (PaymentRequiredError, "Add credits to your account with the provider, then retry."),
    404: (ModelNotFoundError, "Check the model name and the base URL of this provider profile."),
    408: (RateLimitError, "The provider timed out the request; retry."),
    429: (RateLimitError, "The provider is rate-limiting you; wait and retry."),
}


def status_error(status: int, detail: str, *, body: str, retry_after: float | None) -> ProviderHTTPError:
    """The typed error for HTTP ``status`` (401/403 authentication, 402 payment, 404 model, 408/429 rate limit,
    5xx server, else a plain :class:`~tiny_agent_core.errors.ProviderHTTPError`), its message ``HTTP <status>:
    <detail> — <what to do>``; a rate limit with ``retry_after`` says when to retry."""
    if status in _HTTP_CLASSES:
        cls, advice = _HTTP_CLASSES[status]
    elif status >= 500:
        cls, advice = ServerError, "The provider failed; retry later."
    else:
        cls, advice = ProviderHTTPError, "The provider rejected the request."
    if retry_after is not None and cls is RateLimitError:
        advice = f"Retry in {retry_after:g} s."
    return cls(f"HTTP {status}: {detail} — {advice}", status=status, body=body, retry_after=retry_after)


_CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|exceeds? (?:the )?(?:available )?context"
    r"|exceed_context_size|context window|prompt is too long|too many tokens in the prompt",
    re.IGNORECASE,
)
_CONTEXT_SIZE = re.compile(
    r"(?:maximum context length|context window|context size|context length)\D{0,24}?(\d{3,9})", re.IGNORECASE
)
CONTEXT_ADVICE = (
    "The conversation no longer fits the model's context window, so retrying fails the same way: compact the "
    "session (Compact, Ctrl+Shift+K in the window) or start a new session."
)
"""The way out a :class:`~tiny_agent_core.errors.ContextLengthError` message ends with."""


def context_length_in(payload: Any, detail: str) -> int | None:
    """The context window a context-overflow error names (llama.cpp ``error.n_ctx``, else a number in the text)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    n_ctx = error.get("n_ctx") if isinstance(error, dict) else None
    if type(n_ctx) is int and n_ctx > 0:
        return n_ctx
    match = _CONTEXT_SIZE.search(detail)
    return int(match.group(1)) if match else None


def is_context_overflow(status: int, detail: str) -> bool:
    """``detail`` (an HTTP ``status`` error's text) says the request does not fit the model's context window."""
    return status in (400, 413, 422, 500) and _CONTEXT_OVERFLOW.search(detail) is not None


def context_length_error(
    message: str, *, status: int, body: str = "", context_length: int | None = None
) -> ContextLengthError:
    """A :class:`~tiny_agent_core.errors.ContextLengthError` whose message ends with the way out."""
    size = f" ({context_length:,} tokens)" if context_length else ""
    advice = CONTEXT_ADVICE.replace("context window", f"context window{size}", 1)
    return ContextLengthError(f"{message} — {advice}", status=status, body=body, context_length=context_length)


def http_error(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> ProviderHTTPError:
    """The typed error for an HTTP error response (status ≥ 400), with the provider's own explanation.

    ``retry_after`` comes from ``Retry-After``/``retry-after-ms`` headers, else from retry hints in the body
    (OpenRouter ``error.availability.retry_after``, "try again in 20s" / "7m54.3s" / "120ms" texts). A
    context-window overflow (400/413/422/500 saying "maximum context length", "exceeds the available context
    size", "context window"…) is a :class:`~tiny_agent_core.errors.ContextLengthError` with the way out.
    """
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        payload: Any = parse_json(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("error") is not None:
        detail = error_message(payload["error"])
    elif isinstance(payload, dict) and isinstance(payload.get("message") or payload.get("detail"), str):
        detail = payload.get("message") or payload["detail"]
    else:
        detail = text.strip()[:500] or "(empty body)"
    if is_context_overflow(status, detail):
        return context_length_error(
            f"HTTP {status}: {detail}", status=status, body=text, context_length=context_length_in(payload, detail)
        )
    retry_after = retry_after_header(headers or {})
    if retry_after is None:
        retry_after = retry_after_body(payload, detail)
    return status_error(status, detail, body=text, retry_after=retry_after)
