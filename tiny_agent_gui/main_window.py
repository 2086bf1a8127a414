"""The main window. Panels (sessions, transcript, inspector) arrive with the window issue."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMainWindow


class MainWindow(QMainWindow):
    """The top-level window of tiny-agent desktop."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("tiny-agent desktop")
        self.resize(1200, 800)
        placeholder = QLabel("tiny-agent desktop — no session open")
        placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        placeholder.setAccessibleName("Welcome")
        self.setCentralWidget(placeholder)
