"""Garbage collection on the GUI thread only.

Python's cyclic garbage collector runs in whichever thread happens to allocate when a threshold is crossed: a tool
worker, the HTTP client, a timer thread. If it then frees a cycle that holds a Qt object, the C++ destructor runs in
that thread, cannot unregister the object's timers from there, and a later timer event reaches freed memory — a
segfault far from the cause (reproduced in the GUI tests under CPU load). This is the known remedy for Qt bindings:
switch automatic collection off and collect from a timer on the GUI thread, by generation, as the thresholds say.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


class GuiThreadCollector(QObject):
    """Disables automatic garbage collection and runs it from a GUI-thread timer instead (``interval_ms``)."""

    def __init__(self, parent: QObject | None = None, *, interval_ms: int = 500) -> None:
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> None:
        """Collect the oldest generation whose allocation count passed its threshold (as the automatic GC would)."""
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > self._thresholds[generation]:
                gc.collect(generation)
                return

    def stop(self) -> None:
        """Give collection back to Python (at shutdown), after one full collection here."""
        self._timer.stop()
        gc.collect()
        gc.enable()
