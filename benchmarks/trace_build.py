"""Building the waterfall of a 5,000-message session: the core's trace, and the Qt model and first paint of it.

    .venv/bin/python benchmarks/trace_build.py [--messages 5000] [--repeat 7]

Preparation (not timed): the same session as ``gui_open_session.py`` (runs of a prompt, a ``read`` or ``bash`` call,
its result, a Markdown answer), loaded into a :class:`~tiny_agent_core.timeline.Timeline`. Measured, ``--repeat``
times each: ``build_trace`` (the core: runs, requests, calls, totals; what the inspector rebuilds when the timeline
changes), every call's one-line summary (what the rows show), and ``WaterfallPane.refresh`` up to its first paint
(offscreen, 420×800: trace, Qt model reset, totals, the visible rows painted).

Prints one JSON object with the medians and runs in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from benchmarks.deadline import exit_after  # noqa: E402
from benchmarks.gui_open_session import _write_session  # noqa: E402


def _median_ms(runs: list[float]) -> float:
    return round(statistics.median(runs), 2)


def main() -> None:
    """Measure and print one JSON line."""
    exit_after(600, "trace_build")
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    from PySide6.QtWidgets import QApplication

    from tiny_agent_core.timeline import Timeline, ToolItem
    from tiny_agent_core.trace import build_trace
    from tiny_agent_gui.waterfall import WaterfallPane

    with tempfile.TemporaryDirectory() as folder:
        path, messages, _lines = _write_session(Path(folder), args.messages, 0)
        timeline = Timeline.from_bytes(path.read_bytes())
    app = QApplication.instance() or QApplication(sys.argv[:1])
    pane = WaterfallPane()
    pane.resize(420, 800)
    pane.show()
    app.processEvents()

    build, summaries, paint = [], [], []
    rows = 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        trace = build_trace(timeline)
        build.append((time.perf_counter() - start) * 1000)
        rows = len(trace.rows())
        start = time.perf_counter()
        for item in timeline.items:
            if isinstance(item, ToolItem):
                _ = item.summary
        summaries.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        pane.set_timeline(timeline)
        pane.view.viewport().repaint()
        paint.append((time.perf_counter() - start) * 1000)
    print(
        json.dumps(
            {
                "messages": messages,
                "items": len(timeline.items),
                "rows": rows,
                "build_trace_ms": _median_ms(build),
                "summaries_ms": _median_ms(summaries),
                "waterfall_refresh_and_paint_ms": _median_ms(paint),
                "runs": {
                    "build_trace_ms": [round(ms, 2) for ms in build],
                    "waterfall_refresh_and_paint_ms": [round(ms, 2) for ms in paint],
                },
            }
        )
    )


if __name__ == "__main__":
    main()
