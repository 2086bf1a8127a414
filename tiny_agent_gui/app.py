"""Application bootstrap: QApplication, the qasync event loop, the core services, the main window.

The command line is parsed by :mod:`tiny_agent_gui.launcher` (which checks the system and sets up the log before
Qt starts); :func:`run` starts the window: ``--workspace`` adds a folder with tiny-agent sessions; ``--screenshot``
renders the window once it is painted, saves it and quits (for the README, the bundle smoke test and for checking
the window under Xvfb or offscreen).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import connect
from tiny_agent_core.mcp.app_catalog import app_catalog_path
from tiny_agent_core.paths import config_dir, default_workspace
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.event_loop import HookedQEventLoop
from tiny_agent_gui.garbage import GuiThreadCollector
from tiny_agent_gui.logs import log_file
from tiny_agent_gui.main_window import MainWindow, Services, SettingsRequest
from tiny_agent_gui.settings import ProviderCalls, SettingsDialog

_log = logging.getLogger(__name__)

ICON = Path(__file__).resolve().parent / "resources" / "tiny-agent-desktop.svg"
"""The application icon (scalable, so it is sharp at every HiDPI scale)."""


def make_services(client: ProviderClient) -> Services:
    """The core objects of one application run (raises LedgerError when the index cannot be opened). The index is
    as the last run left it: :func:`index_at_start` brings it up to date once the window is shown."""
    settings = AppSettings.load()
    ledger = connect()
    return Services(
        client, ledger, settings, KeyStore(), ToolSettings.load(config_dir()), mcp_catalog=app_catalog_path()
    )


def index_at_start(window: MainWindow) -> asyncio.Future[None]:
    """Bring the index up to date with every workspace and the default one, in a worker thread once the window is
    shown (the list shows the last run's index meanwhile, then what changed)."""
    settings = window.services.settings
    return window.index_workspaces([*(Path(folder) for folder in settings.workspaces), default_workspace()])


def attach_settings_dialog(window: MainWindow) -> None:
    """Make the window's Settings action open the (non-modal-blocking) settings dialog."""

    def open_dialog(request: SettingsRequest) -> None:
        services = window.services
        dialog = SettingsDialog(
            services.settings,
            services.tool_settings,
            services.keys,
            ProviderCalls.over_http(services.client.http),
            parent=window,
            mcp_catalog=services.mcp_catalog,
        )
        dialog.settingsSaved.connect(window.settings_saved)
        dialog.open()
        if request.add_preset is not None:
            dialog.add_provider(request.add_preset)
        elif request.profile_id is not None:
            dialog.show_provider(request.profile_id)
        elif request.price_for is not None:
            dialog.price_for(*request.price_for)
        elif request.mcp and dialog.mcp is not None:
            dialog.show_tab(dialog.MCP)

    window.set_settings_opener(open_dialog)


def _install_excepthook(window: MainWindow) -> None:
    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        _log.error("unhandled error", exc_info=(kind, value, tb))
        text = "".join(traceback.format_exception_only(kind, value)).strip()
        window.show_banner(window.with_log_hint(f"Unexpected error (please report it): {text}"))

    sys.excepthook = hook


async def _run(app: QApplication, args: argparse.Namespace) -> int:
    async with ProviderClient() as client:
        try:
            services = make_services(client)
        except LedgerError as error:
            _log.error("the index cannot be opened: %s", error)
            QMessageBox.critical(None, "tiny-agent desktop", f"{error}\n\nThe log file: {log_file()}")
            return 1
        window = MainWindow(services)
        attach_settings_dialog(window)
        _install_excepthook(window)
        window.show()
        index_at_start(window)
        if args.workspace is not None:
            window.add_workspace(args.workspace.resolve())
        if args.screenshot is not None:
            await asyncio.sleep(0.8)
            app.processEvents()
            window.grab().save(str(args.screenshot))
            window.close()
            return 0
        quitting = asyncio.Event()
        app.aboutToQuit.connect(quitting.set)
        app.lastWindowClosed.connect(quitting.set)
        await quitting.wait()
        services.ledger.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiny-agent-gui`` script (the same as :func:`tiny_agent_gui.launcher.main`)."""
    from tiny_agent_gui.launcher import main as launch

    return launch(argv)


def run(args: argparse.Namespace) -> int:
    """Start Qt and the window for the parsed command line (see :func:`tiny_agent_gui.launcher.parser`)."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("tiny-agent desktop")
    app.setOrganizationName("tiny-agent")
    app.setDesktopFileName("tiny-agent-desktop")
    app.setWindowIcon(QIcon(str(ICON)))
    collector = GuiThreadCollector(app)
    loop = HookedQEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        return int(loop.run_until_complete(_run(app, args)))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        collector.stop()


if __name__ == "__main__":
    sys.exit(main())
