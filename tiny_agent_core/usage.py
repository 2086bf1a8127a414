"""Token usage per physical request, from provider-reported numbers only (SPEC §4, reference notes §4).

``Usage`` has the reference's four disjoint buckets: ``input`` (uncached prompt tokens), ``output``,
``cache_read`` and ``cache_write``. A response without usage is *unknown* and is represented by ``None``, never
by zeros. Totals are sums of per-request facts and must stay within the reference's safe-integer bound. The
mapping from a provider's wire ``usage`` object lives in the provider adapter.
"""

from __future__ import annotations

from dataclasses import dataclass

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
