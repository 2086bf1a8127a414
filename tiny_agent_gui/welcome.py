"""The first-run view, shown while nothing is configured (SPEC §7): a short guided flow.

1. Model servers already running on this computer (Ollama, LM Studio, llama.cpp, vLLM) are looked for first, off the
   GUI thread with a bounded timeout; each one found is offered with its models ("Ollama found at :11434 — use it").
2. Cloud providers: OpenRouter (one key, many models, exact cost), OpenAI or Anthropic open the settings with that
   provider added and its key field focused (the key goes to the system keyring; the model is picked from
   ``/models``).
3. Or open a folder that already has tiny-agent sessions, to inspect them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.local_servers import LocalServer, local_targets
from tiny_agent_core.providers.profiles import PRESETS
from tiny_agent_core.secrets import KeyringStatus
from tiny_agent_gui.settings.folders import FolderChooser, choose_folder
from tiny_agent_gui.status_bar import plural

__all__ = ["CLOUD_CHOICES", "Detector", "LocalServerRow", "WelcomeView"]

Detector = Callable[[], Awaitable[list[LocalServer]]]
"""Looks for local servers (``detect_local_servers`` bound to the app's HTTP client; tests pass stubs)."""

CLOUD_CHOICES = (
    ("openrouter", "Open&Router — one key, many models, exact cost"),
    ("openai", "Open&AI"),
    ("anthropic", "Anthro&pic"),
)
"""The cloud presets offered directly, with their button texts; "Other provider…" opens the full list."""


def _ports() -> str:
    """``Ollama :11434, LM Studio :1234, …``."""
    return ", ".join(f"{PRESETS[preset].name} :{urlsplit(url).port}" for preset, url in local_targets())


class LocalServerRow(QWidget):
    """One found server: what and where, its models, and "Use it"."""

    chosen = Signal(object, str)
    """``(LocalServer, model id)``."""

    def __init__(self, server: LocalServer, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.server = server
        models = plural(len(server.models), "model")
        self.label = QLabel(f"<b>{server.name}</b> found at :{server.port} — {models}")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.addItems(list(server.models))
        self.model_combo.setAccessibleName(f"Model on {server.name}")
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo.setMinimumContentsLength(14)
        editor = self.model_combo.lineEdit()
        if editor is not None:  # the editable combo's text field is what a screen reader lands on
            editor.setAccessibleName(self.model_combo.accessibleName())
            if not server.models:
                editor.setPlaceholderText("type a model name")
        model_label = QLabel("&Model:")
        model_label.setBuddy(self.model_combo)
        self.use_button = QPushButton(f"&Use {server.name}")
        self.use_button.setAccessibleName(f"Use {server.name} at port {server.port}")
        self.use_button.setToolTip(f"Add {server.name} ({server.base_url}) as your provider and start a session")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(model_label)
        row.addWidget(self.model_combo)
        row.addWidget(self.use_button)
        self.use_button.clicked.connect(self._use)
        if editor is not None:
            editor.returnPressed.connect(self._use)

    def _use(self) -> None:
        model = self.model_combo.currentText().strip()
        if model:
            self.chosen.emit(self.server, model)
        else:
            self.model_combo.setFocus()


class WelcomeView(QWidget):
    """The guided first run; also says where keys go and that nothing is sent anywhere else.

    ``keyring`` (from :meth:`KeyStore.status() <tiny_agent_core.secrets.KeyStore.status>`) adds a warning when
    no system keyring is available. ``chooser`` asks for a folder and ``detector`` looks for local servers (tests
    pass stubs; without a detector the local step only offers the settings).
    """

    setupProviderRequested = Signal()
    """The user wants to configure a provider (open the settings dialog on its Providers tab)."""
    presetChosen = Signal(str)
    """A cloud preset id: open the settings with that provider added and its key field focused."""
    localServerChosen = Signal(object, str)
    """``(LocalServer, model id)``: use this server for new sessions."""
    openFolderRequested = Signal(str)
    """The user chose a folder whose ``.tiny-agent/sessions/`` should be listed (the folder's path)."""

    def __init__(
        self,
        keyring: KeyringStatus | None = None,
        parent: QWidget | None = None,
        *,
        chooser: FolderChooser = choose_folder,
        detector: Detector | None = None,
    ) -> None:
        super().__init__(parent)
        self._chooser = chooser
        self._detector = detector
        self._task: asyncio.Task[list[LocalServer]] | None = None
        self.rows: list[LocalServerRow] = []
        self.setAccessibleName("Welcome")

        title = QLabel("<h1>Welcome to tiny-agent desktop</h1>")
        title.setTextFormat(Qt.TextFormat.RichText)
        intro = QLabel(
            "Run a small coding agent against a model on this computer, OpenRouter, OpenAI, Anthropic or any "
            "OpenAI-compatible server, and see every message, tool call and what each request cost. Pick a model to "
            "start:"
        )

        local_heading = QLabel("<b>1. A model server on this computer</b> (no key, no API charge)")
        self.local_status = QLabel()
        self.local_status.setWordWrap(True)  # the list of ports is longer than the page is wide
        self.local_status.setAccessibleName("Local servers")
        self.local_rows = QVBoxLayout()
        self.local_rows.setSpacing(6)
        self.detect_button = QPushButton("&Look again")
        self.detect_button.setAccessibleName("Look for local servers again")
        self.detect_button.setEnabled(detector is not None)
        self.detect_button.clicked.connect(self.start_detection)

        cloud_heading = QLabel("<b>2. Or a cloud provider</b> (your API key goes to the system keyring)")
        self.cloud_buttons: dict[str, QPushButton] = {}
        cloud_row = QHBoxLayout()
        for preset_id, text in CLOUD_CHOICES:
            button = QPushButton(text)
            button.setAccessibleName(text.replace("&", ""))
            button.clicked.connect(lambda _checked=False, preset_id=preset_id: self.presetChosen.emit(preset_id))
            self.cloud_buttons[preset_id] = button
            cloud_row.addWidget(button)
        self.setup_button = QPushButton("&Set up another provider…")
        self.setup_button.setAccessibleName("Set up a provider")
        self.setup_button.setToolTip("DeepSeek, Groq, Mistral, Together, or any OpenAI-compatible base URL")
        cloud_row.addWidget(self.setup_button)
        cloud_row.addStretch(1)

        sessions_heading = QLabel("<b>Or inspect sessions</b> the tiny-agent command line wrote")
        self.open_button = QPushButton("&Open a folder with tiny-agent sessions…")
        self.open_button.setAccessibleName("Open a folder with tiny-agent sessions")
        self.open_button.setToolTip("Inspect sessions written by the tiny-agent CLIs (.tiny-agent/sessions/)")

        self.privacy = QLabel()
        self.privacy.setAccessibleName("Where keys are stored")
        self.show_keyring(keyring)

        column = QWidget()
        column.setMaximumWidth(760)
        inner = QVBoxLayout(column)
        inner.setSpacing(8)
        local_status_row = QHBoxLayout()
        local_status_row.addWidget(self.local_status, 1)
        local_status_row.addWidget(self.detect_button)
        open_row = QHBoxLayout()
        open_row.addWidget(self.open_button)
        open_row.addStretch(1)
        for item in (
            title,
            intro,
            local_heading,
            local_status_row,
            self.local_rows,
            cloud_heading,
            cloud_row,
            sessions_heading,
            open_row,
            self.privacy,
        ):
            if isinstance(item, QLabel):
                item.setWordWrap(True)
                inner.addWidget(item)
            else:
                inner.addLayout(item)
        inner.insertSpacing(inner.indexOf(cloud_heading), 8)
        inner.insertSpacing(inner.indexOf(sessions_heading), 8)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(column, 8)
        row.addStretch(1)
        page = QWidget()
        page_layout = QVBoxLayout(page)
        page_layout.addStretch(1)
        page_layout.addLayout(row)
        page_layout.addStretch(2)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(page)
        scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

        self.setup_button.clicked.connect(self.setupProviderRequested)
        self.open_button.clicked.connect(self.choose_folder)
        self._show_servers(None)

    # -- local servers ---------------------------------------------------------------------------------------

    def show_keyring(self, keyring: KeyringStatus | None) -> None:
        """Say where API keys go, with a warning when ``keyring`` says no system keyring is usable (``None``: not
        known yet; the window asks the key store off the GUI thread, as finding the keyring backend can wait on
        D-Bus)."""
        keys = (
            "API keys are stored only in your system keyring (such as GNOME Keyring, KWallet, the macOS Keychain "
            "or the Windows Credential Locker), never in a file."
        )
        if keyring is not None and not keyring.available:
            keys = (
                f"API keys are stored only in a system keyring, never in a file. {keyring.reason} You can still "
                "supply a key through an environment variable; it is used for that run only and never written anywhere."
            )
        telemetry = "tiny-agent desktop has no telemetry: it talks only to the providers you configure."
        self.privacy.setText(f"{keys} {telemetry}")

    def start_detection(self) -> None:
        """Look for local servers in the background (on the running loop); nothing without a detector or loop."""
        if self._detector is None or (self._task is not None and not self._task.done()):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = asyncio.ensure_future(self.detect())

    async def detect(self) -> list[LocalServer]:
        """Look for local servers now and show what answered (the coroutine tests await)."""
        if self._detector is None:
            return []
        self.detect_button.setEnabled(False)
        self.local_status.setText("Looking for Ollama, LM Studio, llama.cpp and vLLM on this computer…")
        try:
            servers = await self._detector()
        finally:
            self.detect_button.setEnabled(True)
        self._show_servers(servers)
        return servers

    def _show_servers(self, servers: list[LocalServer] | None) -> None:
        for row in self.rows:
            self.local_rows.removeWidget(row)
            row.deleteLater()
        self.rows = []
        if servers is None:
            self.local_status.setText(
                "Not looked yet." if self._detector is not None else "Add a local server in the settings."
            )
            return
        if not servers:
            self.local_status.setText(
                f"No model server answered on the usual ports ({_ports()}). Start one — for example "
                "<code>ollama serve</code> — and look again."
            )
            return
        self.local_status.setText(f"Found {plural(len(servers), 'server')} — choose a model and use it:")
        for server in servers:
            row = LocalServerRow(server)
            row.chosen.connect(self.localServerChosen)
            self.local_rows.addWidget(row)
            self.rows.append(row)
        self.rows[0].use_button.setDefault(True)

    def choose_folder(self) -> None:
        """Ask for a folder and emit :attr:`openFolderRequested` with it (nothing when cancelled)."""
        folder = self._chooser(self, "Open a folder with tiny-agent sessions")
        if folder:
            self.openFolderRequested.emit(folder)
