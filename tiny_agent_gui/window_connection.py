"""The active provider connection as the main window hands it to the session controller, and the active model's
context window.

Plain functions over explicit inputs (the settings, the keys, the :class:`ContextWindows` cache). A context
window the server reported fills in a profile that does not set one. Asking the server happens off the GUI thread,
and so does reading the key for it.

Keys come through a :class:`KeyCache`: reading the OS keyring is a D-Bus call that can take seconds (a locked
keyring asks to be unlocked), so the window reads the active profile's key ahead, in a worker thread, when it
starts and whenever the settings are saved, and the GUI thread finds it read when a run starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import threading

from tiny_agent_core.errors import SecretStoreError, SettingsError
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_gui.context_window import ContextWindows
from tiny_agent_gui.session_controller import Connection

_log = logging.getLogger(__name__)


class KeyCache:
    """The keys of the settings' profiles as the key store gave them, kept until :meth:`clear` (the window clears it
    when the settings are saved: a key may have changed). Thread-safe; a key that could not be read is not kept."""

    def __init__(self, keys: KeyStore) -> None:
        self._keys = keys
        self._known: dict[tuple[str, str | None], str | None] = {}
        self._lock = threading.Lock()

    def key_for(self, config: ProfileConfig) -> str | None:
        """The profile's key (keyring, else its environment variable), read now unless read before; raises
        ``SecretStoreError`` when it cannot be read."""
        name = (config.id, config.key_env)
        with self._lock:
            if name in self._known:
                return self._known[name]
        key = self._keys.key_for(config)
        with self._lock:
            self._known[name] = key
        return key

    async def read_ahead(self, config: ProfileConfig) -> None:
        """Read ``config``'s key in a worker thread (a failure is for the run to report)."""
        try:
            await asyncio.to_thread(self.key_for, config)
        except SecretStoreError as error:
            _log.info("the API key of %s could not be read ahead: %s", config.id, error)

    def clear(self) -> None:
        """Forget every key read."""
        with self._lock:
            self._known.clear()


def active_connection(settings: AppSettings, keys: KeyCache, windows: ContextWindows) -> Connection | None:
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


def ask_context_window(settings: AppSettings, keys: KeyCache, windows: ContextWindows) -> None:
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
