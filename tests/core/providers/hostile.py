"""Hostile provider responses at real size, each run in a fresh process so its peak RSS can be measured.

    .venv/bin/python -m tests.core.providers.hostile CASE

runs one case (:data:`CASES`) against the loopback server in this process and prints one JSON line: ``case``,
``error`` (``{kind, type, message}``, or ``null`` if the response was accepted), ``baselineRssMb`` (peak RSS before
the request: interpreter, imports, server), ``peakRssMb`` (``VmHWM`` after it) and ``seconds``. The server makes
each body lazily, as the client reads it, so the figures are the client's. Used by ``test_client_limits.py`` and
``benchmarks/hostile_provider.py``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from tests.loopback import Generate, LoopbackServer, Reply
from tiny_agent_core.errors import ProviderError
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.transport import Timeouts

MIB = 1024 * 1024
_PIECE = b"a" * MIB


def _json_body(megabytes: int) -> Reply:
    """A 200 body whose assistant content is ``megabytes`` MiB long, chunked (no Content-Length to refuse early)."""

    def pieces() -> Iterator[bytes]:
        yield b'{"id":"x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"'
        for _ in range(megabytes):
            yield _PIECE
        yield b'"}}]}'

    return Reply(headers={"content-type": "application/json"}, steps=[Generate(pieces)])


def _sse_line(megabytes: int) -> Reply:
    """One SSE line of ``megabytes`` MiB that never ends (no newline at all)."""

    def pieces() -> Iterator[bytes]:
        yield b'data: {"choices":[{"index":0,"delta":{"content":"'
        for _ in range(megabytes):
            yield _PIECE

    return Reply(headers={"content-type": "text/event-stream"}, steps=[Generate(pieces)])


def _arguments(megabytes: int) -> Reply:
    """A streamed tool call whose arguments grow by 64 KiB per event, to ``megabytes`` MiB."""
    start = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "write", "arguments": ""}}
    piece = {"index": 0, "function": {"arguments": "a" * (64 * 1024)}}

    def event(call: dict[str, Any]) -> bytes:
        chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
        return f"data: {json.dumps(chunk)}\n\n".encode()

    def pieces() -> Iterator[bytes]:
        yield event(start)
        body = event(piece)
        for _ in range(megabytes * 16):
            yield body
        yield b"data: [DONE]\n\n"

    return Reply(headers={"content-type": "text/event-stream"}, steps=[Generate(pieces)])


CASES: dict[str, tuple[Callable[[int], Reply], int, bool]] = {
    "body": (_json_body, 200, False),
    "sse_line": (_sse_line, 300, True),
    "arguments": (_arguments, 50, True),
}
"""Case name → (reply factory, size in MiB, whether the request streams)."""


def peak_rss_mb() -> float:
    """This process's peak resident set size (``VmHWM``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmHWM in /proc/self/status")


async def _request(base_url: str, streaming: bool) -> ProviderError | None:
    profile = replace(custom_profile(base_url), streaming=streaming)
    async with ProviderClient(httpx.AsyncClient(trust_env=False)) as client:
        stream = client.stream_chat(
            profile,
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            timeouts=Timeouts(connect=5, read=30, total=60),
        )
        try:
            async with stream:
                async for _event in stream:
                    pass
        except ProviderError as error:
            return error
    return None


def run_case(name: str) -> dict[str, Any]:
    """Run one case in this process and return its JSON line (see the module docstring)."""
    factory, megabytes, streaming = CASES[name]
    with LoopbackServer(default=factory(megabytes)) as server:
        baseline = peak_rss_mb()
        started = time.perf_counter()
        error = asyncio.run(_request(server.base_url, streaming))
        seconds = time.perf_counter() - started
        server.requests[0].wait_finished(10)
    return {
        "case": name,
        "sizeMb": megabytes,
        "error": None if error is None else {"kind": error.kind, "type": type(error).__name__, "message": str(error)},
        "baselineRssMb": baseline,
        "peakRssMb": peak_rss_mb(),
        "seconds": round(seconds, 2),
    }


if __name__ == "__main__":
    print(json.dumps(run_case(sys.argv[1])))
