"""A small MCP server written with the ``mcp`` SDK, for the tests and the start-up benchmark.

``python -m tests.core.mcp.server_app stdio`` serves over stdin/stdout;
``python -m tests.core.mcp.server_app http PORT`` serves Streamable HTTP on ``127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("test-server")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(message: str) -> str:
    """Always fail with ``message`` (an ``isError`` result)."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def env(name: str) -> str:
    """The value of the server's environment variable ``name`` (``<unset>`` when it has none)."""
    return os.environ.get(name, "<unset>")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def spawn() -> int:
    """Start a long sleep that outlives this call (a grandchild of the client); its process id."""
    return subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL).pid


@server.tool()
def big(size: int) -> str:
    """A text of ``size`` characters."""
    return "x" * size


def main() -> None:
    """Serve over the transport named on the command line."""
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
