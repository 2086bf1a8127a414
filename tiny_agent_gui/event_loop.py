"""The asyncio event loop of the window: qasync's Qt loop, with the async-generator hooks installed.

qasync's ``run_forever`` does not install the loop's async-generator hooks (``BaseEventLoop.run_forever`` does),
so httpx streams abandoned early print "async generator ignored GeneratorExit" and ``shutdown_asyncgens`` cannot
close them (../shared/PLATFORM.md). This subclass installs them for the duration of the loop.

Its default executor (``asyncio.to_thread``: file reads and writes of the tools, diff previews) is a plain
:class:`~concurrent.futures.ThreadPoolExecutor`, not qasync's ``QThreadExecutor``: the work never touches Qt, and
QThread workers post ``finished`` events to the GUI thread that can outlive the loop (a crash in a later
``processEvents`` was traced to them).

qasync runs its callbacks from Qt timer events, so Qt runs them whenever it processes events — also while the loop
is not running (``processEvents`` after ``run_forever`` returned: at shutdown, or pytest-qt's teardown). asyncio
code then finds no running loop: httpcore's ``aclose`` failed with anyio's "Not currently running on any
asynchronous event loop", and an abandoned stream's async-generator finalizer task with it. A callback that runs
while no loop is running therefore runs with this loop set as the running loop, as it would inside
``run_forever``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import qasync


class HookedQEventLoop(qasync.QEventLoop):  # type: ignore[misc]
    """``qasync.QEventLoop`` whose ``run_forever`` installs the async-generator hooks, with a plain thread pool as
    its default executor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_default_executor(ThreadPoolExecutor(max_workers=4, thread_name_prefix="tiny-agent-worker"))

    def call_later(
        self, delay: float, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        """qasync's ``call_later`` (``call_soon`` and ``call_at`` go through it), the callback run as this loop's."""
        handle: asyncio.TimerHandle = super().call_later(delay, self._as_running, callback, *args, context=context)
        return handle

    def _as_running(self, callback: Callable[..., object], *args: Any) -> None:
        if asyncio._get_running_loop() is not None:
            callback(*args)
            return
        asyncio._set_running_loop(self)
        try:
            callback(*args)
        finally:
            asyncio._set_running_loop(None)

    def run_forever(self) -> Any:
        """Run the Qt event loop with asyncio's async-generator hooks installed."""
        previous = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
        try:
            return super().run_forever()
        finally:
            sys.set_asyncgen_hooks(*previous)
