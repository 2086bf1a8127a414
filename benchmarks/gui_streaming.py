"""Event-loop lag and repaint count while the real main window streams 500 text deltas per second (SPEC §8).

    .venv/bin/python benchmarks/gui_streaming.py [--rate 500] [--seconds 5] [--tick-ms 5] [--burst 5] [--in-process]

The loopback server (``tests/loopback.py``, a real HTTP server; by default in a child process so only the app's work
shares this interpreter) replays one chat-completions SSE stream of ``rate × seconds`` text deltas, written
``--burst`` events at a time every ``burst/rate`` seconds (5 per 10 ms by default, as a provider's segments):
Markdown-ish prose (a word or two per delta, paragraph breaks, a fenced code block now and then), ending with
``finish_reason: stop`` and usage. The real :class:`MainWindow` (offscreen, 1280×800, on the app's qasync loop)
starts a new session in a temporary workspace and submits a prompt through its controller, so the deltas take the
app's whole path: HTTP client → SSE parser → agent → bridge signal → transcript model (O(1) append, ~30 Hz coalesced
repaints) → view.

A ticker coroutine on the same loop sleeps ``--tick-ms`` and records by how much each wake-up overshoots (the lag
any input event would see) from the first delta to the end of the run. Prints one JSON object: deltas, achieved
rate, p50/p99/max lag (ms; target p99 ≤ 50 ms), the transcript model's repaints (coalesced flushes of the
streaming row) and the viewport's paint events next to the number of deltas, and the final text length.
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
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from benchmarks.deadline import exit_after
from tests.loopback import LoopbackServer, Reply, Send, Sleep, Step, split_events, sse_events
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.event_loop import HookedQEventLoop
from tiny_agent_gui.main_window import MainWindow, Services

TARGET_P99_MS = 50
WORDS = ("the", "parser", "keeps", "a", "cursor", "into", "the", "buffer", "and", "reports", "each", "token")


def _delta_text(number: int) -> str:
    """The text of delta ``number``: words, paragraph breaks, a fenced code block every 400 deltas."""
    if number % 400 == 390:
        return "\n\n```python\ndef parse(text):\n    return [token for token in text.split()]\n```\n\n"
    if number % 40 == 39:
        return ".\n\n"
    word = WORDS[number % len(WORDS)]
    return f" **{word}**" if number % 23 == 0 else f" {word}"


def _stream(count: int) -> str:
    chunks: list[dict[str, object]] = [
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Sure."}}]}
    ]
    chunks += [
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": _delta_text(n)}}]}
        for n in range(count - 1)
    ]
    chunks.append(
        {
            "id": "c",
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": count, "cost": 0.01},
        }
    )
    return sse_events(chunks)


def _reply(count: int, rate: int, burst: int) -> Reply:
    """The stream as writes of ``burst`` events, ``burst / rate`` seconds apart (as a provider's TCP segments)."""
    events = split_events(_stream(count).encode())
    steps: list[Step] = []
    for start in range(0, len(events), burst):
        if steps:
            steps.append(Sleep(burst / rate))
        steps.append(Send(b"".join(events[start : start + burst])))
    return Reply(200, {"content-type": "text/event-stream", "cache-control": "no-cache"}, steps)


def _serve(count: int, rate: int, burst: int) -> None:
    """Child-process mode: serve the stream, print the base URL, exit when stdin closes."""
    with LoopbackServer(default=_reply(count, rate, burst)) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


class _PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


async def _measure(base_url: str, tick_ms: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="tiny-agent-bench-") as tmp:
        root = Path(tmp)
        os.environ["TINY_AGENT_DATA_DIR"] = str(root / "data")
        os.environ["TINY_AGENT_CONFIG_DIR"] = str(root / "config")
        workspace = root / "project"
        workspace.mkdir()
        settings = AppSettings()
        profile = ProfileConfig.from_preset("openrouter", "openrouter")
        settings.add_profile(replace(profile, base_url=base_url, model="test/model"))
        settings.active_profile = "openrouter"
        settings.add_workspace(workspace)
        from tiny_agent_core.ledger import connect

        ledger = connect()
        http = httpx.AsyncClient(trust_env=False)
        services = Services(
            ProviderClient(http), ledger, settings, KeyStore(environ={}), ToolSettings.in_memory(), ask_context=False
        )
        window = MainWindow(services)
        window.resize(1280, 800)
        window.show()
        await asyncio.sleep(0.3)

        model = window.transcript.transcript_model()
        painter = _PaintCounter()
        window.transcript.viewport().installEventFilter(painter)
        counts = {"deltas": 0, "flushes": 0}
        first_delta: list[float] = []

        def on_delta(_step: str, _text: str) -> None:
            counts["deltas"] += 1
            if not first_delta:
                first_delta.append(time.perf_counter())
                painter.paints = 0
                counts["flushes"] = 0
                lags.clear()
                moments.clear()

        def on_flush() -> None:
            counts["flushes"] += 1

        window.controller.bridge.text_delta.connect(on_delta)
        model.stream_repainted.connect(on_flush)
        longest = [0]

        def on_flush_length() -> None:
            text = model.streaming_text()
            longest[0] = max(longest[0], len(text or ""))

        model.stream_repainted.connect(on_flush_length)

        lags: list[float] = []
        moments: list[float] = []
        stop = asyncio.Event()
        interval = tick_ms / 1000

        async def ticker() -> None:
            while not stop.is_set():
                before = time.perf_counter()
                await asyncio.sleep(interval)
                now = time.perf_counter()
                lags.append((now - before - interval) * 1000)
                moments.append(now)

        tick = asyncio.ensure_future(ticker())
        window.new_session()
        window.controller.submit("Explain the parser.")
        await window.controller.wait_idle()
        finished = time.perf_counter()
        stop.set()
        await tick
        paints = painter.paints
        session = window.controller.session
        assert session is not None
        assert session.store.state.operation.kind == "idle"
        window.controller.close()
        window.close()
        ledger.close()
        await http.aclose()
    ordered = sorted(lags)
    wall = finished - first_delta[0]
    worst = max(range(len(lags)), key=lags.__getitem__)
    return {
        "deltas": counts["deltas"],
        "stream_seconds": round(wall, 2),
        "deltas_per_second": round(counts["deltas"] / wall),
        "tick_ms": tick_ms,
        "ticks": len(ordered),
        "lag_p50_ms": round(statistics.median(ordered), 2),
        "lag_p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)], 2),
        "lag_max_ms": round(ordered[-1], 2),
        "lag_max_at_s_after_first_delta": round(moments[worst] - first_delta[0], 2),
        "ticks_over_50_ms": sum(lag > TARGET_P99_MS for lag in lags),
        "model_repaints": counts["flushes"],
        "viewport_paints": paints,
        "deltas_per_model_repaint": round(counts["deltas"] / max(1, counts["flushes"]), 1),
        "streamed_chars_at_last_repaint": longest[0],
        "target_p99_ms": TARGET_P99_MS,
    }


def main() -> None:
    """Start the server, run the window, print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=500, help="deltas per second")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--tick-ms", type=float, default=5.0)
    parser.add_argument("--burst", type=int, default=5, help="deltas per server write")
    parser.add_argument("--in-process", action="store_true", help="run the server in a thread of this process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    exit_after(120 + 2 * args.seconds, "gui_streaming server" if args.serve else "gui_streaming")
    count = int(args.rate * args.seconds)
    if args.serve:
        _serve(count, args.rate, args.burst)
        return
    app = QApplication.instance() or QApplication(sys.argv[:1])
    loop = HookedQEventLoop(app)
    asyncio.set_event_loop(loop)
    result: dict[str, object] = {"rate_requested": args.rate}
    try:
        if args.in_process:
            with LoopbackServer(default=_reply(count, args.rate, args.burst)) as server:
                result |= {"server": "thread"} | loop.run_until_complete(_measure(server.base_url, args.tick_ms))
        else:
            child = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--serve",
                    f"--rate={args.rate}",
                    f"--seconds={args.seconds}",
                    f"--burst={args.burst}",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert child.stdout is not None
                base_url = child.stdout.readline().strip()
                result |= {"server": "process"} | loop.run_until_complete(_measure(base_url, args.tick_ms))
            finally:
                assert child.stdin is not None
                child.stdin.close()
                child.wait(10)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
