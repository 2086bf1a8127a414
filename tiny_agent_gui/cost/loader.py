"""Cost queries off the GUI thread: one worker thread with its own connection to the index database.

With thousands of sessions a cost overview reads every request row (and, after a settings change, re-prices
them), which would freeze the window for a noticeable time. :meth:`CostLoader.submit` runs a core function on the
worker and delivers its result through :attr:`CostLoader.finished`, a signal the GUI thread receives (queued).
Each submission gets a number; a view ignores results older than its latest request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from tiny_agent_core.ledger import IndexConnection, connect

_log = logging.getLogger(__name__)

Work = Callable[[IndexConnection], Any]


class CostLoader(QObject):
    """Runs cost work on one worker thread (its own connection to ``database``), in submission order."""

    finished = Signal(int, object)
    """(submission number, the work's result — or the exception it raised)."""

    def __init__(self, database: Path, parent: QObject | None = None) -> None:
        """``database``: the index file the view's connection uses."""
        super().__init__(parent)
        self._database = database
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cost-loader")
        self._local = threading.local()
        self._number = 0
        self._closed = False

    def submit(self, work: Work) -> int:
        """Run ``work(conn)`` on the worker; returns its submission number (see :attr:`finished`)."""
        self._number += 1
        number = self._number
        self._executor.submit(self._run, number, work)
        return number

    def close(self) -> None:
        """Finish queued work, close the worker's connection and stop the thread (again: nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.submit(self._close_connection)
        except RuntimeError:  # the interpreter is exiting and already stopped the worker
            return
        self._executor.shutdown(wait=True)

    def _connection(self) -> IndexConnection:
        conn: IndexConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self._database)
            self._local.conn = conn
        return conn

    def _run(self, number: int, work: Work) -> None:
        try:
            result: Any = work(self._connection())
        except Exception as error:  # delivered to the view, which shows it
            _log.warning("cost query failed", exc_info=True)
            result = error
        self.finished.emit(number, result)

    def _close_connection(self) -> None:
        conn: IndexConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
