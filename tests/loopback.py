"""A real HTTP/1.1 server on 127.0.0.1 for provider tests: replays recorded bodies and streams, faults.

The server runs an asyncio loop in a background thread, so it works the same from sync tests, from async tests
(it never blocks their loop), from subprocess tests (the child connects over TCP) and from benchmarks::

    with LoopbackServer() as server:
        server.queue(Reply.sse(text, pace=0.01))
        ...  # point the client at server.base_url ("http://127.0.0.1:<port>/v1")
        server.requests[0].json()          # what the client sent
        server.requests[0].wait_closed(5)  # True once the client closed the connection early

A :class:`Reply` is a status line, headers and a list of steps: :class:`Send` (bytes), :class:`Generate` (bytes
made lazily as the client reads them, for bodies too big to hold), :class:`Sleep` (a stall, cut short when the
client goes away) and :class:`Abort` (close the connection mid-response). Bodies are
framed by ``Content-Length`` (``"length"``), chunked transfer encoding (``"chunked"``), end of connection
(``"close"``) or not at all (``"raw"``: the steps' bytes go out as written, for malformed chunk framing).
Every response says ``Connection: close``: one request per connection, so each request's fate is observable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Framing = Literal["length", "chunked", "close", "raw"]

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Send:
    """Write these bytes (one chunk when the framing is chunked)."""

    data: bytes


@dataclass(frozen=True)
class Generate:
    """Write the pieces ``pieces()`` yields, each when the client has taken the previous one (flow control), so a
    body of hundreds of MB is never held in memory; each piece is one chunk when the framing is chunked."""

    pieces: Callable[[], Iterable[bytes]]
    size: int = 0
    """The total size of the pieces, for ``Content-Length`` framing."""


@dataclass(frozen=True)
class Sleep:
    """Pause the response (a stall); ends early when the client closes the connection."""

    seconds: float


@dataclass(frozen=True)
class Abort:
    """Close the connection now, before the response is complete (``reset=True``: send a TCP RST)."""

    reset: bool = False


Step = Send | Generate | Sleep | Abort


@dataclass
class Reply:
    """One scripted response."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    framing: Framing = "chunked"
    delay: float = 0.0
    """Seconds to wait before the status line (a slow server; the client's read timeout applies)."""

    @classmethod
    def json(cls, body: Any, *, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
        """A complete JSON body with ``Content-Length`` (``body`` may be bytes/str already serialised)."""
        data = _as_bytes(body)
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            steps=[Send(data)],
            framing="length",
        )

    @classmethod
    def error(
        cls,
        status: int,
        body: Any = b"",
        *,
        retry_after: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An HTTP error with a JSON (or text) body and optionally a ``Retry-After`` header."""
        extra = dict(headers or {})
        if retry_after is not None:
            extra["retry-after"] = retry_after
        return cls.json(body, status=status, headers=extra)

    @classmethod
    def sse(
        cls,
        text: str | bytes,
        *,
        pace: float = 0.0,
        framing: Framing = "chunked",
        headers: Mapping[str, str] | None = None,
        cut_after: int | None = None,
        stall_after: int | None = None,
        stall: float = 0.0,
    ) -> Reply:
        """An SSE stream sent event by event (split after each blank line), ``pace`` seconds apart.

        ``cut_after=n`` closes the connection after n events (mid-stream); ``stall_after=n`` sleeps ``stall``
        seconds after n events.
        """
        steps: list[Step] = []
        for number, event in enumerate(split_events(_as_bytes(text)), start=1):
            if steps and pace:
                steps.append(Sleep(pace))
            steps.append(Send(event))
            if stall_after == number:
                steps.append(Sleep(stall))
            if cut_after == number:
                steps.append(Abort())
                break
        return cls(
            status=200,
            headers={"content-type": "text/event-stream", "cache-control": "no-cache", **(headers or {})},
            steps=steps,
            framing=framing,
        )

    @classmethod
    def from_case(cls, case: Mapping[str, Any], *, pace: float = 0.0, framing: Framing = "chunked") -> Reply:
        """Replay a recorded ../shared/wire case (``sse`` or ``response``/``error`` kinds)."""
        headers = {k: v for k, v in (case.get("headers") or {}).items() if k.lower() in _REPLAYED_CASE_HEADERS}
        if case["kind"] == "sse":
            return cls.sse(case_sse_text(case), pace=pace, framing=framing, headers=headers)
        status = case.get("http_status") or (200 if case["kind"] == "response" else 400)
        return cls.json(case["body"], status=status, headers=headers)


_REPLAYED_CASE_HEADERS = {
    "x-request-id",
    "request-id",
    "openai-processing-ms",
    "retry-after",
    "retry-after-ms",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
}


def case_sse_text(case: Mapping[str, Any]) -> str:
    """A case's SSE text as sent on the wire (``jsonl`` cases get ``data:`` framing and a [DONE])."""
    text: str = case["sse"]
    if case.get("sse_format") == "jsonl":
        lines = [line for line in text.splitlines() if line.strip()]
        return "".join(f"data: {line}\n\n" for line in lines) + "data: [DONE]\n\n"
    return text


def load_case(path: Path) -> dict[str, Any]:
    """A ../shared/wire case file as a dict."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def split_events(data: bytes) -> list[bytes]:
    """Split an SSE byte stream after each blank line (each piece keeps its separator)."""
    pieces: list[bytes] = []
    normalized = data.replace(b"\r\n", b"\n")
    start = 0
    while True:
        end = normalized.find(b"\n\n", start)
        if end < 0:
            break
        pieces.append(normalized[start : end + 2])
        start = end + 2
    if start < len(normalized):
        pieces.append(normalized[start:])
    return pieces


def sse_events(payloads: Iterable[str | Mapping[str, Any]], *, done: bool = True) -> str:
    """Frame JSON chunks (dicts or raw strings) as ``data:`` events, ending with ``[DONE]`` by default."""
    out = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads]
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out)


def _as_bytes(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")


@dataclass
class RecordedRequest:
    """What the server received on one connection, and what became of it."""

    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased header names."""
    body: bytes
    received_at: float
    """``time.perf_counter()`` when the request was read."""
    response_complete: bool = False
    """The server wrote the whole scripted response."""
    client_closed: bool = False
    """The client closed (or reset) the connection before the response was complete."""
    client_closed_at: float | None = None
    """``time.perf_counter()`` when the server noticed the early close."""
    _closed: threading.Event = field(default_factory=threading.Event, repr=False)
    _finished: threading.Event = field(default_factory=threading.Event, repr=False)

    def json(self) -> Any:
        """The request body parsed as JSON."""
        return json.loads(self.body)

    def wait_closed(self, timeout: float) -> bool:
        """Block until the client closed the connection early; False after ``timeout`` seconds."""
        return self._closed.wait(timeout)

    def wait_finished(self, timeout: float) -> bool:
        """Block until the server is done with this connection (complete, aborted or closed by the client)."""
        return self._finished.wait(timeout)


class LoopbackServer:
    """The test server. Replies are taken from the queue in order; then ``default``; else a 500."""

    def __init__(self, *, default: Reply | None = None) -> None:
        self.default = default
        self.handler: Callable[[RecordedRequest], Reply] | None = None
        """When set, called for every request instead of the queue."""
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._request_seen = threading.Condition(self._lock)
        self.port = 0

    # -- lifecycle -----------------------------------------------------------------------------------------
    def start(self) -> LoopbackServer:
        """Start the server thread and bind an ephemeral port."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()

        self._thread = threading.Thread(target=run, name="loopback-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the loopback server did not start")
        return self

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def stop(self) -> None:
        """Stop the server, closing any open connections."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -----------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL: ``http://127.0.0.1:<port>/v1``."""
        return f"{self.url}/v1"

    def queue(self, *replies: Reply) -> None:
        """Append replies for the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` requests were received."""
        with self._request_seen:
            return self._request_seen.wait_for(lambda: len(self.requests) >= count, timeout)

    # -- serving -------------------------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await reader.readexactly(length) if length else b""
        request = RecordedRequest(method, path, headers, body, time.perf_counter())
        with self._request_seen:
            self.requests.append(request)
            if self.handler is not None:
                reply = self.handler(request)
            elif self._replies:
                reply = self._replies.popleft()
            elif self.default is not None:
                reply = self.default
            else:
                reply = Reply.error(500, {"error": {"message": "loopback: no reply queued"}})
            self._request_seen.notify_all()

        closed = asyncio.Event()

        async def watch() -> None:
            # Nothing more is expected from the client; EOF or a reset means it went away.
            with contextlib.suppress(ConnectionError, OSError):
                await reader.read(1)
            if not request.response_complete:
                request.client_closed = True
                request.client_closed_at = time.perf_counter()
                request._closed.set()
            closed.set()

        watcher = asyncio.create_task(watch())
        try:
            await self._respond(reply, writer, closed, request)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            request._finished.set()

    async def _respond(
        self, reply: Reply, writer: asyncio.StreamWriter, closed: asyncio.Event, request: RecordedRequest
    ) -> None:
        async def pause(seconds: float) -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closed.wait(), seconds)

        if reply.delay:
            await pause(reply.delay)
            if closed.is_set():
                return
        head = [f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, 'Status')}"]
        names = {name.lower() for name in reply.headers}
        head += [f"{name}: {value}" for name, value in reply.headers.items()]
        if reply.framing == "length" and "content-length" not in names:
            size = sum(len(step.data) for step in reply.steps if isinstance(step, Send))
            size += sum(step.size for step in reply.steps if isinstance(step, Generate))
            head.append(f"content-length: {size}")
        elif reply.framing == "chunked":
            head.append("transfer-encoding: chunked")
        head.append("connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        # ``response_complete`` is set just before the final bytes are queued, so a client that closes right
        # after reading everything never counts as an early close.
        aborts = any(isinstance(step, Abort) for step in reply.steps)
        sends = [i for i, step in enumerate(reply.steps) if isinstance(step, Send | Generate)]
        final_send = sends[-1] if sends and reply.framing != "chunked" and not aborts else None
        if not sends and reply.framing != "chunked" and not aborts:
            request.response_complete = True
        for index, step in enumerate(reply.steps):
            if closed.is_set():
                return
            if isinstance(step, Sleep):
                await pause(step.seconds)
            elif isinstance(step, Generate):
                for piece in step.pieces():
                    if closed.is_set():
                        return
                    if piece:
                        writer.write(
                            f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if reply.framing == "chunked" else piece
                        )
                        await writer.drain()
                if index == final_send:
                    request.response_complete = True
            elif isinstance(step, Abort):
                if step.reset:
                    writer.transport.abort()
                else:
                    writer.close()
                closed.set()
                return
            else:
                data = step.data
                if reply.framing == "chunked":
                    if not data:
                        continue  # an empty chunk would end the body
                    data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
                if index == final_send:
                    request.response_complete = True
                writer.write(data)
                await writer.drain()
        if closed.is_set():
            return
        if reply.framing == "chunked":
            request.response_complete = True
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        writer.close()


class BlackHole:
    """A listening port that never completes a connection: its backlog is full, so connecting times out.

    ``with BlackHole() as url: ...`` gives ``http://127.0.0.1:<port>/v1``; connects to it hang until the client's
    connect timeout (no internet needed).
    """

    def __init__(self, fillers: int = 8) -> None:
        self._fillers = fillers
        self._sockets: list[socket.socket] = []

    def __enter__(self) -> str:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        self._sockets.append(listener)
        port = listener.getsockname()[1]
        for _ in range(self._fillers):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            self._sockets.append(filler)
        return f"http://127.0.0.1:{port}/v1"

    def __exit__(self, *exc: object) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()


def free_port_url() -> str:
    """A base URL on a port where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
