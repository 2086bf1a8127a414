"""Opening a 5,000-message session in the real main window: time to the transcript's first paint, and RSS (SPEC §8).

    .venv/bin/python benchmarks/gui_open_session.py [--messages 5000] [--repeat 5]

Preparation (not timed, in this process): temporary data and config folders (``TINY_AGENT_DATA_DIR``,
``TINY_AGENT_CONFIG_DIR``) with one workspace holding a valid session of at least ``--messages`` messages, written
with the core's fact builders (``tests/core/session/builders.py``): runs of a user prompt, an assistant tool call
(``read`` or ``bash``), its tool result, and a Markdown answer (every third one with a fenced Python block), so
the transcript holds user, assistant and tool rows; ``--repeat`` copies of it, each with its own id, so that every
copy can be opened for the first time. Plus a one-run session to switch to between measurements.
The workspace is indexed, so the ledger enrichment runs as in the app.

Measurement, in a fresh child process (so its peak RSS is the window's, not the generator's): the app's bootstrap
(``make_services``, ``MainWindow``, qasync loop), window shown and painted. Then for each copy, twice — its
``first_open`` in this window, and a ``reopen`` after another session was opened (the window keeps the last closed
sessions and reuses them while their files are unchanged: ``tiny_agent_gui/session_loading.py``) —: open the small
session, let it paint, and time ``window.controller.open(big)`` (it returns at once: the store is opened — lock,
read, strict validation — and the timeline built and enriched from the ledger in a worker thread; then the model
is set and the view laid out on the GUI thread) up to the first paint of the transcript viewport that shows the
big session (``first_paint``: its rows, not the previous session's), up to the next event-loop turn after that
paint, and up to the first paint that shows its newest message (``newest``). While it opens, a 5 ms timer on the GUI
thread records the longest gap between its ticks (``gui_stall``: how long the window could not react). Also the
synchronous ``open`` call alone. Then (not targets), once the view's batched layout has stopped growing the scroll
range: where the open left the view (``newest``: the last row is in view, what the window means to do;
``oldest``: at the top; else ``value/maximum`` of the scroll bar), and the time of a jump from the oldest message
to the newest (``scrollToBottom``, as Ctrl+End does) up to the first paint that shows the last row; a jump that
shows no last row within 10 s is reported with where it stopped (``jump_to_newest_stopped_short_at``) instead of
failing the run.

Prints one JSON object with ``first_open`` and ``reopen`` each holding: medians and runs (ms) of open → first paint,
→ next turn, → newest message painted, the longest GUI stall, and of the jump to the newest; RSS with the big
session open (current, from ``/proc/self/statm``) and the child's peak RSS (``ru_maxrss``), with the targets (first
paint ≤ 150 ms, ≤ 250 MB). Every wait for a paint has a timeout, the child a deadline of ``CHILD_DEADLINE_S`` and
the whole benchmark one of ``DEADLINE_S`` (:mod:`benchmarks.deadline`): a run that hangs ends with a message and
exit status 3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QListView, QScrollBar

    from tiny_agent_gui.main_window import MainWindow

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150
TARGET_RSS_MB = 250
DEADLINE_S = 1200
CHILD_DEADLINE_S = 600


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _make_paints(window: MainWindow) -> Any:
    """An event filter for the transcript viewport that resolves futures at paints (see ``reset``)."""
    from PySide6.QtCore import QEvent, QObject, QTimer

    class Paints(QObject):
        """Resolves futures at the first paint, the next loop turn, and the first paint showing the last row;
        ``painted`` at the next paint of any kind."""

        def __init__(self, window: MainWindow) -> None:
            super().__init__()
            self.window = window
            self.reset()

        def reset(self, session: Path | None = None) -> None:
            """Fresh futures; ``first`` waits for a paint of ``session`` (any paint when ``None``)."""
            loop = asyncio.get_running_loop()
            self.session = session
            self.first: asyncio.Future[float] = loop.create_future()
            self.turn: asyncio.Future[float] = loop.create_future()
            self.settled: asyncio.Future[float] = loop.create_future()
            self.painted: asyncio.Future[float] = loop.create_future()

        def _shows_session(self) -> bool:
            if self.session is None:
                return True
            opened = self.window.controller.session
            timeline = self.window.transcript.transcript_model().timeline()
            return opened is not None and opened.store.path == self.session and timeline is self.window.timeline

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                now = time.perf_counter()
                if not self.painted.done():
                    self.painted.set_result(now)
                if not self._shows_session():
                    return False
                if not self.first.done():
                    self.first.set_result(now)
                    QTimer.singleShot(0, lambda: self.turn.done() or self.turn.set_result(time.perf_counter()))
                if not self.settled.done() and _where(self.window.transcript) == "newest":
                    self.settled.set_result(now)
            return False

    return Paints(window)


class _StallMeter:
    """The longest gap between the ticks of a 5 ms timer on the GUI thread, from now until :meth:`stop` (ms)."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.longest = 0.0
        self.last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, now - self.last)
        self.last = now

    def stop(self) -> float:
        """Stop measuring; the longest gap, including the one up to now."""
        self._tick()
        self.timer.stop()
        return self.longest * 1000


async def _all_rows_shown(window: MainWindow, limit: float = 60) -> None:
    """Wait until the transcript shows every row (a long session opens tail first) and paints again."""
    view = window.transcript
    deadline = time.perf_counter() + limit
    while view.transcript_model().hidden_rows() or not view.viewport().updatesEnabled():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the transcript still hides older rows after {limit:g} s")
        await asyncio.sleep(0.05)


async def _range_settled(bar: QScrollBar, quiet: float = 0.5, limit: float = 30) -> bool:
    """Wait until the scroll range stops growing (the view lays rows out in batches); False at ``limit``."""
    deadline = time.perf_counter() + limit
    last = bar.maximum()
    while time.perf_counter() < deadline:
        await asyncio.sleep(quiet)
        if bar.maximum() == last:
            return True
        last = bar.maximum()
    return False


def _where(view: QListView) -> str:
    """``newest`` if the last row is in view, ``oldest`` at the top, else ``scroll value/maximum``."""
    model, bar = view.model(), view.verticalScrollBar()
    rows = model.rowCount()
    if rows and view.viewport().rect().intersects(view.visualRect(model.index(rows - 1, 0))):
        return "newest"
    return "oldest" if bar.value() == 0 else f"{bar.value()}/{bar.maximum()}"


async def _open_once(window: MainWindow, paints: Any, big: Path, small: Path, runs: dict[str, list[Any]]) -> None:
    """Open ``small``, then time opening ``big`` to its first paint and the next turn; see where it left the view."""
    paints.reset(small)  # fresh futures (a jump that timed out cancelled the last one)
    window.controller.open(small)
    await asyncio.wait_for(paints.settled, 10)
    await window.controller.wait_idle()
    await asyncio.sleep(0.2)
    paints.reset(big)
    stalls = _StallMeter()
    start = time.perf_counter()
    window.controller.open(big)
    runs["open_call_ms"].append((time.perf_counter() - start) * 1000)
    runs["first_paint_ms"].append((await asyncio.wait_for(paints.first, 30) - start) * 1000)
    runs["next_turn_ms"].append((await asyncio.wait_for(paints.turn, 30) - start) * 1000)
    runs["newest_paint_ms"].append((await asyncio.wait_for(paints.settled, 30) - start) * 1000)
    runs["gui_stall_ms"].append(stalls.stop())
    await window.controller.wait_idle()
    await _all_rows_shown(window)
    await asyncio.sleep(0.3)
    runs["layout_settled"].append(await _range_settled(window.transcript.verticalScrollBar()))
    runs["view_after_open"].append(_where(window.transcript))


async def _jump_to_newest(window: MainWindow, paints: Any, runs: dict[str, list[Any]]) -> None:
    """From the oldest message, time Ctrl+End up to the first paint showing the last row (or say where it stopped)."""
    if window.transcript.verticalScrollBar().value() != 0:
        paints.painted = asyncio.get_running_loop().create_future()
        window.transcript.scrollToTop()
        await asyncio.wait_for(paints.painted, 30)
        await asyncio.sleep(0.2)
    paints.settled = asyncio.get_running_loop().create_future()
    start = time.perf_counter()
    window.transcript.scrollToBottom()  # the user jumps to the newest message (Ctrl+End)
    try:
        runs["settled_ms"].append((await asyncio.wait_for(paints.settled, 10) - start) * 1000)
    except TimeoutError:  # the view stopped short of the last row: say where, go on measuring
        runs["jump_missed"].append(_where(window.transcript))


def _child(small: Path, bigs: list[Path]) -> None:
    """Bootstrap the window; open each of ``bigs`` for the first time, then go back to it; print the timings."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    from benchmarks.deadline import exit_after

    exit_after(CHILD_DEADLINE_S, "gui_open_session child")
    import resource

    from PySide6.QtWidgets import QApplication

    from tiny_agent_core.providers.client import ProviderClient
    from tiny_agent_gui.app import attach_settings_dialog, index_at_start, make_services
    from tiny_agent_gui.event_loop import HookedQEventLoop
    from tiny_agent_gui.main_window import MainWindow

    def fresh_runs() -> dict[str, list[Any]]:
        keys = ("first_paint_ms", "open_call_ms", "next_turn_ms", "newest_paint_ms", "gui_stall_ms", "settled_ms")
        return {key: [] for key in (*keys, "view_after_open", "layout_settled", "jump_missed")}

    async def run() -> dict[str, Any]:
        first, again = fresh_runs(), fresh_runs()
        async with ProviderClient() as client:
            services = make_services(client)
            window = MainWindow(services)
            attach_settings_dialog(window)
            paints = _make_paints(window)
            window.transcript.viewport().installEventFilter(paints)
            window.show()
            await index_at_start(window)  # as the app does once its window is shown
            await asyncio.sleep(0.3)
            for big in bigs:
                await _open_once(window, paints, big, small, first)  # never opened in this window
                await _jump_to_newest(window, paints, first)
                await asyncio.sleep(0.3)
                await _open_once(window, paints, big, small, again)  # back to it, unchanged
                await _jump_to_newest(window, paints, again)
                await asyncio.sleep(0.3)
            rss_open = _rss_mb()
            assert window.controller.session is not None
            assert window.controller.session.store.path == bigs[-1]
            rows = window.transcript.model().rowCount()
            window.controller.close()
            window.close()
            services.ledger.close()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"first": first, "again": again, "rows": rows, "rss_open_mb": rss_open, "peak_rss_mb": peak}

    app = QApplication(sys.argv[:1])
    loop = HookedQEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        result = loop.run_until_complete(run())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    print(json.dumps(result))


ANSWER = (
    "Done with step {n}. The **parser** now handles `{n}` nested blocks:\n\n"
    "- it keeps the cursor\n- it reports the line\n\n"
)
CODE = "```python\ndef handle_{n}(value: int) -> int:\n    return value * {n}  # scaled\n```\n"


def _write_sessions(folder: Path, messages: int, copies: int) -> tuple[list[Path], int, int]:
    """``copies`` valid sessions of the same messages, each with ids of its own, with at least ``messages`` messages;
    returns their paths, the message and line counts."""
    from datetime import UTC, datetime, timedelta

    from tests.core.session.builders import Call, SessionScript
    from tiny_agent_core.session import facts
    from tiny_agent_core.session.store import session_file_name

    paths = []
    for copy in range(copies):
        script = SessionScript(seed=messages * 100 + copy)
        number = 0
        while len(script.messages) < messages:
            body = f"line {number}: " + "lorem ipsum dolor sit amet " * 8
            call = (
                Call("read", f'{{"path":"src/module_{number}.py"}}', body)
                if number % 2
                else Call("bash", '{"command":"pytest -q"}', body, "error" if number % 5 == 0 else "success")
            )
            answer = ANSWER.format(n=number) + (CODE.format(n=number) if number % 3 == 0 else "")
            script.run(f"Please look at module {number} and fix the failing test.", [[call], answer])
            number += 1
        data = script.data()
        old_id = data.split(b'"id":"', 1)[1].split(b'"', 1)[0]
        new_id = facts.new_id()  # the file name's time orders the copies after the small session
        path = folder / session_file_name(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=messages), new_id)
        path.write_bytes(data.replace(old_id, new_id.encode(), 1))
        paths.append(path)
    return paths, len(script.messages), len(script.lines)


def main() -> None:
    """Prepare the session, run the child, print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", nargs="+", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1:])
        return
    sys.path.insert(0, str(ROOT))
    from dataclasses import replace

    from benchmarks.deadline import exit_after

    exit_after(DEADLINE_S, "gui_open_session")

    from tiny_agent_core.ledger import connect, scan_workspace
    from tiny_agent_core.settings import AppSettings, ProfileConfig

    with tempfile.TemporaryDirectory(prefix="tiny-agent-bench-") as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "TINY_AGENT_DATA_DIR": str(root / "data"),
            "TINY_AGENT_CONFIG_DIR": str(root / "config"),
        }
        os.environ.update({key: env[key] for key in ("TINY_AGENT_DATA_DIR", "TINY_AGENT_CONFIG_DIR")})
        workspace = root / "project"
        folder = workspace / ".tiny-agent" / "sessions"
        folder.mkdir(parents=True)
        bigs, message_count, line_count = _write_sessions(folder, args.messages, args.repeat)
        small = _write_sessions(folder, 4, 1)[0][0]
        conn = connect()
        report = scan_workspace(conn, workspace)
        assert report.indexed == args.repeat + 1, report
        assert not report.corrupt, report
        conn.close()
        settings = AppSettings.load()
        settings.add_profile(replace(ProfileConfig.from_preset("openrouter", "openrouter"), model="test/model"))
        settings.active_profile = "openrouter"
        settings.add_workspace(workspace)
        settings.save()
        process = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                str(small),
                *map(str, bigs),
            ],
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
        file_mb = bigs[0].stat().st_size / 1e6

    def rounded(values: list[float]) -> list[float]:
        return [round(value, 1) for value in values]

    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 1) if values else None

    def opens(runs: dict[str, list[Any]]) -> dict[str, Any]:
        return {
            "to_first_paint_median_ms": median(runs["first_paint_ms"]),
            "to_first_paint_runs_ms": rounded(runs["first_paint_ms"]),
            "open_call_median_ms": median(runs["open_call_ms"]),
            "to_next_turn_after_paint_median_ms": median(runs["next_turn_ms"]),
            "to_newest_painted_median_ms": median(runs["newest_paint_ms"]),
            "longest_gui_stall_median_ms": median(runs["gui_stall_ms"]),
            "longest_gui_stall_runs_ms": rounded(runs["gui_stall_ms"]),
            "view_after_open": runs["view_after_open"],
            "layout_settled_after_open": runs["layout_settled"],
            "jump_to_newest_median_ms": median(runs["settled_ms"]),
            "jump_to_newest_stopped_short_at": runs["jump_missed"],
        }

    print(
        json.dumps(
            {
                "messages": message_count,
                "transactions": line_count - 1,
                "file_mb": round(file_mb, 2),
                "transcript_rows": child["rows"],
                "first_open": opens(child["first"]),
                "reopen": opens(child["again"]),
                "rss_with_session_open_mb": round(child["rss_open_mb"], 1),
                "peak_rss_mb": round(child["peak_rss_mb"], 1),
                "target_first_paint_ms": TARGET_MS,
                "target_rss_mb": TARGET_RSS_MB,
            }
        )
    )


if __name__ == "__main__":
    main()
