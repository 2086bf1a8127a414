"""One connected MCP server, through the official SDK (``mcp``): start or reach it, list its tools, call them.

Each server lives in its own task (:meth:`Connection.open` starts it), which enters the SDK's client, answers the
tool list and then waits to be closed, so the SDK's task groups and cancel scopes are entered and left in one task
whatever task the calls and :meth:`Connection.close` come from. Every wait is bounded:

- connecting (start or reach the server, the handshake, ``tools/list``) takes at most the connect timeout
  (10 s); a server that cannot be started, hangs up or is too slow is a
  :class:`~tiny_agent_core.mcp.errors.McpConnectError`;
- a call takes at most the server's ``callTimeoutMs``; it ends at once when the server is gone (a crash is the
  SDK's ``Connection closed``), when the caller's ``cancel`` event is set (:class:`ToolAborted`) or when its task
  is cancelled; each failure is a :class:`McpCallError` with a sentence for the model;
- closing stops a local server the SDK's way (stdin closed, then its process group terminated and killed, each
  step bounded; :mod:`.stdio`) and a remote one by ending its session.

A local server gets the secret-free environment of the tools' children
(:func:`~tiny_agent_core.tools.environment.child_environment`) plus the ``env`` of its entry; its stderr is kept
(the last 4 KB) to explain a failure, and none of its messages may exceed 16 MB (:mod:`.stdio`). A remote server
is reached without following any redirect, with its bearer token from the entry's ``tokenEnv`` or the keyring
(:func:`token_key`), through the environment's proxy (never for this machine), and no HTTP response body may
exceed 16 MB.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TextIO, cast
from urllib.parse import urlsplit

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult
from mcp_types import Tool as RemoteTool

from tiny_agent_core.errors import SecretStoreError, ToolAborted
from tiny_agent_core.mcp.app_catalog import TokenReader as TokenStore
from tiny_agent_core.mcp.app_catalog import token_entry as token_key
from tiny_agent_core.mcp.catalog import HttpServer, ServerSpec, StdioServer, is_loopback
from tiny_agent_core.mcp.errors import McpConnectError, McpError
from tiny_agent_core.mcp.limits import MAX_TOOLS
from tiny_agent_core.mcp.stdio import bounded_stdio
from tiny_agent_core.redaction import environment_secrets
from tiny_agent_core.tools.environment import child_environment

__all__ = ["CONNECT_TIMEOUT", "MAX_RESPONSE_BYTES", "Connection", "McpCallError", "TokenStore", "token_key"]

CONNECT_TIMEOUT = 10.0
"""Seconds a server has to start (or be reached), shake hands and list its tools."""
CLOSE_TIMEOUT = 10.0
"""Seconds closing may take before the server's task is abandoned (the SDK's own shutdown takes at most ~6 s)."""
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""The largest HTTP response body read from a remote server."""
MAX_SSE_EVENT_BYTES = 4 * 1024 * 1024
"""The largest server-sent event read from a remote server."""
MAX_TOKEN = 8192
"""The longest bearer token sent."""
STDERR_TAIL = 4096
"""How much of a local server's stderr is kept to explain a failure."""
_MAX_LIST_PAGES = 16


class McpCallError(McpError):
    """A call could not be answered (timed out, the server is gone, it refused); the message is for the model."""


class Connection:
    """A connected server: its entry, the tools it offered, and calls to them. Made by :meth:`open`."""

    def __init__(self, spec: ServerSpec, tools: list[RemoteTool], protocol_version: str) -> None:
        self.spec = spec
        self.tools = tools
        """The tools the server listed (all of them; :func:`~tiny_agent_core.mcp.limits.check_tools` picks)."""
        self.protocol_version = protocol_version
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._serving = False
        self._gone = asyncio.Event()
        self._failure: BaseException | None = None
        self._lost: str | None = None
        self._calls: set[asyncio.Future[CallToolResult]] = set()
        self._stderr: _StderrTail | None = None
        self.secrets: list[str] = []
        """Values this server was given that must never be persisted or sent: its bearer token, and the
        secret-looking values of its configured ``env`` (filled as it connects)."""

    @property
    def alias(self) -> str:
        """The server's alias in the catalog."""
        return self.spec.alias

    @property
    def gone(self) -> bool:
        """Whether the connection ended (the server exited, the transport failed or lost it) or was closed."""
        return self._gone.is_set() or self._lost is not None

    @property
    def identity(self) -> str:
        """A digest of what makes the server this server (transport, address, auth kind, protocol version)."""
        spec = self.spec
        if isinstance(spec, StdioServer):
            where: dict[str, Any] = {"transport": "stdio", "command": spec.command, "args": list(spec.args)}
        else:
            where = {"transport": "http", "url": spec.url, "auth": "bearer" if spec.token_env else "none"}
        where["protocolVersion"] = self.protocol_version
        data = json.dumps(where, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(data).hexdigest()[:16]

    def stderr_tail(self) -> str:
        """The last few KB a local server wrote to stderr (empty for a remote server)."""
        return self._stderr.text() if self._stderr is not None else ""

    @classmethod
    async def open(
        cls,
        spec: ServerSpec,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        environ: Mapping[str, str] | None = None,
        keys: TokenStore | None = None,
    ) -> Connection:
        """Start or reach the server of ``spec`` and list its tools, within ``connect_timeout`` seconds.

        ``environ`` (default ``os.environ``) is where a local server's base environment and a remote server's
        ``tokenEnv`` come from; ``keys`` (the keyring) holds the tokens of remote servers under
        :func:`token_key`. Raises :class:`McpConnectError`.
        """
        environ = os.environ if environ is None else environ
        connection = cls(spec, [], "")
        stderr = connection._stderr = _StderrTail() if isinstance(spec, StdioServer) else None
        transport = _transport(spec, environ, keys, stderr, connection._lose, connection.secrets)
        client = Client(transport, cache=None)
        ready: asyncio.Future[list[RemoteTool]] = asyncio.get_running_loop().create_future()
        connection._task = asyncio.create_task(connection._serve(client, ready), name=f"mcp server {spec.alias}")
        try:
            async with asyncio.timeout(connect_timeout):
                connection.tools = await asyncio.shield(ready)
        except BaseException as error:
            await connection.close()
            if isinstance(error, TimeoutError):
                raise McpConnectError(spec.alias, "timeout", f"no answer within {connect_timeout:g} s") from None
            if isinstance(error, asyncio.CancelledError):
                raise
            leaf = _leaf(error)
            if isinstance(leaf, McpConnectError):
                raise McpConnectError(spec.alias, leaf.cause, leaf.detail) from None
            raise McpConnectError(spec.alias, "connection_failed", connection._describe(leaf)) from None
        finally:
            if stderr is not None:
                stderr.close_writer()
        connection.protocol_version = client.protocol_version
        return connection

    async def _serve(self, client: Client, ready: asyncio.Future[list[RemoteTool]]) -> None:
        """The server's task: connect, list, wait for :meth:`close`, disconnect."""
        try:
            async with client:
                self._client = client
                listed = await _list_tools(client)
                if not ready.done():
                    ready.set_result(listed)
                self._serving = True
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as error:  # the SDK's task groups raise groups; keep it, the task ends
            self._failure = error
            if not ready.done():
                ready.set_exception(error)
        finally:
            self._client = None
            self._gone.set()

    async def call(
        self, name: str, arguments: dict[str, Any], *, cancel: asyncio.Event | None = None
    ) -> CallToolResult:
        """Call the tool ``name``; raises :class:`McpCallError`, :class:`ToolAborted` or ``CancelledError``."""
        client = self._client
        if client is None or self._gone.is_set():
            raise McpCallError(f"MCP server {self.alias} is not running{self._why()}")
        timeout_ms = self.spec.call_timeout_ms
        call = asyncio.ensure_future(client.session.call_tool(name, arguments))
        call.add_done_callback(_retrieve)
        self._calls.add(call)
        watchers = [asyncio.ensure_future(self._gone.wait())]
        if cancel is not None:
            watchers.append(asyncio.ensure_future(cancel.wait()))
        try:
            done, _ = await asyncio.wait(
                {call, *watchers}, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for watcher in watchers:
                watcher.cancel()
            if not call.done():
                call.cancel()
            self._calls.discard(call)
        if call in done:
            return self._result(call)
        if cancel is not None and cancel.is_set():
            raise ToolAborted()
        if self._gone.is_set():
            raise McpCallError(f"MCP server {self.alias} stopped during the call{self._why()}")
        raise McpCallError(f"MCP server {self.alias} did not answer within {timeout_ms} ms")

    def _result(self, call: asyncio.Future[CallToolResult]) -> CallToolResult:
        try:
            return call.result()
        except MCPError as error:
            raise McpCallError(f"MCP server {self.alias}: {error.message}{self._why()}") from None
        except RuntimeError as error:
            message = f"MCP server {self.alias} asked for more input, which is not supported: {error}"
            raise McpCallError(message) from None
        except Exception as error:
            raise McpCallError(f"MCP server {self.alias}: {_sentence(_leaf(error))}") from None

    def _lose(self, reason: str) -> None:
        """The transport ended the connection for ``reason`` (a local server sent an over-long message)."""
        self._lost = reason

    def _why(self) -> str:
        """`` (<reason>)``: why the connection was lost, the server's failure or its last stderr line; or nothing."""
        reason = self._lost or (_sentence(_leaf(self._failure)) if self._failure is not None else "")
        if not reason:
            lines = self.stderr_tail().strip().splitlines()
            reason = lines[-1].strip() if lines else ""
        return f" ({reason[:300]})" if reason else ""

    def _describe(self, error: BaseException) -> str:
        text = self._lost or _sentence(error)
        stderr = self.stderr_tail().strip()
        return f"{text}; its stderr ends: {stderr[-500:]}" if stderr else text

    async def close(self) -> None:
        """Stop the server (a local one is terminated) and end every call still running; bounded, idempotent."""
        self._stop.set()
        for call in list(self._calls):
            call.cancel()
        task = self._task
        if task is not None and not task.done():
            if not self._serving:  # still connecting: nothing to wait for but the SDK's (bounded) clean-up
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        if self._stderr is not None:
            self._stderr.close()


async def _list_tools(client: Client) -> list[RemoteTool]:
    """Every tool the server lists, page by page; more than the limit (or endless pages) is refused."""
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(_MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        if len(tools) > MAX_TOOLS:
            raise McpConnectError("?", "invalid_server", f"it lists more than {MAX_TOOLS} tools")
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise McpConnectError("?", "invalid_server", f"its tool list has more than {_MAX_LIST_PAGES} pages")


def _transport(
    spec: ServerSpec,
    environ: Mapping[str, str],
    keys: TokenStore | None,
    stderr: _StderrTail | None,
    on_lost: Callable[[str], None],
    secrets: list[str],
) -> contextlib.AbstractAsyncContextManager[Any]:
    if isinstance(spec, StdioServer):
        assert stderr is not None
        secrets.extend(environment_secrets(spec.env))
        environment = child_environment(source=environ) | dict(spec.env)
        return bounded_stdio(
            spec.command, list(spec.args), env=environment, cwd=spec.cwd, errlog=stderr.writer, on_lost=on_lost
        )
    return _http_transport(spec, environ, keys, secrets)


@contextlib.asynccontextmanager
async def _http_transport(
    spec: HttpServer, environ: Mapping[str, str], keys: TokenStore | None, secrets: list[str]
) -> AsyncIterator[Any]:
    headers = {}
    token, source = _token(spec, environ, keys)
    if token is not None:
        secrets.append(token)
        url = urlsplit(spec.url)
        if url.scheme == "http" and not is_loopback(url.hostname or ""):
            # the catalog refuses a tokenEnv here; a keyring token is only known now
            message = f"the token in {source} is only sent over https (or to this machine)"
            raise McpConnectError(spec.alias, "configuration", message)
        if len(token) > MAX_TOKEN or not token.isascii() or not token.isprintable() or " " in token:
            # said without the value: an HTTP library's own error would quote the header
            message = f"the token in {source} cannot be sent as a bearer token"
            raise McpConnectError(spec.alias, "configuration", message)
        headers["Authorization"] = f"Bearer {token}"
    inner = httpx2.AsyncHTTPTransport(proxy=_proxy(spec.url))
    client = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=300.0),
        max_redirects=0,  # the SDK follows same-origin redirects up to this many: none
        transport=_CappedTransport(inner, MAX_RESPONSE_BYTES),
    )
    async with (
        client,
        streamable_http_client(spec.url, http_client=client, max_sse_event_size=MAX_SSE_EVENT_BYTES) as streams,
    ):
        yield streams


def _token(spec: HttpServer, environ: Mapping[str, str], keys: TokenStore | None) -> tuple[str | None, str]:
    """The server's bearer token and where it came from: ``tokenEnv``'s variable, else the keyring's entry
    :func:`token_key`; a ``tokenEnv`` that is not set and no keyring entry is a configuration error."""
    if spec.token_env is not None:
        value = environ.get(spec.token_env, "").strip()
        if value:
            return value, f"the environment variable {spec.token_env}"
    key = token_key(spec.alias)
    try:
        stored = keys.get(key) if keys is not None else None
    except SecretStoreError as error:
        raise McpConnectError(spec.alias, "configuration", str(error)) from None
    if stored and stored.strip():
        return stored.strip(), f"the keyring entry {key}"
    if spec.token_env is not None:
        raise McpConnectError(spec.alias, "configuration", f"the environment variable {spec.token_env} is not set")
    return None, ""


def _proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``https_proxy``, ``no_proxy`` …); none for this machine.

    A client with its own transport does not read them itself."""
    host = urlsplit(url).hostname or ""
    if is_loopback(host) or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies_environment().get(urlsplit(url).scheme)


class _CappedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose response bodies end with an error past ``limit`` bytes."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        stream = _CappedStream(cast(httpx2.AsyncByteStream, response.stream), self._limit)
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._inner:
            total += len(chunk)
            if total > self._limit:
                raise httpx2.ReadError(f"the response is larger than {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _StderrTail:
    """A pipe for a child's stderr whose last :data:`STDERR_TAIL` bytes are kept as they arrive."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        os.set_blocking(read_fd, False)
        self._tail = b""
        asyncio.get_running_loop().add_reader(read_fd, self._read)

    def _read(self) -> None:
        try:
            data = self._reader.read(65536)
        except OSError:
            data = b""
        if not data:  # end of file: every writer is closed
            self.close()
            return
        self._tail = (self._tail + data)[-STDERR_TAIL:]

    def text(self) -> str:
        return self._tail.decode(errors="replace")

    def close_writer(self) -> None:
        """Close this process's end of the pipe (the child has its own copy)."""
        if not self.writer.closed:
            self.writer.close()

    def close(self) -> None:
        self.close_writer()
        if not self._reader.closed:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._reader.fileno())
            self._reader.close()


def _leaf(error: BaseException) -> BaseException:
    """The first exception of ``error`` that is not a group (the SDK's task groups wrap what went wrong)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _sentence(error: BaseException) -> str:
    """What ``error`` says, for a person."""
    if isinstance(error, McpConnectError):
        return error.detail
    if isinstance(error, MCPError):
        return error.message
    return str(error) or type(error).__name__


def _retrieve(call: asyncio.Future[CallToolResult]) -> None:
    """Mark a finished call's exception as seen (a call abandoned on timeout may fail later)."""
    if not call.cancelled():
        call.exception()
