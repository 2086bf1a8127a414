"""Closing the window asks first when that would stop a run or lose unsent text (the real window, the loopback
provider; the question is opened without a nested event loop)."""

from __future__ import annotations

import shiboken6
from PySide6.QtWidgets import QMessageBox, QPushButton

from tests.gui.test_main_window import server, window
from tests.gui.waiting import until
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.timeline import NoticeItem
from tiny_agent_gui.main_window import MainWindow

__all__ = ["server", "window"]  # the fixtures


def _question(window: MainWindow) -> QMessageBox | None:
    box = window.quit_question
    return box if box is not None and shiboken6.isValid(box) and box.isVisible() else None


def _button(box: QMessageBox, label: str) -> QPushButton:
    return next(b for b in box.findChildren(QPushButton) if b.text().replace("&", "") == label)


async def _stalled_run(window: MainWindow, server: LoopbackServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
    window.composer.submitted.emit("go slowly")
    await until(lambda: window.controller.busy and len(server.requests) == 1)
    await until(lambda: window.transcript.transcript_model().streaming_text() == "slow ")


async def test_closing_during_a_run_asks_and_cancel_keeps_it(window: MainWindow, server: LoopbackServer) -> None:
    await _stalled_run(window, server)
    window.close()
    await until(lambda: _question(window) is not None)
    box = _question(window)
    assert box is not None
    assert box.text() == "A run is in progress: quitting stops it; what it has done so far is kept."
    assert box.defaultButton() is _button(box, "Cancel")
    _button(box, "Cancel").click()
    await until(lambda: _question(window) is None)
    assert window.isVisible()
    assert window.controller.busy  # still running
    window.stop()
    await until(lambda: not window.controller.busy, seconds=5)


async def test_quit_anyway_stops_the_run_and_closes(window: MainWindow, server: LoopbackServer) -> None:
    await _stalled_run(window, server)
    window.close()
    await until(lambda: _question(window) is not None)
    box = _question(window)
    assert box is not None
    _button(box, "Quit Anyway").click()
    await until(lambda: window._shut_down, seconds=10)
    assert not window.isVisible()
    assert not window.controller.busy
    assert window.controller.session is None  # released
    assert window.timeline is not None
    assert any(isinstance(item, NoticeItem) and item.kind == "aborted" for item in window.timeline.items)


async def test_closing_with_unsent_text_asks_and_cancel_keeps_the_text(window: MainWindow) -> None:
    window.composer.editor.setPlainText("half a thought")
    window.close()
    await until(lambda: _question(window) is not None)
    box = _question(window)
    assert box is not None
    assert box.text() == "The composer holds text you have not sent: quitting discards it."
    _button(box, "Cancel").click()
    await until(lambda: _question(window) is None)
    assert window.isVisible()
    assert window.composer.text() == "half a thought"
    window.composer.editor.clear()
    window.close()  # nothing to lose any more: no question
    await until(lambda: not window.isVisible())


async def test_closing_twice_shows_one_question(window: MainWindow) -> None:
    window.composer.editor.setPlainText("draft")
    window.close()
    await until(lambda: _question(window) is not None)
    first = _question(window)
    window.close()
    assert _question(window) is first
    assert first is not None
    _button(first, "Quit Anyway").click()
    await until(lambda: not window.isVisible())
