"""Token usage per physical request, from provider-reported numbers only (SPEC §4, reference notes §4).

``Usage`` has the reference's four disjoint buckets: ``input`` (uncached prompt tokens), ``output``,
``cache_read`` and ``cache_write``. A response without usage is *unknown*: the mapping returns ``None``, never
zeros. Totals are sums of per-request facts and must stay within the reference's safe-integer bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tiny_agent_core.errors import MalformedResponseError

MAX_SAFE_INTEGER = 2**53 - 1
"""The reference's bound on every usage counter and running total (JavaScript's ``Number.MAX_SAFE_INTEGER``)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported tokens of one request (or a sum of requests), in disjoint buckets."""

    input: int
    """Prompt tokens that were neither read from nor written to a cache."""
    output: int
    """Completion tokens (reasoning tokens included, as providers count them)."""
    cache_read: int = 0
    """Prompt tokens served from the provider's cache."""
    cache_write: int = 0
    """Prompt tokens written to the provider's cache."""

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
                raise ValueError(f"usage {name} must be an integer in [0, 2^53-1], got {value!r}")

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages; raises ``ValueError`` if a total would exceed the safe-integer bound."""
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    @property
    def prompt(self) -> int:
        """All prompt tokens: uncached input plus cache reads and writes."""
        return self.input + self.cache_read + self.cache_write

    @property
    def cache_hit_rate(self) -> float | None:
        """Cache reads as a fraction (0..1) of all prompt tokens; ``None`` when there were no prompt tokens."""
        prompt = self.prompt
        return self.cache_read / prompt if prompt else None

    def as_dict(self) -> dict[str, int]:
        """The reference's JSON form: ``{input, output, cacheRead, cacheWrite}``."""
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
        }

    @classmethod
    def from_dict(cls, value: dict[str, int]) -> Usage:
        """Inverse of :meth:`as_dict`."""
        return cls(value["input"], value["output"], value["cacheRead"], value["cacheWrite"])


def _count(owner: dict[str, Any], key: str, where: str) -> int | None:
    value = owner.get(key)
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise MalformedResponseError(f"Provider usage field {where}{key} is not a non-negative integer: {value!r}.")
    return value


def usage_from_wire(usage: Any) -> Usage | None:
    """Map a Chat Completions ``usage`` object to :class:`Usage`; ``None`` when the provider reported none.

    ``cacheRead`` is ``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens``;
    ``cacheWrite`` is ``prompt_tokens_details.cache_write_tokens``, else ``cache_creation_input_tokens``
    (in the details or at the top level); missing details count 0. A usage object that reports neither
    ``prompt_tokens`` nor ``completion_tokens`` is unknown. Non-integer counts, or cache counts larger than
    the prompt, are malformed (never clamped).
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise MalformedResponseError("Provider usage is not an object.")
    prompt = _count(usage, "prompt_tokens", "")
    completion = _count(usage, "completion_tokens", "")
    if prompt is None and completion is None:
        return None
    details = usage.get("prompt_tokens_details")
    if details is None:
        details = {}
    elif not isinstance(details, dict):
        raise MalformedResponseError("Provider usage prompt_tokens_details is not an object.")
    cache_read = _count(details, "cached_tokens", "prompt_tokens_details.")
    if cache_read is None:
        cache_read = _count(usage, "prompt_cache_hit_tokens", "")
    cache_write = _count(details, "cache_write_tokens", "prompt_tokens_details.")
    if cache_write is None:
        cache_write = _count(details, "cache_creation_input_tokens", "prompt_tokens_details.")
    if cache_write is None:
        cache_write = _count(usage, "cache_creation_input_tokens", "")
    prompt = prompt or 0
    cache_read = cache_read or 0
    cache_write = cache_write or 0
    if cache_read + cache_write > prompt:
        raise MalformedResponseError(
            f"Provider usage is inconsistent: {cache_read} cached + {cache_write} cache-write tokens "
            f"exceed {prompt} prompt tokens."
        )
    return Usage(prompt - cache_read - cache_write, completion or 0, cache_read, cache_write)
