"""What one physical request cost, and where the number came from (SPEC §4).

:func:`price_request` turns a request's :class:`~tiny_agent_core.usage.Usage` into a :class:`Cost`, trying in
order:

1. ``provider`` — the provider's own figure when it sent one (OpenRouter ``usage.cost``, in credits = US dollars).
   It wins even over a user override: it is what was billed.
2. ``override`` — the user's prices for this provider and model (:class:`PriceOverride`, US dollars per million
   tokens), looked up as ``(provider, model)`` and then ``(provider, "*")``.
3. ``price_table`` — the ``genai-prices`` package's bundled data (:data:`PRICE_TABLE_VERSION`).
4. unknown — ``amount`` and ``source`` are ``None`` and ``detail`` says why. Unknown is never ``Decimal(0)``.

Two more sources say why a request costs nothing, so they are counted apart from unknown:

- ``not_billed`` — the request failed with an HTTP error status (``http_status`` >= 400: a 429, a 401…) and
  reported no usage. No provider bills those; the amount is ``Decimal(0)``.
- ``local`` — the request went to a local server (a local preset, or ``local=True``: the profile's base URL is on
  this machine or the private network, :func:`tiny_agent_core.providers.locality.is_local_url`): "local — no API
  charge", amount ``Decimal(0)``, unless the user set an override (electricity, rented GPU time), which wins.

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
- **Local servers** (:data:`LOCAL_PROVIDERS`: Ollama, LM Studio, vLLM, llama.cpp, and any profile whose base URL
  is local) carry no API charge: source ``local``, amount 0. A user who wants to count hardware or electricity
  sets an override, e.g. ``("ollama", "*")``, and the cost is then recorded with source ``override``.
- **The table is read fast.** A table price without tiers is linear in the four token counts, so its four rates
  (and any per-request fee) are derived once per table entry from the package's own calculation and applied
  exactly; tiered prices go through the package's calculation every time. Lookups (misses included) are cached.
- Time-dependent table prices (price changes, DeepSeek's off-peak hours) use ``at``, the request's time; a naive
  datetime is UTC, ``None`` means now.
- Pricing never raises for an unknown provider or model: the result is unknown with the reason in ``detail``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from functools import cache, lru_cache
from importlib.metadata import version
from typing import TYPE_CHECKING, Literal, get_args

from tiny_agent_core.usage import Usage

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ModelInfo, ModelPrice, Provider, TieredPrices

CostSource = Literal["provider", "price_table", "override", "not_billed", "local"]
"""Where a cost came from: the provider's own figure, a price-table computation, a user override, a failed request
no provider bills, or a local server without an API charge."""
COST_SOURCES: tuple[str, ...] = get_args(CostSource)
"""Every :data:`CostSource`."""

PRICE_TABLE_VERSION = f"genai-prices {version('genai-prices')}"
"""The price data's version, recorded with every ``price_table`` cost (the data is the package's bundled data)."""

TABLE_PROVIDERS: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
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
    """What one request cost and where the number came from; ``amount is None`` means unknown (never $0).

    The one cost type of the core: :func:`price_request` returns it (with a :attr:`detail` for people), the ledger
    stores and reads it back (:class:`~tiny_agent_core.ledger.requests.RequestRow`), the agent reports it.
    """

    amount: Decimal | None
    """US dollars, finite and non-negative; ``None`` when unknown."""
    source: CostSource | None
    """Where :attr:`amount` came from; ``None`` exactly when the amount is unknown."""
    data_version: str | None = None
    """The price table's version when the table was consulted (also when it had no price), else ``None``."""
    detail: str = ""
    """A short human explanation: the rates used, or why the cost is unknown (not stored by the ledger)."""

    def __post_init__(self) -> None:
        if self.amount is None and self.source is None:
            return
        amount = self.amount
        if not isinstance(amount, Decimal) or not amount.is_finite() or amount < 0:
            raise ValueError(f"cost must be a finite, non-negative Decimal (or None if unknown), got {amount!r}")
        if self.source not in COST_SOURCES:
            raise ValueError(f"cost source must be one of {COST_SOURCES}, got {self.source!r}")


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
    local: bool = False,
    http_status: int | None = None,
) -> Cost:
    """The cost of one request: provider figure, else not billed, else override, else local, else price table,
    else unknown.

    ``provider`` is a provider profile id (``"openai"``, ``"ollama"``, ``"custom"``…), ``model`` the model id sent
    to it (OpenRouter: ``"anthropic/claude-sonnet-4.5"``), ``at`` the request's time, ``local`` whether the
    profile's base URL is local (:func:`~tiny_agent_core.providers.locality.is_local_url`), ``http_status`` the
    status of a request that failed with one. Never raises for an unknown provider or model.
    """
    ignored = ""
    if provider_cost is not None:
        if provider_cost.is_finite() and provider_cost >= 0:
            return Cost(provider_cost, "provider", detail=f"{provider} reported the cost")
        ignored = f" (the provider's figure {provider_cost} was ignored: not a finite, non-negative amount)"
    if usage is None and http_status is not None and http_status >= 400:
        detail = f"HTTP {http_status} without usage: failed requests are not billed"
        return Cost(Decimal(0), "not_billed", detail=detail)
    override = _find_override(overrides, provider, model)
    if override is not None:
        if usage is None:
            return Cost(None, None, detail="no usage reported" + ignored)
        return _price_override(override, provider, model, usage, ignored)
    if local or provider in LOCAL_PROVIDERS:
        return Cost(Decimal(0), "local", detail=f"local — no API charge ({provider}; set a price to count one)")
    if usage is None:
        return Cost(None, None, detail="no usage reported" + ignored)
    table_provider = TABLE_PROVIDERS.get(provider)
    if table_provider is None:
        return Cost(None, None, detail=f"no price table for provider {provider!r}; set an override" + ignored)
    return _price_table(table_provider, model, usage, at, ignored)


@dataclass(frozen=True, slots=True)
class Rates:
    """The per-million-token rates that price one provider and model, and where they come from (for display)."""

    source: CostSource | None
    """``override``, ``price_table`` or ``local``; ``None`` when the model has no known price."""
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    """``None`` with a known :attr:`input`: cache reads cost the input rate."""
    cache_write: Decimal | None = None
    """``None`` with a known :attr:`input`: cache writes cost the input rate."""
    detail: str = ""
    """Where the rates come from, or why there are none; says so when a table price is tiered."""


def rates_in_use(
    provider: str, model: str, overrides: Overrides | None = None, *, local: bool = False, at: datetime | None = None
) -> Rates:
    """The rates :func:`price_request` would apply to a request of ``provider`` and ``model`` that reported usage
    (a tiered table price shows its base rates)."""
    override = _find_override(overrides, provider, model)
    if override is not None:
        which = model if (provider, model) in (overrides or {}) else WILDCARD_MODEL
        detail = f"your override for {provider} {which}"
        return Rates("override", override.input, override.output, override.cache_read, override.cache_write, detail)
    if local or provider in LOCAL_PROVIDERS:
        zero = Decimal(0)
        return Rates("local", zero, zero, zero, zero, "local — no API charge")
    table_provider = TABLE_PROVIDERS.get(provider)
    if table_provider is None:
        return Rates(None, detail=f"no price table for provider {provider!r}")
    found = _table_entry(table_provider, model)
    if found is None:
        return Rates(None, detail=f"{PRICE_TABLE_VERSION} has no price for {table_provider} model {model!r}")
    prices = found[1].get_prices(_utc(at))
    values = [_base_rate(getattr(prices, key)) for key in ("input_mtok", "output_mtok", "cache_read_mtok")]
    write = _base_rate(prices.cache_write_mtok)
    tiered = any(not isinstance(getattr(prices, key), Decimal | None) for key in _TOKEN_KEYS)
    detail = f"{PRICE_TABLE_VERSION}: {found[0].id} {found[1].id}" + (" (tiered: base rates shown)" if tiered else "")
    return Rates("price_table", values[0], values[1], values[2], write, detail)


def _base_rate(rate: Decimal | TieredPrices | None) -> Decimal | None:
    return rate if isinstance(rate, Decimal) or rate is None else rate.base


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


_TOKEN_KEYS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")


@lru_cache(maxsize=4096)
def _table_entry(table_provider: str, model: str) -> tuple[Provider, ModelInfo] | None:
    """The table's provider and model entry, or ``None`` (misses are cached too: a failed lookup is slow)."""
    try:
        return _table().find_provider_model(model, None, table_provider, None)
    except LookupError:
        return None


_linear: dict[int, tuple[ModelPrice, tuple[Decimal, ...] | None]] = {}
"""id(table price) → (the price, kept alive so the id stays its own; its per-request fee and four rates per token, or
``None`` when tiered)."""


def _linear_rates(prices: ModelPrice) -> tuple[Decimal, ...] | None:
    """(fee, input, output, cache read, cache write) per token, derived exactly from the package's own calculation
    of one-million-token usages; ``None`` for a tiered price (not linear)."""
    cached = _linear.get(id(prices))
    if cached is not None and cached[0] is prices:
        return cached[1]
    from genai_prices import Usage as TableUsage

    rates: tuple[Decimal, ...] | None = None
    if all(isinstance(getattr(prices, key), Decimal | None) for key in _TOKEN_KEYS):
        million = 1_000_000
        with localcontext(prec=_PRECISION):
            fee = prices.calc_price(TableUsage())["total_price"]
            basis = [
                TableUsage(input_tokens=million),
                TableUsage(output_tokens=million),
                TableUsage(input_tokens=million, cache_read_tokens=million),
                TableUsage(input_tokens=million, cache_write_tokens=million),
            ]
            rates = (fee, *((prices.calc_price(usage)["total_price"] - fee) / _PER_MILLION for usage in basis))
    _linear[id(prices)] = (prices, rates)
    return rates


def _utc(at: datetime | None) -> datetime:
    if at is None:
        return datetime.now(UTC)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _table_amount(prices: ModelPrice, usage: Usage) -> Decimal:
    """What ``usage`` costs at a table price (exact; the package's calculation when the price is tiered)."""
    rates = _linear_rates(prices)
    with localcontext(prec=_PRECISION):
        if rates is not None:
            fee, uncached, output, cache_read, cache_write = rates
            amount = (
                fee
                + usage.input * uncached
                + usage.output * output
                + usage.cache_read * cache_read
                + usage.cache_write * cache_write
            )
            return amount.normalize() if amount else Decimal(0)  # no trailing zeros from the derived rates
        from genai_prices import Usage as TableUsage

        table_usage = TableUsage(
            input_tokens=usage.prompt,  # genai-prices counts cache reads and writes inside input_tokens
            output_tokens=usage.output,
            cache_read_tokens=usage.cache_read,
            cache_write_tokens=usage.cache_write,
        )
        return prices.calc_price(table_usage)["total_price"]


def _price_table(table_provider: str, model: str, usage: Usage, at: datetime | None, ignored: str) -> Cost:
    found = _table_entry(table_provider, model)
    if found is None:
        detail = f"{PRICE_TABLE_VERSION} has no price for {table_provider} model {model!r}"
        return Cost(None, None, data_version=PRICE_TABLE_VERSION, detail=detail + ignored)
    table_provider_entry, info = found
    try:
        prices = info.get_prices(_utc(at))
        amount = _table_amount(prices, usage)
    except (ValueError, ArithmeticError) as error:
        detail = f"{PRICE_TABLE_VERSION} could not price {table_provider} model {model!r}: {error}"
        return Cost(None, None, data_version=PRICE_TABLE_VERSION, detail=detail + ignored)
    rates = _table_rates_text(prices, usage)
    detail = f"{PRICE_TABLE_VERSION}: {table_provider_entry.id} {info.id}, {rates}"
    return Cost(amount, "price_table", data_version=PRICE_TABLE_VERSION, detail=detail + ignored)


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
