"""Timeouts, bounded reads, and the one place where httpx transport exceptions become typed errors (SPEC §9).

Every network wait has a timeout (:class:`Timeouts`), the whole request has a deadline (:class:`Deadline`), and
every httpx failure leaves the core as a :class:`~tiny_agent_core.errors.ProviderTimeoutError`,
:class:`~tiny_agent_core.errors.ProviderConnectionError` or :class:`~tiny_agent_core.errors.MalformedResponseError`
whose message names the base URL and says what to check. Bodies are read with a byte cap (:func:`read_body`,
:class:`StreamGuard`) so a broken or hostile server cannot make the app buffer more than the cap. Nothing is
retried here: the window offers Retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar, cast

import httpx

from tiny_agent_core.errors import (
    MalformedResponseError,
    ProviderConnectionError,
    ProviderTimeoutError,
    ResponseTooLargeError,
)

_T = TypeVar("_T")


@dataclass(frozen=True)
class Timeouts:
    """Per-request timeouts in seconds."""

    connect: float = 10.0
    """Establishing the TCP (and TLS) connection."""
    read: float = 120.0
    """The longest wait for any byte: a stream that stalls longer than this fails."""
    write: float = 30.0
    """Sending the request body."""
    pool: float = 10.0
    """Waiting for a free connection in the client's pool."""
    total: float | None = 600.0
    """The whole request, from sending it to the last byte of the response (``None``: no deadline). Unlike
    ``read``, a server that keeps sending a byte now and then cannot extend it."""

    def to_httpx(self) -> httpx.Timeout:
        """The equivalent :class:`httpx.Timeout`."""
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


class Deadline:
    """The whole-request deadline (:attr:`Timeouts.total`), counted from construction; wrap each wait in it.

    :meth:`within` is applied to one wait at a time (never across a ``yield``), so the deadline only ever
    interrupts the request's own I/O, not the code consuming its events.
    """

    def __init__(self, base_url: str, total: float | None) -> None:
        self._base_url = base_url
        self._total = total
        self._at = None if total is None else asyncio.get_running_loop().time() + total

    async def within(self, awaitable: Awaitable[_T]) -> _T:
        """Await ``awaitable``; a :class:`ProviderTimeoutError` naming the deadline if it passes first."""
        if self._at is None or self._total is None:
            return await awaitable
        timeout = asyncio.timeout_at(self._at)
        try:
            async with timeout:
                return await awaitable
        except TimeoutError as error:
            if not timeout.expired():
                raise
            raise ProviderTimeoutError(
                f"{self._base_url} did not complete the response within {self._total:g} s (the whole-request "
                "time limit), so the request was abandoned. The server may be sending very slowly; retry, or "
                "allow a longer total timeout."
            ) from error


def describe_size(size: int) -> str:
    """``32 MiB`` for whole mebibytes, else ``1000 bytes``: how limits appear in messages."""
    mib = 1024 * 1024
    return f"{size // mib} MiB" if size >= mib and size % mib == 0 else f"{size} bytes"


_TOO_LARGE_ADVICE = (
    "No Chat Completions server sends this; check the base URL, or report it to the provider if it persists."
)


async def read_body(response: httpx.Response, limit: int, deadline: Deadline) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of a (decoded) response body, and whether that is all of it.

    Never buffers more than ``limit`` bytes: a ``Content-Length`` above it is refused before reading, and the
    read stops as soon as the body grows past it. Each wait is bounded by ``deadline``.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return b"", False
    parts: list[bytes] = []
    size = 0
    chunks = cast(AsyncGenerator[bytes, None], response.aiter_bytes())
    try:
        while True:
            try:
                chunk = await deadline.within(anext(chunks))
            except StopAsyncIteration:
                return b"".join(parts), True
            if size + len(chunk) > limit:
                parts.append(chunk[: limit - size])
                return b"".join(parts), False
            parts.append(chunk)
            size += len(chunk)
    finally:
        await chunks.aclose()  # now, not at garbage collection


def body_too_large(base_url: str, limit: int) -> ResponseTooLargeError:
    """The error for a response body larger than ``limit`` bytes."""
    return ResponseTooLargeError(
        f"The response from {base_url} is larger than {describe_size(limit)} (the size limit of a response "
        f"body), so it was refused. {_TOO_LARGE_ADVICE}",
        limit=limit,
    )


class StreamGuard:
    """Checks a streamed (SSE) body chunk by chunk, before any line of it is assembled.

    Raises :class:`ResponseTooLargeError` once the body exceeds ``total_limit`` bytes, or once one event (the
    bytes since the last blank line, so any single line too) exceeds ``event_limit`` bytes. Constant work per
    chunk; nothing is buffered.
    """

    def __init__(self, base_url: str, *, event_limit: int, total_limit: int) -> None:
        self._base_url = base_url
        self._event_limit = event_limit
        self._total_limit = total_limit
        self._total = 0
        self._event = 0
        self._tail = b""

    def check(self, chunk: bytes) -> None:
        """Account for the next chunk of the body."""
        self._total += len(chunk)
        if self._total > self._total_limit:
            raise ResponseTooLargeError(
                f"The streamed response from {self._base_url} is larger than {describe_size(self._total_limit)} "
                f"(the size limit of a streamed response), so it was refused. {_TOO_LARGE_ADVICE}",
                limit=self._total_limit,
            )
        # Every blank line (an event boundary) contains LF LF, LF CR or CR CR, whatever the line endings.
        window = self._tail + chunk
        end = max(window.rfind(b"\n\n"), window.rfind(b"\n\r"), window.rfind(b"\r\r"))
        self._event = self._event + len(chunk) if end < 0 else len(window) - end - 2
        self._tail = chunk[-1:]
        if self._event > self._event_limit:
            raise ResponseTooLargeError(
                f"The streamed response from {self._base_url} has an event larger than "
                f"{describe_size(self._event_limit)} (the size limit of one stream event), so it was refused. "
                f"{_TOO_LARGE_ADVICE}",
                limit=self._event_limit,
            )


def _reason(error: Exception) -> str:
    """The error's own words without a final period (the messages that quote them add their own)."""
    text = str(error).strip()
    if not text and error.__context__ is not None:
        text = str(error.__context__).strip()
    return text.rstrip(".") or type(error).__name__


@contextmanager
def translate_transport_errors(base_url: str, timeouts: Timeouts) -> Iterator[None]:
    """Turn httpx exceptions raised inside the block into typed provider errors with actionable messages."""
    try:
        yield
    except httpx.ConnectTimeout as error:
        raise ProviderTimeoutError(
            f"Could not connect to {base_url} within {timeouts.connect:g} s. "
            "Is the server running and reachable from this machine (network, VPN, proxy)?"
        ) from error
    except httpx.ReadTimeout as error:
        raise ProviderTimeoutError(
            f"{base_url} sent nothing for {timeouts.read:g} s, so the request was abandoned. "
            "The server may be overloaded or still loading the model; retry, or allow a longer read timeout."
        ) from error
    except httpx.WriteTimeout as error:
        raise ProviderTimeoutError(
            f"Sending the request to {base_url} took longer than {timeouts.write:g} s. "
            "Check your connection; a very large conversation may need a longer write timeout."
        ) from error
    except httpx.PoolTimeout as error:
        raise ProviderTimeoutError(
            f"No free connection to {base_url} within {timeouts.pool:g} s: too many requests are running at once."
        ) from error
    except httpx.ConnectError as error:
        raise ProviderConnectionError(
            f"Could not connect to {base_url}: {_reason(error)}. "
            "Is the server running, and is the base URL (host and port) right?"
        ) from error
    except httpx.RemoteProtocolError as error:
        raise ProviderConnectionError(
            f"The connection to {base_url} closed before the response completed ({_reason(error)}). "
            "Retry; if it keeps happening, the server or a proxy is cutting responses short."
        ) from error
    except (httpx.ReadError, httpx.WriteError, httpx.CloseError) as error:
        raise ProviderConnectionError(
            f"The connection to {base_url} failed before the response completed ({_reason(error)}). "
            "Check your network and retry."
        ) from error
    except httpx.DecodingError as error:
        raise MalformedResponseError(
            f"The response from {base_url} could not be decoded ({_reason(error)})."
        ) from error
    except httpx.LocalProtocolError as error:  # its text can quote a header value, i.e. the key: never shown
        raise ProviderConnectionError(
            f"The request to {base_url} could not be sent: a header or the base URL is not valid HTTP. "
            "Check the base URL and paste the API key again."
        ) from error
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as error:
        raise ProviderConnectionError(
            f"The base URL {base_url!r} cannot be used: {_reason(error)}. "
            "It should look like https://api.example.com/v1 or http://localhost:11434/v1."
        ) from error
    except (httpx.TransportError, httpx.TooManyRedirects) as error:
        raise ProviderConnectionError(f"The request to {base_url} failed: {_reason(error)}.") from error
