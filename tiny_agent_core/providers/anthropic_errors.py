"""Anthropic Messages API errors: HTTP error bodies and ``error`` events → the typed errors of
:mod:`tiny_agent_core.errors`, with Anthropic's own explanation and the way out.

Errors (:func:`http_error`): the ``{"type": "error", "error": {"type", "message"}}`` body maps by status and
``error.type`` to the typed errors of :mod:`tiny_agent_core.errors`: 529 ``overloaded_error`` → ``ServerError``
(retry), 429 ``rate_limit_error`` → ``RateLimitError`` with ``retry_after`` from ``retry-after``, "prompt is too
long" → ``ContextLengthError``, 401/403 → ``AuthenticationError``, 404 → ``ModelNotFoundError``. An ``error``
event mid-stream is typed the same way, with the status its ``error.type`` stands for (:func:`stream_error`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tiny_agent_core.errors import (
    AuthenticationError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.http_errors import context_length_error, is_context_overflow, retry_after_header
from tiny_agent_core.providers.results import parse_json
from tiny_agent_core.usage import Usage

_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each documented ``error.type`` stands for (used for errors that arrive inside a stream)."""

_ADVICE: dict[int, tuple[type[ProviderHTTPError], str]] = {
    401: (AuthenticationError, "Check the Anthropic API key for this profile in Settings."),
    403: (AuthenticationError, "The key is not allowed to use this model or feature; check its permissions."),
    402: (PaymentRequiredError, "Add credits to your Anthropic account (Plans & Billing), then retry."),
    404: (ModelNotFoundError, "Check the model name and the base URL of this provider profile."),
    413: (
        ProviderHTTPError,
        "The request is larger than the API accepts (32 MB): compact the session or start a new one.",
    ),
    429: (RateLimitError, "Anthropic is rate-limiting this key; wait and retry."),
    529: (ServerError, "Anthropic's API is temporarily overloaded; retry in a moment."),
}
"""Anthropic's statuses, typed as :func:`~tiny_agent_core.providers.http_errors.status_error` types them, with
Anthropic's own ways out (and 529, which only Anthropic sends)."""

_MAXIMUM = re.compile(r">\s*(\d{3,9})\s*maximum", re.IGNORECASE)
"""The window in Anthropic's overflow text: ``prompt is too long: 191989 tokens > 180000 maximum``."""


def _error_parts(payload: Any, text: str) -> tuple[str | None, str]:
    """``(error.type, message)`` of an error body (any shape; the text itself when it is not the API's)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        kind = error.get("type")
        message = error.get("message")
        return (kind if isinstance(kind, str) else None), (
            message if isinstance(message, str) and message else json.dumps(error)[:500]
        )
    if isinstance(error, str) and error:
        return None, error
    return None, text.strip()[:500] or "(empty body)"


def _typed(status: int, label: str, detail: str, *, body: str, retry_after: float | None) -> ProviderHTTPError:
    if is_context_overflow(status, detail):
        match = _MAXIMUM.search(detail)
        window = int(match.group(1)) if match else None
        return context_length_error(f"{label}: {detail}", status=status, body=body, context_length=window)
    if status in _ADVICE:
        cls, advice = _ADVICE[status]
    elif status >= 500:
        cls, advice = ServerError, "Anthropic's API failed; retry later."
    else:
        cls, advice = ProviderHTTPError, "Anthropic rejected the request."
    if retry_after is not None and cls in (RateLimitError, ServerError):
        advice = f"{advice} Retry in {retry_after:g} s."
    return cls(f"{label}: {detail} — {advice}", status=status, body=body, retry_after=retry_after)


def http_error(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> ProviderHTTPError:
    """The typed error for an HTTP error response (status ≥ 400), with Anthropic's own explanation.

    ``retry_after`` comes from the ``retry-after`` header (:func:`~.http_errors.retry_after_header`). See the module
    docstring for the mapping.
    """
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        payload: Any = parse_json(text)
    except ValueError:
        payload = None
    kind, detail = _error_parts(payload, text)
    retry_after = retry_after_header(headers or {})
    label = f"HTTP {status}" + (f" {kind}" if kind else "")
    return _typed(status, label, detail, body=text, retry_after=retry_after)


def stream_error(payload: Any, *, usage: Usage | None = None) -> ProviderError:
    """The typed error for an ``error`` event (or a 2xx body of type ``error``): a documented ``error.type``
    becomes the HTTP error class of its status (an ``overloaded_error`` is a retryable ``ServerError``), anything
    else a :class:`~tiny_agent_core.errors.ProviderReportedError`."""
    text = payload if isinstance(payload, str) else ""
    kind, detail = _error_parts(payload, text)
    status = _ERROR_STATUS.get(kind or "")
    if status is None:
        return ProviderReportedError(f"The provider reported an error mid-stream: {detail}", usage=usage)
    body = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    error = _typed(status, f"Mid-stream {kind}", detail, body=body, retry_after=None)
    error.usage = usage
    return error
