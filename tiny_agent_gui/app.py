"""Application bootstrap: QApplication + qasync event loop + the main window."""

from __future__ import annotations

import asyncio
import sys

import qasync
from PySide6.QtWidgets import QApplication

from tiny_agent_gui.main_window import MainWindow


async def _run_until_quit(app: QApplication) -> None:
    window = MainWindow()
    window.show()
    quitting = asyncio.Event()
    app.aboutToQuit.connect(quitting.set)
    await quitting.wait()


def main() -> int:
    """Entry point of the ``tiny-agent-gui`` script."""
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("tiny-agent desktop")
    app.setOrganizationName("tiny-agent")
    qasync.run(_run_until_quit(app))
    return 0
