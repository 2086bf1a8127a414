"""The main window: session list (left), transcript and composer (centre), inspector (right), the cost view and the
compare view.

The window wires panes to the :class:`~tiny_agent_gui.session_controller.SessionController` and the core's
display models; it holds no business rules. Every action has a menu entry with a visible shortcut. It keeps its
assembly (panes, menus, signal connections), the session's events and the status bar; the rest is in the
``window_*`` modules it assembles: the answers to a run's events (``window_run_events``), model choosing and
re-runs (``window_models``), the compare view (``window_compare``), pane sizes (``window_layout``), Help
(``window_help``), the banner's ways out of a failure (``window_errors``).
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.agent.commands import starts_a_session
from tiny_agent_core.agent.events import StepFinished
from tiny_agent_core.errors import SecretStoreError, SettingsError
from tiny_agent_core.ledger import IndexConnection, raw_captures
from tiny_agent_core.ledger.index import SessionSummary
from tiny_agent_core.local_servers import LocalServer, detect_local_servers
from tiny_agent_core.mcp.app_servers import AppServers
from tiny_agent_core.mcp.errors import McpConnectError, McpError, connect_advice
from tiny_agent_core.model_catalog import ModelEntry
from tiny_agent_core.paths import default_workspace
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.timeline import Timeline
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_core.usage import Usage
from tiny_agent_core.workbench import OpenedSession
from tiny_agent_gui import window_background
from tiny_agent_gui.about_dialog import AboutDialog
from tiny_agent_gui.approval_dialog import DialogApprover
from tiny_agent_gui.banner import Action, Banner
from tiny_agent_gui.context_window import ContextWindows
from tiny_agent_gui.cost.view import CostView
from tiny_agent_gui.diagnostics import Diagnostics
from tiny_agent_gui.inspector import InspectorPane
from tiny_agent_gui.logs import LOG_FILE_NAME
from tiny_agent_gui.model_picker import ModelCatalog, ModelPicker
from tiny_agent_gui.session_controller import Connection, SessionController
from tiny_agent_gui.sessions.pane import SessionListPane
from tiny_agent_gui.shortcuts_dialog import ShortcutsDialog
from tiny_agent_gui.status_bar import ContextLabel, DelayedMessage, SpeedLabel, UsageLabel, plural
from tiny_agent_gui.transcript import Composer, TranscriptView
from tiny_agent_gui.welcome import WelcomeView
from tiny_agent_gui.window_actions import add_action, add_menu
from tiny_agent_gui.window_background import BackgroundWork
from tiny_agent_gui.window_compare import CompareHost
from tiny_agent_gui.window_connection import KeyCache, active_connection, active_context_window, ask_context_window
from tiny_agent_gui.window_costs import select_session_when_loaded
from tiny_agent_gui.window_help import copy_when_gathered, fill_when_gathered, gather_diagnostics, reveal_log_folder
from tiny_agent_gui.window_layout import PaneSizing, chain_panes
from tiny_agent_gui.window_models import ModelChoice
from tiny_agent_gui.window_run_events import RunEvents
from tiny_agent_gui.window_settings import add_local_server
from tiny_agent_gui.window_status import (
    TITLE_LIMIT,
    latest_recorded_usage,
    model_label,
    session_figures,
    session_title,
)

if TYPE_CHECKING:  # the compare machinery is imported when the compare view is first shown
    from tiny_agent_gui.compare_view import CompareView

TEST_PROMPT = "Say hello in one sentence, then list the files in this folder."
"""Offered in the composer at the end of the first run (it reads the workspace, so it tests a tool call too)."""


@dataclass
class Services:
    """The core objects the window works with; made once per application (see ``app.py``)."""

    client: ProviderClient
    ledger: sqlite3.Connection
    settings: AppSettings
    keys: KeyStore
    tool_settings: ToolSettings
    local_targets: list[tuple[str, str]] | None = None
    """Where the first run looks for local servers (``None``: the presets' ports on 127.0.0.1; tests pass a
    loopback server)."""
    ask_context: bool = True
    """Ask the server for the model's context window when a profile, model or session is chosen (tests whose
    loopback server answers a script of replies turn it off)."""
    mcp_catalog: Path | None = None
    """The app's MCP catalog file (``app_catalog_path()`` in the app); ``None``: no MCP servers."""


@dataclass(frozen=True)
class SettingsRequest:
    """What the settings dialog should show when it opens."""

    profile_id: str | None = None
    """Select this provider profile (and focus its key field)."""
    add_preset: str | None = None
    """Add a profile for this preset, select it and focus its key field."""
    price_for: tuple[str, str] | None = None
    """``(provider, model)``: open the price override for them (from the cost view's "set a price")."""
    mcp: bool = False
    """Open on the MCP tab (from a banner about a server that could not be connected)."""


class MainWindow(QMainWindow):
    """The top-level window of tiny-agent desktop."""

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self._open_settings_hook: Callable[[SettingsRequest], None] | None = None
        self.setWindowTitle("tiny-agent desktop")
        self.resize(1280, 800)
        self.keys = KeyCache(services.keys)
        """The profiles' keys, read ahead off the GUI thread (:mod:`.window_connection`)."""
        self.background = BackgroundWork(self, self.keys)
        """Indexing, and reading the key and the first session ahead, off the GUI thread."""
        self.controller = SessionController(
            client=services.client,
            approver=DialogApprover(self),
            tool_settings=services.tool_settings,
            connection=self.connection,
            ledger=services.ledger,
            price_overrides=self._price_overrides,
            max_steps=lambda: self.services.settings.max_steps,
            auto_compact=lambda: self.services.settings.auto_compact,
            network=self.services.settings.network_allowed,
            mcp=AppServers(services.mcp_catalog, keys=services.keys) if services.mcp_catalog is not None else None,
            parent=self,
        )
        self.catalog = ModelCatalog(
            services.settings,
            services.keys,
            services.client.http if services.client is not None else None,
            self._price_overrides,
            self,
        )
        self.context_windows = ContextWindows(
            services.client.http if services.client is not None else None, ask=services.ask_context, parent=self
        )
        self._last_prompt_tokens: int | None = None
        self._last_window: int | None = None
        self.timeline: Timeline | None = None
        self._closing: asyncio.Future[None] | None = None
        self._shut_down = False
        self._quit_confirmed = False
        self.quit_question: QMessageBox | None = None
        """The question closing the window asks when that would stop work or lose typed text (while it is open)."""
        self._last_step_usage: Usage | None = None
        self.about_dialog: AboutDialog | None = None
        self._diagnostics_task: asyncio.Future[Diagnostics] | None = None
        self.shortcuts_dialog: ShortcutsDialog | None = None
        self._build_panes()
        self.model_choice = ModelChoice(self, save_settings=self._save_settings, model_changed=self._model_changed)
        self.compare = CompareHost(self, self.model_choice, running_changed=self._update_actions)
        self.run_events = RunEvents(
            self,
            open_provider_settings=lambda profile_id: self.open_settings(SettingsRequest(profile_id=profile_id)),
            save_settings=self._save_settings,
            update_status=self._update_status,
            update_actions=self._update_actions,
        )
        self._offers = self.run_events.offers  # reset when a prompt is sent or a session opens
        self._build_menus()
        self._wire()
        self._set_tab_order()
        self._show_start_page()
        self._update_actions()
        QTimer.singleShot(window_background.READ_AHEAD_DELAY_MS, self, self.background.read_first_ahead)

    # -- layout -----------------------------------------------------------------------------------------------

    def _build_panes(self) -> None:
        self.sessions = SessionListPane(self.services.ledger)
        self.transcript = TranscriptView()
        self.transcript.setAccessibleName("Transcript")
        self.composer = Composer()
        self.inspector = InspectorPane(
            load_captures=lambda attempt_id: raw_captures(self.services.ledger, attempt_id),
            load_exchange=self.controller.mcp.exchanges.get if self.controller.mcp is not None else None,
        )

        self.session_title = QLabel("No session open")
        self.session_title.setAccessibleName("Session title")
        self.session_title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        title_font = self.session_title.font()
        title_font.setBold(True)
        self.session_title.setFont(title_font)

        self.banner = Banner()
        self.banner_text = self.banner.text
        self.banner_action = self.banner.buttons[0]
        self.banner_action_2 = self.banner.buttons[1]
        self.banner_close = self.banner.dismiss

        centre = QWidget()
        centre_layout = QVBoxLayout(centre)
        centre_layout.setContentsMargins(0, 0, 0, 0)
        centre_layout.addWidget(self.session_title)
        centre_layout.addWidget(self.banner)
        centre_layout.addWidget(self.transcript, 1)
        centre_layout.addWidget(self.composer)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.sessions)
        self.splitter.addWidget(centre)
        self.splitter.addWidget(self.inspector)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setStretchFactor(2, 0)
        self.splitter.setSizes([320, 700, 420])
        self.pane_sizing = PaneSizing(self.splitter, self.inspector)

        self.welcome = WelcomeView(detector=self._detector())  # the keyring's status comes from a worker thread
        self.cost_view = CostView(self.services.ledger, load=False)

        self.pages = QStackedWidget()
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.splitter)
        self.pages.addWidget(self.cost_view)
        self.setCentralWidget(self.pages)

        self.status_model = QLabel()
        self.status_model.setAccessibleName("Provider and model")
        self.status_speed = SpeedLabel()
        self.status_context = ContextLabel()
        self.status_usage = UsageLabel()
        self.opening_notice = DelayedMessage(self.statusBar())
        """Says a session is being opened when that takes long enough to notice (a long file is read and checked
        whole before it is shown)."""
        self.statusBar().addWidget(self.status_model)
        self.statusBar().addPermanentWidget(self.status_speed)
        self.statusBar().addPermanentWidget(self.status_context)
        self.statusBar().addPermanentWidget(self.status_usage)

    def _detector(self) -> Callable[[], Coroutine[Any, Any, list[LocalServer]]] | None:
        client = self.services.client
        if client is None:  # a window without a provider client (tests of the index alone)
            return None
        targets = self.services.local_targets
        return lambda: detect_local_servers(client.http, targets)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        action = functools.partial(add_action, self)
        self.new_action = action("&New Session", "Ctrl+N", self.new_session)
        self.open_action = action("&Open Folder…", "Ctrl+O", self.open_folder)
        self.import_action = action("&Import Session…", "Ctrl+Shift+O", self.import_session)
        self.import_action.setStatusTip("Bring in a v2 session file from elsewhere (checked before it is copied)")
        self.settings_action = action("&Settings…", "Ctrl+,", lambda: self.open_settings())
        self.quit_action = action("&Quit", "Ctrl+Q", self.close)
        add_menu(
            bar,
            "&File",
            (self.new_action, self.open_action, self.import_action, self.settings_action, self.quit_action),
        )

        self.stop_action = action("&Stop", "Esc", self.stop)
        # Esc everywhere in the window (as the composer says), Ctrl+. as well; enabled only while there is
        # something to stop, so Esc keeps its usual meaning otherwise.
        self.stop_action.setShortcuts([QKeySequence("Esc"), QKeySequence("Ctrl+.")])
        self.compact_action = action("&Compact", "Ctrl+Shift+K", self.controller.compact)
        self.compact_action.setToolTip("Compact the conversation (/compact, Ctrl+Shift+K)")
        self.composer.compact_button.setDefaultAction(self.compact_action)
        self.abandon_action = action("&Abort Unfinished Operation", None, self.controller.abandon)
        self.abandon_action.setStatusTip("Only when an operation was left unfinished and cannot be recovered")
        self.choose_model_action = action("Choose &Model…", "Ctrl+M", self.choose_model)
        self.choose_model_action.setStatusTip("The provider and model of the next request")
        self.compare_action = action("Com&pare Models…", None, self.compare.show)
        self.compare_action.setStatusTip("Run one task on 2–4 models at once, each in its own copy of the workspace")
        add_menu(
            bar,
            "&Session",
            (
                self.stop_action,
                self.compact_action,
                self.abandon_action,
                self.choose_model_action,
                self.compare_action,
            ),
        )

        self.show_sessions_action = action("&Sessions", "Ctrl+1", self.show_sessions)
        self.show_costs_action = action("&Costs", "Ctrl+2", self.show_costs)
        self.show_compare_action = action("Co&mpare", "Ctrl+3", self.compare.show)
        self.find_action = action("&Find Session", "Ctrl+F", self._find)
        # The session pane owns the window-wide Ctrl+F; the menu only shows it (two would be ambiguous).
        self.removeAction(self.find_action)
        self.find_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.inspector_action = action("Toggle &Inspector", "Ctrl+I", self.pane_sizing.toggle_inspector)
        self.focus_prompt_action = action("Focus &Prompt", "Ctrl+L", self.composer.setFocus)
        add_menu(
            bar,
            "&View",
            (
                self.show_sessions_action,
                self.show_costs_action,
                self.show_compare_action,
                self.find_action,
                self.inspector_action,
                self.focus_prompt_action,
            ),
        )

        self.shortcuts_action = action("&Keyboard Shortcuts", "F1", self.show_shortcuts)
        self.about_action = action("&About tiny-agent desktop…", None, self.show_about)
        self.open_log_action = action("Open &Log Folder", None, self.open_log_folder)
        self.copy_diagnostics_action = action("&Copy Diagnostics", None, self.copy_diagnostics)
        add_menu(
            bar, "&Help", (self.shortcuts_action, self.about_action, self.open_log_action, self.copy_diagnostics_action)
        )

    def _wire(self) -> None:
        bridge = self.controller.bridge
        model = self.transcript.transcript_model()
        bridge.text_delta.connect(model.append_text_delta)
        bridge.step_started.connect(lambda _event: model.end_stream())
        bridge.run_finished.connect(lambda _event: model.end_stream())
        bridge.step_finished.connect(self._step_finished)
        bridge.step_started.connect(lambda _event: self.status_speed.step_started())
        bridge.text_delta.connect(lambda _step, text: self.status_speed.received(text))
        bridge.tool_call_delta.connect(lambda event: self.status_speed.received(event.arguments))
        bridge.run_finished.connect(lambda _event: self.status_speed.stopped())
        self.transcript.item_selected.connect(self.inspector.show_item)
        self.inspector.row_requested.connect(self._select_transcript_row)
        self.controller.mcp_failed.connect(self._mcp_failed)
        self.composer.submitted.connect(self._submit)
        self.controller.refused.connect(self.composer.give_back)
        self.composer.cancel_requested.connect(self.stop)
        self.composer.model_requested.connect(self.choose_model)
        self.transcript.rerun_requested.connect(self.model_choice.rerun)
        self.catalog.changed.connect(self._update_status)
        self.context_windows.changed.connect(self._update_status)
        self.controller.session_opened.connect(self._session_opened)
        self.controller.busy_changed.connect(self._busy_changed)
        self.run_events.wire()
        self.sessions.session_activated.connect(self._open_summary)
        self.sessions.session_pointed.connect(lambda summary: self.controller.warm(summary.path))
        self.sessions.new_session_requested.connect(self.new_session)
        self.sessions.cost_view_requested.connect(self.open_in_costs)
        self.sessions.before_delete = self._before_delete
        self.controller.indexed.connect(self.sessions.refresh_session)
        self.cost_view.session_activated.connect(self._open_session_id)
        self.cost_view.set_price_requested.connect(
            lambda provider, model: self.open_settings(SettingsRequest(price_for=(provider, model)))
        )
        self.welcome.setupProviderRequested.connect(lambda: self.open_settings())
        self.welcome.presetChosen.connect(lambda preset: self.open_settings(SettingsRequest(add_preset=preset)))
        self.welcome.localServerChosen.connect(self.use_local_server)
        self.welcome.openFolderRequested.connect(lambda folder: self.add_workspace(Path(folder)))

    def _set_tab_order(self) -> None:
        """Tab visits the panes left to right: session list, notice, transcript, composer, inspector (each pane
        keeps its own inner order)."""
        chain_panes((self.sessions, self.banner, self.transcript, self.composer, self.inspector))

    def _show_start_page(self) -> None:
        settings = self.services.settings
        if settings.load_error is not None:
            self.show_banner(str(settings.load_error))
        ledger = self.services.ledger
        if isinstance(ledger, IndexConnection) and ledger.recovery is not None:
            self.show_banner(ledger.recovery.message)
        if settings.active() is None and not settings.workspaces:
            self.pages.setCurrentWidget(self.welcome)
            self.welcome.start_detection()
            self.background.find_keyring()  # for the welcome view to say whether keys can be saved
        else:
            self.pages.setCurrentWidget(self.splitter)
        self.background.read_key_ahead()
        self._ask_context_window()
        self._update_status()

    # -- actions ----------------------------------------------------------------------------------------------

    def connection(self) -> Connection | None:
        """The active provider profile, model and key, or ``None`` when none is configured."""
        try:
            return active_connection(self.services.settings, self.keys, self.context_windows)
        except (SettingsError, SecretStoreError) as error:
            self.show_banner(str(error))
            return None

    def _ask_context_window(self) -> None:
        ask_context_window(self.services.settings, self.keys, self.context_windows)

    def _price_overrides(self) -> Overrides | None:
        return self.services.settings.price_overrides or None

    def workspace(self) -> Path:
        """Where new sessions go: the first configured workspace, else the default one in the user data folder."""
        folders = self.services.settings.workspaces
        return Path(folders[0]) if folders else default_workspace()

    def new_session(self) -> None:
        """Start a new session in the current workspace."""
        workspace = self.workspace()
        workspace.mkdir(parents=True, exist_ok=True)
        self.pages.setCurrentWidget(self.splitter)
        self.controller.new(workspace)
        self.composer.setFocus()

    def open_folder(self) -> None:
        """Choose a folder; its tiny-agent sessions are indexed and listed."""
        folder = QFileDialog.getExistingDirectory(self, "Open a folder with tiny-agent sessions")
        if folder:
            self.add_workspace(Path(folder))

    def add_workspace(self, folder: Path) -> None:
        """Remember ``folder`` as a workspace, index its sessions, and show them."""
        self.services.settings.add_workspace(folder)
        self._save_settings()
        self.index_workspaces([folder])
        self.pages.setCurrentWidget(self.splitter)

    def index_workspaces(self, folders: list[Path]) -> asyncio.Future[None]:
        """Index ``folders`` in a worker thread, then list what was found (:meth:`BackgroundWork.index_workspaces`)."""
        return self.background.index_workspaces(folders)

    def set_settings_opener(self, opener: Callable[[SettingsRequest], None]) -> None:
        """What the Settings action (and the welcome view's provider buttons, and an error's "Open provider
        settings") opens; it receives what to show first."""
        self._open_settings_hook = opener

    def open_settings(self, request: SettingsRequest | None = None) -> None:
        """Open the settings dialog (providers, keys, tools, workspaces), optionally on one provider."""
        if self._open_settings_hook is not None:
            self._open_settings_hook(request or SettingsRequest())

    def settings_saved(self) -> None:
        """The settings changed: index new workspaces, refresh the lists and the status bar.

        The next request of the open session uses the new settings; an operation in flight finishes on the ones it
        started with, and the status bar says so.
        """
        self.index_workspaces([Path(folder) for folder in self.services.settings.workspaces])
        self.keys.clear()  # a key may have changed
        self.background.read_key_ahead()
        self.catalog.invalidate()
        self.controller.mcp_changed()
        self._ask_context_window()
        self.sessions.reload()
        if self.services.settings.active() is not None and self.pages.currentWidget() is self.welcome:
            self.pages.setCurrentWidget(self.splitter)
            if self.controller.session is None and self.connection() is not None:
                self.new_session()
                self._offer_test_prompt()
        if self.controller.busy and self.controller.settings_changed_since_start():
            self.statusBar().showMessage(
                "The running operation finishes on the previous provider settings; the next request uses the new ones.",
                15000,
            )
        self._update_status()

    def _mcp_failed(self, error: McpError) -> None:
        """An MCP server (or the catalog) could not be used: say why and what to do; the run goes on without it."""
        advice = connect_advice(error) if isinstance(error, McpConnectError) else "Fix it in Settings › MCP."
        self.show_banner(
            f"{error}. The run goes on without its tools. {advice}",
            "MCP Settings",
            lambda: self.open_settings(SettingsRequest(mcp=True)),
        )

    def use_local_server(self, server: LocalServer, model: str) -> None:
        """First run: add ``server`` as the provider for new sessions with ``model``, save, and start a session."""
        add_local_server(self.services.settings, server, model)
        self._save_settings()
        self.settings_saved()
        if self.controller.session is None:
            self.new_session()
            self._offer_test_prompt()
        self.statusBar().showMessage(f"Using {server.name} at :{server.port} with {model}.", 15000)

    def _offer_test_prompt(self) -> None:
        """The first run ends on a test prompt in the composer, selected: Enter sends it, typing replaces it."""
        self.composer.editor.setPlainText(TEST_PROMPT)
        self.composer.editor.selectAll()
        self.composer.editor.setFocus()

    def show_sessions(self) -> None:
        """Show the session list, transcript and inspector."""
        self.pages.setCurrentWidget(self.splitter)

    def import_session(self) -> None:
        """Import a v2 session file into the open session's workspace (else the current one)."""
        self.show_sessions()
        self.sessions.import_dialog(self.session_workspace())

    def open_in_costs(self, session_id: str) -> None:
        """The cost view over all time with one session selected (its figures side by side)."""
        select_session_when_loaded(self.cost_view, session_id)
        self.show_costs()

    def _before_delete(self, summary: SessionSummary) -> str | None:
        """Release a session before it goes to the trash: refused while it runs; closed (and cleared) if open."""
        session = self.controller.session
        if session is None or session.store.session_id != summary.id:
            return None
        if self.controller.busy:
            return "Stop the running operation (Esc) before deleting this session."
        self.controller.close()
        self.timeline = None
        self.transcript.transcript_model().set_timeline(None)
        self.inspector.set_timeline(None)
        self._update_status()
        self._update_actions()
        return None

    def show_costs(self) -> None:
        """Show the cost view."""
        self.cost_view.reload()
        self.pages.setCurrentWidget(self.cost_view)

    def show_banner(
        self,
        text: str,
        action: str | None = None,
        callback: Callable[[], None] | None = None,
        *,
        more: Action | None = None,
    ) -> None:
        """Show a message above the transcript, optionally with one or two action buttons."""
        actions: list[Action] = []
        if action is not None and callback is not None:
            actions.append((action, callback))
        if more is not None:
            actions.append(more)
        self.banner.show_message(text, actions)
        self._update_actions()

    def stop(self) -> None:
        """Stop (Esc, Ctrl+.): cancel a waiting automatic retry, else stop the running compare (on its page, or
        when no session operation runs), else stop the running operation."""
        compare = self.compare.made
        compare_first = not self.controller.busy or (compare is not None and self.pages.currentWidget() is compare)
        if self.banner.cancel_countdown():
            self.statusBar().showMessage("Automatic retry cancelled.", 5000)
        elif compare is not None and compare.running and compare_first:
            compare.cancel()
        else:
            self.controller.cancel()
        self._update_actions()

    def show_shortcuts(self) -> None:
        """Help › Keyboard Shortcuts: every action's keys, and the keys of the composer and the panes."""
        if self.shortcuts_dialog is None or not shiboken6.isValid(self.shortcuts_dialog):
            self.shortcuts_dialog = ShortcutsDialog(self.menuBar(), self)
        self.shortcuts_dialog.show()
        self.shortcuts_dialog.raise_()
        self.shortcuts_dialog.activateWindow()

    @staticmethod
    def with_log_hint(message: str) -> str:
        """``message`` plus where the details are: the log file (Help › Open Log Folder)."""
        return f"{message} (Details in the log: Help › Open Log Folder, {LOG_FILE_NAME}.)"

    # -- help -------------------------------------------------------------------------------------------------

    def diagnostics(self) -> asyncio.Future[Diagnostics]:
        """Gather the diagnostics in a worker thread (the keyring and sandbox checks may block); the settings are
        summarised here, on the GUI thread that owns them."""
        task = gather_diagnostics(self.services.settings)
        self._diagnostics_task = task
        return task

    def show_about(self) -> None:
        """Open the About dialog; its rows fill in once the diagnostics are gathered."""
        if self.about_dialog is not None and shiboken6.isValid(self.about_dialog):
            self.about_dialog.raise_()
            self.about_dialog.activateWindow()
            return
        dialog = AboutDialog(QApplication.windowIcon(), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.copyDiagnosticsRequested.connect(self.copy_diagnostics)
        dialog.openLogFolderRequested.connect(self.open_log_folder)
        self.about_dialog = dialog
        fill_when_gathered(dialog, self.diagnostics())
        dialog.open()

    def open_log_folder(self) -> None:
        """Show the log folder in the file manager (it is created if missing)."""
        problem = reveal_log_folder()
        if problem is not None:
            self.show_banner(problem)

    def copy_diagnostics(self) -> None:
        """Copy the diagnostics (versions, platform, folders, settings without secrets) to the clipboard."""
        copy_when_gathered(self, self.diagnostics())

    def _save_settings(self) -> None:
        try:
            self.services.settings.save()
        except (SettingsError, OSError) as error:
            self.show_banner(f"Settings could not be saved: {error}")

    def _find(self) -> None:
        self.show_sessions()
        self.sessions.focus_search()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Share the width between the panes until the user drags a divider: the transcript gets the most; the
        inspector collapses (Ctrl+I brings it back) below
        :data:`~tiny_agent_gui.window_layout.INSPECTOR_COLLAPSE_WIDTH` (see :class:`PaneSizing`)."""
        super().resizeEvent(event)
        self.pane_sizing.fit(event.size().width())

    # -- session events ---------------------------------------------------------------------------------------

    def _open_summary(self, summary: SessionSummary) -> None:
        if self.controller.open(summary.path) is not None:
            self.opening_notice.announce(
                f"Opening “{summary.title}”: reading and checking its {plural(summary.facts, 'fact')}…"
            )

    def _open_session_id(self, session_id: str) -> None:
        if self.sessions.select_session(session_id):
            self.show_sessions()

    def _session_opened(self, opened: OpenedSession) -> None:
        self.opening_notice.done()
        store = opened.store
        timeline = self.controller.timeline  # built with the session, off the GUI thread
        assert timeline is not None
        self.timeline = timeline
        self.transcript.transcript_model().set_timeline(timeline)
        self.inspector.set_timeline(timeline)
        self.banner.close_notice()  # a waiting retry belongs to the session being left
        if opened.read_only_reason:
            self.show_banner(opened.read_only_reason)
        self.composer.setEnabled(not opened.read_only)
        self.transcript.scrollToBottom()
        self.pages.setCurrentWidget(self.splitter)
        self._last_step_usage = None
        self._last_prompt_tokens = None
        self._last_window = None
        self._offers.reset()
        self.status_speed.clear()
        self._ask_context_window()
        self._update_status()
        self._update_actions()
        self.sessions.reload()
        self.sessions.select_session(store.session_id)

    def _submit(self, prompt: str) -> None:
        self._offers.reset()
        self.banner.cancel_countdown()
        if self.controller.session is None and starts_a_session(prompt):
            self.new_session()
            if self.controller.session is None:  # none could be started (the banner says why): keep what was typed
                self.composer.give_back(prompt)
                return
        self.controller.submit(prompt)

    def _select_transcript_row(self, row: int) -> None:
        """A waterfall row was clicked: select (and show) what it stands for in the transcript too."""
        model = self.transcript.transcript_model()
        index = model.index(model.row_of(row), 0)
        if index.isValid():
            self.transcript.setCurrentIndex(index)
            self.transcript.scrollTo(index)

    def _busy_changed(self, busy: bool) -> None:
        if not busy:
            self.opening_notice.done()  # an open that failed ends here
        self.composer.set_busy(busy)
        session = self.controller.session
        self.sessions.set_running_sessions([session.store.session_id] if busy and session else [])
        self._update_actions(busy)

    def _update_actions(self, busy: bool | None = None) -> None:
        """Enable each session action only when it applies (``busy``: as just reported, while the controller's
        task is still finishing)."""
        session = self.controller.session
        busy = self.controller.busy if busy is None else busy
        writable = session is not None and not session.read_only and not session.store.closed
        unfinished = writable and session is not None and session.store.state.operation.kind != "idle"
        self.stop_action.setEnabled(busy or self.banner.counting_down or self.compare.running)
        self.compact_action.setEnabled(writable and not busy)
        self.abandon_action.setEnabled(unfinished and not busy)

    def _step_finished(self, event: StepFinished) -> None:
        self.inspector.note_step(event)  # before the timeline changes: the inspector may re-show the step
        if self.timeline is not None:
            self.timeline.apply_event(event)
        usage = event.usage
        if usage is not None:
            self._last_step_usage = usage
        self._last_prompt_tokens = usage.prompt if usage is not None else None
        self._last_window = event.context_window
        self.status_speed.step_finished(getattr(event, "latency_ms", None), getattr(event, "ttft_ms", None), usage)
        self._update_status()

    def _update_status(self) -> None:
        config = self.services.settings.active()
        self.status_model.setText(
            f"{config.name} · {config.model}" if config is not None and config.model else "No provider configured"
        )
        self.composer.model_button.show_model(model_label(self.catalog, config))
        session = self.controller.session
        self._show_context()
        if session is None:
            self.status_usage.show_figures(None)
            self.session_title.setText("No session open")
            return
        self.status_usage.show_figures(session_figures(self.timeline, session.store.state.usage, self._last_step_usage))
        title = session_title(self.timeline)
        read_only = " (read-only)" if session.read_only else ""
        self.session_title.setText(f"{title[:TITLE_LIMIT]}{read_only}")
        self.session_title.setToolTip(title[: TITLE_LIMIT * 10])

    def _show_context(self) -> None:
        """The last step's prompt tokens against the context window (the step's own, else the active model's)."""
        window = self._last_window or active_context_window(self.services.settings, self.context_windows)
        prompt = self._last_prompt_tokens
        if prompt is None and self.controller.session is not None:
            recorded = latest_recorded_usage(self.timeline)
            prompt = recorded.prompt if recorded is not None else None
        self.status_context.setVisible(self.controller.session is not None or window is not None)
        self.status_context.show_context(prompt, window)

    # -- models and compare runs -----------------------------------------------------------------------------

    @property
    def model_picker(self) -> ModelPicker | None:
        """The open model picker (one at a time; ``None`` before the first)."""
        return self.model_choice.picker

    def choose_model(self) -> None:
        """Ctrl+M: pick the provider and model of the next request."""
        self.model_choice.choose()

    def use_model(self, entry: ModelEntry) -> None:
        """Use ``entry`` for the next request of the session (and new sessions); see :class:`ModelChoice`."""
        self.model_choice.use(entry)

    def _model_changed(self) -> None:
        """The active model changed: its context window is asked for, the status bar follows."""
        self._last_window = None
        self._ask_context_window()
        self._update_status()

    @property
    def compare_view(self) -> CompareView:
        """The compare view (Ctrl+3), made and added to the pages the first time it is needed."""
        return self.compare.view

    def session_workspace(self) -> Path:
        """The open session's workspace, else where new sessions go (:meth:`workspace`)."""
        session = self.controller.session
        return session.workspace if session is not None else self.workspace()

    # -- shutdown ---------------------------------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:
        """Ask first when closing would stop a run or a compare or lose unsent text (:meth:`quitting_stops`); then
        stop a running operation (durably), stop the session's background processes and release its lock, and
        close.

        The question is opened without a nested event loop (this runs on the qasync loop): the event is ignored, and
        "Quit Anyway" closes the window again."""
        if not self._shut_down and not self._quit_confirmed:
            stops = self.quitting_stops()
            if stops:
                event.ignore()
                self._ask_before_quitting(stops)
                return
        idle = (
            self.controller.session is None
            and not self.controller.busy
            and not self.compare.running
            and not self.controller.mcp_running
        )
        if self._shut_down or idle:
            self.catalog.close()
            self.context_windows.close()
            self.background.cancel_key_read()
            super().closeEvent(event)
            return
        event.ignore()
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shutdown())

    def quitting_stops(self) -> list[str]:
        """What closing the window now would stop or lose, a sentence each (none: it closes without asking)."""
        stops: list[str] = []
        controller = self.controller
        if controller.busy and not controller.opening:
            session = controller.session
            kind = session.store.state.operation.kind if session is not None else "idle"
            what = "A compaction" if kind == "compaction" else "A run"
            stops.append(f"{what} is in progress: quitting stops it; what it has done so far is kept.")
        if self.compare.running:
            stops.append("A compare is in progress: quitting stops its runs; what they have done so far is kept.")
        if self.composer.text().strip():
            stops.append("The composer holds text you have not sent: quitting discards it.")
        return stops

    def _ask_before_quitting(self, stops: list[str]) -> None:
        """Open (not exec) the question whether to quit anyway; Cancel is the default and Esc."""
        box = self.quit_question
        if box is not None and shiboken6.isValid(box) and box.isVisible():  # asked already: bring it back
            box.raise_()
            box.activateWindow()
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Quit tiny-agent desktop?", "\n\n".join(stops), parent=self)
        quit_anyway = box.addButton("&Quit Anyway", QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        quit_anyway.clicked.connect(self._quit_anyway)
        self.quit_question = box
        box.open()

    def _quit_anyway(self) -> None:
        self._quit_confirmed = True
        self.close()

    async def _shutdown(self) -> None:
        compare = self.compare.made
        if compare is not None and compare.running:
            compare.cancel()
            await compare.wait()
        if self.controller.busy:
            self.controller.cancel()
            await self.controller.wait_idle()
        await self.controller.aclose()
        self._shut_down = True
        if shiboken6.isValid(self):  # the widget may have been deleted meanwhile (e.g. by its owner)
            self.close()
