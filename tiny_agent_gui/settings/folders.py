"""Asking the user for a folder, behind a callable so dialogs can be tested without a file dialog."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QFileDialog, QWidget

FolderChooser = Callable[[QWidget, str], str | None]
"""``chooser(parent, title)`` → the chosen folder, or ``None`` when the user cancelled."""


def choose_folder(parent: QWidget, title: str) -> str | None:
    """The platform's folder picker (:class:`QFileDialog`); ``None`` when cancelled."""
    folder = QFileDialog.getExistingDirectory(parent, title)
    return folder or None
