"""How amounts, rates, token counts and times are shown. Unknown is a word, never "$0"."""

from __future__ import annotations

import time
from decimal import Decimal

from tiny_agent_core.ledger.costs import cost_text as ledger_cost_text
from tiny_agent_core.ledger.costs import money_text as format_money
from tiny_agent_core.timestamps import local_datetime

__all__ = [
    "NOT_APPLICABLE",
    "UNKNOWN_COST",
    "cost_text",
    "format_money",
    "local_time_text",
    "rate_text",
    "relative_time",
    "tokens_text",
]

UNKNOWN_COST = "cost unknown"
"""Shown instead of an amount when no request's cost is known."""

NOT_APPLICABLE = "—"
"""Shown where a figure does not exist (no prompt tokens, no runs)."""


def cost_text(cost: Decimal | None, unknown_requests: int = 0, *, unknown: str = UNKNOWN_COST) -> str:
    """The core's :func:`~tiny_agent_core.ledger.costs.cost_text` (``$0.12``; ``≥ $0.12 + 2 unknown``, a lower bound,
    when some requests' costs are unknown) with the window's word for a cost of which nothing is known."""
    return ledger_cost_text(cost, unknown_requests, unknown=unknown)


def rate_text(rate: float | None) -> str:
    """A fraction as a percentage with one decimal, or :data:`NOT_APPLICABLE`."""
    return NOT_APPLICABLE if rate is None else f"{rate * 100:.1f}%"


def tokens_text(count: int) -> str:
    """A token count with thousands separators."""
    return f"{count:,}"


def relative_time(timestamp_ms: int, now_ms: int | None = None) -> str:
    """``just now``, ``5 min ago``, ``3 h ago``, ``yesterday``, ``4 days ago``, else the local date."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    seconds = max(0, (now_ms - timestamp_ms) // 1000)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86_400:
        return f"{seconds // 3600} h ago"
    days = seconds // 86_400
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    return local_datetime(timestamp_ms).strftime("%Y-%m-%d")


def local_time_text(timestamp_ms: int) -> str:
    """The local date and time, to the minute."""
    return local_datetime(timestamp_ms).strftime("%Y-%m-%d %H:%M")
