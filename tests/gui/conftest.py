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


@pytest.fixture(autouse=True)
def _collect_after_each_test() -> Iterator[None]:
    """Free each test's Qt garbage on the GUI thread before the next test runs, then freeze what survived (as
    tests/conftest.py does after collection): the next test's collection walks only the objects it made."""
    yield
    gc.collect()
    gc.freeze()
