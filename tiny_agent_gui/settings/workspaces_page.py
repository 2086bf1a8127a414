"""The Workspaces tab: the folders scanned for ``.tiny-agent/sessions/``. Changes are applied by the dialog's Save."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from tiny_agent_core.paths import default_workspace
from tiny_agent_core.session.store import sessions_directory
from tiny_agent_core.settings import AppSettings
from tiny_agent_gui.settings.folders import FolderChooser

__all__ = ["WorkspacesPage"]


class WorkspacesPage(QWidget):
    """Staged list of workspace folders."""

    changed = Signal()
    """The list changed (the Tools tab offers these folders)."""

    def __init__(self, settings: AppSettings, chooser: FolderChooser) -> None:
        super().__init__()
        self._chooser = chooser
        self._staged = AppSettings(workspaces=list(settings.workspaces))

        intro = QLabel(
            "tiny-agent desktop lists the sessions in each folder's .tiny-agent/sessions/. The default workspace, "
            f"{default_workspace()}, is always included."
        )
        intro.setWordWrap(True)
        self.list = QListWidget()
        self.list.setAccessibleName("Workspace folders")
        label = QLabel("Fol&ders:")
        label.setBuddy(self.list)
        self.add_button = QPushButton("&Add folder…")
        self.add_button.setAccessibleName("Add a workspace folder")
        self.remove_button = QPushButton("&Remove")
        self.remove_button.setAccessibleName("Remove the selected workspace folder")

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(label)
        layout.addWidget(self.list, 1)
        row = QHBoxLayout()
        row.addWidget(self.add_button)
        row.addWidget(self.remove_button)
        row.addStretch(1)
        layout.addLayout(row)

        self.add_button.clicked.connect(self.add_folder)
        self.remove_button.clicked.connect(self.remove_selected)
        self._show()

    def workspaces(self) -> list[str]:
        """The folders as edited."""
        return list(self._staged.workspaces)

    def add_folder(self) -> None:
        """Ask for a folder and add it."""
        folder = self._chooser(self, "Workspace folder to scan for tiny-agent sessions")
        if folder:
            self._staged.add_workspace(folder)
            self._show()
            self.changed.emit()

    def remove_selected(self) -> None:
        """Stop scanning the selected folder."""
        item = self.list.currentItem()
        if item is not None:
            self._staged.remove_workspace(item.text())
            self._show()
            self.changed.emit()

    def _show(self) -> None:
        self.list.clear()
        for folder in self._staged.workspaces:
            item = QListWidgetItem(folder)
            has_sessions = sessions_directory(Path(folder)).is_dir()
            item.setToolTip("Has tiny-agent sessions" if has_sessions else "No .tiny-agent/sessions/ folder yet")
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(self.list.count() - 1)
        self.remove_button.setEnabled(self.list.count() > 0)
