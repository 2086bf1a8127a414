"""Regression: PySide6 6.12.0 aborts CPython 3.11 after ~5,000 Qt calls (../shared/PLATFORM.md).

The pin in pyproject.toml avoids that build; this test makes ~20,000 ordinary Qt calls in a child process and
fails if the interpreter dies, so a wrong pin is caught before a user's streamed reply kills the app.
"""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication([])
label = QLabel()
for i in range(20_000):
    label.setText(str(i))
print(label.text())
"""


def test_twenty_thousand_qt_calls_do_not_abort_the_interpreter() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "19999"


def test_the_application_icon_renders(qapp: object) -> None:
    from PySide6.QtGui import QIcon

    from tiny_agent_gui.app import ICON

    icon = QIcon(str(ICON))
    assert not icon.isNull()
    assert not icon.pixmap(64, 64).isNull()
