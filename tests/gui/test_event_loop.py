"""The window's event loop: a callback Qt runs while the loop is not running still finds it as the running loop
(pytest-qt's teardown and the app's shutdown process events after ``run_forever`` returned)."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QApplication

from tiny_agent_gui.event_loop import HookedQEventLoop


def test_a_callback_run_outside_run_forever_sees_the_loop_as_running() -> None:
    app = QApplication.instance() or QApplication([])
    loop = HookedQEventLoop(app)
    seen: list[asyncio.AbstractEventLoop | None] = []
    try:
        handle = loop.call_soon(lambda: seen.append(asyncio._get_running_loop()))
        for _ in range(50):
            if seen:
                break
            app.processEvents()  # the loop is not running: Qt runs its timer event anyway
        assert seen == [loop]
        assert asyncio._get_running_loop() is None  # and nothing is left set afterwards
        assert not handle.cancelled()
    finally:
        loop.close()


def test_a_cancelled_callback_does_not_run() -> None:
    app = QApplication.instance() or QApplication([])
    loop = HookedQEventLoop(app)
    ran: list[bool] = []
    try:
        loop.call_soon(lambda: ran.append(True)).cancel()
        for _ in range(20):
            app.processEvents()
        assert ran == []
    finally:
        loop.close()
