"""The app's own MCP catalog: the servers the desktop knows, and which of them its windows connect.

It is one file in the config folder (:func:`app_catalog_path`, ``mcp-servers.json``) in the reference's format
(:mod:`.catalog`) plus ``enabled``, the aliases a window connects::

    {"servers": {"files": {"command": "npx", "args": ["-y", "files-server"], "env": {}, "callTimeoutMs": 60000},
                 "docs": {"url": "https://mcp.example.com/mcp", "callTimeoutMs": 60000}},
     "enabled": ["files"]}

so ``tiny-agent run --mcp-config <that file> --mcp files`` reads it too. The servers are checked exactly as any
catalog is; ``enabled`` must list distinct aliases of the file. A missing file is an empty catalog; an unreadable
or invalid one is a :class:`~tiny_agent_core.mcp.errors.McpCatalogError` that names the place. The file is
written atomically and readable by the user only (an ``env`` may hold a server's credentials); a remote server's
token is never in it: it lives in the keyring under :func:`token_entry`, read through a :class:`TokenReader` (both
here, not in the connection module, so that they load without the SDK).

Nothing is discovered: a Claude Desktop file is read only when the user picks it (:func:`import_servers`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tiny_agent_core.mcp.catalog import (
    Catalog,
    ServerSpec,
    catalog_document,
    load_catalog,
    parse_catalog,
    read_catalog_bytes,
    save_catalog,
)
from tiny_agent_core.mcp.errors import McpCatalogError
from tiny_agent_core.paths import config_dir

__all__ = [
    "APP_CATALOG_FILE",
    "AppCatalog",
    "TokenReader",
    "app_catalog_path",
    "import_servers",
    "load_app_catalog",
    "save_app_catalog",
    "spec_of",
    "token_entry",
]

APP_CATALOG_FILE = "mcp-servers.json"
"""The app catalog's name inside the config folder."""


@dataclass(frozen=True, slots=True)
class AppCatalog:
    """The app's servers by alias (in order) and the aliases its windows connect."""

    servers: Mapping[str, ServerSpec] = field(default_factory=dict)
    enabled: frozenset[str] = frozenset()

    def enabled_specs(self) -> list[ServerSpec]:
        """The entries a window connects, in catalog order."""
        return [spec for alias, spec in self.servers.items() if alias in self.enabled]

    def document(self) -> dict[str, object]:
        """The file's JSON value."""
        document: dict[str, object] = dict(catalog_document(Catalog(self.servers)))
        document["enabled"] = [alias for alias in self.servers if alias in self.enabled]
        return document


def app_catalog_path(directory: str | os.PathLike[str] | None = None) -> Path:
    """Where the app catalog lives: ``<config folder>/mcp-servers.json`` (``directory`` replaces the folder)."""
    return Path(directory if directory is not None else config_dir()) / APP_CATALOG_FILE


def spec_of(alias: str, entry: Mapping[str, object]) -> ServerSpec:
    """The server ``alias`` of a catalog entry in the reference's form (a settings form's fields), checked as a
    catalog entry is; raises :class:`McpCatalogError` naming the field."""
    return parse_catalog({"servers": {alias: dict(entry)}}).servers[alias]


class TokenReader(Protocol):
    """Where the servers' tokens are kept (:class:`tiny_agent_core.secrets.KeyStore` is one)."""

    def get(self, profile_id: str, /) -> str | None:
        """The secret stored under ``profile_id`` (see :func:`token_entry`), or ``None``."""
        ...


def token_entry(alias: str) -> str:
    """The keyring entry (user name, under the app's service) holding the bearer token of the server ``alias``."""
    return f"mcp:{alias}"


def load_app_catalog(path: str | os.PathLike[str]) -> AppCatalog:
    """The app catalog in ``path``; empty when the file does not exist. Raises :class:`McpCatalogError`."""
    try:
        data = read_catalog_bytes(path)
    except FileNotFoundError:
        return AppCatalog()
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise McpCatalogError(f"the MCP catalog {os.fspath(path)} is not valid JSON text: {error}") from None
    if not isinstance(value, dict) or "servers" not in value:
        raise McpCatalogError(f'the MCP catalog {os.fspath(path)} must be a JSON object with "servers"')
    catalog = parse_catalog(value)
    return AppCatalog(catalog.servers, _enabled(value.get("enabled", []), catalog.servers))


def _enabled(value: object, servers: Mapping[str, ServerSpec]) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(alias, str) for alias in value):
        raise McpCatalogError("enabled must be a list of server aliases")
    unknown = [alias for alias in value if alias not in servers]
    if unknown:
        raise McpCatalogError(f"enabled names servers the catalog does not have: {', '.join(unknown)}")
    if len(set(value)) != len(value):
        raise McpCatalogError("enabled names a server twice")
    return frozenset(value)


def save_app_catalog(path: str | os.PathLike[str], catalog: AppCatalog) -> None:
    """Write ``catalog`` to ``path`` atomically (mode 0600), after checking it reads back as it is; the folder is
    made when missing. Raises :class:`McpCatalogError` (an entry that does not validate) or ``OSError``."""
    document = catalog.document()
    parsed = parse_catalog(json.loads(json.dumps(document)))
    _enabled(document["enabled"], parsed.servers)
    Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    save_catalog(path, Catalog(parsed.servers), enabled=[alias for alias in parsed.servers if alias in catalog.enabled])


def import_servers(path: str | os.PathLike[str], existing: Iterable[str]) -> tuple[dict[str, ServerSpec], list[str]]:
    """The servers of a catalog file the user picked (Claude Desktop's ``mcpServers`` or the reference's
    ``servers``): ``(new servers by alias, aliases skipped because they already exist)``. Raises
    :class:`McpCatalogError` for a file that is not a usable catalog (nothing is imported then)."""
    taken = set(existing)
    catalog = load_catalog(path)
    added = {alias: spec for alias, spec in catalog.servers.items() if alias not in taken}
    return added, [alias for alias in catalog.servers if alias in taken]
