"""Root test configuration: Qt always runs offscreen (without a display Qt aborts the interpreter)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
