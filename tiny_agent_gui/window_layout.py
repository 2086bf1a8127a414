"""How the main window lays out its panes: the Tab order across them and how the width is shared.

Plain functions over explicit inputs, and :class:`PaneSizing`, which keeps what the user chose: once a divider is
dragged the window's width no longer decides the panes' widths, and once the inspector is toggled (Ctrl+I) it no
longer collapses by itself. The window calls them when it is built and when it is resized.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget

INSPECTOR_COLLAPSE_WIDTH = 900
"""Below this window width the inspector starts hidden (View › Toggle Inspector, Ctrl+I, shows it)."""


def focusable_in_chain_order(pane: QWidget) -> list[QWidget]:
    """``pane`` and its descendants that take focus by Tab, in the focus chain's current order."""
    found: list[QWidget] = []
    widget: QWidget | None = pane
    seen: set[int] = set()
    while widget is not None and shiboken6.getCppPointer(widget)[0] not in seen:
        seen.add(shiboken6.getCppPointer(widget)[0])
        if (widget is pane or pane.isAncestorOf(widget)) and widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
            found.append(widget)
        widget = widget.nextInFocusChain()
    return found


def chain_panes(panes: Iterable[QWidget]) -> None:
    """Make Tab visit ``panes`` in the given order (each pane keeps its own inner order)."""
    chain: list[QWidget] = []
    for pane in panes:
        chain.extend(focusable_in_chain_order(pane))
    for first, second in itertools.pairwise(chain):
        QWidget.setTabOrder(first, second)


def pane_widths(width: int, inspector_shown: bool) -> list[int]:
    """Session list, centre and inspector widths for a window ``width`` wide: the centre gets the most."""
    sessions = max(200, min(320, width * 22 // 100))
    inspector = max(280, min(460, width * 30 // 100)) if inspector_shown else 0
    return [sessions, max(300, width - sessions - inspector), inspector]


class PaneSizing:
    """Shares the window's width between the panes (:func:`pane_widths`) until the user drags a divider; the
    inspector collapses below :data:`INSPECTOR_COLLAPSE_WIDTH` until the user toggles it."""

    def __init__(self, splitter: QSplitter, inspector: QWidget) -> None:
        self._splitter = splitter
        self._inspector = inspector
        self._sized_by_user = False
        self._inspector_toggled = False
        splitter.splitterMoved.connect(self._moved)

    def toggle_inspector(self) -> None:
        """Show or hide the inspector (Ctrl+I); from then on the width no longer hides it."""
        self._inspector_toggled = True
        self._inspector.setVisible(not self._inspector.isVisible())

    def fit(self, width: int) -> None:
        """Size the panes for a window ``width`` wide (unless the user sized them)."""
        if not self._inspector_toggled:
            self._inspector.setVisible(width >= INSPECTOR_COLLAPSE_WIDTH)
        if self._sized_by_user or width <= 0:
            return
        self._splitter.setSizes(pane_widths(width, not self._inspector.isHidden()))

    def _moved(self, _position: int, _index: int) -> None:
        self._sized_by_user = True
