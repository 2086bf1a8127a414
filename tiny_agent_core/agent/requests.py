"""What the agent records about each physical model request, apart from the session file: its price and its record.

A :class:`ModelRequest` is started when a step's attempt is committed and settled once its outcome is known (an
answer, a provider failure, an abort). Settling prices it (:func:`~tiny_agent_core.pricing.price_request`, best
effort: a pricing failure is an unknown cost, never a failed run) and hands a :class:`RequestRecord` to the
agent's :data:`RequestRecorder` (e.g. :class:`~tiny_agent_core.agent.recording.LedgerRecorder`); a recorder that
raises is logged and ignored, because the ledger is derived data.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tiny_agent_core.errors import ProviderError, ProviderHTTPError
from tiny_agent_core.pricing import Cost, Overrides, price_request
from tiny_agent_core.providers.capture import RawCapture
from tiny_agent_core.providers.client import ChatCompleted
from tiny_agent_core.providers.results import NormalizedResponse
from tiny_agent_core.usage import Usage

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestRecord:
    """What the agent learned about one physical model request, for the ledger (apart from the session file).

    Emitted once the request's outcome is known: ``outcome`` is ``settled`` (an answer was committed) or
    ``failed`` (``error_code`` ``model_error`` or ``aborted``).
    """

    session_id: str
    operation_id: str
    step_id: str
    attempt_id: str
    attempt: int
    step_kind: str
    provider: str
    model: str
    started_at_ms: int
    finished_at_ms: int
    outcome: Literal["settled", "failed"]
    stop_reason: str | None
    error_code: str | None
    usage: Usage | None
    cost: Cost
    response: NormalizedResponse | None
    error: ProviderError | None
    capture: RawCapture | None
    latency_ms: float
    ttft_ms: float | None


RequestRecorder = Callable[[RequestRecord], None]
"""Receives each physical request after its outcome is known (e.g. to write the SQLite ledger)."""


class ModelRequest:
    """Identity, target and start time of one physical model request (started when its attempt is committed)."""

    __slots__ = (
        "attempt",
        "attempt_id",
        "local",
        "model",
        "operation_id",
        "provider",
        "session_id",
        "started",
        "started_at_ms",
        "step_id",
        "step_kind",
    )

    def __init__(
        self,
        *,
        session_id: str,
        operation_id: str,
        step_id: str,
        attempt_id: str,
        attempt: int,
        step_kind: str,
        provider: str,
        model: str,
        local: bool,
    ) -> None:
        self.session_id = session_id
        self.operation_id = operation_id
        self.step_id = step_id
        self.attempt_id = attempt_id
        self.attempt = attempt
        self.step_kind = step_kind
        self.provider = provider
        self.model = model
        self.local = local
        self.started = time.monotonic()
        self.started_at_ms = int(time.time() * 1000)

    def price(
        self, response: NormalizedResponse | None, error: ProviderError | None, overrides: Overrides | None
    ) -> Cost:
        """The request's cost from its usage (or the provider's own figure); unknown when pricing fails."""
        usage = response.usage if response is not None else (error.usage if error is not None else None)
        try:
            return price_request(
                provider=self.provider,
                model=self.model,
                usage=usage,
                provider_cost=response.provider_cost if response is not None else None,
                overrides=overrides,
                local=self.local,
                http_status=error.status if isinstance(error, ProviderHTTPError) else None,
            )
        except Exception:  # pricing is best effort and never fails a request
            _log.warning("pricing failed", exc_info=True)
            return Cost(None, None, detail="pricing failed")

    def record(
        self,
        *,
        completed: ChatCompleted | None,
        capture: RawCapture | None,
        error: ProviderError | None,
        error_code: str | None,
        cost: Cost,
    ) -> RequestRecord:
        """The request's record, now that its outcome is known; ``capture`` is the wire capture of a request that
        ended without an answer."""
        response = completed.response if completed is not None else None
        if completed is not None:
            capture = completed.capture
        timings = capture.timings if capture is not None else None
        elapsed = (time.monotonic() - self.started) * 1000
        return RequestRecord(
            session_id=self.session_id,
            operation_id=self.operation_id,
            step_id=self.step_id,
            attempt_id=self.attempt_id,
            attempt=self.attempt,
            step_kind=self.step_kind,
            provider=self.provider,
            model=self.model,
            started_at_ms=self.started_at_ms,
            finished_at_ms=self.started_at_ms + int(elapsed),
            outcome="failed" if error_code else "settled",
            stop_reason=response.stop_reason if response is not None else None,
            error_code=error_code,
            usage=response.usage if response is not None else (error.usage if error is not None else None),
            cost=cost,
            response=response,
            error=error,
            capture=capture,
            latency_ms=timings.done_ms if timings is not None and timings.done_ms is not None else elapsed,
            ttft_ms=timings.first_token_ms if timings is not None else None,
        )


def deliver(recorder: RequestRecorder, record: RequestRecord) -> None:
    """Hand ``record`` to ``recorder``; a failure is logged, never raised (the ledger must not break a run)."""
    try:
        recorder(record)
    except Exception:  # the ledger is derived data; a failure must not break the run
        _log.warning("recording the request failed", exc_info=True)
