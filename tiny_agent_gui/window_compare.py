"""What the main window hands the compare view: a compare run, with its contenders (one per chosen model).

A contender needs its model's provider profile and key; a provider removed from the settings since it was picked,
or a key that cannot be read, is a typed error whose message says what to do (the window shows it in the banner).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS
from tiny_agent_core.errors import SettingsError
from tiny_agent_core.model_catalog import ModelEntry
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings

if TYPE_CHECKING:  # the compare machinery is imported when the compare view is first shown
    from tiny_agent_core.compare import CompareRun, Contender


def contenders_for(entries: list[ModelEntry], settings: AppSettings, keys: KeyStore) -> list[Contender]:
    """One contender per entry; raises :class:`SettingsError` (provider gone) or ``SecretStoreError`` (key)."""
    from tiny_agent_core.compare import Contender

    contenders = []
    for entry in entries:
        config = settings.profile(entry.profile_id)
        if config is None:
            raise SettingsError(f"The provider of {entry.label} is no longer configured.")
        contenders.append(Contender(config.provider_profile(), entry.model, keys.key_for(config)))
    return contenders


@dataclass(frozen=True)
class CompareSetup:
    """What every compare run of the window shares: its settings, keys, provider client and ledger."""

    settings: AppSettings
    keys: KeyStore
    client: ProviderClient
    ledger: sqlite3.Connection


def compare_run(
    setup: CompareSetup,
    workspace: Path,
    prompt: str,
    entries: list[ModelEntry],
    allowed: list[str],
    on_change: Callable[[int], None],
) -> CompareRun:
    """A compare run of ``prompt`` on ``entries`` in copies of ``workspace`` (made if missing), kept in the data
    folder; raises like :func:`contenders_for`."""
    from tiny_agent_core.compare import CompareRun
    from tiny_agent_core.paths import comparisons_folder

    contenders = contenders_for(entries, setup.settings, setup.keys)
    workspace.mkdir(parents=True, exist_ok=True)
    return CompareRun(
        workspace,
        prompt,
        contenders,
        folder=comparisons_folder(),
        client=setup.client,
        allowed=allowed,  # the view's checkboxes are the whole policy: standing permissions do not apply
        ledger=setup.ledger,
        price_overrides=setup.settings.price_overrides or None,
        max_steps=setup.settings.max_steps or DEFAULT_MAX_STEPS,
        on_change=on_change,
    )
