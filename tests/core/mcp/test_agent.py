"""MCP tools through the real agent loop (loopback provider): offered, approved, answered, and failures typed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.core.agent.conftest import API_KEY, MODEL, Harness, http, server, text_reply, tool_reply, workspace
from tests.core.mcp.conftest import http_server, stdio_server
from tests.loopback import LoopbackServer
from tiny_agent_core.agent import events
from tiny_agent_core.agent.loop import Agent
from tiny_agent_core.mcp.allow import allowed_names, parse_allow
from tiny_agent_core.mcp.catalog import Catalog
from tiny_agent_core.mcp.names import function_name
from tiny_agent_core.mcp.servers import McpServers
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import ApprovalPolicy, ToolSettings, non_interactive
from tiny_agent_core.tools.registry import builtin_tools

__all__ = ["http", "server", "workspace"]  # the agent tests' fixtures, used here

pytestmark = pytest.mark.timeout(90)


async def mcp_harness(
    workspace: Path, server: LoopbackServer, client: ProviderClient, servers: McpServers, allow: list[str]
) -> Harness:
    """An agent offering the built-ins and the MCP tools, run as ``tiny-agent run --allow …`` would."""
    store = SessionStore.create(workspace, model=MODEL, provider="custom")
    policy, approver = non_interactive(allow)
    harness = Harness(workspace, server, None, store)  # type: ignore[arg-type]
    harness.agent = Agent(
        store=store,
        client=client,
        profile=custom_profile(server.base_url),
        model=MODEL,
        workspace=workspace,
        tools=[*builtin_tools(workspace, names=["read"]), *servers.tools()],
        policy=policy,
        approver=approver,
        api_key=API_KEY,
        timeouts=Timeouts(connect=5, read=10),
        on_event=harness.events.append,
        record_request=harness.records.append,
    )
    return harness


@pytest.fixture
async def connected() -> AsyncIterator[McpServers]:
    """The stdio test server as ``t`` (calls time out after 800 ms)."""
    spec = stdio_server("t", call_timeout_ms=800)
    async with McpServers.connect(Catalog({spec.alias: spec}), [spec.alias]) as servers:
        yield servers


async def test_an_allowed_mcp_call_is_answered_in_the_run(
    workspace: Path, server: LoopbackServer, http: ProviderClient, connected: McpServers
) -> None:
    echo = function_name("t", "echo")
    assert echo is not None
    allow = ["read", *allowed_names([parse_allow("mcp:t/echo")], connected.tools())]
    harness = await mcp_harness(workspace, server, http, connected, allow)
    server.queue(tool_reply(("c1", echo, '{"text": "from the model"}')), text_reply("Echoed."))
    result = await harness.agent.run("echo something")
    harness.store.close()
    assert result.outcome == "completed"
    offered = [tool["function"]["name"] for tool in server.requests[0].json()["tools"]]
    assert offered[0] == "read"
    assert echo in offered
    assert len(offered) == 1 + 8
    assert harness.request_messages(1)[-1] == {
        "role": "tool",
        "content": 'from the model\n\n{"result": "from the model"}',
        "tool_call_id": "c1",
    }
    started = harness.records_of("toolStarted")
    assert [(r["toolName"], r["replay"], r["replayKey"].split(":")[0]) for r in started] == [(echo, "never", "mcp")]
    finished = [e for e in harness.events if isinstance(e, events.ToolFinished)]
    assert [(e.call_id, e.outcome) for e in finished] == [("c1", "success")]


async def test_an_mcp_call_not_allowed_is_denied(
    workspace: Path, server: LoopbackServer, http: ProviderClient, connected: McpServers
) -> None:
    fail = function_name("t", "fail")
    harness = await mcp_harness(workspace, server, http, connected, ["read"])
    server.queue(tool_reply(("c1", str(fail), '{"message": "x"}')), text_reply("Denied then."))
    result = await harness.agent.run("try it")
    harness.store.close()
    assert result.outcome == "completed"
    content = harness.request_messages(1)[-1]["content"]
    assert "not allowed" in content


@pytest.mark.parametrize(
    ("remote", "arguments", "expected"),
    [
        ("fail", {"message": "bad row"}, "Error: MCP tool error: Error executing tool fail: bad row"),
        ("hang", {}, "Error: MCP server t did not answer within 800 ms"),
        ("crash", {}, "Error: MCP server t"),
    ],
)
async def test_mcp_failures_are_error_results_and_the_run_goes_on(
    workspace: Path,
    server: LoopbackServer,
    http: ProviderClient,
    connected: McpServers,
    remote: str,
    arguments: dict[str, str],
    expected: str,
) -> None:
    name = str(function_name("t", remote))
    harness = await mcp_harness(workspace, server, http, connected, [name])
    server.queue(tool_reply(("c1", name, json.dumps(arguments))), text_reply("Noted."))
    result = await harness.agent.run("call it")
    harness.store.close()
    assert result.outcome == "completed"
    assert harness.request_messages(1)[-1]["content"].startswith(expected)
    finished = [e for e in harness.events if isinstance(e, events.ToolFinished)]
    assert [e.outcome for e in finished] == ["error"]


async def test_an_http_server_is_used_by_the_run(
    workspace: Path, server: LoopbackServer, http: ProviderClient, http_url: str
) -> None:
    spec = http_server(http_url, "web")
    async with McpServers.connect(Catalog({"web": spec}), ["web"]) as servers:
        echo = str(function_name("web", "echo"))
        harness = await mcp_harness(workspace, server, http, servers, [echo])
        server.queue(tool_reply(("c1", echo, '{"text": "over http"}')), text_reply("Done."))
        result = await harness.agent.run("echo over http")
        harness.store.close()
    assert result.outcome == "completed"
    assert harness.request_messages(1)[-1]["content"].startswith("over http")


def test_the_policy_asks_for_mcp_tools_by_default() -> None:
    """Interactive runs: an MCP tool is "any other tool", so it asks (no standing permission)."""
    policy = ApprovalPolicy(ToolSettings.in_memory())
    decision = policy.decide(str(function_name("t", "echo")), {"text": "x"})
    assert decision.needs_approval


async def test_a_servers_configured_secret_is_masked_in_what_the_run_sends_and_keeps(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    secret = "hunter2-configured-for-the-server"
    spec = stdio_server("t", env={"DB_PASSWORD": secret})
    async with McpServers.connect(Catalog({"t": spec}), ["t"]) as servers:
        env = str(function_name("t", "env"))
        harness = await mcp_harness(workspace, server, http, servers, [env])
        server.queue(tool_reply(("c1", env, '{"name": "DB_PASSWORD"}')), text_reply("Read it."))
        result = await harness.agent.run("what is the password?")
        harness.store.close()
    assert result.outcome == "completed"
    sent = harness.request_messages(1)[-1]["content"]
    assert secret not in sent
    assert "[redacted]" in sent
    assert secret not in harness.store.path.read_text(encoding="utf-8")
