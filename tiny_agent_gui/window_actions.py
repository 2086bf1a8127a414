"""How the main window makes its actions and menus: every action is a window action (so its shortcut works on
every page) with its shortcut shown in its menu entry.

Plain functions over explicit inputs; which actions exist, and what they do, is the window's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar, QWidget

Shortcut = QKeySequence | QKeySequence.StandardKey | str | None
"""An action's key (``None``: none; the menu entry is its only way in)."""


def add_action(window: QWidget, text: str, shortcut: Shortcut, slot: Callable[[], object]) -> QAction:
    """An action of ``window`` named ``text`` that runs ``slot``, on ``shortcut`` anywhere in the window."""
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    action.triggered.connect(slot)
    window.addAction(action)
    return action


def add_menu(bar: QMenuBar, title: str, actions: Iterable[QAction]) -> QMenu:
    """A menu titled ``title`` at the end of ``bar``, holding ``actions`` in order."""
    menu = bar.addMenu(title)
    for action in actions:
        menu.addAction(action)
    return menu
