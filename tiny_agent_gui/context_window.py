"""The context window of the model in use, asked of its server off the GUI thread and cached.

:class:`ContextWindows` asks the core's :func:`~tiny_agent_core.providers.profiles.context_length` (the profile's
own setting, else llama.cpp's ``/props``, the model list's metadata or Ollama's ``/api/show``, each question
bounded) once per profile, server, model and setting, and emits :attr:`ContextWindows.changed` when an answer
arrives. The window passes the answer to the agent as the profile's context length and shows it beside the last
step's prompt size.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import httpx
from PySide6.QtCore import QObject, Signal

from tiny_agent_core.errors import SecretStoreError
from tiny_agent_core.providers.profiles import ProviderProfile, context_length

__all__ = ["LOOKUP_SECONDS", "ContextWindows"]

_log = logging.getLogger(__name__)

LOOKUP_SECONDS = 12.0
"""The longest a whole lookup may take (each of its up to three questions is bounded by the core too)."""

_Key = tuple[str, str, str, int | None]


class ContextWindows(QObject):
    """Context windows by (settings profile id, base URL, model, profile setting), asked once each."""

    changed = Signal()
    """An answer arrived (known or not)."""

    def __init__(self, http: httpx.AsyncClient | None, *, ask: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._http = http
        self._ask = ask and http is not None
        self._known: dict[_Key, int | None] = {}
        self._tasks: dict[_Key, asyncio.Task[None]] = {}

    @staticmethod
    def _key(profile_id: str, profile: ProviderProfile, model: str) -> _Key:
        return (profile_id, profile.base_url, model, profile.context_length)

    def get(self, profile_id: str, profile: ProviderProfile, model: str) -> int | None:
        """The window in tokens when known (the profile's setting, or a server's earlier answer), else ``None``."""
        if profile.context_length is not None:
            return profile.context_length
        return self._known.get(self._key(profile_id, profile, model))

    def ask(self, profile_id: str, profile: ProviderProfile, model: str, api_key: Callable[[], str | None]) -> None:
        """Ask the server for the window of ``model`` unless known or being asked (or this cache does not ask).

        ``api_key`` reads the key; it is called off the GUI thread, and only when the server is asked (a keyring
        can block)."""
        key = self._key(profile_id, profile, model)
        if not self._ask or profile.context_length is not None or key in self._known or key in self._tasks:
            return
        task = asyncio.ensure_future(self._lookup(key, profile, model, api_key))
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._done(key, done))

    async def _lookup(self, key: _Key, profile: ProviderProfile, model: str, api_key: Callable[[], str | None]) -> None:
        assert self._http is not None
        http = self._http
        try:
            secret = await asyncio.to_thread(api_key)
        except SecretStoreError as error:  # not cached: asked again next time
            _log.info("context window of %s not asked: its key could not be read (%s)", model, error)
            return
        window: int | None = None
        try:
            async with asyncio.timeout(LOOKUP_SECONDS):  # entered before the request's coroutine exists
                window = await context_length(http, profile, model, secret)
        except (TimeoutError, httpx.HTTPError, OSError) as error:
            _log.info("context window of %s at %s not found: %r", model, profile.base_url, error)
        except Exception as error:  # anything else: not cached (asked again next time), and the log says why
            _log.warning("asking the context window of %s failed: %r", model, error, exc_info=True)
            return
        self._known[key] = window

    def _done(self, key: _Key, task: asyncio.Task[None]) -> None:
        self._tasks.pop(key, None)
        if not task.cancelled():
            self.changed.emit()

    def close(self) -> None:
        """Stop lookups in flight (the window is closing)."""
        for task in list(self._tasks.values()):
            task.cancel()

    async def wait(self) -> None:
        """Wait for the lookups in flight (tests)."""
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
