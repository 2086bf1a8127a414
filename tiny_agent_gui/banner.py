"""The notice above the transcript: a message, up to two actions, Dismiss, and an optional live countdown.

A countdown (a rate-limited request waiting for ``Retry-After``) rewrites the message every second and calls its
callback when it reaches zero; Dismiss or :meth:`Banner.cancel_countdown` stops it without calling back.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

__all__ = ["Action", "Banner"]

Action = tuple[str, Callable[[], None]]
"""A button's text and what it does (the banner hides first, unless a countdown is running)."""


class Banner(QWidget):
    """A message with actions; hidden until :meth:`show_message`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Notice")
        # The message above its buttons: it keeps the pane's whole width in a narrow centre pane.
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(4)
        row = QHBoxLayout()
        row.addStretch(1)
        self.text = QLabel()
        """The message."""
        self.text.setWordWrap(True)
        self.text.setAccessibleName("Notice text")
        self.text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.buttons = [QPushButton(), QPushButton()]
        """The action buttons (hidden when unused)."""
        self.dismiss = QPushButton("Dismiss")
        self.dismiss.setAccessibleName("Dismiss the notice")
        layout.addWidget(self.text)
        for index, button in enumerate(self.buttons):
            button.clicked.connect(lambda _checked=False, index=index: self._clicked(index))
            row.addWidget(button)
        row.addWidget(self.dismiss)
        layout.addLayout(row)
        self.dismiss.clicked.connect(self.close_notice)
        # Shaded, with an accent bar on the left, so it stands out in light and dark palettes alike.
        self.setObjectName("notice")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(
            "QWidget#notice { background: palette(alternate-base); border-left: 4px solid palette(highlight); }"
        )
        self._callbacks: list[Callable[[], None]] = []
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._tick)
        self._deadline = 0.0
        self._describe: Callable[[int], str] = str
        self._elapsed: Callable[[], None] | None = None
        self.hide()

    @property
    def counting_down(self) -> bool:
        """A countdown is running."""
        return self._timer.isActive()

    def show_message(self, text: str, actions: Sequence[Action] = ()) -> None:
        """Show ``text`` with up to two ``actions`` (stops a running countdown)."""
        self._stop_timer()
        self._show(text, actions)

    def start_countdown(
        self,
        seconds: float,
        describe: Callable[[int], str],
        elapsed: Callable[[], None],
        actions: Sequence[Action] = (),
    ) -> None:
        """Show ``describe(seconds left)`` every second; call ``elapsed`` at zero unless cancelled first."""
        self._deadline = time.monotonic() + max(0.0, seconds)
        self._describe = describe
        self._elapsed = elapsed
        self._show(describe(math.ceil(max(0.0, seconds))), actions)
        self._timer.start()

    def cancel_countdown(self) -> bool:
        """Stop a running countdown without calling back (the banner hides); whether one was running."""
        if not self.counting_down:
            return False
        self._stop_timer()
        self.hide()
        return True

    def close_notice(self) -> None:
        """Dismiss: hide, and cancel a countdown."""
        self._stop_timer()
        self.hide()

    def _show(self, text: str, actions: Sequence[Action]) -> None:
        self.text.setText(text)
        self.setAccessibleDescription(text)
        self._callbacks = [callback for _label, callback in actions[: len(self.buttons)]]
        for index, button in enumerate(self.buttons):
            if index < len(actions):
                label = actions[index][0]
                button.setText(label)
                button.setAccessibleName(label.replace("&", ""))
                button.show()
            else:
                button.hide()
        self.show()

    def _stop_timer(self) -> None:
        self._timer.stop()
        self._elapsed = None

    def _tick(self) -> None:
        left = self._deadline - time.monotonic()
        if left > 0:
            self.text.setText(self._describe(math.ceil(left)))
            return
        callback = self._elapsed
        self._stop_timer()
        self.hide()
        if callback is not None:
            callback()

    def _clicked(self, index: int) -> None:
        if index >= len(self._callbacks):
            return
        callback = self._callbacks[index]
        self._stop_timer()
        self.hide()
        callback()
