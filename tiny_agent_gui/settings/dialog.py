"""The settings dialog: Providers, Tools, Workspaces, Prices and (given the app's MCP catalog file) MCP tabs; Save
applies everything, Cancel nothing.

SPEC §7 (settings) and §4 (price overrides); issue #13 (MCP servers).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTabWidget, QVBoxLayout, QWidget

from tiny_agent_core.errors import SecretStoreError, TinyAgentError
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.settings.calls import ProviderCalls
from tiny_agent_gui.settings.folders import FolderChooser, choose_folder
from tiny_agent_gui.settings.mcp_page import FileChooser, McpPage, Probe, choose_file, probe_in_thread
from tiny_agent_gui.settings.prices_page import PricesPage
from tiny_agent_gui.settings.providers_page import ProvidersPage
from tiny_agent_gui.settings.tools_page import ToolsPage
from tiny_agent_gui.settings.workspaces_page import WorkspacesPage

__all__ = ["SettingsDialog"]

_log = logging.getLogger(__name__)

Writes = list[Callable[[], None]]
"""Keyring calls staged by a save, run in order in a worker thread."""


class SettingsDialog(QDialog):
    """Edits ``settings``, ``tool_settings`` and the keys in ``key_store``; nothing changes until Save.

    Save validates, writes the settings file, applies tool permission changes, stores typed keys in the keyring (only
    there, from a worker thread), emits :attr:`settingsSaved` and closes. A failure is shown in the dialog, which
    stays open.
    Save is disabled while a cell of the Prices tab is invalid.
    ``calls`` fetches models and tests connections (:meth:`ProviderCalls.over_http` in the app, stubs in tests);
    ``chooser`` asks for folders. ``mcp_catalog`` (the app's MCP catalog file) adds the MCP tab, whose Test runs
    ``mcp_probe`` and whose import asks ``file_chooser`` for a file.
    """

    PROVIDERS, TOOLS, WORKSPACES, PRICES, MCP = 0, 1, 2, 3, 4
    """Tab indexes for :meth:`show_tab`."""

    settingsSaved = Signal()
    """Everything was written; re-read :class:`AppSettings` consumers (active profile, workspaces…)."""

    def __init__(
        self,
        settings: AppSettings,
        tool_settings: ToolSettings,
        key_store: KeyStore,
        calls: ProviderCalls,
        parent: QWidget | None = None,
        *,
        chooser: FolderChooser = choose_folder,
        mcp_catalog: Path | None = None,
        mcp_probe: Probe = probe_in_thread,
        file_chooser: FileChooser = choose_file,
    ) -> None:
        super().__init__(parent)
        self.saving: asyncio.Future[None] | None = None
        """The keyring writes of a save, while they run (:meth:`save`)."""
        self.settings = settings
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self.resize(860, 560)

        self.providers = ProvidersPage(settings, key_store, calls)
        self.workspaces = WorkspacesPage(settings, chooser)
        self.tools = ToolsPage(tool_settings, self.workspaces.workspaces, chooser, settings)
        self.workspaces.changed.connect(self.tools.refresh_workspaces)
        self.prices = PricesPage(settings)
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Settings sections")
        self.tabs.addTab(self.providers, "&Providers")
        self.tabs.addTab(self.tools, "T&ools")
        self.tabs.addTab(self.workspaces, "&Workspaces")
        self.tabs.addTab(self.prices, "Pr&ices")
        self.mcp: McpPage | None = None
        """The MCP tab (``None`` without ``mcp_catalog``)."""
        if mcp_catalog is not None:
            self.mcp = McpPage(mcp_catalog, key_store, tool_settings, probe=mcp_probe, chooser=file_chooser)
            self.tabs.addTab(self.mcp, "&MCP")

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setAccessibleName("Settings problem")
        if settings.load_error is not None:
            self.error_label.setText(str(settings.load_error))
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        save.setText("&Save (Ctrl+S)")
        save.setAccessibleName("Save settings")
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName("Cancel")
        QShortcut(QKeySequence(QKeySequence.StandardKey.Save), self).activated.connect(self.save)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.prices.problemChanged.connect(self._show_price_problem)
        self._show_price_problem(self.prices.problem() or "")

        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

    def show_tab(self, index: int) -> None:
        """Select a tab (:attr:`PROVIDERS`, :attr:`TOOLS`, :attr:`WORKSPACES`, :attr:`PRICES`, :attr:`MCP`)."""
        self.tabs.setCurrentIndex(index)

    def show_provider(self, profile_id: str) -> None:
        """Open on one provider's settings with its API key field focused (after a 401/403)."""
        self.show_tab(self.PROVIDERS)
        self.providers.select(profile_id)
        self.providers.focus_key()

    def add_provider(self, preset_id: str) -> None:
        """Open with a new profile for ``preset_id`` added and its API key field focused (the first run)."""
        self.show_tab(self.PROVIDERS)
        self.providers.add_profile(preset_id)
        self.providers.focus_key()

    def price_for(self, provider: str, model: str) -> None:
        """Open on the Prices tab at the override for ``provider`` and ``model`` (added when missing), the cursor in
        its input rate (the cost view's "set a price →")."""
        self.show_tab(self.PRICES)
        self.prices.prefill(provider, model)

    def save(self) -> bool:
        """Apply every staged change. On a failure show why, keep the dialog open and return ``False``; else return
        ``True``: all is written, or the keyring writes run in a worker thread, saying so, and the dialog closes
        (or says why not) when they end (:meth:`wait_saved`)."""
        if self.saving is not None:
            return True  # Ctrl+S again while the keys are being written
        staged = AppSettings(
            profiles=self.providers.profiles(),
            active_profile=self.providers.active_id(),
            workspaces=self.workspaces.workspaces(),
        )
        try:
            staged.validate()
        except TinyAgentError as error:
            return self._fail(str(error))
        try:
            price_overrides = self.prices.overrides()
        except ValueError as error:
            self.show_tab(self.PRICES)
            return self._fail(f"Fix the prices first: {error}")
        self.settings.profiles = staged.profiles
        self.settings.active_profile = staged.active_profile
        self.settings.workspaces = staged.workspaces
        self.settings.price_overrides = price_overrides
        self.settings.max_steps = self.tools.max_steps()
        self.settings.auto_compact = self.tools.auto_compact()
        self.settings.offline_workspaces = self.tools.offline_workspaces()
        try:
            self.settings.save()
        except (TinyAgentError, OSError) as error:
            return self._fail(f"The settings could not be saved: {error}")
        try:
            self.tools.apply()
        except OSError as error:
            return self._fail(f"The tool permissions could not be saved: {error}")
        key_writes = self.providers.key_writes()
        token_writes = self.mcp.token_writes() if self.mcp is not None else []
        token_deletes = self.mcp.token_deletes() if self.mcp is not None else []
        if not key_writes and not token_writes and not token_deletes:
            return self._finish()
        self.saving = asyncio.ensure_future(self._write_keys(key_writes, token_writes, token_deletes))
        return True

    async def wait_saved(self) -> None:
        """Wait until the keyring writes of a save have ended (tests)."""
        if self.saving is not None:
            await self.saving

    def reject(self) -> None:
        """Cancel, Escape or the window's close button: not while keys are being written (nothing could stop that)."""
        if self.saving is None:
            super().reject()

    async def _write_keys(self, key_writes: Writes, token_writes: Writes, token_deletes: Writes) -> None:
        """The keyring writes of a save, in a worker thread (the keyring may wait on D-Bus or an unlock prompt), with
        the dialog's content and buttons disabled meanwhile (an edit made then would be lost); then the rest of the
        save, or why it stopped. A removed MCP server's token is deleted only once the catalog no longer names it.

        When a write fails the dialog stays open saying so, and Save tries again; what was written by then (the
        settings file, the tool permissions, maybe the catalog) is in effect, so :attr:`settingsSaved` is emitted
        for the window to re-read it."""
        self.tabs.setEnabled(False)
        self.buttons.setEnabled(False)
        self.error_label.setText("Saving the keys in the system keyring…")
        try:
            if await self._keys_and_catalog(key_writes, token_writes, token_deletes):
                self._close_saved()
            else:
                self.settingsSaved.emit()
        finally:
            self.saving = None
            self.tabs.setEnabled(True)
            self.buttons.setEnabled(True)

    async def _keys_and_catalog(self, key_writes: Writes, token_writes: Writes, token_deletes: Writes) -> bool:
        """The writes of :meth:`_write_keys` in their order; whether all succeeded (else the dialog says why)."""
        if not await self._in_thread(key_writes, "The settings were saved, but an API key was not"):
            return False
        self.providers.keys_written()
        if not await self._in_thread(token_writes, "The other settings were saved, but the MCP settings were not"):
            self.show_tab(self.MCP)
            return False
        if not self._apply_mcp():
            return False
        if not await self._in_thread(token_deletes, "The settings were saved, but a removed MCP token was not deleted"):
            return False
        if self.mcp is not None:
            self.mcp.tokens_deleted()
        return True

    async def _in_thread(self, writes: Writes, failure: str) -> bool:
        try:
            await asyncio.to_thread(_run_all, writes)
        except Exception as error:  # SecretStoreError, ValueError, or whatever else a keyring backend raises
            if not isinstance(error, SecretStoreError | ValueError):
                _log.exception("keyring write failed")
            return self._fail(f"{failure}: {error}")
        return True

    def _finish(self) -> bool:
        """The save when nothing goes to the keyring."""
        return self._apply_mcp() and self._close_saved()

    def _apply_mcp(self) -> bool:
        """The MCP catalog and permissions (after the Tools tab: its revocations must not undo a permission granted
        here)."""
        if self.mcp is not None:
            try:
                self.mcp.apply()
            except (TinyAgentError, ValueError, OSError) as error:
                self.show_tab(self.MCP)
                return self._fail(f"The other settings were saved, but the MCP settings were not: {error}")
        return True

    def _close_saved(self) -> bool:
        self.error_label.clear()
        self.settingsSaved.emit()
        self.accept()
        return True

    def done(self, result: int) -> None:
        """Close, stopping any fetch or connection test still running."""
        self.providers.cancel_tasks()
        if self.mcp is not None:
            self.mcp.cancel_tasks()
        super().done(result)

    def _show_price_problem(self, problem: str) -> None:
        """Save stays disabled (its tooltip says why) while a price cell is invalid."""
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        save.setEnabled(not problem)
        save.setToolTip(f"Fix the prices first: {problem}" if problem else "")

    def _fail(self, message: str) -> bool:
        self.error_label.setText(message)
        return False


def _run_all(writes: Writes) -> None:
    for write in writes:
        write()
