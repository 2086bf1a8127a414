"""What the main window does in the background, off the GUI thread: indexing workspaces, finding the OS keyring,
reading the active profile's key ahead, and reading the session at the top of the list ahead.

:class:`BackgroundWork` holds the tasks (a task nobody holds may be collected before it ends) and reports through
the window's status bar and banner. Indexings run one after another: they write the same index.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import shiboken6

from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.settings import ProfileConfig
from tiny_agent_gui.window_connection import KeyCache

if TYPE_CHECKING:
    from tiny_agent_gui.main_window import MainWindow

__all__ = ["READ_AHEAD_DELAY_MS", "BackgroundWork"]

READ_AHEAD_DELAY_MS = 1000
"""How long after the window is built the session at the top of the list is read ahead."""


class BackgroundWork:
    """The window's background work (see the module docstring)."""

    def __init__(self, window: MainWindow, keys: KeyCache) -> None:
        self._window = window
        self._keys = keys
        self.indexing: asyncio.Future[None] | None = None
        """The latest indexing (:meth:`index_workspaces`), for tests to await."""
        self.reading_key: asyncio.Future[None] | None = None
        """The latest read of a profile's key (:meth:`read_key_ahead`)."""
        self.finding_keyring: asyncio.Future[None] | None = None
        """The look for a usable OS keyring (:meth:`find_keyring`)."""
        self._tasks: set[asyncio.Future[None]] = set()
        self._key_reads: set[asyncio.Future[None]] = set()

    def index_workspaces(self, folders: list[Path]) -> asyncio.Future[None]:
        """Index ``folders`` in a worker thread (the status bar says so meanwhile), then list what was found and
        name the corrupt files that were skipped; it starts when the indexing before it has ended. Returns the
        work."""
        previous = self.indexing
        window = self._window

        async def work() -> None:
            if previous is not None:
                await asyncio.wait([previous])  # its outcome is its own to report
            corrupt: list[str] = []
            for folder in folders:
                window.statusBar().showMessage(f"Indexing the sessions of {folder}…")
                try:
                    report = await window.controller.workbench.refresh_workspace(folder)
                except (TinyAgentError, OSError) as error:
                    window.show_banner(f"The sessions of {folder} could not be indexed: {error}")
                    continue
                corrupt += [f"{Path(item.path).name} ({item.code} line {item.line})" for item in report.corrupt]
            window.statusBar().clearMessage()
            if corrupt:
                window.show_banner(f"Some session files are corrupt and were skipped: {', '.join(corrupt)}")
            if shiboken6.isValid(window):
                window.sessions.reload()

        task = self.indexing = self._hold(asyncio.ensure_future(work()))
        return task

    def read_key_ahead(self, config: ProfileConfig | None = None) -> None:
        """Read a profile's key (default: the active one's) in a worker thread, so that starting a run or a compare
        does not wait for the keyring."""
        config = config if config is not None else self._window.services.settings.active()
        if config is None:
            return
        finding = self.finding_keyring

        async def work() -> None:
            if finding is not None:  # the keyring backends are loaded once, by the first look
                await asyncio.wait([finding])
            await self._keys.read_ahead(config)

        task = self.reading_key = self._hold(asyncio.ensure_future(work()))
        self._key_reads.add(task)
        task.add_done_callback(self._key_reads.discard)

    def find_keyring(self) -> None:
        """Ask the key store in a worker thread whether a usable OS keyring is there (the first look loads the
        keyring backends, and the Secret Service one asks D-Bus), then let the welcome view say so."""
        window = self._window

        async def work() -> None:
            status = await asyncio.to_thread(window.services.keys.status)
            if shiboken6.isValid(window):
                window.welcome.show_keyring(status)

        self.finding_keyring = self._hold(asyncio.ensure_future(work()))

    def read_first_ahead(self) -> None:
        """Read the session at the top of the list ahead (the one most often opened next), unless one is open."""
        window = self._window
        first = window.sessions.first_listed()
        if first is not None and window.controller.session is None:
            window.controller.warm(first.path)

    def cancel_key_read(self) -> None:
        """The window closes: stop waiting for the keys being read (the worker threads end on their own)."""
        for task in list(self._key_reads):
            task.cancel()

    def _hold(self, task: asyncio.Future[None]) -> asyncio.Future[None]:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
