"""Cold start of the real application to an interactive main window over 10,000 indexed sessions (SPEC §8).

    .venv/bin/python benchmarks/gui_startup.py [--sessions 10000] [--repeat 5]

Preparation (not timed): a temporary data folder (``TINY_AGENT_DATA_DIR``) and config folder
(``TINY_AGENT_CONFIG_DIR``). The config names one workspace and an active provider profile, so the window opens
on its main page (session list, transcript, inspector), not the first-run welcome page. The workspace holds
``--sessions`` real, valid session files (a prompt, a tool step, an answer; written with the core's fact builders),
and one scan brings the index up to date, as a previous run of the app would have.

Each run spawns a fresh Python process (``-X importtime`` off, no warm imports) that does what ``app.main`` does:
imports the application, creates the ``QApplication`` and the qasync loop, opens the ``ProviderClient``, calls
``make_services`` (loads the settings, opens the index), builds the ``MainWindow`` (with the settings dialog hook),
shows it and starts ``index_at_start`` (the rescan of every workspace, 10,000 ``stat`` calls that find nothing
changed, in a worker thread while the window paints).

**Interactive** means: the window is shown on its main page, the session list's viewport has finished its first
paint (with the first page of rows loaded from the index; with ``--sessions 0`` the list is hidden and its "No
sessions yet" label paints instead), and the event loop has then come back for one more turn (a zero-delay timer
queued from inside that paint event has fired), so input queued at that moment would be handled next. The child
reads ``time.monotonic()`` (a system-wide clock on Linux) at that point; the parent subtracts the monotonic time
just before ``subprocess.Popen``. So the figure includes interpreter start-up and every import. The child also
reports its peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and where the time went (imports, services,
window construction, show → paint).

Prints one JSON object: median and every run of spawn → interactive (ms), the child's phase medians, peak RSS
median and max (MB), and the targets (≤ 1500 ms, ≤ 250 MB). Each child has a deadline of ``CHILD_DEADLINE_S``
(and waits at most 60 s for the first paint), the whole benchmark one of ``DEADLINE_S``
(:mod:`benchmarks.deadline`): a run that hangs ends with a message and exit status 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 1500
TARGET_RSS_MB = 250
DEADLINE_S = 1800
CHILD_DEADLINE_S = 120


def _child() -> None:
    """One cold start; prints the child's timings as JSON (runs in a fresh interpreter)."""
    started = time.monotonic()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    from benchmarks.deadline import exit_after

    exit_after(CHILD_DEADLINE_S, "gui_startup child")
    import asyncio
    import resource

    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    from tiny_agent_core.providers.client import ProviderClient
    from tiny_agent_gui.app import attach_settings_dialog, index_at_start, make_services
    from tiny_agent_gui.event_loop import HookedQEventLoop
    from tiny_agent_gui.main_window import MainWindow

    imported = time.monotonic()
    marks: dict[str, float] = {}

    class FirstPaint(QObject):
        def __init__(self, done: asyncio.Future[float]) -> None:
            super().__init__()
            self.done = done

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint and "paint" not in marks:
                marks["paint"] = time.monotonic()
                # The next event-loop turn after this paint: the window is interactive then.
                QTimer.singleShot(0, lambda: self.done.done() or self.done.set_result(time.monotonic()))
            return False

    async def run(app: QApplication) -> dict[str, object]:
        async with ProviderClient() as client:
            marks["client"] = time.monotonic()
            services = make_services(client)
            marks["services"] = time.monotonic()
            window = MainWindow(services)
            attach_settings_dialog(window)
            marks["window"] = time.monotonic()
            done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
            watcher = FirstPaint(done)
            # The pane shows either its list or, with no sessions, a label in its place: whichever paints first.
            window.sessions.list_view.viewport().installEventFilter(watcher)
            window.sessions.empty_label.installEventFilter(watcher)
            window.show()
            indexing = index_at_start(window)
            interactive = await asyncio.wait_for(done, 60)
            rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            assert window.pages.currentWidget() is window.splitter, "the welcome page is showing"
            rows = window.sessions.model.rowCount()
            await asyncio.wait_for(indexing, 120)
            marks["indexed"] = time.monotonic()
            window.close()
            services.ledger.close()
        return {
            "interactive_at": interactive,
            "started_at": started,
            "imports_ms": (imported - started) * 1000,
            "app_and_client_ms": (marks["client"] - imported) * 1000,
            "make_services_ms": (marks["services"] - marks["client"]) * 1000,
            "main_window_ms": (marks["window"] - marks["services"]) * 1000,
            "show_to_first_paint_ms": (marks["paint"] - marks["window"]) * 1000,
            "paint_to_interactive_ms": (interactive - marks["paint"]) * 1000,
            "rescan_done_after_show_ms": (marks["indexed"] - marks["window"]) * 1000,
            "rows_loaded": rows,
            "peak_rss_mb": rss_kb / 1024,
        }

    app = QApplication(sys.argv[:1])
    loop = HookedQEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        result = loop.run_until_complete(run(app))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    print(json.dumps(result))


def _prepare(root: Path, sessions: int) -> tuple[dict[str, str], float]:
    """Config and data folders with ``sessions`` indexed session files; returns the environment and seconds."""
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    sys.path.insert(0, str(ROOT))
    from tests.core.session.builders import Call, SessionScript
    from tests.gui.test_sessions_data import title_of
    from tiny_agent_core.ledger import connect, scan_workspace
    from tiny_agent_core.session import facts
    from tiny_agent_core.session.store import session_file_name
    from tiny_agent_core.settings import AppSettings, ProfileConfig

    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "TINY_AGENT_DATA_DIR": str(root / "data"),
        "TINY_AGENT_CONFIG_DIR": str(root / "config"),
    }
    os.environ.update({key: env[key] for key in ("TINY_AGENT_DATA_DIR", "TINY_AGENT_CONFIG_DIR")})
    started = time.perf_counter()
    workspace = root / "project"
    folder = workspace / ".tiny-agent" / "sessions"
    folder.mkdir(parents=True)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for number in range(sessions):
        script = SessionScript(seed=number)
        script.run(title_of(number), [[Call("read", '{"path":"src/main.py"}', f"body {number}")], f"done {number}"])
        data = script.data()
        old_id = data.split(b'"id":"', 1)[1].split(b'"', 1)[0]
        new_id = facts.new_id()
        data = data.replace(old_id, new_id.encode(), 1)
        (folder / session_file_name(t0 + timedelta(seconds=number), new_id)).write_bytes(data)
    conn = connect()
    report = scan_workspace(conn, workspace)
    assert report.indexed == sessions, report
    assert not report.corrupt, report
    conn.close()
    settings = AppSettings.load()
    settings.add_profile(replace(ProfileConfig.from_preset("openrouter", "openrouter"), model="test/model"))
    settings.active_profile = "openrouter"
    settings.add_workspace(workspace)
    settings.save()
    return env, time.perf_counter() - started


def main() -> None:
    """Prepare the folders, run the cold starts, print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child()
        return
    sys.path.insert(0, str(ROOT))
    from benchmarks.deadline import exit_after

    exit_after(DEADLINE_S, "gui_startup")
    with tempfile.TemporaryDirectory(prefix="tiny-agent-bench-") as tmp:
        env, prepare_s = _prepare(Path(tmp), args.sessions)
        runs: list[float] = []
        children: list[dict[str, float]] = []
        for _ in range(args.repeat):
            spawned = time.monotonic()
            process = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child"],
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                check=False,
                timeout=CHILD_DEADLINE_S + 30,  # the child's own deadline ends it first
            )
            if process.returncode != 0:
                sys.exit(f"child failed ({process.returncode}):\n{process.stderr}")
            child = json.loads(process.stdout.strip().splitlines()[-1])
            runs.append((child["interactive_at"] - spawned) * 1000)
            child["interpreter_start_ms"] = (child["started_at"] - spawned) * 1000
            children.append(child)

    def median(key: str) -> float:
        return round(statistics.median(child[key] for child in children), 1)

    rss = [child["peak_rss_mb"] for child in children]
    print(
        json.dumps(
            {
                "sessions": args.sessions,
                "prepare_s": round(prepare_s, 1),
                "spawn_to_interactive_median_ms": round(statistics.median(runs), 1),
                "spawn_to_interactive_runs_ms": [round(value, 1) for value in runs],
                "interpreter_start_median_ms": median("interpreter_start_ms"),
                "imports_median_ms": median("imports_ms"),
                "app_and_client_median_ms": median("app_and_client_ms"),
                "make_services_median_ms": median("make_services_ms"),
                "main_window_median_ms": median("main_window_ms"),
                "show_to_first_paint_median_ms": median("show_to_first_paint_ms"),
                "paint_to_interactive_median_ms": median("paint_to_interactive_ms"),
                "rescan_done_after_show_median_ms": median("rescan_done_after_show_ms"),
                "rows_loaded": children[0]["rows_loaded"],
                "peak_rss_median_mb": round(statistics.median(rss), 1),
                "peak_rss_max_mb": round(max(rss), 1),
                "target_ms": TARGET_MS,
                "target_rss_mb": TARGET_RSS_MB,
            }
        )
    )


if __name__ == "__main__":
    main()
