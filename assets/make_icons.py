"""Render the PNG icon sizes (for the .desktop entry and bundles) from the package's SVG icon.

QT_QPA_PLATFORM=offscreen .venv/bin/python assets/make_icons.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "tiny_agent_gui" / "resources" / "tiny-agent-desktop.svg"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def main() -> None:
    """Write ``assets/icons/<size>x<size>/tiny-agent-desktop.png`` for every size."""
    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(SVG))
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        out = ROOT / "assets" / "icons" / f"{size}x{size}" / "tiny-agent-desktop.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        image.save(str(out))
    del app
    print(f"wrote {len(SIZES)} icon sizes")


if __name__ == "__main__":
    main()
