"""The models a user can pick for the next request: provider · model, price per million tokens, context window.

The window's model picker and compare view show :class:`ModelEntry` rows built here (no Qt): one per model of each
provider profile in the settings — the profile's chosen model at once, the models its ``GET /models`` lists once
:func:`profile_models` has fetched them. Prices come from :func:`tiny_agent_core.pricing.rates_in_use` (the user's
override, the price table, or "local — no API charge"); a model without one is "unknown", never $0.

:func:`recovery_conflict` says when switching model would be refused by the recovery planner: an unfinished
operation's step was configured with another model, and its configuration digest must match to recover it
(reference notes §5.11, ``configuration_changed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

import httpx

from tiny_agent_core.pricing import Overrides, Rates, rates_in_use
from tiny_agent_core.providers.profiles import list_models
from tiny_agent_core.session.state import SessionState
from tiny_agent_core.settings import ProfileConfig

__all__ = ["ModelEntry", "entries_for", "filter_entries", "profile_models", "recovery_conflict"]


def _money(rate: Decimal) -> str:
    """``$2.50``, ``$0.60``, ``$0.075`` (cents, or up to four decimals below a dollar)."""
    whole, _, fraction = (f"{rate:.2f}" if rate >= 1 else f"{rate:.4f}").partition(".")
    return f"${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def _tokens(count: int) -> str:
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    return f"{round(count / 1000)}k" if count >= 1000 else str(count)


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model of one provider profile, with what it costs and holds where known."""

    profile_id: str
    provider: str
    """The profile's name (what Settings shows)."""
    model: str
    rates: Rates
    context_length: int | None = None

    @property
    def label(self) -> str:
        """``provider · model``."""
        return f"{self.provider} · {self.model}"

    @property
    def price_text(self) -> str:
        """``$2.50 / $10.00`` per million input / output tokens, ``local — no API charge``, or ``unknown``."""
        rates = self.rates
        if rates.source == "local":
            return "local — no API charge"
        if rates.input is None or rates.output is None:
            return "unknown"
        return f"{_money(rates.input)} / {_money(rates.output)}"

    @property
    def context_text(self) -> str:
        """``128k`` tokens, or ``unknown``."""
        return _tokens(self.context_length) if self.context_length is not None else "unknown"


def entries_for(
    config: ProfileConfig, models: Iterable[str], overrides: Overrides | None = None, *, context: int | None = None
) -> list[ModelEntry]:
    """Rows for ``models`` of profile ``config`` (the profile's own model first, no duplicates); ``context`` is
    the context window of the profile's chosen model when the server told it (a profile's own setting wins)."""
    profile = config.provider_profile()
    ordered = list(dict.fromkeys([*([config.model] if config.model else []), *models]))
    out = []
    chosen_window = config.context_length if config.context_length is not None else context
    for model in ordered:
        window = chosen_window if model == config.model else None
        rates = rates_in_use(profile.id, model, overrides, local=profile.is_local)
        out.append(ModelEntry(config.id, config.name, model, rates, window))
    return out


async def profile_models(client: httpx.AsyncClient, config: ProfileConfig, api_key: str | None) -> list[str]:
    """The models ``GET /models`` of ``config`` lists (``[]`` when it has no list); raises the provider's typed
    errors (:class:`~tiny_agent_core.errors.ProviderError`) or :class:`~tiny_agent_core.errors.SettingsError`."""
    return await list_models(client, config.provider_profile(), api_key)


def filter_entries(entries: Sequence[ModelEntry], text: str) -> list[ModelEntry]:
    """The entries whose ``provider · model`` holds every word of ``text`` (case-insensitive), in order."""
    words = text.lower().split()
    return [entry for entry in entries if all(word in entry.label.lower() for word in words)]


def recovery_conflict(state: SessionState, model: str) -> str | None:
    """The model an unfinished operation of ``state`` was started with when it is not ``model`` (recovering it on
    ``model`` would be blocked: ``configuration_changed``), else ``None``."""
    operation = state.operation
    if operation.kind == "idle" or operation.step is None:
        return None
    recorded = operation.step.configuration_snapshot.get("model")
    return recorded if isinstance(recorded, str) and recorded != model else None
