"""The main window starts offscreen."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from tiny_agent_gui.main_window import MainWindow


def test_main_window_opens(qtbot: QtBot) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.windowTitle() == "tiny-agent desktop"
