"""Build and first-paint the session list pane over 10,000 indexed sessions (SPEC §7, §8), offscreen.

    .venv/bin/python benchmarks/session_list.py [--sessions N] [--repeat R]

Indexes N generated sessions (three workspaces, one priced request each) straight through the ledger writer,
then, R times: builds a :class:`SessionListPane`, shows it and waits for the list's first paint. Also times a
search with one hit and one for a phrase in many sessions (each then cleared: two first-page reloads), fetching
every page, and building the cost view over every session up to its ``loaded`` signal (it queries on a worker
thread since 54527ee; at most 60 s). Prints medians in milliseconds as one JSON object.
Everything lives in a temporary folder (``TINY_AGENT_DATA_DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import QEvent, QEventLoop, QModelIndex, QObject, QTimer
from PySide6.QtWidgets import QApplication

from benchmarks.deadline import exit_after
from tests.gui.test_sessions_data import add_sessions
from tiny_agent_core.ledger import connect
from tiny_agent_gui.cost import CostView
from tiny_agent_gui.sessions import SessionListPane


class _FirstPaint(QObject):
    """Quits a local event loop at the first paint event of a widget."""

    def __init__(self, loop: QEventLoop) -> None:
        super().__init__()
        self.loop = loop

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            QTimer.singleShot(0, self.loop.quit)  # let this paint finish first
        return False


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    exit_after(600, "session_list")
    app = QApplication.instance() or QApplication(sys.argv)
    with tempfile.TemporaryDirectory(prefix="tiny-agent-bench-") as tmp:
        root = Path(tmp)
        os.environ["TINY_AGENT_DATA_DIR"] = str(root / "data")
        conn = connect()
        start = time.perf_counter()
        third = args.sessions // 3
        for number, workspace in enumerate(("alpha", "beta", "gamma")):
            count = third if number < 2 else args.sessions - 2 * third
            add_sessions(conn, root / workspace, count, first=number * third)
        generate_s = time.perf_counter() - start

        def build_and_paint() -> None:
            pane = SessionListPane(conn)
            pane.resize(360, 900)
            loop = QEventLoop()
            watcher = _FirstPaint(loop)
            pane.list_view.viewport().installEventFilter(watcher)
            pane.show()
            loop.exec()
            assert pane.model.rowCount() == pane.model.PAGE_SIZE
            pane.close()
            pane.deleteLater()
            app.processEvents()

        first_paint = _median_ms(build_and_paint, args.repeat)
        pane = SessionListPane(conn)
        pane.resize(360, 900)
        pane.show()
        app.processEvents()

        def search(text: str) -> None:
            pane.model.set_search(text)
            assert pane.model.rowCount() > 0
            pane.model.set_search("")

        content = _median_ms(lambda: search("generated body 4242"), 11)
        common = _median_ms(lambda: search("flaky ledger"), 11)

        def fetch_all() -> None:
            pane.model.reload()
            while pane.model.canFetchMore(QModelIndex()):
                pane.model.fetchMore(QModelIndex())
            assert pane.model.rowCount() == args.sessions

        fetch_everything = _median_ms(fetch_all, 3)

        def cost_view() -> None:
            view = CostView(conn)
            view.resize(1200, 800)
            loaded = QEventLoop()
            view.loaded.connect(loaded.quit)
            QTimer.singleShot(60_000, loaded.quit)
            view.show()
            loaded.exec()
            rows = view.sessions_model.rowCount()
            assert rows == args.sessions, f"the cost view lists {rows} of {args.sessions} sessions"
            view.close()
            view.deleteLater()

        cost_view_ms = _median_ms(cost_view, 3)
        pane.close()
        conn.close()
    print(
        json.dumps(
            {
                "sessions": args.sessions,
                "generate_rows_s": round(generate_s, 2),
                "pane_build_and_first_paint_median_ms": first_paint,
                "search_content_and_clear_median_ms": content,
                "search_common_phrase_and_clear_median_ms": common,
                "fetch_every_page_median_ms": fetch_everything,
                "cost_view_build_show_and_load_median_ms": cost_view_ms,
            }
        )
    )


if __name__ == "__main__":
    main()
