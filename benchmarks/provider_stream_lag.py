"""Event-loop lag while the client consumes a 5,000-event SSE stream at full speed (SPEC §8, issue 3).

    .venv/bin/python benchmarks/provider_stream_lag.py [--events 5000] [--in-process]

A ticker coroutine sleeps 1 ms in a loop and records how much later than asked it wakes up (the lag any other
coroutine — e.g. the UI — would see) while the streaming client reads ``events`` text deltas sent back to back by
the loopback server. By default the server runs in a child process, so only the client's work shares the
interpreter; ``--in-process`` runs it in a thread of this process instead (it then competes for the GIL).
Prints one JSON object: events, wall time, events/s, and the ticker's max / p99 / median lag in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.deadline import exit_after
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.results import StreamedText
from tiny_agent_core.providers.transport import Timeouts


def _stream_text(count: int) -> str:
    chunks: list[dict[str, object]] = [
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}]}
        for i in range(count - 1)
    ]
    chunks.append({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return sse_events(chunks)


def _serve(events: int) -> None:
    """Child-process mode: serve the stream forever, print the base URL, exit when stdin closes."""
    with LoopbackServer(default=Reply.sse(_stream_text(events))) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


async def _measure(base_url: str) -> dict[str, object]:
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append((time.perf_counter() - before - 0.001) * 1000)

    async with ProviderClient(httpx.AsyncClient(trust_env=False)) as client:
        profile = custom_profile(base_url)
        messages = [{"role": "user", "content": "go"}]
        await client.complete(profile, model="m", messages=messages)  # warm-up
        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        lags.clear()
        deltas = 0
        started = time.perf_counter()
        async with client.stream_chat(profile, model="m", messages=messages, timeouts=Timeouts(read=30)) as stream:
            async for event in stream:
                if isinstance(event, StreamedText):
                    deltas += 1
                elif isinstance(event, ChatCompleted):
                    assert event.response.stop_reason == "stop"
        wall = time.perf_counter() - started
        stop.set()
        await tick
    ordered = sorted(lags)
    return {
        "deltas": deltas,
        "wallSeconds": round(wall, 3),
        "eventsPerSecond": round((deltas + 1) / wall),
        "ticks": len(lags),
        "maxLagMs": round(ordered[-1], 3),
        "p99LagMs": round(ordered[int(len(ordered) * 0.99) - 1], 3),
        "medianLagMs": round(statistics.median(ordered), 3),
    }


def main() -> None:
    exit_after(600, "provider_stream_lag")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--in-process", action="store_true", help="run the server in a thread of this process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.events)
        return
    result: dict[str, object] = {"benchmark": "provider_stream_lag", "events": args.events}
    if args.in_process:
        with LoopbackServer(default=Reply.sse(_stream_text(args.events))) as server:
            result |= {"server": "thread"} | asyncio.run(_measure(server.base_url))
    else:
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--events", str(args.events)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            base_url = child.stdout.readline().strip()
            result |= {"server": "process"} | asyncio.run(_measure(base_url))
        finally:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(10)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
