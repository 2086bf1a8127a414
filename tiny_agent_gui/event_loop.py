"""The asyncio event loop of the window: qasync's Qt loop, with the async-generator hooks installed.

qasync's ``run_forever`` does not install the loop's async-generator hooks (``BaseEventLoop.run_forever`` does),
so httpx streams abandoned early print "async generator ignored GeneratorExit" and ``shutdown_asyncgens`` cannot
close them (../shared/PLATFORM.md). This subclass installs them for the duration of the loop.
"""

from __future__ import annotations

import sys
from typing import Any

import qasync


class HookedQEventLoop(qasync.QEventLoop):  # type: ignore[misc]
    """``qasync.QEventLoop`` whose ``run_forever`` installs the async-generator hooks."""

    def run_forever(self) -> Any:
        """Run the Qt event loop with asyncio's async-generator hooks installed."""
        previous = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
        try:
            return super().run_forever()
        finally:
            sys.set_asyncgen_hooks(*previous)
