"""Raw wire capture of one provider request, kept apart from the canonical transcript (SPEC §3, §9).

A :class:`RawCapture` is what the inspector shows under "raw wire": the request body as sent, the HTTP status,
the response headers that matter (request ids, rate limits, retry hints), the raw response body or SSE text, and
timings. It never holds a credential: the ``Authorization`` (and ``api-key``) header is not recorded at all, and
the key is masked (:class:`~tiny_agent_core.redaction.Redactor`) in everything that is. Bodies are capped
(:data:`DEFAULT_CAPTURE_LIMIT` each); ``*_dropped_bytes`` says how much the cap left out.

:class:`CaptureRecorder` builds one while the request runs (it is the only object that knows the key) and
:meth:`CaptureRecorder.finish` returns the scrubbed, immutable-by-convention capture.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tiny_agent_core.redaction import REDACTED as REDACTED  # what replaces the key, re-exported
from tiny_agent_core.redaction import Redactor

DEFAULT_CAPTURE_LIMIT = 1024 * 1024
"""Bytes kept of the request body and of the response body (each)."""

_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization", "cookie"})

_KEPT_HEADERS = frozenset(
    {
        "content-type",
        "date",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "openai-version",
        "openai-model",
        "retry-after",
        "retry-after-ms",
        "x-generation-id",
        "cf-ray",
    }
)
_KEPT_PREFIXES = ("x-ratelimit-", "ratelimit-", "x-openrouter-", "openrouter-")

REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-generation-id")
"""Response headers that name the request for the provider's support, in order of preference."""


def selected_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The response headers worth keeping, with lower-cased names."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in _SECRET_HEADERS:
            continue
        if key in _KEPT_HEADERS or key.startswith(_KEPT_PREFIXES):
            out[key] = value
    return out


def request_id_from(headers: Mapping[str, str]) -> str | None:
    """The provider's request id from response headers, if any."""
    lowered = {name.lower(): value for name, value in headers.items()}
    for name in REQUEST_ID_HEADERS:
        if lowered.get(name):
            return lowered[name]
    return None


@dataclass
class Timings:
    """Milliseconds since the request was sent (``None`` when the moment never came)."""

    headers_ms: float | None = None
    """The response status line and headers arrived."""
    first_byte_ms: float | None = None
    """The first byte of the response body arrived."""
    first_token_ms: float | None = None
    """The first text or tool-call piece arrived."""
    done_ms: float | None = None
    """The response was complete, or the request failed."""

    def to_json(self) -> dict[str, float | None]:
        """``{headersMs, firstByteMs, firstTokenMs, doneMs}``."""
        return {
            "headersMs": self.headers_ms,
            "firstByteMs": self.first_byte_ms,
            "firstTokenMs": self.first_token_ms,
            "doneMs": self.done_ms,
        }


@dataclass
class RawCapture:
    """The raw wire record of one provider request (no credentials; size-capped)."""

    method: str
    url: str
    started_at: str
    """When the request was sent, ISO 8601 UTC."""
    stream: bool
    """Whether the request asked for a streamed (SSE) response."""
    request_headers: dict[str, str] = field(default_factory=dict)
    """Headers the app set (content type, attribution); never ``Authorization``."""
    request_body: str = ""
    request_dropped_bytes: int = 0
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str = ""
    """The raw response body, or the SSE text as received (events, comments, ``[DONE]``)."""
    response_dropped_bytes: int = 0
    sse_events: int = 0
    """How many SSE events were decoded (0 for a JSON body)."""
    timings: Timings = field(default_factory=Timings)
    error: dict[str, Any] | None = None
    """``{kind, message, status?, retryAfter?}`` when the request failed."""
    outbound_repairs: tuple[str, ...] = ()
    """The outbound repairs applied to the request body as sent (each API kind names its own, e.g.
    ``openai_dialect.OUTBOUND_REPAIRS``)."""
    credential_headers: tuple[str, ...] = ()
    """The names (lower case) of the credential headers that were sent and not recorded (``authorization`` for
    OpenAI-style APIs, ``x-api-key`` for Anthropic), so a replay knows where the key goes."""

    @property
    def request_id(self) -> str | None:
        """The provider's request id from the response headers."""
        return request_id_from(self.response_headers)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (camelCase keys)."""
        return {
            "method": self.method,
            "url": self.url,
            "startedAt": self.started_at,
            "stream": self.stream,
            "requestHeaders": dict(self.request_headers),
            "requestBody": self.request_body,
            "requestDroppedBytes": self.request_dropped_bytes,
            "status": self.status,
            "responseHeaders": dict(self.response_headers),
            "responseBody": self.response_body,
            "responseDroppedBytes": self.response_dropped_bytes,
            "sseEvents": self.sse_events,
            "timings": self.timings.to_json(),
            "error": self.error,
            "outboundRepairs": list(self.outbound_repairs),
            "credentialHeaders": list(self.credential_headers),
        }


class _CappedText:
    """Accumulates text up to a byte limit, counting the bytes it drops."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def add(self, text: str) -> None:
        if not text:
            return
        size = len(text.encode("utf-8"))
        room = self.limit - self.kept
        if size <= room:
            self.parts.append(text)
            self.kept += size
            return
        if room > 0:
            head = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")
            self.parts.append(head)
            kept = len(head.encode("utf-8"))
            self.kept += kept
            self.dropped += size - kept
        else:
            self.dropped += size

    def text(self) -> str:
        return "".join(self.parts)


class CaptureRecorder:
    """Records one request as it happens; :meth:`finish` gives the scrubbed :class:`RawCapture`.

    The key is used only to scrub; it is never stored in the capture. Scrubbing happens on the joined text, so
    a key split across two network chunks is still found.
    """

    def __init__(
        self,
        *,
        method: str,
        url: str,
        stream: bool,
        request_headers: Mapping[str, str],
        request_body: bytes,
        secret: str | None,
        limit: int = DEFAULT_CAPTURE_LIMIT,
        outbound_repairs: tuple[str, ...] = (),
    ) -> None:
        self._redact = Redactor([secret])
        self._limit = limit
        self._t0 = time.perf_counter()
        # Keep a key's length beyond the cap, so a key cut by the cap is still scrubbed whole.
        slack = len(secret.encode("utf-8")) if secret else 0
        self._request = _CappedText(limit + slack)
        self._request.add(request_body.decode("utf-8", errors="replace"))
        self._response = _CappedText(limit + slack)
        self.capture = RawCapture(
            method=method,
            url=url,
            started_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            stream=stream,
            request_headers={
                name.lower(): value for name, value in request_headers.items() if name.lower() not in _SECRET_HEADERS
            },
            outbound_repairs=outbound_repairs,
            credential_headers=tuple(
                sorted(name.lower() for name in request_headers if name.lower() in _SECRET_HEADERS)
            ),
        )
        self._finished = False

    def _elapsed(self) -> float:
        return round((time.perf_counter() - self._t0) * 1000, 3)

    def response_started(self, status: int, headers: Mapping[str, str]) -> None:
        """The status line and headers arrived."""
        self.capture.status = status
        self.capture.response_headers = selected_headers(headers)
        self.capture.timings.headers_ms = self._elapsed()

    def body_text(self, text: str) -> None:
        """A piece of the response body arrived (decoded text)."""
        if text and self.capture.timings.first_byte_ms is None:
            self.capture.timings.first_byte_ms = self._elapsed()
        self._response.add(text)

    def body_bytes(self, data: bytes) -> None:
        """A whole response body arrived; only the part the cap keeps is decoded (the rest is only counted)."""
        head = data[: max(self._response.limit - self._response.kept, 0)]
        self.body_text(head.decode("utf-8", errors="replace"))
        self._response.dropped += len(data) - len(head)

    def sse_event(self) -> None:
        """One SSE event was decoded."""
        self.capture.sse_events += 1

    def first_token(self) -> None:
        """The first text or tool-call piece arrived (later calls are ignored)."""
        if self.capture.timings.first_token_ms is None:
            self.capture.timings.first_token_ms = self._elapsed()

    def failed(self, error: dict[str, Any]) -> None:
        """The request failed with this ``{kind, message, ...}`` description."""
        self.capture.error = error

    def finish(self) -> RawCapture:
        """Stamp the done time, scrub the key from everything kept, and return the capture (idempotent)."""
        capture = self.capture
        if self._finished:
            return capture
        self._finished = True
        capture.timings.done_ms = self._elapsed()
        redact = self._redact
        capture.request_body, capture.request_dropped_bytes = self._scrubbed(self._request)
        capture.response_body, capture.response_dropped_bytes = self._scrubbed(self._response)
        capture.url = redact(capture.url)
        capture.request_headers = {k: redact(v) for k, v in capture.request_headers.items()}
        capture.response_headers = {k: redact(v) for k, v in capture.response_headers.items()}
        if capture.error is not None:
            capture.error = {k: redact(v) if isinstance(v, str) else v for k, v in capture.error.items()}
        return capture

    def _scrubbed(self, buffer: _CappedText) -> tuple[str, int]:
        data = self._redact(buffer.text()).encode("utf-8")
        dropped = buffer.dropped
        if len(data) > self._limit:
            dropped += len(data) - self._limit
            data = data[: self._limit]
        return data.decode("utf-8", errors="ignore"), dropped
