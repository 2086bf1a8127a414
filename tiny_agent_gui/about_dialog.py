"""The About dialog: version, price table, where settings, data, sessions and the log live, and whether the
keyring and the bash sandbox are available (Help › About).

The dialog only shows a :class:`~tiny_agent_gui.diagnostics.Diagnostics`; the window gathers it in a worker
thread (the keyring and sandbox checks can block) and hands it over with :meth:`AboutDialog.set_diagnostics`.
Until then the rows say "checking…".
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_gui.diagnostics import ROW_LABELS, Diagnostics

__all__ = ["AboutDialog"]

_PENDING = "checking…"


class AboutDialog(QDialog):
    """What this installation is and where its files are."""

    copyDiagnosticsRequested = Signal()
    """The user asked to copy the diagnostics to the clipboard."""
    openLogFolderRequested = Signal()
    """The user asked to open the log folder."""

    def __init__(self, icon: QIcon | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About tiny-agent desktop")
        self.setMinimumWidth(640)
        layout = QVBoxLayout(self)

        header = QHBoxLayout()
        if icon is not None and not icon.isNull():
            picture = QLabel()
            picture.setPixmap(icon.pixmap(64, 64))
            header.addWidget(picture, 0, Qt.AlignmentFlag.AlignTop)
        title = QLabel(
            "<b>tiny-agent desktop</b><br>Run a small coding agent against LLM APIs<br>and see every message, "
            "tool call and what it cost."
        )
        header.addWidget(title, 1)
        layout.addLayout(header)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.values: dict[str, QLabel] = {}
        for label in ROW_LABELS:
            value = QLabel(_PENDING)
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setAccessibleName(label)
            form.addRow(f"{label}:", value)
            self.values[label] = value
        layout.addLayout(form)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy Diagnostics")
        self.copy_button.setEnabled(False)
        self.log_button = QPushButton("Open Log Folder")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.log_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.copy_button.clicked.connect(self.copyDiagnosticsRequested)
        self.log_button.clicked.connect(self.openLogFolderRequested)
        layout.addWidget(buttons)

    def set_diagnostics(self, diagnostics: Diagnostics) -> None:
        """Show ``diagnostics`` (replacing "checking…")."""
        for label, value in diagnostics.rows():
            widget = self.values.get(label)
            if widget is not None:
                widget.setText(value)
        self.copy_button.setEnabled(True)
        self._fit_height()

    def set_failed(self, reason: str) -> None:
        """The diagnostics could not be gathered: say so in the rows still pending."""
        for widget in self.values.values():
            if widget.text() == _PENDING:
                widget.setText(f"unknown ({reason})")
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow to the height the wrapped texts need at the current width (``adjustSize`` would measure the
        wrapped labels at their minimum width and leave gaps)."""
        layout = self.layout()
        if layout is None:
            return
        layout.activate()
        self.resize(self.width(), max(self.height(), layout.totalHeightForWidth(self.width())))
