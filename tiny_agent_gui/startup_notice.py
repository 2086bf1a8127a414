"""Telling someone who double-clicked the app why it did not start: the desktop entry has ``Terminal=false``, so a
line on stderr reaches nobody.

:func:`show` tries both of:

- a desktop notification through ``notify-send`` (libnotify) when it is on ``PATH``: run without a shell, its
  output discarded, bounded by :data:`NOTIFY_TIMEOUT`; when it is absent, fails or hangs, it is skipped;
- a Qt message box, only where Qt already runs an application on a visible platform. Qt is never started for it:
  where the system check failed, starting Qt is exactly what aborts the process; on ``offscreen`` or ``minimal``
  nobody could click the box away.

The launcher writes the same text to the log file and to stderr; these are extra ways to be seen, so nothing here
raises. Texts are cut to :data:`MAX_TEXT` characters (an exception's message can be any size).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

__all__ = ["MAX_TEXT", "NOTIFY_TIMEOUT", "Notifier", "error_box", "notify_send", "show"]

_log = logging.getLogger(__name__)

Notifier = Callable[[str, str], None]
"""Shows a title and a message on screen (:func:`show`; tests pass their own)."""

NOTIFY_TIMEOUT = 5.0
"""Seconds ``notify-send`` may take (it waits for the session bus, which may be missing or slow)."""

MAX_TEXT = 2000
"""Characters of a title or message that are shown (the log file has everything)."""

_HIDDEN_PLATFORMS = frozenset({"offscreen", "minimal"})


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def notify_send(title: str, text: str, program: str | None = None) -> bool:
    """A critical desktop notification through ``program`` (default: ``notify-send`` on ``PATH``); whether it was
    delivered. Absent, failing or slower than :data:`NOTIFY_TIMEOUT`: ``False``, and a log line says why."""
    program = program or shutil.which("notify-send")
    if program is None:
        return False
    command = [program, "--app-name=tiny-agent desktop", "--urgency=critical", "--icon=dialog-error", "--"]
    try:
        result = subprocess.run(
            [*command, _bounded(title), _bounded(text)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=NOTIFY_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        _log.info("no desktop notification (%s): %s", program, error)
        return False
    if result.returncode != 0:
        _log.info("no desktop notification: %s exited with status %s", program, result.returncode)
    return result.returncode == 0


def error_box(title: str, text: str) -> QMessageBox:
    """The message box :func:`show` opens (its text selectable, to copy into a report)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Critical, _bounded(title), _bounded(text))
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return box


def _qt_runs_visibly() -> bool:
    if "PySide6.QtWidgets" not in sys.modules:  # Qt was never loaded: do not start it here
        return False
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() is not None and QApplication.platformName() not in _HIDDEN_PLATFORMS


def show(title: str, text: str) -> None:
    """Show ``title`` and ``text`` as a desktop notification and, where Qt already runs visibly, a message box
    (which waits for the user)."""
    notify_send(title, text)
    if _qt_runs_visibly():
        try:
            error_box(title, text).exec()
        except Exception:  # the app is already failing: this is only an extra way to be seen
            _log.warning("could not show the message box", exc_info=True)
