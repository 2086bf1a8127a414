"""What the main window hands the compare view: the contenders of a compare run, one per chosen model.

A contender needs its model's provider profile and key; a provider removed from the settings since it was picked,
or a key that cannot be read, is a typed error whose message says what to do (the window shows it in the banner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiny_agent_core.errors import SettingsError
from tiny_agent_core.model_catalog import ModelEntry
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings

if TYPE_CHECKING:  # the compare machinery is imported when the compare view is first shown
    from tiny_agent_core.compare import Contender


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
