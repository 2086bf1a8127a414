"""The first-run view, shown while nothing is configured (SPEC §7): set up a provider, or open sessions to inspect."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from tiny_agent_core.secrets import KeyringStatus
from tiny_agent_gui.settings.folders import FolderChooser, choose_folder

__all__ = ["WelcomeView"]


class WelcomeView(QWidget):
    """Two ways in — configure a provider, or open a folder that already has ``.tiny-agent/sessions/`` — and a
    plain statement of where keys go and that nothing is sent anywhere else.

    ``keyring`` (from :meth:`KeyStore.status() <tiny_agent_core.secrets.KeyStore.status>`) adds a warning when
    no system keyring is available. ``chooser`` asks for the folder (tests pass a stub).
    """

    setupProviderRequested = Signal()
    """The user wants to configure a provider (open the settings dialog on its Providers tab)."""
    openFolderRequested = Signal(str)
    """The user chose a folder whose ``.tiny-agent/sessions/`` should be listed (the folder's path)."""

    def __init__(
        self,
        keyring: KeyringStatus | None = None,
        parent: QWidget | None = None,
        *,
        chooser: FolderChooser = choose_folder,
    ) -> None:
        super().__init__(parent)
        self._chooser = chooser
        self.setAccessibleName("Welcome")

        title = QLabel("<h1>Welcome to tiny-agent desktop</h1>")
        title.setTextFormat(Qt.TextFormat.RichText)
        intro = QLabel(
            "Run a small coding agent against OpenAI, OpenRouter or any OpenAI-compatible server, and see every "
            "message, tool call and what each request cost."
        )
        self.setup_button = QPushButton("&Set up a provider…")
        self.setup_button.setAccessibleName("Set up a provider")
        self.setup_button.setToolTip("Choose a provider, its model and API key")
        self.setup_button.setDefault(True)
        self.open_button = QPushButton("&Open a folder with tiny-agent sessions…")
        self.open_button.setAccessibleName("Open a folder with tiny-agent sessions")
        self.open_button.setToolTip("Inspect sessions written by the tiny-agent CLIs (.tiny-agent/sessions/)")

        keys = (
            "API keys are stored only in your system keyring (such as GNOME Keyring, KWallet, the macOS Keychain "
            "or the Windows Credential Locker), never in a file."
        )
        if keyring is not None and not keyring.available:
            keys = (
                f"API keys are stored only in a system keyring, never in a file. {keyring.reason} You can still "
                "supply a key through an environment variable; it is used for that run only and never written anywhere."
            )
        self.privacy = QLabel(
            keys + " tiny-agent desktop has no telemetry: it talks only to the providers you configure."
        )
        self.privacy.setAccessibleName("Where keys are stored")

        column = QWidget()
        column.setMaximumWidth(640)
        inner = QVBoxLayout(column)
        inner.setSpacing(12)
        for widget in (title, intro, self.setup_button, self.open_button, self.privacy):
            if isinstance(widget, QLabel):
                widget.setWordWrap(True)
            inner.addWidget(widget)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(column, 4)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(2)

        self.setup_button.clicked.connect(self.setupProviderRequested)
        self.open_button.clicked.connect(self.choose_folder)

    def choose_folder(self) -> None:
        """Ask for a folder and emit :attr:`openFolderRequested` with it (nothing when cancelled)."""
        folder = self._chooser(self, "Open a folder with tiny-agent sessions")
        if folder:
            self.openFolderRequested.emit(folder)
