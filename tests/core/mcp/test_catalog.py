"""The MCP catalog: both formats, the refusals, and hostile input (always a catalog or a McpCatalogError)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiny_agent_core.errors import SettingsError
from tiny_agent_core.mcp.app_catalog import load_app_catalog
from tiny_agent_core.mcp.catalog import (
    DEFAULT_CALL_TIMEOUT_MS,
    MAX_CATALOG_BYTES,
    Catalog,
    HttpServer,
    StdioServer,
    catalog_document,
    load_catalog,
    parse_catalog,
    parse_catalog_text,
    save_catalog,
)
from tiny_agent_core.mcp.errors import McpCatalogError


def test_the_reference_format() -> None:
    catalog = parse_catalog(
        {
            "servers": {
                "docs": {
                    "url": "https://mcp.example.com/mcp",
                    "tokenEnv": "DOCS_TOKEN",
                    "allowedTools": ["search", "fetch"],
                    "callTimeoutMs": 30000,
                },
                "files": {"command": "npx", "args": ["-y", "files-server"], "env": {"ROOT": "/data"}, "cwd": "/data"},
            }
        }
    )
    assert catalog.servers == {
        "docs": HttpServer("docs", "https://mcp.example.com/mcp", "DOCS_TOKEN", ("search", "fetch"), 30000),
        "files": StdioServer("files", "npx", ("-y", "files-server"), {"ROOT": "/data"}, "/data"),
    }


def test_claude_desktops_format_ignores_its_other_settings() -> None:
    text = json.dumps(
        {
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"],
                },
                "github": {
                    "command": "docker",
                    "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<token>"},
                },
                "remote": {"type": "http", "url": "http://127.0.0.1:8000/mcp", "tokenEnv": "LOCAL_TOKEN"},
            },
        }
    )
    catalog = parse_catalog_text(text)
    assert list(catalog.servers) == ["filesystem", "github", "remote"]
    github = catalog.servers["github"]
    assert isinstance(github, StdioServer)
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "<token>"}
    assert github.call_timeout_ms == DEFAULT_CALL_TIMEOUT_MS
    assert catalog.servers["remote"] == HttpServer("remote", "http://127.0.0.1:8000/mcp", "LOCAL_TOKEN")


def test_select_keeps_the_order_asked_and_names_unknown_aliases() -> None:
    catalog = Catalog({"a": StdioServer("a", "x"), "b": StdioServer("b", "y")})
    assert [spec.alias for spec in catalog.select(["b", "a", "b"])] == ["b", "a"]
    with pytest.raises(McpCatalogError, match=r"unknown MCP server: c \(the catalog has: a, b\)"):
        catalog.select(["a", "c"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "must be a JSON object"),
        ({}, 'must have "servers"'),
        ({"servers": {}, "mcpServers": {}}, "keep one"),
        ({"servers": {}, "extra": 1}, "unknown keys: extra"),
        ({"servers": []}, "servers must be an object"),
        ({"servers": {"a": "npx"}}, r"servers\.a must be an object"),
        ({"servers": {"a": {}}}, "needs either command"),
        ({"servers": {"a": {"command": "x", "url": "https://h/"}}}, "needs either command"),
        ({"servers": {"a": {"command": "x", "type": "stdio"}}}, "unknown keys: type"),
        ({"mcpServers": {"a": {"url": "https://h/", "type": "sse"}}}, "'sse' is not supported"),
        ({"mcpServers": {"a": {"command": "x", "type": "http"}}}, "does not match its command"),
        ({"mcpServers": {"a": {"url": "https://h/", "headers": {"Authorization": "x"}}}}, "tokenEnv"),
        ({"servers": {"a": {"command": ""}}}, r"servers\.a\.command must be a nonempty string"),
        ({"servers": {"a": {"command": "x", "args": "-y"}}}, r"args must be a list"),
        ({"servers": {"a": {"command": "x", "args": [1]}}}, r"args must be a list of strings"),
        ({"servers": {"a": {"command": "x", "env": {"A=B": "c"}}}}, "is not a variable name"),
        ({"servers": {"a": {"command": "x", "env": {"A": 1}}}}, r"env\.A must be a string"),
        ({"servers": {"a": {"command": "x", "cwd": "relative/dir"}}}, "absolute path"),
        ({"servers": {"a": {"command": "x", "tokenEnv": "T"}}}, "unknown keys|cannot have tokenEnv"),
        ({"servers": {"a": {"url": "https://h/", "args": []}}}, "cannot have args"),
        ({"servers": {"a": {"url": "ftp://h/"}}}, "http"),
        ({"servers": {"a": {"url": "https://user:pw@h/"}}}, "user name or password"),
        ({"servers": {"a": {"url": "https://h:99999/"}}}, "not a valid URL"),
        ({"servers": {"a": {"url": "http://example.com/", "tokenEnv": "T"}}}, "only sent over https"),
        ({"servers": {"a": {"url": "https://h/", "tokenEnv": "NOT-A-NAME"}}}, "name of an environment variable"),
        ({"servers": {"a": {"url": "https://h/", "allowedTools": ["x", "x"]}}}, "distinct"),
        ({"servers": {"a": {"url": "https://h/", "callTimeoutMs": 0}}}, "from 1 to"),
        ({"servers": {"a": {"url": "https://h/", "callTimeoutMs": True}}}, "number of milliseconds"),
        ({"servers": {"a": {"url": "https://h/", "callTimeoutMs": 1.5}}}, "whole number"),
        ({"servers": {"a/b": {"url": "https://h/"}}}, "may not contain '/'"),
        ({"servers": {"": {"url": "https://h/"}}}, "must be 1"),
    ],
)
def test_refusals_name_the_place(value: Any, message: str) -> None:
    with pytest.raises(McpCatalogError, match=message):
        parse_catalog(value)


def test_a_token_may_go_to_this_machine_over_http() -> None:
    catalog = parse_catalog({"servers": {"a": {"url": "http://[::1]:8080/mcp", "tokenEnv": "T"}}})
    assert catalog.servers["a"] == HttpServer("a", "http://[::1]:8080/mcp", "T")


def test_a_catalog_error_is_a_settings_error() -> None:
    assert issubclass(McpCatalogError, SettingsError)


def test_load_catalog_reads_a_file_and_refuses_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('\ufeff{"mcpServers": {"a": {"command": "x"}}}', encoding="utf-8")
    assert load_catalog(path).servers == {"a": StdioServer("a", "x")}
    path.write_bytes(b"{not json")
    with pytest.raises(McpCatalogError, match="not valid JSON"):
        load_catalog(path)
    path.write_bytes(b'{"servers": {}}' + b" " * MAX_CATALOG_BYTES)
    with pytest.raises(McpCatalogError, match="larger than"):
        load_catalog(path)
    path.write_bytes(b'{"servers": {"\xff": {}}}')
    with pytest.raises(McpCatalogError, match="not UTF-8"):
        load_catalog(path)
    with pytest.raises(McpCatalogError, match="cannot be read"):
        load_catalog(tmp_path / "missing.json")


def test_deep_json_is_a_catalog_error() -> None:
    with pytest.raises(McpCatalogError):
        parse_catalog_text("[" * 100_000 + "]" * 100_000)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=30,
)
entry_keys = st.sampled_from(
    ["command", "args", "env", "cwd", "url", "tokenEnv", "allowedTools", "callTimeoutMs", "type", "headers", "x"]
)
entry_values = st.one_of(
    json_values,
    st.sampled_from(["https://h.example/mcp", "http://127.0.0.1:1/mcp", "/abs", "npx", "T", "http", "stdio", 500]),
    st.lists(st.sampled_from(["a", "b", "", "\0"]), max_size=3),
    st.dictionaries(st.sampled_from(["A", "B=C", "", "D"]), st.sampled_from(["v", "", 1]), max_size=2),
)
entries = st.dictionaries(entry_keys, entry_values, max_size=5)
catalogs = st.dictionaries(
    st.sampled_from(["servers", "mcpServers", "other"]),
    st.dictionaries(st.text(max_size=10), entries | json_values, max_size=3) | json_values,
    max_size=2,
)


def _parse(value: object) -> None:
    try:
        catalog = parse_catalog(value)
    except McpCatalogError:
        return
    for alias, spec in catalog.servers.items():
        assert spec.alias == alias
        assert spec.call_timeout_ms >= 1


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_is_a_catalog_or_a_catalog_error(value: object) -> None:
    _parse(value)


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs)
def test_catalog_shaped_json_is_a_catalog_or_a_catalog_error(value: object) -> None:
    _parse(value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_is_a_catalog_or_a_catalog_error(text: str) -> None:
    with contextlib.suppress(McpCatalogError):
        parse_catalog_text(text)


def test_a_saved_catalog_reads_back_the_same(tmp_path: Path) -> None:
    catalog = parse_catalog(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "x"], "env": {"TOKEN": "t"}, "cwd": "/data"},
                "docs": {"type": "http", "url": "https://h.example/mcp", "tokenEnv": "T", "allowedTools": ["a"]},
            }
        }
    )
    path = tmp_path / "mcp.json"
    save_catalog(path, catalog)
    assert load_catalog(path) == catalog
    assert path.stat().st_mode & 0o777 == 0o600
    assert parse_catalog(catalog_document(catalog)) == catalog


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs)
def test_any_parsed_catalog_survives_a_save(value: object) -> None:
    try:
        catalog = parse_catalog(value)
    except McpCatalogError:
        return
    assert parse_catalog(json.loads(json.dumps(catalog_document(catalog)))) == catalog


def test_a_catalog_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "catalog.json"
    os.mkfifo(fifo)
    with pytest.raises(McpCatalogError, match="not a regular file"):
        load_catalog(fifo)
    with pytest.raises(McpCatalogError, match="not a regular file"):
        load_app_catalog(fifo)
    assert load_app_catalog(tmp_path / "missing.json").servers == {}
    with pytest.raises(McpCatalogError, match="cannot be read"):
        load_catalog(tmp_path / "missing.json")
