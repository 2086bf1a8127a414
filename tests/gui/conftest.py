"""Async GUI tests run on the window's own event loop: qasync's Qt loop (../shared/PLATFORM.md, "Testing Qt + asyncio").

The ``pytest_asyncio_loop_factories`` hook applies to the tests under this folder only; their ``await`` keeps Qt
processing events, so a dialog opened with ``open()`` can be clicked while a coroutine waits for its answer.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator, Mapping

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from tiny_agent_gui.event_loop import HookedQEventLoop
from tiny_agent_gui.garbage import GuiThreadCollector


def _qt_loop() -> asyncio.AbstractEventLoop:
    app = QApplication.instance() or QApplication([])
    loop: asyncio.AbstractEventLoop = HookedQEventLoop(app)
    return loop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test here runs on a :class:`HookedQEventLoop`."""
    return {"qt": _qt_loop}


@pytest.fixture(scope="session", autouse=True)
def _collect_garbage_on_the_gui_thread() -> Iterator[None]:
    """As the app does (tiny_agent_gui/garbage.py): no cyclic collection may free Qt objects in another thread."""
    app = QApplication.instance() or QApplication([])
    collector = GuiThreadCollector(app)
    yield
    collector.stop()


@pytest.fixture(scope="session", autouse=True)
def _loop_outlives_windows() -> None:
    """An async test's event loop is Qt's: closing the last window a test showed (a dialog, the main window) must
    not quit it under the test."""
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)


@pytest.fixture(autouse=True)
def _no_nested_qt_wait_in_async_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """``qtbot.wait*`` spins a nested Qt event loop, which inside an async test can block it forever (it hung the
    whole suite under ``-n 4``; tests/gui/waiting.py says why and what to use instead), so there it fails at once."""

    def refuse(wait: Callable[..., object]) -> Callable[..., object]:
        def checked(*args: object, **kwargs: object) -> object:
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # a plain test: no loop runs, a nested one is harmless
                return wait(*args, **kwargs)
            raise AssertionError("an async GUI test waits by awaiting (tests/gui/waiting.py), not with qtbot.wait*")

        return checked

    for name in ("wait", "waitUntil", "waitSignal", "waitSignals", "waitCallback", "waitExposed", "waitActive"):
        monkeypatch.setattr(QtBot, name, refuse(getattr(QtBot, name)))


@pytest.fixture(autouse=True)
def _collect_after_each_test() -> Iterator[None]:
    """Free each test's Qt garbage on the GUI thread before the next test runs, then freeze what survived (as
    tests/conftest.py does after collection): the next test's collection walks only the objects it made."""
    yield
    gc.collect()
    gc.freeze()
