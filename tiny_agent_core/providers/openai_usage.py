"""Chat Completions usage: the wire ``usage`` object → :class:`~tiny_agent_core.usage.Usage`, and the provider's cost.

:func:`usage_from_wire` maps token counts (the ledger's definition: ``input`` is *uncached* input), reporting the
dialect repair ``usage_input_clamped`` when cache reads plus writes exceed ``prompt_tokens``;
:func:`provider_cost` reads OpenRouter's own cost figure. Counts that are not non-negative integers are malformed,
never coerced.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from tiny_agent_core.errors import MalformedResponseError
from tiny_agent_core.providers.results import Notes, usage_count
from tiny_agent_core.usage import Usage


def usage_from_wire(usage: Any, notes: Notes | None = None) -> Usage | None:
    """Map a Chat Completions ``usage`` object to :class:`Usage`; ``None`` when the provider reported none.

    ``cacheRead`` is ``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens`` (only
    when ``cached_tokens`` is absent); ``cacheWrite`` is ``prompt_tokens_details.cache_write_tokens``, else
    ``cache_creation_input_tokens`` (in the details or at the top level); missing details count 0;
    ``input = prompt_tokens - cacheRead - cacheWrite``. A usage object reporting neither ``prompt_tokens`` nor
    ``completion_tokens`` is unknown. Non-integer or negative counts are malformed (never coerced).
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise MalformedResponseError("Provider usage is not an object.")
    prompt = usage_count(usage, "prompt_tokens", "")
    completion = usage_count(usage, "completion_tokens", "")
    if prompt is None and completion is None:
        return None
    details = usage.get("prompt_tokens_details")
    if details is None:
        details = {}
    elif not isinstance(details, dict):
        raise MalformedResponseError("Provider usage prompt_tokens_details is not an object.")
    cache_read = usage_count(details, "cached_tokens", "prompt_tokens_details.")
    if cache_read is None:
        cache_read = usage_count(usage, "prompt_cache_hit_tokens", "")
    cache_write = usage_count(details, "cache_write_tokens", "prompt_tokens_details.")
    if cache_write is None:
        cache_write = usage_count(details, "cache_creation_input_tokens", "prompt_tokens_details.")
    if cache_write is None:
        cache_write = usage_count(usage, "cache_creation_input_tokens", "")
    cache_read = cache_read or 0
    cache_write = cache_write or 0
    uncached = (prompt or 0) - cache_read - cache_write
    if uncached < 0 and notes is not None:
        notes.repair("usage_input_clamped")
    return Usage(max(0, uncached), completion or 0, cache_read, cache_write)


def provider_cost(usage: Any) -> Decimal | None:
    """OpenRouter's ``usage.cost``; ``None`` for BYOK requests, whose 0 is not what the user paid upstream."""
    if not isinstance(usage, dict) or usage.get("is_byok") is True:
        return None
    cost = usage.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return None
    try:
        value = Decimal(str(cost))
    except InvalidOperation:
        return None
    return value if value.is_finite() and value >= 0 else None
