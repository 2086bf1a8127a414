"""The MCP servers of one run or window: connect the chosen ones, offer their tools, close them.

::

    catalog = load_catalog(path)
    async with McpServers.connect(catalog, ["docs", "files"]) as servers:
        agent = Agent(..., tools=[*builtin_tools(workspace), *servers.tools()])
        ...

Only the named aliases are connected, all at once; when one cannot be (it does not start, hangs up, answers too
slowly or breaks a limit) the others are closed and its :class:`~tiny_agent_core.mcp.errors.McpConnectError`
is raised, as the reference aborts its start-up. Leaving the block closes every server.

A window instead keeps the servers that did connect and shows why the others did not
(:meth:`McpServers.open_each`); it closes them with :meth:`McpServers.aclose`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager

from tiny_agent_core.mcp.catalog import Catalog, ServerSpec
from tiny_agent_core.mcp.connection import CONNECT_TIMEOUT, Connection, TokenStore
from tiny_agent_core.mcp.errors import McpConnectError
from tiny_agent_core.mcp.limits import check_tools
from tiny_agent_core.mcp.tool import McpCall, McpTool

__all__ = ["McpServers"]


class McpServers:
    """Connected servers and their tools, by alias in the order asked."""

    def __init__(self, tools: Mapping[str, list[McpTool]], connections: list[Connection]) -> None:
        self._tools = dict(tools)
        self._connections = connections

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        catalog: Catalog,
        aliases: Iterable[str],
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        environ: Mapping[str, str] | None = None,
        on_call: Callable[[McpCall], None] | None = None,
        keys: TokenStore | None = None,
    ) -> AsyncIterator[McpServers]:
        """Connect the servers ``aliases`` of ``catalog`` (each within ``connect_timeout`` s); close them on leaving.

        ``environ`` (default ``os.environ``) gives a local server's base environment and a remote server's
        ``tokenEnv``; ``keys`` (e.g. :class:`tiny_agent_core.secrets.KeyStore`) the tokens kept in the keyring
        under :func:`~tiny_agent_core.mcp.connection.token_key`; ``on_call`` receives every settled call of their
        tools (:class:`~tiny_agent_core.mcp.tool.McpCall`).

        An unknown alias is a :class:`~tiny_agent_core.mcp.errors.McpCatalogError`; a server that cannot be
        connected an :class:`~tiny_agent_core.mcp.errors.McpConnectError`.
        """
        specs = catalog.select(aliases)
        opening = (Connection.open(spec, connect_timeout=connect_timeout, environ=environ, keys=keys) for spec in specs)
        opened = await asyncio.gather(*opening, return_exceptions=True)
        connections = [item for item in opened if isinstance(item, Connection)]
        servers = cls({}, connections)
        try:
            for item in opened:
                if isinstance(item, BaseException):
                    raise item
            for connection in connections:
                servers._tools[connection.alias] = _offered(connection, on_call)
            yield servers
        finally:
            await servers.aclose()

    @classmethod
    async def open_each(
        cls,
        specs: Iterable[ServerSpec],
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        environ: Mapping[str, str] | None = None,
        on_call: Callable[[McpCall], None] | None = None,
        keys: TokenStore | None = None,
    ) -> tuple[McpServers, list[McpConnectError]]:
        """Connect every server of ``specs`` (concurrently, each within ``connect_timeout`` s, options as for
        :meth:`connect`): the servers that connected, and an error for each that did not (it is closed, the others
        are kept). The caller closes the result with :meth:`aclose`; cancelling closes whatever connected."""
        specs = list(specs)
        tasks = [
            asyncio.ensure_future(Connection.open(spec, connect_timeout=connect_timeout, environ=environ, keys=keys))
            for spec in specs
        ]
        if not tasks:
            return cls({}, []), []
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:  # a server still connecting closes itself; close those already connected
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            done = [task.result() for task in tasks if not task.cancelled() and task.exception() is None]
            await asyncio.gather(*(connection.close() for connection in done))
            raise
        servers = cls({}, [])
        failures: list[McpConnectError] = []
        for spec, task in zip(specs, tasks, strict=True):
            error = task.exception()
            if isinstance(error, McpConnectError):
                failures.append(error)
            elif error is not None:
                failures.append(McpConnectError(spec.alias, "connection_failed", str(error) or type(error).__name__))
            else:
                item = task.result()
                try:
                    servers._tools[item.alias] = _offered(item, on_call)
                except McpConnectError as refused:
                    failures.append(refused)
                    await item.close()
                    continue
                servers._connections.append(item)
        return servers, failures

    def tools(self) -> list[McpTool]:
        """Every offered tool, server by server."""
        return [tool for tools in self._tools.values() for tool in tools]

    def tools_of(self, alias: str) -> list[McpTool]:
        """The offered tools of the server ``alias`` (``KeyError`` when it is not connected)."""
        return list(self._tools[alias])

    @property
    def aliases(self) -> list[str]:
        """The connected servers."""
        return list(self._tools)

    @property
    def lost(self) -> list[str]:
        """The servers whose connection ended since they connected (a local server exited, a remote one dropped)."""
        return [connection.alias for connection in self._connections if connection.gone]

    async def aclose(self) -> None:
        """Close every server (concurrently; each close is bounded)."""
        await asyncio.gather(*(connection.close() for connection in self._connections))


def _offered(connection: Connection, on_call: Callable[[McpCall], None] | None) -> list[McpTool]:
    """The tools ``connection`` may offer (its ``allowedTools``, within the limits), as agent tools."""
    try:
        offered = check_tools(connection.alias, connection.tools, connection.spec.allowed_tools)
    except ValueError as error:
        raise McpConnectError(connection.alias, "invalid_server", str(error)) from None
    return [McpTool(connection, remote, on_call) for remote in offered]
