"""The MCP catalog: which servers exist, read from a JSON file the user names (nothing is discovered on its own).

Two formats are read. The reference's (notes §7.7), extended with local servers::

    {"servers": {"docs": {"url": "https://mcp.example.com/mcp", "tokenEnv": "DOCS_TOKEN",
                          "allowedTools": ["search"], "callTimeoutMs": 30000},
                 "files": {"command": "npx", "args": ["-y", "some-mcp-server"], "env": {"ROOT": "/data"},
                           "cwd": "/data"}}}

and Claude Desktop's (other top-level keys of its settings file are ignored)::

    {"mcpServers": {"files": {"command": "npx", "args": [...], "env": {...}},
                    "docs": {"type": "http", "url": "https://…", "tokenEnv": "DOCS_TOKEN"}}}

An entry is a local (stdio) server when it has ``command`` (``args``, ``env``, ``cwd`` optional) and a remote
Streamable HTTP server when it has ``url`` (``tokenEnv`` optional: the environment variable whose value is sent as
``Authorization: Bearer``; without it, or when it is not set, a token the app keeps in the keyring for the alias).
``allowedTools`` (offer only these; each must exist on the server) and ``callTimeoutMs`` (default 60 s) apply to
both. The reference format may also carry ``enabled`` (the aliases the desktop window connects, written by
:mod:`.app_catalog`); it is checked there and ignored here, so the app's catalog file also serves
``--mcp-config``. Unknown keys are refused, so a misspelt or unsupported setting (``headers`` with a literal token,
``type: "sse"``) is never silently ignored. Every problem is a
:class:`~tiny_agent_core.mcp.errors.McpCatalogError` naming the place, e.g. ``mcpServers.docs.url: …``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tiny_agent_core.mcp.errors import McpCatalogError

__all__ = [
    "DEFAULT_CALL_TIMEOUT_MS",
    "MAX_CALL_TIMEOUT_MS",
    "MAX_CATALOG_BYTES",
    "Catalog",
    "HttpServer",
    "ServerSpec",
    "StdioServer",
    "catalog_document",
    "is_loopback",
    "load_catalog",
    "parse_catalog",
    "parse_catalog_text",
    "save_catalog",
]

MAX_CATALOG_BYTES = 1024 * 1024
"""The largest catalog file read."""
MAX_SERVERS = 64
"""The most servers one catalog may name."""
MAX_ARGS = 256
"""The most command-line arguments of a local server."""
MAX_ALIAS = 64
"""The longest alias."""
DEFAULT_CALL_TIMEOUT_MS = 60_000
"""How long a call may take when the entry does not say."""
MAX_CALL_TIMEOUT_MS = 3_600_000
"""The longest ``callTimeoutMs`` accepted (an hour)."""

_COMMON_KEYS = frozenset({"allowedTools", "callTimeoutMs"})
_STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
_HTTP_KEYS = frozenset({"url", "tokenEnv"})
_CLAUDE_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class StdioServer:
    """A local server: a command started with the secret-free environment plus ``env``, spoken to on stdio."""

    alias: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables the user configured for this server; they reach it as they are (they may be its credentials)."""
    cwd: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    call_timeout_ms: int = DEFAULT_CALL_TIMEOUT_MS


@dataclass(frozen=True, slots=True)
class HttpServer:
    """A remote Streamable HTTP server at ``url``; ``token_env`` names the variable holding its bearer token."""

    alias: str
    url: str
    token_env: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    call_timeout_ms: int = DEFAULT_CALL_TIMEOUT_MS


ServerSpec = StdioServer | HttpServer
"""One catalog entry."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """The servers of one catalog file, by alias, in file order."""

    servers: Mapping[str, ServerSpec]

    def select(self, aliases: Iterable[str]) -> list[ServerSpec]:
        """The entries of ``aliases`` (each once, in the given order); an unknown alias is a catalog error."""
        wanted = list(dict.fromkeys(aliases))
        unknown = [alias for alias in wanted if alias not in self.servers]
        if unknown:
            known = ", ".join(self.servers) or "none"
            raise McpCatalogError(f"unknown MCP server: {', '.join(unknown)} (the catalog has: {known})")
        return [self.servers[alias] for alias in wanted]


def catalog_document(catalog: Catalog) -> dict[str, Any]:
    """``catalog`` in the reference's format (``{"servers": …}``), which :func:`parse_catalog` reads back."""
    servers: dict[str, Any] = {}
    for alias, spec in catalog.servers.items():
        entry: dict[str, Any]
        if isinstance(spec, StdioServer):
            entry = {"command": spec.command, "args": list(spec.args), "env": dict(spec.env)}
            if spec.cwd is not None:
                entry["cwd"] = spec.cwd
        else:
            entry = {"url": spec.url}
            if spec.token_env is not None:
                entry["tokenEnv"] = spec.token_env
        if spec.allowed_tools is not None:
            entry["allowedTools"] = list(spec.allowed_tools)
        entry["callTimeoutMs"] = spec.call_timeout_ms
        servers[alias] = entry
    return {"servers": servers}


def save_catalog(path: str | os.PathLike[str], catalog: Catalog, *, enabled: Iterable[str] | None = None) -> None:
    """Write ``catalog`` to ``path`` in the reference's format (with ``enabled`` when given), atomically, readable
    by the user only (an ``env`` may hold a server's credentials). For the app's own catalog file: it would drop the
    other settings of a Claude Desktop file."""
    target = Path(path)
    document = catalog_document(catalog)
    if enabled is not None:
        document["enabled"] = list(enabled)
    data = json.dumps(document, ensure_ascii=False, indent=2).encode() + b"\n"
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_catalog_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the catalog file at ``path``: a regular file (a FIFO or a device is refused, never waited on) of
    at most :data:`MAX_CATALOG_BYTES`. Raises ``FileNotFoundError`` when it does not exist, else
    :class:`McpCatalogError`."""
    where = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise McpCatalogError(f"the MCP catalog {where} cannot be read: {error.strerror or error}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise McpCatalogError(f"the MCP catalog {where} is not a regular file")
    try:
        with os.fdopen(fd, "rb") as file:
            data = file.read(MAX_CATALOG_BYTES + 1)
    except OSError as error:
        raise McpCatalogError(f"the MCP catalog {where} cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_CATALOG_BYTES:
        raise McpCatalogError(f"the MCP catalog {where} is larger than {MAX_CATALOG_BYTES} bytes")
    return data


def load_catalog(path: str | os.PathLike[str]) -> Catalog:
    """Read and parse the catalog file at ``path`` (see :func:`read_catalog_bytes`)."""
    try:
        data = read_catalog_bytes(path)
    except FileNotFoundError as error:
        raise McpCatalogError(f"the MCP catalog {os.fspath(path)} cannot be read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise McpCatalogError(f"the MCP catalog {os.fspath(path)} is not UTF-8 text") from None
    return parse_catalog_text(text)


def parse_catalog_text(text: str) -> Catalog:
    """Parse a catalog from JSON text."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise McpCatalogError(f"the MCP catalog is not valid JSON: {error}") from None
    return parse_catalog(value)


def parse_catalog(value: object) -> Catalog:
    """Parse a decoded catalog (either format); anything else is a :class:`McpCatalogError`."""
    if not isinstance(value, dict):
        raise McpCatalogError('the MCP catalog must be a JSON object with "servers" or "mcpServers"')
    if "servers" in value and "mcpServers" in value:
        raise McpCatalogError('the MCP catalog has both "servers" and "mcpServers"; keep one')
    if "servers" in value:
        extra = sorted(str(key) for key in value if key not in ("servers", "$schema", "enabled"))
        if extra:
            raise McpCatalogError(f"the MCP catalog has unknown keys: {', '.join(extra)}")
        return _servers(value["servers"], "servers", claude=False)
    if "mcpServers" in value:
        return _servers(value["mcpServers"], "mcpServers", claude=True)
    raise McpCatalogError('the MCP catalog must have "servers" (tiny-agent) or "mcpServers" (Claude Desktop)')


def _servers(value: object, where: str, *, claude: bool) -> Catalog:
    if not isinstance(value, dict):
        raise McpCatalogError(f"{where} must be an object of servers by alias")
    if len(value) > MAX_SERVERS:
        raise McpCatalogError(f"{where} names {len(value)} servers; at most {MAX_SERVERS} are allowed")
    servers: dict[str, ServerSpec] = {}
    for alias, entry in value.items():
        _check_alias(alias, where)
        servers[alias] = _entry(alias, entry, f"{where}.{alias}", claude=claude)
    return Catalog(servers)


def _check_alias(alias: object, where: str) -> None:
    if not isinstance(alias, str):
        raise McpCatalogError(f"{where}: an alias must be a string")
    if not alias or len(alias) > MAX_ALIAS or alias != alias.strip():
        raise McpCatalogError(f"{where}: the alias {alias!r} must be 1–{MAX_ALIAS} characters without outer spaces")
    if "/" in alias or any(not char.isprintable() for char in alias):
        raise McpCatalogError(f"{where}: the alias {alias!r} may not contain '/' or control characters")


def _entry(alias: str, entry: object, where: str, *, claude: bool) -> ServerSpec:
    if not isinstance(entry, dict):
        raise McpCatalogError(f"{where} must be an object")
    keys = _COMMON_KEYS | _STDIO_KEYS | _HTTP_KEYS | ({"type"} if claude else set())
    unknown = sorted(str(key) for key in entry if key not in keys)
    if unknown:
        hint = " (put a token in an environment variable and name it with tokenEnv)" if "headers" in unknown else ""
        raise McpCatalogError(f"{where} has unknown keys: {', '.join(unknown)}{hint}")
    kind = _kind(entry, where)
    allowed = _allowed_tools(entry.get("allowedTools"), f"{where}.allowedTools")
    timeout = _timeout(entry.get("callTimeoutMs", DEFAULT_CALL_TIMEOUT_MS), f"{where}.callTimeoutMs")
    if kind == "stdio":
        stray = sorted(key for key in _HTTP_KEYS if key in entry)
        if stray:
            raise McpCatalogError(f"{where}: a local (command) server cannot have {', '.join(stray)}")
        return StdioServer(
            alias,
            _text(entry["command"], f"{where}.command"),
            tuple(_strings(entry.get("args", []), f"{where}.args")),
            _env(entry.get("env", {}), f"{where}.env"),
            _cwd(entry.get("cwd"), f"{where}.cwd"),
            allowed,
            timeout,
        )
    stray = sorted(key for key in _STDIO_KEYS if key in entry)
    if stray:
        raise McpCatalogError(f"{where}: a remote (url) server cannot have {', '.join(stray)}")
    token_env = entry.get("tokenEnv")
    if token_env is not None and not (isinstance(token_env, str) and _ENV_NAME.fullmatch(token_env)):
        raise McpCatalogError(f"{where}.tokenEnv must be the name of an environment variable")
    url = _url(entry["url"], f"{where}.url", token=token_env is not None)
    return HttpServer(alias, url, token_env, allowed, timeout)


def _kind(entry: dict[object, object], where: str) -> str:
    declared = entry.get("type")
    if declared is not None:
        if not isinstance(declared, str) or declared not in _CLAUDE_TYPES:
            raise McpCatalogError(f"{where}.type {declared!r} is not supported (stdio or http)")
        declared = _CLAUDE_TYPES[declared]
    if ("command" in entry) == ("url" in entry):
        raise McpCatalogError(f"{where} needs either command (a local server) or url (a remote one)")
    kind = "stdio" if "command" in entry else "http"
    if declared is not None and declared != kind:
        field_name = "command" if kind == "stdio" else "url"
        raise McpCatalogError(f"{where}.type {entry['type']!r} does not match its {field_name}")
    return kind


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise McpCatalogError(f"{where} must be a nonempty string")
    return value


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_ARGS:
        raise McpCatalogError(f"{where} must be a list of at most {MAX_ARGS} strings")
    if not all(isinstance(item, str) and "\0" not in item for item in value):
        raise McpCatalogError(f"{where} must be a list of strings")
    return list(value)


def _env(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or len(value) > MAX_ARGS:
        raise McpCatalogError(f"{where} must be an object of at most {MAX_ARGS} strings by variable name")
    for name, item in value.items():
        if not name or "=" in name or "\0" in name:
            raise McpCatalogError(f"{where}: {name!r} is not a variable name")
        if not isinstance(item, str) or "\0" in item:
            raise McpCatalogError(f"{where}.{name} must be a string")
    return dict(value)


def _cwd(value: object, where: str) -> str | None:
    if value is None:
        return None
    path = os.path.expanduser(_text(value, where))
    if not os.path.isabs(path):
        raise McpCatalogError(f"{where} must be an absolute path")
    return path


def _allowed_tools(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = _strings(value, where)
    if not all(names) or len(set(names)) != len(names):
        raise McpCatalogError(f"{where} must list distinct nonempty tool names")
    return tuple(names)


def _timeout(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise McpCatalogError(f"{where} must be a number of milliseconds")
    if not 1 <= value <= MAX_CALL_TIMEOUT_MS or (isinstance(value, float) and not value.is_integer()):
        raise McpCatalogError(f"{where} must be a whole number of milliseconds from 1 to {MAX_CALL_TIMEOUT_MS}")
    return int(value)


def _url(value: object, where: str, *, token: bool) -> str:
    text = _text(value, where)
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        raise McpCatalogError(f"{where} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise McpCatalogError(f"{where} must be an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise McpCatalogError(f"{where} may not carry a user name or password (use tokenEnv)")
    if token and parts.scheme == "http" and not is_loopback(host):
        raise McpCatalogError(f"{where}: a token is only sent over https (or to this machine)")
    return text


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (``localhost`` or a loopback address)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
