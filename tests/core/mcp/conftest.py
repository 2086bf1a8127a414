"""Fixtures for the MCP tests: catalog entries for the test server (``server_app``) over stdio and over HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.mcp.catalog import HttpServer, StdioServer

ROOT = Path(__file__).resolve().parents[3]
"""The checkout: the server is started from here as ``python -m tests.core.mcp.server_app``."""


def stdio_server(alias: str = "t", **options: Any) -> StdioServer:
    """The test server as a local (stdio) catalog entry."""
    return StdioServer(alias, sys.executable, ("-m", "tests.core.mcp.server_app", "stdio"), cwd=str(ROOT), **options)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The test server over Streamable HTTP on 127.0.0.1, for one test module."""
    port = _free_port()
    command = [sys.executable, "-m", "tests.core.mcp.server_app", "http", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the MCP HTTP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(10)


def http_server(url: str, alias: str = "h", **options: Any) -> HttpServer:
    """The HTTP test server as a remote catalog entry."""
    return HttpServer(alias, url, **options)
