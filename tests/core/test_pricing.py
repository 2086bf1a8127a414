"""Request pricing: provider figure, override, price table, unknown (SPEC §4).

Expected amounts are computed here by hand from the rates the bundled ``genai-prices`` table lists, so the tests
follow the data version installed rather than hard-coding today's prices.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal

import genai_prices
import pytest
from genai_prices.data import providers as table_providers
from genai_prices.data_snapshot import DataSnapshot, find_provider_by_id, set_custom_snapshot
from genai_prices.types import ModelPrice, TieredPrices

from tiny_agent_core.pricing import (
    LOCAL_PROVIDERS,
    PRICE_TABLE_VERSION,
    TABLE_PROVIDERS,
    WILDCARD_MODEL,
    Cost,
    PriceOverride,
    price_request,
    rates_in_use,
)
from tiny_agent_core.usage import Usage

AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
M = Decimal(1_000_000)


def table_prices(provider: str, model: str, at: datetime = AT) -> ModelPrice:
    """The table's rates for a model, looked up independently of the code under test."""
    table_provider = find_provider_by_id(table_providers, provider)
    assert table_provider is not None
    info = table_provider.find_model(model)
    assert info is not None
    return info.get_prices(at)


def rate(prices: ModelPrice, key: str) -> Decimal:
    value = getattr(prices, key)
    assert isinstance(value, Decimal), f"{key} is {value!r}"
    return value


def price(provider: str, model: str, usage: Usage | None, **kwargs: object) -> Cost:
    options: dict[str, object] = {"provider_cost": None, "at": AT, **kwargs}
    return price_request(provider=provider, model=model, usage=usage, **options)  # type: ignore[arg-type]


def assert_unknown(cost: Cost) -> None:
    assert cost.amount is None
    assert cost.source is None
    assert cost.detail


def test_provider_cost_wins_over_override_and_table() -> None:
    overrides = {("openrouter", "openai/gpt-4o"): PriceOverride(Decimal(1), Decimal(1))}
    cost = price("openrouter", "openai/gpt-4o", Usage(100, 10), provider_cost=Decimal("0.000123"), overrides=overrides)
    assert cost == Cost(Decimal("0.000123"), "provider", detail="openrouter reported the cost")
    assert cost.data_version is None


def test_provider_cost_prices_a_request_without_usage() -> None:
    cost = price("openrouter", "openai/gpt-4o", None, provider_cost=Decimal("0.5"))
    assert (cost.amount, cost.source) == (Decimal("0.5"), "provider")


@pytest.mark.parametrize("bad", [Decimal("NaN"), Decimal("-0.01"), Decimal("Infinity")])
def test_an_impossible_provider_figure_is_ignored_and_said(bad: Decimal) -> None:
    cost = price("openai", "gpt-4o", Usage(100, 10), provider_cost=bad)
    assert cost.source == "price_table"
    assert "was ignored" in cost.detail


def test_override_beats_table() -> None:
    override = PriceOverride(Decimal("1.5"), Decimal("4"), cache_read=Decimal("0.1"), cache_write=Decimal("2"))
    usage = Usage(1000, 200, cache_read=3000, cache_write=400)
    cost = price("openai", "gpt-4o", usage, overrides={("openai", "gpt-4o"): override})
    expected = (1000 * Decimal("1.5") + 200 * Decimal(4) + 3000 * Decimal("0.1") + 400 * Decimal(2)) / M
    assert cost.amount == expected == Decimal("0.0034")
    assert cost.source == "override"
    assert cost.data_version is None
    assert cost.detail == ("override openai gpt-4o: input $1.5/M, output $4/M, cache read $0.1/M, cache write $2/M")


def test_override_without_cache_rates_prices_cache_tokens_at_the_input_rate() -> None:
    override = PriceOverride(Decimal(2), Decimal(8))
    cost = price("custom", "my-model", Usage(100, 10, 50, 25), overrides={("custom", "my-model"): override})
    assert cost.amount == ((100 + 50 + 25) * Decimal(2) + 10 * Decimal(8)) / M
    assert "cache read at input rate" in cost.detail
    assert "cache write at input rate" in cost.detail


def test_exact_override_beats_wildcard_and_wildcard_covers_other_models() -> None:
    overrides = {
        ("together", WILDCARD_MODEL): PriceOverride(Decimal(1), Decimal(1)),
        ("together", "special"): PriceOverride(Decimal(3), Decimal(3)),
    }
    assert price("together", "special", Usage(1_000_000, 0), overrides=overrides).amount == Decimal(3)
    assert price("together", "other", Usage(1_000_000, 0), overrides=overrides).amount == Decimal(1)
    assert price("openai", "gpt-4o", Usage(1_000_000, 0), overrides=overrides).source == "price_table"


@pytest.mark.parametrize(
    "fields",
    [
        {"input": Decimal(-1), "output": Decimal(1)},
        {"input": Decimal(1), "output": Decimal("NaN")},
        {"input": 1.5, "output": Decimal(1)},
        {"input": Decimal(1), "output": Decimal(1), "cache_read": 0.1},
    ],
)
def test_override_rejects_negative_non_finite_and_float_prices(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="finite, non-negative Decimal"):
        PriceOverride(**fields)  # type: ignore[arg-type]


def test_known_model_priced_exactly_from_the_table() -> None:
    rates = table_prices("openai", "gpt-4o")
    usage = Usage(1234, 567, cache_read=890)
    expected = (
        1234 * rate(rates, "input_mtok") + 890 * rate(rates, "cache_read_mtok") + 567 * rate(rates, "output_mtok")
    ) / M
    cost = price("openai", "gpt-4o", usage)
    assert cost.amount == expected
    assert cost.source == "price_table"
    assert cost.data_version == PRICE_TABLE_VERSION
    assert cost.detail.startswith(f"{PRICE_TABLE_VERSION}: openai gpt-4o, input ${rate(rates, 'input_mtok')}/M")


def test_openrouter_model_ids_with_a_vendor_prefix_are_priced() -> None:
    rates = table_prices("openrouter", "anthropic/claude-sonnet-4.5")
    assert isinstance(rates.input_mtok, TieredPrices)
    cost = price("openrouter", "anthropic/claude-sonnet-4.5", Usage(1000, 100))
    assert cost.amount == (1000 * rates.input_mtok.base + 100 * tiered_base(rates, "output_mtok")) / M
    assert "openrouter anthropic/claude-sonnet-4.5" in cost.detail


def tiered(prices: ModelPrice, key: str) -> TieredPrices:
    value = getattr(prices, key)
    assert isinstance(value, TieredPrices), f"{key} is {value!r}"
    return value


def tiered_base(prices: ModelPrice, key: str) -> Decimal:
    return tiered(prices, key).base


def test_cache_reads_and_writes_are_priced_at_their_own_rates() -> None:
    rates = table_prices("openrouter", "anthropic/claude-sonnet-4.5")
    r_in, r_out = tiered_base(rates, "input_mtok"), tiered_base(rates, "output_mtok")
    r_read, r_write = tiered_base(rates, "cache_read_mtok"), tiered_base(rates, "cache_write_mtok")
    assert len({r_in, r_read, r_write}) == 3
    usage = Usage(2000, 300, cache_read=50_000, cache_write=7000)
    cost = price("openrouter", "anthropic/claude-sonnet-4.5", usage)
    assert cost.amount == (2000 * r_in + 300 * r_out + 50_000 * r_read + 7000 * r_write) / M
    assert f"cache read ${r_read}/M" in cost.detail
    assert f"cache write ${r_write}/M" in cost.detail


def test_cache_writes_without_a_table_rate_are_priced_as_input_and_said() -> None:
    rates = table_prices("openai", "gpt-4o")
    assert rates.cache_write_mtok is None
    cost = price("openai", "gpt-4o", Usage(100, 0, cache_write=900))
    assert cost.amount == 1000 * rate(rates, "input_mtok") / M
    assert "cache write at input rate" in cost.detail


def test_a_crossed_tier_prices_every_token_at_the_tier_rate() -> None:
    rates = table_prices("openrouter", "anthropic/claude-sonnet-4.5")
    tiers = {key: tiered(rates, key).tiers[0] for key in ("input_mtok", "output_mtok", "cache_write_mtok")}
    start = tiers["input_mtok"].start
    usage = Usage(start - 1000, 10, cache_write=2000)  # prompt = start + 1000 crosses the tier
    cost = price("openrouter", "anthropic/claude-sonnet-4.5", usage)
    expected = (
        (start - 1000) * tiers["input_mtok"].price
        + 10 * tiers["output_mtok"].price
        + 2000 * tiers["cache_write_mtok"].price
    ) / M
    assert cost.amount == expected
    assert f"input ${tiers['input_mtok'].price}/M (tier above {start} prompt tokens)" in cost.detail


def test_time_dependent_prices_use_the_request_time() -> None:
    peak, off_peak = datetime(2026, 11, 1, 12, 0, tzinfo=UTC), datetime(2026, 11, 1, 20, 0, tzinfo=UTC)
    usage = Usage(1_000_000, 0)
    for at in (peak, off_peak):
        expected = rate(table_prices("deepseek", "deepseek-chat", at), "input_mtok")
        assert price("deepseek", "deepseek-chat", usage, at=at).amount == expected
    assert price("deepseek", "deepseek-chat", usage, at=peak) != price("deepseek", "deepseek-chat", usage, at=off_peak)


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "no-such-model"), ("openrouter", "nobody/nothing"), ("openrouter", "claude-sonnet-4.5")],
)
def test_unknown_model_is_unknown_not_zero(provider: str, model: str) -> None:
    cost = price(provider, model, Usage(1000, 100))
    assert_unknown(cost)
    assert cost.data_version == PRICE_TABLE_VERSION
    assert repr(model) in cost.detail


@pytest.mark.parametrize("provider", ["custom", "azure-ish", ""])
def test_providers_without_a_table_are_unknown_even_for_known_model_names(provider: str) -> None:
    cost = price(provider, "gpt-4o", Usage(1000, 100))
    assert_unknown(cost)
    assert cost.data_version is None


def test_usage_none_is_unknown_even_with_an_override_or_a_known_model() -> None:
    overrides = {("openai", "gpt-4o"): PriceOverride(Decimal(0), Decimal(0))}
    for cost in (price("openai", "gpt-4o", None), price("openai", "gpt-4o", None, overrides=overrides)):
        assert_unknown(cost)
        assert cost.detail == "no usage reported"


@pytest.mark.parametrize("provider", sorted(LOCAL_PROVIDERS))
def test_local_server_without_override_is_local_no_api_charge(provider: str) -> None:
    for usage in (Usage(1000, 100), None):
        cost = price(provider, "llama3.1:8b", usage)
        assert (cost.amount, cost.source) == (Decimal(0), "local")
        assert cost.detail.startswith("local — no API charge")


def test_a_profile_with_a_local_base_url_is_local_whatever_its_id() -> None:
    assert price("custom", "smollm2", Usage(10, 10), local=True).source == "local"
    assert price("custom", "smollm2", Usage(10, 10)).source is None
    overrides = {("custom", WILDCARD_MODEL): PriceOverride(Decimal(1), Decimal(2))}
    cost = price("custom", "smollm2", Usage(1_000_000, 1_000_000), local=True, overrides=overrides)
    assert (cost.amount, cost.source) == (Decimal(3), "override")


@pytest.mark.parametrize("status", [401, 429, 500])
def test_a_failed_request_without_usage_is_not_billed(status: int) -> None:
    cost = price("openai", "gpt-4o", None, http_status=status)
    assert (cost.amount, cost.source) == (Decimal(0), "not_billed")
    assert f"HTTP {status}" in cost.detail


def test_a_failed_request_with_usage_or_a_provider_figure_is_priced() -> None:
    with_usage = price("openai", "gpt-4o", Usage(1_000_000, 0), http_status=500)
    expected = rate(table_prices("openai", "gpt-4o"), "input_mtok")
    assert (with_usage.amount, with_usage.source) == (expected, "price_table")
    figure = price("openrouter", "x", None, http_status=429, provider_cost=Decimal("0.01"))
    assert (figure.amount, figure.source) == (Decimal("0.01"), "provider")
    assert price("openai", "gpt-4o", None, http_status=200).source is None


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "gpt-4o"), ("openai", "gpt-4o-mini"), ("openrouter", "openai/gpt-4o"), ("deepseek", "deepseek-chat")],
)
def test_fast_table_arithmetic_equals_the_packages_own_calculation(provider: str, model: str) -> None:
    from genai_prices import Usage as TableUsage

    prices = table_prices(provider, model)
    for usage in (Usage(0, 0), Usage(1, 2, 3, 4), Usage(123_457, 6789, 1011, 17), Usage(10**9, 10**8, 10**7, 0)):
        table_usage = TableUsage(
            input_tokens=usage.prompt,
            output_tokens=usage.output,
            cache_read_tokens=usage.cache_read,
            cache_write_tokens=usage.cache_write,
        )
        assert price(provider, model, usage).amount == prices.calc_price(table_usage)["total_price"]


def test_rates_in_use_say_where_each_rate_comes_from() -> None:
    table = rates_in_use("openai", "gpt-4o", at=AT)
    prices = table_prices("openai", "gpt-4o")
    assert (table.source, table.input, table.output) == ("price_table", prices.input_mtok, prices.output_mtok)
    assert table.cache_read == prices.cache_read_mtok
    overrides = {("openai", WILDCARD_MODEL): PriceOverride(Decimal(1), Decimal(2), Decimal("0.5"))}
    override = rates_in_use("openai", "gpt-4o", overrides)
    assert (override.source, override.input, override.cache_read, override.cache_write) == (
        "override",
        Decimal(1),
        Decimal("0.5"),
        None,
    )
    assert "openai *" in override.detail
    assert rates_in_use("ollama", "llama3").source == "local"
    assert rates_in_use("custom", "x", local=True).source == "local"
    unknown = rates_in_use("openrouter", "nobody/nothing")
    assert (unknown.source, unknown.input) == (None, None)
    assert "no price" in unknown.detail
    tiered_rates = rates_in_use("openrouter", "anthropic/claude-sonnet-4.5", at=AT)
    assert tiered_rates.source == "price_table"
    assert "tiered" in tiered_rates.detail


@pytest.mark.parametrize("provider", sorted(LOCAL_PROVIDERS))
def test_local_server_with_a_zero_override_costs_zero_from_the_override(provider: str) -> None:
    overrides = {(provider, WILDCARD_MODEL): PriceOverride(Decimal(0), Decimal(0))}
    cost = price(provider, "llama3.1:8b", Usage(1000, 100), overrides=overrides)
    assert (cost.amount, cost.source) == (Decimal(0), "override")


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "gpt-4o-mini"),
        ("openrouter", "openai/gpt-4o"),
        ("deepseek", "deepseek-chat"),
        ("groq", "llama-3.3-70b-versatile"),
        ("mistral", "mistral-large-latest"),
        ("together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
    ],
)
def test_every_hosted_table_provider_prices_in_decimal(provider: str, model: str) -> None:
    cost = price(provider, model, Usage(123_457, 6789, 1011, 0))
    assert type(cost.amount) is Decimal
    assert cost.amount > 0
    assert cost.source == "price_table"


def test_amounts_are_decimal_for_every_source() -> None:
    costs = [
        price("openrouter", "x", Usage(1, 1), provider_cost=Decimal("0.1")),
        price("openai", "gpt-4o", Usage(1, 1), overrides={("openai", "gpt-4o"): PriceOverride(Decimal(1), Decimal(1))}),
        price("openai", "gpt-4o", Usage(1, 1)),
    ]
    assert [type(cost.amount) for cost in costs] == [Decimal, Decimal, Decimal]
    assert [cost.source for cost in costs] == ["provider", "override", "price_table"]


def test_table_provider_ids_exist_in_the_table() -> None:
    for ours, theirs in TABLE_PROVIDERS.items():
        found = find_provider_by_id(table_providers, theirs)
        assert found is not None, ours
        assert found.id == theirs, ours
    assert not LOCAL_PROVIDERS & TABLE_PROVIDERS.keys()


def test_data_version_is_the_installed_package_version() -> None:
    assert f"genai-prices {genai_prices.__version__}" == PRICE_TABLE_VERSION


def test_a_downloaded_snapshot_never_replaces_the_bundled_data() -> None:
    """``UpdatePrices`` swaps the package's global snapshot; our prices must stay those of the bundled version."""
    before = price("openai", "gpt-4o", Usage(1000, 100))
    set_custom_snapshot(DataSnapshot(providers=[], from_auto_update=True))
    try:
        assert price("openai", "gpt-4o", Usage(1000, 100)) == before
    finally:
        set_custom_snapshot(None)


def test_pricing_works_with_the_network_forbidden() -> None:
    """Importing and using the price table opens no socket (checked in a fresh interpreter)."""
    script = """
import sys
def forbid(event, args):
    if event.startswith("socket."):
        raise RuntimeError(f"network access: {event}")
sys.addaudithook(forbid)
from datetime import datetime, timezone
from tiny_agent_core.pricing import price_request
from tiny_agent_core.usage import Usage
at = datetime(2026, 11, 1, tzinfo=timezone.utc)
cost = price_request(provider="openai", model="gpt-4o", usage=Usage(10, 10), provider_cost=None, at=at)
assert cost.source == "price_table", cost
cost = price_request(provider="openai", model="nope", usage=Usage(10, 10), provider_cost=None, at=at)
assert cost.amount is None, cost
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"
