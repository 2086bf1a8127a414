"""A raw wire capture, made readable: request and response text, who answered, a curl command, JSON values.

The ledger stores each provider request's capture (:class:`~tiny_agent_core.providers.capture.RawCapture` as a
JSON object: ``method``, ``url``, ``requestHeaders``, ``requestBody``, ``status``, ``responseHeaders``,
``responseBody``, …). The inspector shows it through these functions and never parses wire JSON itself:
:func:`capture_text` (pretty text), :func:`capture_answer` (HTTP status and the model that answered),
:func:`curl_command` (the request to replay, the key left to a shell variable) and :func:`capture_values` (the
bodies as JSON values, for a tree; a streamed response as its list of events).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CaptureAnswer",
    "CaptureText",
    "CaptureValues",
    "capture_answer",
    "capture_text",
    "capture_values",
    "curl_command",
]


@dataclass(frozen=True, slots=True)
class CaptureText:
    """A raw wire capture, formatted for reading: request, response and the rest."""

    request: str
    """The request line and the request body (pretty JSON when it is JSON)."""
    response: str
    """Status, kept headers and the response body (pretty JSON, or the SSE text as received)."""


def _pretty_body(body: str) -> str:
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body


def capture_text(capture: Any) -> CaptureText:
    """Format one stored capture (a value of ``ledger.raw_captures``) for the inspector.

    A capture is the JSON object a :class:`~tiny_agent_core.providers.capture.RawCapture` was stored as
    (``requestBody``, ``status``, ``responseHeaders``, ``responseBody``, …); a pruned capture (the ledger keeps
    only the newest ones whole) is its note, on both sides; anything else (e.g. a truncated capture's wrapper) is
    shown whole.
    """
    if isinstance(capture, dict) and capture.get("pruned") is True:
        note = str(capture.get("note") or "Raw capture pruned.")
        return CaptureText(note, note)
    if not isinstance(capture, dict) or not isinstance(capture.get("requestBody"), str):
        whole = json.dumps(capture, indent=2, ensure_ascii=False)
        return CaptureText(whole, whole)
    request_lines = [f"{capture.get('method', '')} {capture.get('url', '')}".strip()]
    for name, value in (capture.get("requestHeaders") or {}).items():
        request_lines.append(f"{name}: {value}")
    request_lines += ["", _pretty_body(capture["requestBody"])]
    if capture.get("requestDroppedBytes"):
        request_lines.append(f"\n[{capture['requestDroppedBytes']} bytes not kept]")
    status = capture.get("status")
    response_lines = [f"HTTP {status if status is not None else '(no response)'}"]
    for name, value in (capture.get("responseHeaders") or {}).items():
        response_lines.append(f"{name}: {value}")
    response_lines += ["", _pretty_body(capture.get("responseBody") or "")]
    if capture.get("responseDroppedBytes"):
        response_lines.append(f"\n[{capture['responseDroppedBytes']} bytes not kept]")
    if capture.get("error"):
        response_lines += ["", "error: " + json.dumps(capture["error"], ensure_ascii=False)]
    return CaptureText("\n".join(request_lines), "\n".join(response_lines))


@dataclass(frozen=True, slots=True)
class CaptureAnswer:
    """Who answered a request, as its raw wire capture says (``None`` = not in the capture)."""

    http_status: int | None
    model: str | None
    """The ``model`` of the response body (the first SSE event that names one)."""
    outbound_repairs: tuple[str, ...] | None = None
    """The outbound repairs the request was last sent with (``None``: its last capture does not record them)."""


def _body_model(body: str) -> str | None:
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if isinstance(value, dict):
        model = value.get("model")
        return model if isinstance(model, str) and model else None
    for line in body.splitlines():
        if line.startswith("data:") and '"model"' in line:
            model = _body_model(line[5:].strip())
            if model is not None:
                return model
    return None


def capture_answer(captures: Sequence[Any]) -> CaptureAnswer:
    """The HTTP status and answering model of a request from its stored captures (the last one that says), and the
    outbound repairs the last capture was sent with (``None`` when it does not say: truncated, pruned, older)."""
    status: int | None = None
    model: str | None = None
    repairs: tuple[str, ...] | None = None
    for capture in captures:
        if not isinstance(capture, dict):
            repairs = None
            continue
        if isinstance(capture.get("status"), int):
            status = capture["status"]
        body = capture.get("responseBody")
        found = _body_model(body) if isinstance(body, str) else None
        model = found or model
        listed = capture.get("outboundRepairs")  # the last capture's: a re-sent request has repairs of its own
        repairs = tuple(item for item in listed if isinstance(item, str)) if isinstance(listed, list) else None
    return CaptureAnswer(status, model, repairs)


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def curl_command(capture: Any, key_variable: str = "API_KEY") -> str | None:
    """The captured request as a ``curl`` command; the key is a shell variable (captures never hold it), in the
    header the request carried it in (``credentialHeaders``; a bearer token for older captures).

    ``None`` for a capture without a request (e.g. a truncated capture's wrapper).
    """
    if not isinstance(capture, dict) or not isinstance(capture.get("requestBody"), str) or not capture.get("url"):
        return None
    parts = [f"curl -X {capture.get('method') or 'POST'} {_shell_quote(str(capture['url']))}"]
    credentials = capture.get("credentialHeaders")
    if not isinstance(credentials, list):  # a capture from before the field: the key went as a bearer token
        credentials = ["authorization"]
    for name in credentials:
        if name == "authorization":
            parts.append(f'-H "Authorization: Bearer ${key_variable}"')
        elif isinstance(name, str) and name.replace("-", "").isalnum():
            parts.append(f'-H "{name}: ${key_variable}"')
    for name, value in (capture.get("requestHeaders") or {}).items():
        parts.append("-H " + _shell_quote(f"{name}: {value}"))
    parts.append("--data-raw " + _shell_quote(capture["requestBody"]))
    return " \\\n  ".join(parts)


@dataclass(frozen=True, slots=True)
class CaptureValues:
    """The bodies of a capture as JSON values (``None`` where there is none)."""

    request: Any
    """The request body (a string when it is not JSON)."""
    response: Any
    """The response body; for a stream, the list of its events' data (JSON values, ``"[DONE]"`` as a string)."""


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def capture_values(capture: Any) -> CaptureValues:
    """The request and response bodies of one capture as JSON values (the whole capture when it has no request)."""
    if not isinstance(capture, dict) or not isinstance(capture.get("requestBody"), str):
        return CaptureValues(capture, None)
    body = capture.get("responseBody") or ""
    if isinstance(body, str) and body.lstrip().startswith(("data:", "event:", ":")):
        events = [_value(line[5:].strip()) for line in body.splitlines() if line.startswith("data:")]
        return CaptureValues(_value(capture["requestBody"]), events)
    return CaptureValues(_value(capture["requestBody"]), _value(body) if isinstance(body, str) and body else None)
