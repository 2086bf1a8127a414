"""Time from cancelling a streaming request to the server seeing the connection closed (SPEC §9, issue 3).

    .venv/bin/python benchmarks/provider_cancel.py [--tries 20] [--pace 0.02]

For each try: the loopback server streams SSE deltas every ``pace`` seconds; the consumer task reads the first
delta, then is cancelled. The server thread stamps the moment it observes the client's close (EOF/reset on the
socket); the difference from the ``task.cancel()`` call is the cancel latency. Prints one JSON object with the
median, p90 and max in milliseconds over all tries.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.deadline import exit_after
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.results import StreamedText
from tiny_agent_core.providers.transport import Timeouts


def _stream_text(count: int) -> str:
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": "token "}, "finish_reason": None}]}
    return sse_events([chunk] * count)


async def _one(client: ProviderClient, server: LoopbackServer, index: int) -> float:
    stream = client.stream_chat(
        custom_profile(server.base_url),
        model="m",
        messages=[{"role": "user", "content": "go"}],
        timeouts=Timeouts(read=10),
    )
    first = asyncio.Event()

    async def consume() -> None:
        async with stream:
            async for event in stream:
                if isinstance(event, StreamedText):
                    first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 10)
    cancelled_at = time.perf_counter()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    request = server.requests[index]
    if not await asyncio.to_thread(request.wait_closed, 10) or request.client_closed_at is None:
        raise RuntimeError("the server never saw the connection close")
    return (request.client_closed_at - cancelled_at) * 1000


async def _run(tries: int, pace: float) -> dict[str, object]:
    with LoopbackServer(default=Reply.sse(_stream_text(2000), pace=pace)) as server:
        async with ProviderClient(httpx.AsyncClient(trust_env=False)) as client:
            await _one(client, server, 0)  # warm-up (imports, first connection)
            samples = [await _one(client, server, i + 1) for i in range(tries)]
    ordered = sorted(samples)
    return {
        "benchmark": "provider_cancel",
        "tries": tries,
        "paceSeconds": pace,
        "medianMs": round(statistics.median(samples), 3),
        "p90Ms": round(ordered[max(0, int(len(ordered) * 0.9) - 1)], 3),
        "maxMs": round(max(samples), 3),
        "minMs": round(min(samples), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between streamed events")
    args = parser.parse_args()
    exit_after(60 + 10 * args.tries, "provider_cancel")
    print(json.dumps(asyncio.run(_run(args.tries, args.pace))))


if __name__ == "__main__":
    main()
