"""Waiting inside async GUI tests, on the qasync loop that is already running (../shared/PLATFORM.md, "Testing Qt +
asyncio").

``qtbot.wait*`` spins a second, nested Qt event loop. Under a running qasync loop that nested loop may run another
asyncio task's step while the test's own task is still inside its step; asyncio refuses, the other task is lost,
and whatever awaits it waits forever. Worse, a test stuck in Qt's C++ loop never runs Python again, so even
pytest-timeout's alarm is not handled. An async test therefore waits only by awaiting, with these helpers
(``tests/gui/conftest.py`` makes ``qtbot.wait*`` fail inside one).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QWidget


async def until(condition: Callable[[], object], seconds: float = 10.0) -> None:
    """Return once ``condition()`` is true, polling every 20 ms; fail the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def activated(widget: QWidget) -> None:
    """Show ``widget`` as the active window, as window shortcuts and key presses need, and wait until it is."""
    widget.show()
    widget.activateWindow()
    await until(widget.isActiveWindow)


@contextlib.asynccontextmanager
async def emitted(signal: SignalInstance, seconds: float = 10.0) -> AsyncIterator[list[tuple[object, ...]]]:
    """Expect ``signal`` during the block: on leaving it, wait until it was emitted. Yields each emission's
    arguments, in order."""
    emissions: list[tuple[object, ...]] = []

    def record(*args: object) -> None:
        emissions.append(args)

    signal.connect(record)
    try:
        yield emissions
        await until(lambda: emissions, seconds)
    finally:
        with contextlib.suppress(RuntimeError):  # the sender is gone: nothing to disconnect, keep the real failure
            signal.disconnect(record)
