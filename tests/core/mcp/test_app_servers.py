"""The app's own MCP catalog file, a window's servers (AppServers), the settings page's Test and the raw exchanges."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.mcp.conftest import stdio_server
from tests.core.mcp.test_catalog import entries, json_values
from tests.core.mcp.test_servers import running
from tiny_agent_core.mcp.app_catalog import (
    AppCatalog,
    app_catalog_path,
    import_servers,
    load_app_catalog,
    save_app_catalog,
)
from tiny_agent_core.mcp.app_servers import AppServers, probe_server
from tiny_agent_core.mcp.catalog import HttpServer, StdioServer, load_catalog
from tiny_agent_core.mcp.errors import McpCatalogError, McpConnectError, connect_advice
from tiny_agent_core.mcp.exchanges import MAX_EXCHANGE_BYTES, McpExchanges
from tiny_agent_core.mcp.names import function_name
from tiny_agent_core.mcp.results import truncate
from tiny_agent_core.mcp.tool import MAX_RAW_BYTES, McpCall

pytestmark = pytest.mark.timeout(90)


def missing_server(alias: str = "gone") -> StdioServer:
    return StdioServer(alias, "/nonexistent/mcp-server-that-is-not-installed")


def test_the_app_catalog_round_trips_and_serves_the_cli_too(tmp_path: Path) -> None:
    path = app_catalog_path(tmp_path / "config")
    catalog = AppCatalog(
        {"local": stdio_server("local"), "docs": HttpServer("docs", "https://mcp.example.com/mcp")},
        frozenset({"local"}),
    )
    save_app_catalog(path, catalog)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_app_catalog(path) == catalog
    assert json.loads(path.read_text())["enabled"] == ["local"]
    assert list(load_catalog(path).servers) == ["local", "docs"]  # tiny-agent run --mcp-config reads it


def test_a_missing_app_catalog_is_empty_and_a_broken_one_says_where(tmp_path: Path) -> None:
    assert load_app_catalog(tmp_path / "none.json") == AppCatalog()
    path = tmp_path / "mcp-servers.json"
    path.write_text('{"servers": {"x": {"command": "a"}}, "enabled": ["y"]}')
    with pytest.raises(McpCatalogError, match="enabled names servers the catalog does not have: y"):
        load_app_catalog(path)
    path.write_text('{"servers": {"x": {"command": "a", "headers": {}}}}')
    with pytest.raises(McpCatalogError, match=r"servers\.x has unknown keys: headers"):
        load_app_catalog(path)
    path.write_text('{"mcpServers": {}}')
    with pytest.raises(McpCatalogError, match='must be a JSON object with "servers"'):
        load_app_catalog(path)


def test_an_entry_that_does_not_validate_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    with pytest.raises(McpCatalogError):
        save_app_catalog(path, AppCatalog({"bad": StdioServer("bad", "")}))
    assert not path.exists()


def test_importing_a_claude_desktop_file_keeps_existing_aliases(tmp_path: Path) -> None:
    picked = tmp_path / "claude_desktop_config.json"
    picked.write_text(
        json.dumps(
            {
                "theme": "dark",
                "mcpServers": {
                    "files": {"command": "npx", "args": ["-y", "files-server"]},
                    "local": {"command": "other"},
                },
            }
        )
    )
    added, skipped = import_servers(picked, ["local"])
    assert added == {"files": StdioServer("files", "npx", ("-y", "files-server"))}
    assert skipped == ["local"]


async def test_a_window_connects_the_enabled_servers_once_and_keeps_going_without_a_broken_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mcp-servers.json"
    catalog = AppCatalog(
        {"t": stdio_server("t"), "gone": missing_server(), "off": stdio_server("off")}, frozenset({"t", "gone"})
    )
    save_app_catalog(path, catalog)
    servers = AppServers(path)
    try:
        failures = await servers.ensure()
        assert [type(error) for error in failures] == [McpConnectError]
        assert isinstance(failures[0], McpConnectError)
        assert failures[0].alias == "gone"
        assert failures[0].cause == "connection_failed"
        assert "Check the command" in connect_advice(failures[0])
        assert servers.connected == ["t"]
        assert {tool.display_name for tool in servers.tools()} >= {"mcp:t/echo", "mcp:t/pid"}
        generation = servers.generation
        pid_tool = next(tool for tool in servers.tools() if tool.remote_name == "pid")
        server_pid = int((await pid_tool.execute({})).content.split("\n\n")[0])

        assert await servers.ensure() == []  # nothing changed: nothing reconnects, nothing is reported again
        assert servers.generation == generation
        assert running(server_pid)

        save_app_catalog(path, AppCatalog(catalog.servers, frozenset({"off"})))
        assert await servers.ensure() == []
        assert servers.connected == ["off"]
        assert servers.generation != generation
        assert not running(server_pid)
    finally:
        await servers.aclose()
    assert servers.connected == []


async def test_a_server_that_exited_is_connected_again_before_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    save_app_catalog(path, AppCatalog({"t": stdio_server("t")}, frozenset({"t"})))
    servers = AppServers(path)
    try:
        assert await servers.ensure() == []
        pid_tool = next(tool for tool in servers.tools() if tool.remote_name == "pid")
        first_pid = int((await pid_tool.execute({})).content.split("\n\n")[0])
        generation = servers.generation
        os.kill(first_pid, signal.SIGKILL)  # the server dies between two runs
        for _ in range(200):
            if not running(first_pid) and servers._servers is not None and servers._servers.lost:
                break
            await asyncio.sleep(0.02)
        assert await servers.ensure() == []
        assert servers.connected == ["t"]
        assert servers.generation != generation  # the agent is rebuilt with the new server's tools
        pid_tool = next(tool for tool in servers.tools() if tool.remote_name == "pid")
        second_pid = int((await pid_tool.execute({})).content.split("\n\n")[0])
        assert second_pid != first_pid
        assert running(second_pid)
    finally:
        await servers.aclose()


async def test_an_unreadable_catalog_is_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    path.write_text("{not json")
    servers = AppServers(path)
    failures = await servers.ensure()
    assert len(failures) == 1
    assert isinstance(failures[0], McpCatalogError)
    assert await servers.ensure() == []
    servers.changed()
    assert len(await servers.ensure()) == 1


async def test_test_lists_the_tools_and_which_are_offered() -> None:
    tools = await probe_server(stdio_server("t", allowed_tools=("echo",)))
    by_name = {tool.name: tool for tool in tools}
    assert by_name["echo"].offered
    assert by_name["echo"].description == "Return the text unchanged."
    assert not by_name["pid"].offered


async def test_test_of_a_server_that_hangs_is_bounded() -> None:
    silent = StdioServer("mute", sys.executable, ("-c", "import time; time.sleep(60)"))
    with pytest.raises(McpConnectError) as caught:
        await probe_server(silent, connect_timeout=1.0)
    assert caught.value.cause == "timeout"
    assert "terminal" in connect_advice(caught.value)


def call(tool: str = "echo", request: str = '{"name": "echo", "arguments": {}}', response: str = "{}") -> McpCall:
    return McpCall("t", tool, 1, 2, request, response)


def test_an_exchange_belongs_to_the_call_announced_last_and_is_bounded_and_masked() -> None:
    exchanges = McpExchanges(limit=2, redact=lambda text: text.replace("sk-secret", "[redacted]"))
    exchanges.started("c1", function_name("t", "echo") or "")
    exchanges.settled(call(response='{"content": [{"type": "text", "text": "sk-secret"}]}'), "stdio")
    kept = exchanges.get("c1")
    assert kept is not None
    assert kept.display_name == "mcp:t/echo"
    assert kept.kind == "stdio"
    assert kept.response_value() == {"content": [{"type": "text", "text": "[redacted]"}]}
    exchanges.settled(call(), "stdio")  # nothing announced: dropped
    exchanges.started("c2", "read")
    exchanges.settled(call(), "stdio")  # another tool was announced: dropped
    assert len(exchanges) == 1
    for number in (3, 4):
        exchanges.started(f"c{number}", function_name("t", "big") or "")
        exchanges.settled(call("big", response=json.dumps({"text": "x" * 60_000})), "stdio")
    assert exchanges.get("c1") is None  # the oldest went
    big = exchanges.get("c4")
    assert big is not None
    assert len(big.call.response.encode()) < MAX_EXCHANGE_BYTES + 100
    assert big.response_value() is None  # cut: shown as text only


def test_a_cut_exchange_names_the_size_of_the_whole_response() -> None:
    exchanges = McpExchanges()
    whole = json.dumps({"text": "y" * 1_000_000})  # the server's answer: about 1 MB
    exchanges.started("c1", function_name("t", "big") or "")
    exchanges.settled(
        replace(call("big", response=truncate(whole, MAX_RAW_BYTES)), response_bytes=len(whole.encode())), "stdio"
    )
    kept = exchanges.get("c1")
    assert kept is not None
    assert kept.call.response.endswith(f"[cut: {len(whole.encode())} bytes, the first {MAX_EXCHANGE_BYTES} kept]")


def test_the_window_modules_do_not_load_the_sdk_until_they_connect() -> None:
    """The window and its settings page start without the SDK (about a second to import)."""
    code = (
        "import sys\n"
        "import tiny_agent_core.mcp.app_catalog, tiny_agent_core.mcp.app_servers, tiny_agent_core.mcp.exchanges\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('mcp', 'mcp_types', 'httpx2')))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


app_catalogs = st.fixed_dictionaries(
    {"servers": st.dictionaries(st.sampled_from(["a", "b", "c/d", ""]), entries | json_values, max_size=3)},
    optional={"enabled": st.lists(st.sampled_from(["a", "b", "x", 1]), max_size=3) | json_values},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(app_catalogs)
def test_an_app_catalog_file_is_a_catalog_whose_enabled_servers_exist_or_a_catalog_error(value: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp-servers.json"
        path.write_text(json.dumps(value))
        try:
            loaded = load_app_catalog(path)
        except McpCatalogError:
            return
        assert loaded.enabled <= set(loaded.servers)
        save_app_catalog(path, loaded)
        assert load_app_catalog(path) == loaded


async def test_a_kept_exchange_masks_the_secrets_the_window_knows(tmp_path: Path) -> None:
    path = tmp_path / "mcp-servers.json"
    spec = replace(stdio_server("t"), env={"SERVICE_TOKEN": "sv-configured-secret"})
    save_app_catalog(path, AppCatalog({"t": spec}, frozenset({"t"})))
    servers = AppServers(path, environ={"PATH": os.environ["PATH"], "OTHER_API_KEY": "sk-process-secret"})
    try:
        assert await servers.ensure(secrets=["sk-provider-key"]) == []
        env = next(tool for tool in servers.tools() if tool.remote_name == "env")
        echo = next(tool for tool in servers.tools() if tool.remote_name == "echo")
        servers.exchanges.started("c1", env.name)
        await env.execute({"name": "SERVICE_TOKEN"})
        servers.exchanges.started("c2", echo.name)
        await echo.execute({"text": "sk-provider-key and sk-process-secret"})
    finally:
        await servers.aclose()
    configured, echoed = servers.exchanges.get("c1"), servers.exchanges.get("c2")
    assert configured is not None
    assert echoed is not None
    assert "sv-configured-secret" not in configured.call.response
    assert "[redacted]" in configured.call.response
    assert "sk-" not in echoed.call.request + echoed.call.response
    assert echoed.kind == "stdio"
