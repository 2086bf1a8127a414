"""The app catalog's enabled servers for one window, and the settings page's one-server test.

:class:`AppServers` connects the enabled servers of the app catalog (:mod:`.app_catalog`) when a run first needs
them (:meth:`AppServers.ensure`) and keeps them for the window's later runs; it reconnects when the catalog file
or the enabled set differs from what it connected, or after :meth:`AppServers.changed` (the settings were saved:
a token may be new); :meth:`AppServers.aclose` stops them (the window closes). Nothing here blocks the event loop:
the catalog file, the SDK's import and the keyring are read in a worker thread; connecting is asynchronous and
bounded by the connect timeout.

A server that cannot be connected does not stop the others or the run: the run goes on without its tools, and
:meth:`AppServers.ensure` returns its typed error once, for a banner (the user sees why and what to do; refusing
every run because one optional server is down would take the agent away for a missing extra). It is tried again
after the next :meth:`AppServers.changed`. A catalog that cannot be read connects nothing and is reported the same
way.

:func:`probe_server` is the settings page's **Test**: connect one server, list its tools, close it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tiny_agent_core.errors import SecretStoreError
from tiny_agent_core.mcp.app_catalog import AppCatalog, TokenReader, load_app_catalog, token_entry
from tiny_agent_core.mcp.catalog import HttpServer, ServerSpec, StdioServer
from tiny_agent_core.mcp.errors import McpCatalogError, McpConnectError, McpError
from tiny_agent_core.mcp.exchanges import McpExchanges, ServerKind
from tiny_agent_core.redaction import Redactor, environment_secrets

if TYPE_CHECKING:
    from tiny_agent_core.mcp.servers import McpServers
    from tiny_agent_core.mcp.tool import McpCall, McpTool

__all__ = ["CONNECT_TIMEOUT", "AppServers", "ProbedTool", "TokenReader", "probe_server", "probe_server_in_thread"]

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
"""Seconds a server has to start, shake hands and list its tools (the same as ``connection.CONNECT_TIMEOUT``,
repeated so that this module loads without the SDK)."""


class _ReadTokens:
    """Tokens read ahead (in a worker thread), so connecting never waits on the keyring on the event loop."""

    def __init__(self, found: Mapping[str, str | None], failed: Mapping[str, SecretStoreError]) -> None:
        self._found = dict(found)
        self._failed = dict(failed)

    def get(self, key: str, /) -> str | None:
        if key in self._failed:
            raise self._failed[key]
        return self._found.get(key)

    def values(self) -> list[str]:
        return [value for value in self._found.values() if value]


def _read_tokens(specs: Iterable[ServerSpec], keys: TokenReader | None) -> _ReadTokens:
    """The keyring tokens of the remote servers among ``specs`` (blocking: run it in a worker thread)."""
    found: dict[str, str | None] = {}
    failed: dict[str, SecretStoreError] = {}
    for spec in specs:
        if isinstance(spec, HttpServer) and keys is not None:
            key = token_entry(spec.alias)
            try:
                found[key] = keys.get(key)
            except SecretStoreError as error:
                failed[key] = error
    return _ReadTokens(found, failed)


def _kind(spec: ServerSpec) -> ServerKind:
    return "http" if isinstance(spec, HttpServer) else "stdio"


def _load_sdk() -> None:
    """Import the SDK's modules (about a second the first time): in a worker thread, not on the event loop."""
    importlib.import_module("tiny_agent_core.mcp.servers")


class AppServers:
    """The enabled servers of the app catalog at ``path`` for one window (see the module docstring).

    ``keys`` holds the remote servers' tokens; ``environ`` (default ``os.environ``) is the base of a local
    server's environment and the source of ``tokenEnv``. :attr:`exchanges` keeps the raw calls for the inspector.
    """

    def __init__(
        self,
        path: Path,
        *,
        keys: TokenReader | None = None,
        environ: Mapping[str, str] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.path = path
        self._keys = keys
        self._environ = environ
        self._connect_timeout = connect_timeout
        self.exchanges = McpExchanges()
        self._servers: McpServers | None = None
        self._connected: dict[str, object] | None = None
        """The catalog document the servers were connected from (``None``: connect before the next run)."""
        self._kinds: dict[str, ServerKind] = {}
        self._lock = asyncio.Lock()
        self.generation = 0
        """Changes whenever the offered tools may have changed (an agent built before must be rebuilt)."""

    @property
    def connected(self) -> list[str]:
        """The aliases of the servers connected now."""
        return self._servers.aliases if self._servers is not None else []

    def tools(self) -> list[McpTool]:
        """The tools of the connected servers, server by server."""
        return self._servers.tools() if self._servers is not None else []

    def changed(self) -> None:
        """The settings were saved: connect again before the next run (tokens may have changed, failures retry).
        A server that stopped since it connected is connected again before the next run anyway."""
        self._connected = None

    async def ensure(self, secrets: Sequence[str | None] = ()) -> list[McpError]:
        """Connect the enabled servers unless they are connected already as the catalog says; the errors of those
        that could not be (or of a catalog that cannot be read), each reported once. ``secrets`` (the provider's
        key) are masked in the kept exchanges, with the servers' tokens and the secret-looking values of this
        process's environment and of the servers' configured ``env``."""
        async with self._lock:
            try:
                catalog = await asyncio.to_thread(load_app_catalog, self.path)
            except McpCatalogError as error:
                if self._connected == {"error": str(error)}:
                    return []
                await self._close()
                self._connected = {"error": str(error)}
                return [error]
            document = catalog.document()
            lost = self._servers.lost if self._servers is not None else []
            if self._connected == document and not lost:
                return []
            if lost:  # a server exited (or dropped the connection) since the last run: start them all again
                _log.info("MCP servers %s stopped since they connected; connecting again", ", ".join(lost))
            await self._close()
            failures = await self._connect(catalog, secrets)
            self._connected = document
            return list(failures)

    async def _connect(self, catalog: AppCatalog, secrets: Sequence[str | None]) -> list[McpConnectError]:
        specs = catalog.enabled_specs()
        if not specs:
            return []
        tokens = await asyncio.to_thread(_read_tokens, specs, self._keys)
        environ = os.environ if self._environ is None else self._environ
        configured = [
            value for spec in specs if isinstance(spec, StdioServer) for value in environment_secrets(spec.env)
        ]
        self.exchanges.redact = Redactor([*secrets, *tokens.values(), *environment_secrets(environ), *configured])
        self._kinds = {spec.alias: _kind(spec) for spec in specs}
        await asyncio.to_thread(_load_sdk)
        from tiny_agent_core.mcp.servers import McpServers

        servers, failures = await McpServers.open_each(
            specs, connect_timeout=self._connect_timeout, environ=environ, on_call=self._settled, keys=tokens
        )
        self._servers = servers
        self.generation += 1
        return failures

    def _settled(self, call: McpCall) -> None:
        self.exchanges.settled(call, self._kinds.get(call.alias, "stdio"))

    async def _close(self) -> None:
        servers, self._servers = self._servers, None
        if servers is not None:
            self.generation += 1
            await servers.aclose()

    async def aclose(self) -> None:
        """Stop every server (bounded); the next :meth:`ensure` connects again."""
        async with self._lock:
            self._connected = None
            await self._close()


@dataclass(frozen=True, slots=True)
class ProbedTool:
    """A tool a tested server lists."""

    name: str
    description: str
    offered: bool
    """Whether the agent is offered it (``allowedTools``)."""


async def probe_server(
    spec: ServerSpec,
    *,
    keys: TokenReader | None = None,
    environ: Mapping[str, str] | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> list[ProbedTool]:
    """Connect the server of ``spec`` as a window would (within ``connect_timeout``), list its tools, close it.

    Raises :class:`~tiny_agent_core.mcp.errors.McpConnectError` (its cause and
    :func:`~tiny_agent_core.mcp.errors.connect_advice` say what to do). The keyring is read here, so run it off the
    event loop of a window (:func:`probe_server_in_thread`).
    """
    from tiny_agent_core.mcp.connection import Connection
    from tiny_agent_core.mcp.limits import check_tools

    tokens = _read_tokens([spec], keys)
    connection = await Connection.open(spec, connect_timeout=connect_timeout, environ=environ, keys=tokens)
    try:
        try:
            offered = {tool.name for tool in check_tools(spec.alias, connection.tools, spec.allowed_tools)}
        except ValueError as error:
            raise McpConnectError(spec.alias, "invalid_server", str(error)) from None
        return [ProbedTool(tool.name, tool.description or "", tool.name in offered) for tool in connection.tools]
    finally:
        await connection.close()


def probe_server_in_thread(spec: ServerSpec, *, keys: TokenReader | None = None) -> list[ProbedTool]:
    """:func:`probe_server` on an event loop of its own, for a worker thread (``asyncio.to_thread``)."""
    return asyncio.run(probe_server(spec, keys=keys))
