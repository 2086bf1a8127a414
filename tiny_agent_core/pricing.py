"""What one physical request cost, and where the number came from (SPEC §4).

:func:`price_request` turns a request's :class:`~tiny_agent_core.usage.Usage` into a :class:`Cost`, trying in
order:

1. ``provider`` — the provider's own figure when it sent one (OpenRouter ``usage.cost``, in credits = US dollars).
   It wins even over a user override: it is what was billed.
2. ``override`` — the user's prices for this provider and model (:class:`PriceOverride`, US dollars per million
   tokens), looked up as ``(provider, model)`` and then ``(provider, "*")``.
3. ``price_table`` — the ``genai-prices`` package's bundled data (:data:`PRICE_TABLE_VERSION`).
4. unknown — ``amount`` and ``source`` are ``None`` and ``detail`` says why. Unknown is never ``Decimal(0)``.

Decisions:

- **Usage ``None`` is unknown**, never $0 (the provider reported no usage); only a provider figure can still
  price such a request.
- **Money is** :class:`~decimal.Decimal`. Rates and token counts are multiplied exactly (no rounding); callers
  round only for display.
- **Cache reads and writes are priced at their own rates** when the override or the table has one. Where it has
  none, those tokens are priced at the input rate (they were billed as ordinary prompt tokens, e.g. OpenAI does
  not charge separately for cache writes) and ``detail`` says so.
- **The price table is offline and fixed.** ``genai-prices`` ships its data as a Python module; this module reads
  only that bundled data (never the package's process-wide snapshot, which its ``UpdatePrices`` thread could
  replace with downloaded data), so the same inputs always give the same number and ``data_version`` is simply
  the installed package version. It is imported on first use (about 0.15 s) so the CLI starts fast.
- **Provider ids are mapped explicitly** (:data:`TABLE_PROVIDERS`): our preset id to the table's provider id.
  The table's fuzzy provider matching is not used, and a model is never looked up without a provider, so a
  ``custom`` endpoint serving ``gpt-4o`` is not priced as OpenAI. ``custom`` and ids not in the map are unknown
  unless the user sets an override.
- **Local servers** (:data:`LOCAL_PROVIDERS`: Ollama, LM Studio, vLLM, llama.cpp) have no per-token price: they
  are unknown with detail ``"local server: no price"``, not $0, because the app cannot know what the hardware or
  electricity cost. A user who wants $0 (or any rate) sets an override, e.g. ``("ollama", "*")`` with zero rates,
  and the cost is then recorded with source ``override``.
- Time-dependent table prices (price changes, DeepSeek's off-peak hours) use ``at``, the request's time; a naive
  datetime is UTC, ``None`` means now.
- Pricing never raises for an unknown provider or model: the result is unknown with the reason in ``detail``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext
from functools import cache
from importlib.metadata import version
from typing import TYPE_CHECKING, Literal

from tiny_agent_core.usage import Usage

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ModelPrice, TieredPrices

CostSource = Literal["provider", "price_table", "override"]
"""Where a cost came from: the provider's own figure, a user override, or a price-table computation."""

PRICE_TABLE_VERSION = f"genai-prices {version('genai-prices')}"
"""The price data's version, recorded with every ``price_table`` cost (the data is the package's bundled data)."""

TABLE_PROVIDERS: Mapping[str, str] = {
    "openai": "openai",
    "openrouter": "openrouter",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral",
    "together": "together",
}
"""Our provider profile id → the price table's provider id (hosted providers only)."""

LOCAL_PROVIDERS = frozenset({"ollama", "lmstudio", "vllm", "llamacpp"})
"""Provider ids of local servers: no per-token price unless the user sets one."""

WILDCARD_MODEL = "*"
"""An override for ``(provider, WILDCARD_MODEL)`` applies to every model of that provider without its own."""

_PER_MILLION = Decimal(1_000_000)
_PRECISION = 60
"""Decimal digits for price arithmetic: enough for 2^53 tokens times any listed rate without rounding."""


@dataclass(frozen=True, slots=True)
class Cost:
    """What one request cost and where the number came from; ``amount is None`` means unknown (never $0)."""

    amount: Decimal | None
    """The cost in :attr:`currency`; ``None`` when unknown."""
    source: CostSource | None
    """Where :attr:`amount` came from; ``None`` exactly when the amount is unknown."""
    currency: str = "USD"
    data_version: str | None = None
    """The price table's version when the table was consulted (also when it had no price), else ``None``."""
    detail: str = ""
    """A short human explanation: the rates used, or why the cost is unknown."""


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """The user's prices for one provider and model, in US dollars per million tokens.

    A cache rate left ``None`` means those tokens cost the input rate.
    """

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name.startswith("cache_"):
                continue
            if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
                raise ValueError(f"override {name} price must be a finite, non-negative Decimal, got {value!r}")


Overrides = Mapping[tuple[str, str], PriceOverride]
"""User overrides keyed by ``(provider id, model)``; the model may be :data:`WILDCARD_MODEL`."""


def price_request(
    *,
    provider: str,
    model: str,
    usage: Usage | None,
    provider_cost: Decimal | None,
    overrides: Overrides | None = None,
    at: datetime | None = None,
) -> Cost:
    """The cost of one request: provider figure, else override, else price table, else unknown.

    ``provider`` is a provider profile id (``"openai"``, ``"ollama"``, ``"custom"``…), ``model`` the model id sent
    to it (OpenRouter: ``"anthropic/claude-sonnet-4.5"``), ``at`` the request's time. Never raises for an unknown
    provider or model.
    """
    ignored = ""
    if provider_cost is not None:
        if provider_cost.is_finite() and provider_cost >= 0:
            return Cost(provider_cost, "provider", detail=f"{provider} reported the cost")
        ignored = f" (the provider's figure {provider_cost} was ignored: not a finite, non-negative amount)"
    if usage is None:
        return Cost(None, None, detail="no usage reported" + ignored)
    override = _find_override(overrides, provider, model)
    if override is not None:
        return _price_override(override, provider, model, usage, ignored)
    if provider in LOCAL_PROVIDERS:
        return Cost(None, None, detail=f"local server: no price ({provider}; set an override to record one)" + ignored)
    table_provider = TABLE_PROVIDERS.get(provider)
    if table_provider is None:
        return Cost(None, None, detail=f"no price table for provider {provider!r}; set an override" + ignored)
    return _price_table(table_provider, model, usage, at, ignored)


def _find_override(overrides: Overrides | None, provider: str, model: str) -> PriceOverride | None:
    if not overrides:
        return None
    return overrides.get((provider, model)) or overrides.get((provider, WILDCARD_MODEL))


def _price_override(override: PriceOverride, provider: str, model: str, usage: Usage, ignored: str) -> Cost:
    cache_read = override.input if override.cache_read is None else override.cache_read
    cache_write = override.input if override.cache_write is None else override.cache_write
    with localcontext(prec=_PRECISION):
        amount = (
            usage.input * override.input
            + usage.output * override.output
            + usage.cache_read * cache_read
            + usage.cache_write * cache_write
        ) / _PER_MILLION
    rates = [f"input ${override.input}/M", f"output ${override.output}/M"]
    rates.append(_cache_rate_text("cache read", override.cache_read, usage.cache_read, usage.prompt))
    rates.append(_cache_rate_text("cache write", override.cache_write, usage.cache_write, usage.prompt))
    detail = f"override {provider} {model}: " + ", ".join(rate for rate in rates if rate)
    return Cost(amount, "override", detail=detail + ignored)


def _cache_rate_text(name: str, rate: Decimal | TieredPrices | None, tokens: int, prompt: int) -> str:
    """``"cache read $0.3/M"``; ``"cache read at input rate"`` when unpriced but used; ``""`` when neither."""
    if rate is not None:
        return f"{name} {_rate_text(rate, prompt)}"
    return f"{name} at input rate" if tokens else ""


def _rate_text(rate: Decimal | TieredPrices, prompt: int) -> str:
    """The rate applied to a request with ``prompt`` prompt tokens: ``"$2.5/M"``, or a tiered price's
    ``"$6/M (tier above 200000 prompt tokens)"`` (a tier's rate applies to all tokens once it is crossed)."""
    if isinstance(rate, Decimal):
        return f"${rate}/M"
    for tier in reversed(rate.tiers):
        if prompt > tier.start:
            return f"${tier.price}/M (tier above {tier.start} prompt tokens)"
    return f"${rate.base}/M"


@cache
def _table() -> DataSnapshot:
    """The bundled price data, never a downloaded snapshot (imported on first use)."""
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=providers, from_auto_update=False)


def _price_table(table_provider: str, model: str, usage: Usage, at: datetime | None, ignored: str) -> Cost:
    from genai_prices import Usage as TableUsage

    table_usage = TableUsage(
        input_tokens=usage.prompt,  # genai-prices counts cache reads and writes inside input_tokens
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
    )
    try:
        with localcontext(prec=_PRECISION):
            calculation = _table().calc(table_usage, model, table_provider, None, at)
    except LookupError:
        detail = f"{PRICE_TABLE_VERSION} has no price for {table_provider} model {model!r}"
        return Cost(None, None, data_version=PRICE_TABLE_VERSION, detail=detail + ignored)
    except (ValueError, ArithmeticError) as error:
        detail = f"{PRICE_TABLE_VERSION} could not price {table_provider} model {model!r}: {error}"
        return Cost(None, None, data_version=PRICE_TABLE_VERSION, detail=detail + ignored)
    rates = _table_rates_text(calculation.model_price, usage)
    detail = f"{PRICE_TABLE_VERSION}: {calculation.provider.id} {calculation.model.id}, {rates}"
    return Cost(calculation.total_price, "price_table", data_version=PRICE_TABLE_VERSION, detail=detail + ignored)


def _table_rates_text(prices: ModelPrice, usage: Usage) -> str:
    rates: list[str] = []
    if prices.input_mtok is not None:
        rates.append(f"input {_rate_text(prices.input_mtok, usage.prompt)}")
    if prices.output_mtok is not None:
        rates.append(f"output {_rate_text(prices.output_mtok, usage.prompt)}")
    rates.append(_cache_rate_text("cache read", prices.cache_read_mtok, usage.cache_read, usage.prompt))
    rates.append(_cache_rate_text("cache write", prices.cache_write_mtok, usage.cache_write, usage.prompt))
    if prices.requests_kcount is not None:
        rates.append(f"${prices.requests_kcount} per 1000 requests")
    return ", ".join(rate for rate in rates if rate)
