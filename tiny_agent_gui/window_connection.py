"""The active provider connection as the main window hands it to the session controller, and the active model's
context window.

Plain functions over explicit inputs (the settings, the key store, the :class:`ContextWindows` cache). A context
window the server reported fills in a profile that does not set one. Asking the server happens off the GUI thread,
and so does reading the key for it.
"""

from __future__ import annotations

import dataclasses
import functools

from tiny_agent_core.errors import SettingsError
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_gui.context_window import ContextWindows
from tiny_agent_gui.session_controller import Connection


def active_connection(settings: AppSettings, keys: KeyStore, windows: ContextWindows) -> Connection | None:
    """The active provider profile, model and key, or ``None`` when none is configured; raises
    :class:`SettingsError` (an unusable profile) or ``SecretStoreError`` (its key cannot be read)."""
    config = settings.active()
    if config is None or not config.model:
        return None
    profile = config.provider_profile()
    key = keys.key_for(config)
    window = windows.get(config.id, profile, config.model)
    if profile.context_length is None and window is not None:  # what the server said the window holds
        profile = dataclasses.replace(profile, context_length=window)
    return Connection(profile, config.model, key, config.id)


def ask_context_window(settings: AppSettings, keys: KeyStore, windows: ContextWindows) -> None:
    """Ask the active profile's server for its model's context window (once; off the GUI thread)."""
    config = settings.active()
    if config is None or not config.model:
        return
    try:
        profile = config.provider_profile()
    except SettingsError:
        return
    read_key = functools.partial(keys.key_for, config)  # read off the GUI thread, when asked
    windows.ask(config.id, profile, config.model, read_key)


def active_context_window(settings: AppSettings, windows: ContextWindows) -> int | None:
    """The active model's context window when known (set in its profile, or said by its server)."""
    config = settings.active()
    if config is None or not config.model:
        return None
    try:
        profile = config.provider_profile()
    except SettingsError:
        return None
    return windows.get(config.id, profile, config.model)
