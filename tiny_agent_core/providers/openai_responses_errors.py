"""OpenAI Responses errors: HTTP error bodies, errors reported inside a 2xx body or stream, and lost server state.

A Responses ``error`` object is ``{code, message, type?, param?}``. :func:`http_error` types an HTTP error response
with the shared mapping of :mod:`~tiny_agent_core.providers.http_errors` plus the codes that say more than the status;
:func:`reported_error` types an ``error`` that arrives inside a 2xx body (a ``failed`` response) or a stream (an
``error`` event, ``response.failed``) as the same class its HTTP form would have; :func:`state_lost` recognises the
answer of a server that no longer holds the response a request chained from (``previous_response_not_found``), which
the client answers by resending the whole transcript once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tiny_agent_core.errors import PaymentRequiredError, ProviderError, ProviderHTTPError, ProviderReportedError
from tiny_agent_core.providers import http_errors
from tiny_agent_core.providers.results import parse_json
from tiny_agent_core.usage import Usage

_STATE_LOST_CODE = "previous_response_not_found"
_STATE_LOST_TEXT = re.compile(r"previous response with id .{0,200}? not found", re.IGNORECASE)


def _error_fields(error: Any) -> tuple[str, str]:
    """``(code, message)`` of a Responses ``error`` object (``{code, message, type?, param?}``)."""
    if isinstance(error, str):
        return "", error
    if not isinstance(error, dict):
        return "", json.dumps(error)[:500]
    code = next((value for value in (error.get("code"), error.get("type")) if isinstance(value, str) and value), "")
    message = error.get("message")
    return code, message if isinstance(message, str) and message else json.dumps(error)[:500]


_FAILURE_STATUS = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "context_length_exceeded": 400,
    "server_error": 500,
    "vector_store_timeout": 500,
}
"""The HTTP status the same failure has when it comes before the stream (so the same typed error)."""


_QUOTA_ADVICE = "Add credits or raise the quota with the provider, then retry."


def reported_error(error: Any, *, what: str, usage: Usage | None = None) -> ProviderError:
    """The typed error for a Responses ``error`` object reported inside a 2xx body or stream (``what`` says where).

    Rate limits, quota, context overflow and server errors become the same classes as their HTTP forms (with the
    status they have there); anything else is a :class:`~tiny_agent_core.errors.ProviderReportedError`. The code is
    kept in the message.
    """
    code, message = _error_fields(error)
    detail = f"{what}{f' ({code})' if code else ''}: {message}"
    status = _FAILURE_STATUS.get(code)
    out: ProviderError
    if code == "insufficient_quota":
        out = PaymentRequiredError(f"{detail} — {_QUOTA_ADVICE}", status=429)
    elif code == "context_length_exceeded":
        out = http_errors.context_length_error(detail, status=400)
    elif status is not None:
        retry_after = http_errors.retry_after_body(None, message)
        out = http_errors.status_error(status, detail, body="", retry_after=retry_after)
        out.args = (str(out).removeprefix(f"HTTP {status}: "),)
    else:
        out = ProviderReportedError(detail)
    out.usage = usage
    return out


def http_error(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> ProviderHTTPError:
    """The typed error for an HTTP error response of the Responses API (``{"error": {message, type, param,
    code}}``): the shared mapping (:func:`~tiny_agent_core.providers.http_errors.http_error`: authentication, 404
    model, 429 with ``retry-after``, context overflow, 5xx), plus the codes that say more than the status:
    ``insufficient_quota`` (HTTP 429) is a :class:`~tiny_agent_core.errors.PaymentRequiredError` (waiting does not
    help) and ``context_length_exceeded`` a :class:`~tiny_agent_core.errors.ContextLengthError` whatever the text."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    error = http_errors.http_error(status, text, headers)
    code = _body_code(text)
    detail = str(error).split(" — ", 1)[0]
    if code == "insufficient_quota":
        return PaymentRequiredError(f"{detail} — {_QUOTA_ADVICE}", status=status, body=text)
    if code == "context_length_exceeded" and error.kind != "context_length":
        return http_errors.context_length_error(detail, status=status, body=text)
    return error


def _body_code(text: str) -> str:
    try:
        payload = parse_json(text)
    except ValueError:
        return ""
    error = payload.get("error") if isinstance(payload, dict) else None
    return _error_fields(error)[0] if error is not None else ""


def state_lost(error: ProviderError) -> bool:
    """The server no longer has the response a request chained from (``previous_response_not_found``)."""
    if isinstance(error, ProviderHTTPError):
        if error.status not in (400, 404, 409):
            return False
        text = error.body or str(error)
    else:
        text = str(error)
    return _STATE_LOST_CODE in text or _STATE_LOST_TEXT.search(text) is not None
