"""Real MCP servers (written with the ``mcp`` SDK) over stdio and Streamable HTTP, through the Tool API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.core.mcp.conftest import http_server, stdio_server
from tiny_agent_core.errors import ToolAborted
from tiny_agent_core.mcp import connection, stdio
from tiny_agent_core.mcp.catalog import Catalog, HttpServer, ServerSpec, StdioServer
from tiny_agent_core.mcp.connection import TokenStore, token_key
from tiny_agent_core.mcp.errors import McpCatalogError, McpConnectError
from tiny_agent_core.mcp.names import function_name
from tiny_agent_core.mcp.results import MAX_RESULT_BYTES
from tiny_agent_core.mcp.servers import McpServers
from tiny_agent_core.mcp.tool import McpCall, McpTool
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.tools.base import Tool

pytestmark = pytest.mark.timeout(60)

REMOTE_TOOLS = {"echo", "fail", "crash", "hang", "env", "pid", "spawn", "big"}


def catalog(*specs: ServerSpec) -> Catalog:
    return Catalog({spec.alias: spec for spec in specs})


async def connect_error(*specs: ServerSpec, connect_timeout: float = 10.0) -> McpConnectError:
    """The error connecting every server of ``specs`` raises."""
    aliases = [spec.alias for spec in specs]
    with pytest.raises(McpConnectError) as caught:
        async with McpServers.connect(catalog(*specs), aliases, connect_timeout=connect_timeout):
            pass
    return caught.value


def tool(servers: McpServers, remote: str) -> McpTool:
    return next(item for item in servers.tools() if item.remote_name == remote)


async def test_stdio_tools_are_listed_named_and_answered() -> None:
    async with McpServers.connect(catalog(stdio_server("local")), ["local"]) as servers:
        tools = servers.tools()
        assert {item.remote_name for item in tools} == REMOTE_TOOLS
        echo = tool(servers, "echo")
        assert isinstance(echo, Tool)
        assert echo.name == function_name("local", "echo")
        assert echo.display_name == "mcp:local/echo"
        assert echo.replay == "never"
        assert str(echo.replay_key).startswith("mcp:")
        assert echo.parameters["properties"]["text"]["type"] == "string"
        outcome = await echo.execute({"text": "hello"})
    assert not outcome.is_error
    # text content, then structuredContent as JSON, joined by a blank line (notes §7.7)
    assert outcome.content == 'hello\n\n{"result": "hello"}'


async def test_http_tools_are_listed_and_answered(http_url: str) -> None:
    async with McpServers.connect(catalog(http_server(http_url, "remote")), ["remote"]) as servers:
        assert {item.remote_name for item in servers.tools()} == REMOTE_TOOLS
        outcome = await tool(servers, "echo").execute({"text": "über"})
        failed = await tool(servers, "fail").execute({"message": "no such row"})
    assert outcome.content == 'über\n\n{"result": "über"}'
    assert failed.is_error
    assert failed.content == "Error: MCP tool error: Error executing tool fail: no such row"


async def test_is_error_is_an_error_outcome() -> None:
    async with McpServers.connect(catalog(stdio_server()), ["t"]) as servers:
        outcome = await tool(servers, "fail").execute({"message": "disk full"})
    assert outcome.is_error
    assert outcome.content == "Error: MCP tool error: Error executing tool fail: disk full"


async def test_a_large_result_is_cut_to_50_kb_with_a_marker() -> None:
    async with McpServers.connect(catalog(stdio_server()), ["t"]) as servers:
        outcome = await tool(servers, "big").execute({"size": 200_000})
    head, marker = outcome.content.rsplit("\n\n", 1)
    assert len(head.encode()) == MAX_RESULT_BYTES
    assert marker.startswith("[MCP result truncated:")


async def test_a_crash_mid_call_is_an_error_outcome_at_once() -> None:
    async with McpServers.connect(catalog(stdio_server(call_timeout_ms=30_000)), ["t"]) as servers:
        started = time.monotonic()
        outcome = await tool(servers, "crash").execute({})
        elapsed = time.monotonic() - started
        after = await tool(servers, "echo").execute({"text": "still there?"})
    assert outcome.is_error
    assert "MCP server t" in outcome.content
    assert elapsed < 5
    assert after.is_error


async def test_a_server_that_never_answers_times_out_at_call_timeout() -> None:
    async with McpServers.connect(catalog(stdio_server(call_timeout_ms=500)), ["t"]) as servers:
        started = time.monotonic()
        outcome = await tool(servers, "hang").execute({})
        elapsed = time.monotonic() - started
        after = await tool(servers, "echo").execute({"text": "next"})
    assert outcome == outcome.error("MCP server t did not answer within 500 ms")
    assert 0.5 <= elapsed < 3
    assert after.content.startswith("next")


async def test_a_hanging_http_call_times_out(http_url: str) -> None:
    async with McpServers.connect(catalog(http_server(http_url, call_timeout_ms=400)), ["h"]) as servers:
        outcome = await tool(servers, "hang").execute({})
    assert outcome.content == "Error: MCP server h did not answer within 400 ms"


async def test_the_cancel_event_ends_a_call_promptly() -> None:
    async with McpServers.connect(catalog(stdio_server()), ["t"]) as servers:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.3, cancel.set)
        started = time.monotonic()
        with pytest.raises(ToolAborted):
            await tool(servers, "hang").execute({}, cancel=cancel)
        assert time.monotonic() - started < 2


async def test_cancelling_the_task_ends_a_call_promptly() -> None:
    async with McpServers.connect(catalog(stdio_server()), ["t"]) as servers:
        call = asyncio.ensure_future(tool(servers, "hang").execute({}))
        await asyncio.sleep(0.3)
        call.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert time.monotonic() - started < 1


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for a parent that does not reap it is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


async def test_closing_kills_the_stdio_server_and_what_it_started() -> None:
    async with McpServers.connect(catalog(stdio_server()), ["t"]) as servers:
        server_pid = int((await tool(servers, "pid").execute({})).content.split("\n\n")[0])
        sleep_pid = int((await tool(servers, "spawn").execute({})).content.split("\n\n")[0])
        assert running(server_pid)
        assert running(sleep_pid)
    assert not running(server_pid)
    assert not running(sleep_pid)  # the server's whole process group is ended, not only the server


async def test_a_server_that_cannot_start_is_a_typed_error() -> None:
    missing = StdioServer("gone", "/nonexistent/mcp-server")
    started = time.monotonic()
    error = await connect_error(missing)
    assert error.cause == "connection_failed"
    assert error.alias == "gone"
    assert "MCP server gone" in str(error)
    assert time.monotonic() - started < 2


async def test_a_server_that_exits_at_start_says_why() -> None:
    broken = StdioServer("broken", sys.executable, ("-c", "import sys; sys.exit('no database configured')"))
    error = await connect_error(broken)
    assert error.cause == "connection_failed"
    assert "no database configured" in str(error)


async def test_a_server_that_never_shakes_hands_times_out_at_connect() -> None:
    silent = StdioServer("silent", sys.executable, ("-c", "import time; time.sleep(60)"))
    started = time.monotonic()
    error = await connect_error(silent, connect_timeout=1.0)
    assert error.cause == "timeout"
    # the connect timeout, then the SDK's bounded stop (stdin closed, 2 s grace, then SIGTERM)
    assert time.monotonic() - started < 6


async def test_one_failing_server_closes_the_others() -> None:
    error = await connect_error(stdio_server("good"), StdioServer("bad", "/nonexistent/mcp-server"))
    assert error.alias == "bad"


async def test_an_unknown_alias_is_a_catalog_error() -> None:
    with pytest.raises(McpCatalogError, match="unknown MCP server: nope"):
        async with McpServers.connect(catalog(stdio_server()), ["nope"]):
            pass


async def test_no_secret_of_this_process_reaches_the_stdio_server(monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-canary-0123456789abcdef"
    monkeypatch.setenv("OPENROUTER_API_KEY", canary)
    monkeypatch.setenv("TINY_AGENT_UNLISTED", "not for children")
    configured = stdio_server(env={"SERVICE_TOKEN": "configured-for-this-server"})
    async with McpServers.connect(catalog(configured), ["t"]) as servers:
        env = tool(servers, "env")
        seen = {
            name: (await env.execute({"name": name})).content.split("\n\n")[0]
            for name in ("OPENROUTER_API_KEY", "TINY_AGENT_UNLISTED", "SERVICE_TOKEN", "PATH")
        }
    assert seen["OPENROUTER_API_KEY"] == "<unset>"
    assert seen["TINY_AGENT_UNLISTED"] == "<unset>"
    assert seen["SERVICE_TOKEN"] == "configured-for-this-server"  # the user gave it to this server
    assert seen["PATH"] != "<unset>"


async def test_allowed_tools_limit_what_is_offered() -> None:
    async with McpServers.connect(catalog(stdio_server(allowed_tools=("echo",))), ["t"]) as servers:
        assert [item.remote_name for item in servers.tools()] == ["echo"]
    error = await connect_error(stdio_server(allowed_tools=("echo", "delete")))
    assert error.cause == "invalid_server"
    assert "delete" in str(error)


async def test_a_missing_token_is_a_configuration_error(http_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_TEST_TOKEN", raising=False)
    error = await connect_error(http_server(http_url, token_env="MCP_TEST_TOKEN"))
    assert error.cause == "configuration"
    assert "MCP_TEST_TOKEN" in str(error)


async def test_a_redirect_is_refused(http_url: str) -> None:
    """A server that answers with a redirect (even to the real server, same origin) is not followed."""
    answer = f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {http_url}\r\nContent-Length: 0\r\n\r\n"
    async with raw_server(answer.encode()) as url:
        error = await connect_error(HttpServer("moved", url), connect_timeout=5)
    assert error.cause == "connection_failed", str(error)
    assert "Redirect" in str(error)


@contextlib.asynccontextmanager
async def raw_server(answer: bytes | None, heads: list[bytes] | None = None) -> AsyncIterator[str]:
    """The URL of a loopback HTTP server that reads a request's head (into ``heads``) and answers ``answer``
    (``None``: never)."""
    handlers: set[asyncio.Task[None]] = set()

    async def answering(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if heads is not None:
                    heads.append(line)
            if answer is None:
                await asyncio.sleep(60)
            writer.write(answer or b"")
            await writer.drain()
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(answering(reader, writer))
        handlers.add(task)
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await task

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
    finally:
        listener.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await listener.wait_closed()


async def test_nothing_listening_is_a_connection_failure() -> None:
    async with raw_server(b"") as url:
        pass
    started = time.monotonic()
    error = await connect_error(HttpServer("off", url))
    assert error.cause == "connection_failed"
    assert time.monotonic() - started < 5


async def test_an_http_server_that_never_answers_times_out_at_connect() -> None:
    started = time.monotonic()
    async with raw_server(None) as url:
        error = await connect_error(HttpServer("mute", url), connect_timeout=1.0)
    assert error.cause == "timeout"
    assert time.monotonic() - started < 4


async def test_an_oversized_http_response_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "MAX_RESPONSE_BYTES", 100_000)
    body = b'{"jsonrpc": "2.0", "id": 0, "result": {"padding": "' + b"x" * 200_000 + b'"}}'
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    async with raw_server(head + body) as url:
        error = await connect_error(HttpServer("huge", url), connect_timeout=5)
    assert error.cause == "connection_failed"
    assert "larger than 100000 bytes" in str(error)


async def test_each_settled_call_is_reported_raw_for_an_inspector() -> None:
    calls: list[McpCall] = []
    spec = stdio_server("t", call_timeout_ms=300)
    async with McpServers.connect(catalog(spec), ["t"], on_call=calls.append) as servers:
        await tool(servers, "echo").execute({"text": "raw"})
        await tool(servers, "hang").execute({})
    answered, timed_out = calls
    assert answered.display_name == "mcp:t/echo"
    assert json.loads(answered.request) == {"name": "echo", "arguments": {"text": "raw"}}
    response = json.loads(answered.response)
    assert response["content"] == [{"type": "text", "text": "raw"}]
    assert response["structuredContent"] == {"result": "raw"}
    assert answered.error is None
    assert answered.duration_ms >= 0
    assert timed_out.response == ""
    assert timed_out.error == "MCP server t did not answer within 300 ms"
    assert timed_out.duration_ms >= 300


async def test_an_over_long_stdio_message_ends_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_MESSAGE_BYTES", 100_000)
    async with McpServers.connect(catalog(stdio_server()), ["t"]) as servers:
        fits = await tool(servers, "big").execute({"size": 20_000})
        started = time.monotonic()
        outcome = await tool(servers, "big").execute({"size": 200_000})
        assert time.monotonic() - started < 5
    assert not fits.is_error
    assert outcome.is_error
    assert "100000 bytes" in outcome.content


async def test_a_server_writing_an_endless_line_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_MESSAGE_BYTES", 100_000)
    flood = StdioServer("flood", sys.executable, ("-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"))
    error = await connect_error(flood, connect_timeout=5)
    assert error.cause == "connection_failed"
    assert "100000 bytes" in str(error)


async def test_a_token_http_cannot_carry_is_refused_without_quoting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "secret-part\r\nX-Injected: 1")
    error = await connect_error(http_server("https://mcp.invalid/mcp", token_env="MCP_TEST_TOKEN"))
    assert error.cause == "configuration"
    assert "MCP_TEST_TOKEN" in str(error)
    assert "secret-part" not in str(error)


def test_remote_servers_use_the_environments_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.invalid:3128")
    monkeypatch.setenv("no_proxy", "inside.invalid")
    assert connection._proxy("https://mcp.example.com/mcp") == "http://proxy.invalid:3128"
    assert connection._proxy("https://inside.invalid/mcp") is None
    assert connection._proxy("http://127.0.0.1:8000/mcp") is None


@pytest.mark.parametrize(
    ("environment", "stored", "sent"),
    [
        ({"MCP_TEST_TOKEN": "from-env"}, {"mcp:h": "from-keyring"}, "from-env"),
        ({}, {"mcp:h": "from-keyring"}, "from-keyring"),
    ],
)
async def test_the_bearer_token_comes_from_tokenenv_else_the_keyring(
    environment: dict[str, str], stored: dict[str, str], sent: str
) -> None:
    heads: list[bytes] = []
    refused = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"
    async with raw_server(refused, heads) as url:
        spec = http_server(url, token_env="MCP_TEST_TOKEN")
        with pytest.raises(McpConnectError):
            async with McpServers.connect(catalog(spec), ["h"], environ=environment, keys=stored):
                pass
    assert f"authorization: Bearer {sent}\r\n".encode() in [
        line.lower().replace(b"bearer", b"Bearer") for line in heads
    ]


def test_the_keyring_store_is_a_token_store() -> None:
    keys: TokenStore = KeyStore()
    assert token_key("docs") == "mcp:docs"
    assert callable(keys.get)
