"""Usage buckets, sums, the safe-integer bound and the cache hit rate (SPEC §4, reference notes §4)."""

from __future__ import annotations

import pytest

from tiny_agent_core.usage import MAX_SAFE_INTEGER, Usage


def test_sum_and_cache_hit_rate() -> None:
    total = Usage(120, 10, 80, 0) + Usage(7, 3, 2, 0)
    assert total == Usage(127, 13, 82, 0)
    assert Usage(120, 10, 80, 0).cache_hit_rate == pytest.approx(0.4)
    assert Usage(7, 1, 2, 0).cache_hit_rate == pytest.approx(2 / 9)


def test_hit_rate_is_unknown_without_prompt_tokens() -> None:
    assert Usage(0, 5).cache_hit_rate is None


def test_cumulative_rate_is_recomputed_from_sums_not_averaged() -> None:
    first, second = Usage(100, 0, 0, 0), Usage(35, 0, 85, 0)
    assert second.cache_hit_rate == pytest.approx(85 / 120)
    assert (first + second).cache_hit_rate == pytest.approx(85 / 220)


def test_json_form_round_trips() -> None:
    usage = Usage(1, 2, 3, 4)
    assert usage.as_dict() == {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4}
    assert Usage.from_dict(usage.as_dict()) == usage


@pytest.mark.parametrize("bad", [-1, 1.0, True, "3", MAX_SAFE_INTEGER + 1])
def test_counters_must_be_safe_non_negative_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="usage input"):
        Usage(bad, 0)  # type: ignore[arg-type]


def test_sum_beyond_the_safe_integer_bound_is_rejected() -> None:
    with pytest.raises(ValueError, match="2\\^53-1"):
        Usage(MAX_SAFE_INTEGER, 0) + Usage(1, 0)
