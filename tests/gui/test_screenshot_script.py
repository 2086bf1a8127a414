"""The README's screenshots are made by ``assets/make_screenshots.py``, which no other test runs: every attribute it
reaches on the window must still exist (a refactoring once renamed one and only the next screenshot run noticed)."""

from __future__ import annotations

import ast
from pathlib import Path

from pytestqt.qtbot import QtBot

from tiny_agent_core.ledger import connect
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.main_window import MainWindow, Services

SCRIPT = Path(__file__).resolve().parents[2] / "assets" / "make_screenshots.py"


def _window_attributes() -> set[str]:
    """The names the script reads as ``window.<name>``."""
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "window"
    }


async def test_every_window_attribute_the_screenshot_script_uses_exists(tmp_path: Path, qtbot: QtBot) -> None:
    names = _window_attributes()
    assert "show_costs" in names  # the walk found the script's uses
    ledger = connect(tmp_path / "index.sqlite3")
    services = Services(None, ledger, AppSettings(), KeyStore(environ={}), ToolSettings.in_memory())  # type: ignore[arg-type]
    window = MainWindow(services)
    qtbot.addWidget(window)
    try:
        assert sorted(name for name in names if not hasattr(window, name)) == []
    finally:
        await window.controller.aclose()
        ledger.close()
