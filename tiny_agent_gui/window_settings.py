"""The settings changes the main window makes itself (outside the settings dialog): the model chosen in the model
picker, a local server chosen on the first run, and a request form learned from a server.

Plain functions over the :class:`~tiny_agent_core.settings.AppSettings` they change; saving, and saying what
changed, is the window's.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from tiny_agent_core.agent.events import DialectLearned
from tiny_agent_core.errors import SettingsError
from tiny_agent_core.local_servers import LocalServer
from tiny_agent_core.model_catalog import ModelEntry
from tiny_agent_core.settings import AppSettings, ProfileConfig

_log = logging.getLogger(__name__)


def make_active(settings: AppSettings, entry: ModelEntry) -> bool:
    """Make ``entry`` the active profile and its model; ``False`` if its profile is gone."""
    config = settings.profile(entry.profile_id)
    if config is None:
        return False
    settings.update_profile(dataclasses.replace(config, model=entry.model))
    settings.active_profile = config.id
    return True


def add_local_server(settings: AppSettings, server: LocalServer, model: str) -> ProfileConfig:
    """Add ``server`` (its preset, at its address, with ``model``) as a new profile, and make it the active one."""
    profile = ProfileConfig.from_preset(server.preset_id, settings.new_profile_id(server.preset_id))
    profile = dataclasses.replace(profile, base_url=server.base_url, model=model)
    settings.add_profile(profile)
    settings.active_profile = profile.id
    return profile


def store_learned_dialect(settings: AppSettings, config: ProfileConfig, event: DialectLearned) -> bool:
    """Keep the request form ``event`` learned in ``config``; ``False`` (logged) for a field this version does not
    know (the running agent keeps it anyway)."""
    try:
        changes: dict[str, Any] = dict(event.changes)  # keys are ProfileConfig fields (the dialect's)
        settings.update_profile(dataclasses.replace(config, **changes))
    except (TypeError, SettingsError) as error:
        _log.warning("learned dialect %s not stored: %s", event.changes, error)
        return False
    return True
