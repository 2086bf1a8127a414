"""The main window's Help menu work: gathering the diagnostics off the GUI thread, showing them in the About
dialog or copying them, and opening the log folder.

Plain functions over explicit inputs. The settings are summarised on the GUI thread that owns them; the rest of
the gathering (the keyring and sandbox checks may block) runs in a worker thread. A dialog or window deleted
before the diagnostics arrive is left alone.
"""

from __future__ import annotations

import asyncio
import logging

import PySide6
import shiboken6
from PySide6.QtCore import QUrl, qVersion
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMainWindow

from tiny_agent_core.paths import log_dir
from tiny_agent_core.settings import AppSettings
from tiny_agent_gui.about_dialog import AboutDialog
from tiny_agent_gui.diagnostics import Diagnostics, collect, settings_summary

_log = logging.getLogger(__name__)


def gather_diagnostics(settings: AppSettings) -> asyncio.Future[Diagnostics]:
    """Start gathering the diagnostics: ``settings`` summarised here, the rest in a worker thread."""
    summary = settings_summary(settings)
    toolkit = f"{qVersion()} (PySide6 {PySide6.__version__})"
    return asyncio.get_event_loop().run_in_executor(None, collect, summary, toolkit)


def fill_when_gathered(dialog: AboutDialog, task: asyncio.Future[Diagnostics]) -> None:
    """Fill ``dialog``'s rows once ``task`` is done (or say why they could not be gathered)."""

    def done(future: asyncio.Future[Diagnostics]) -> None:
        if not shiboken6.isValid(dialog):
            return
        error = future.exception() if not future.cancelled() else None
        if future.cancelled() or error is not None:
            _log.warning("gathering diagnostics failed: %s", error)
            dialog.set_failed(str(error or "cancelled"))
        else:
            dialog.set_diagnostics(future.result())

    task.add_done_callback(done)


def copy_when_gathered(window: QMainWindow, task: asyncio.Future[Diagnostics]) -> None:
    """Copy the diagnostics to the clipboard once ``task`` is done, and say so in ``window``'s status bar."""

    def done(future: asyncio.Future[Diagnostics]) -> None:
        if future.cancelled() or future.exception() is not None:
            _log.warning("gathering diagnostics failed: %s", None if future.cancelled() else future.exception())
            return
        if shiboken6.isValid(window):
            QGuiApplication.clipboard().setText(future.result().as_text())
            window.statusBar().showMessage("Diagnostics copied to the clipboard", 5000)

    task.add_done_callback(done)


def reveal_log_folder() -> str | None:
    """Show the log folder in the file manager (it is created if missing); what went wrong, else ``None``."""
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"The log folder {folder} cannot be created: {error}"
    if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
        return f"No file manager could open the log folder: {folder}"
    return None
