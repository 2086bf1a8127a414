"""A server-state profile (OpenAI Responses ``previous_response_id``) through the real agent loop: each request
after the first sends only what the server does not hold, and anything that changes the held transcript (another
model, a new agent) sends it whole again."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.core.agent.conftest import Harness, http, server, workspace
from tests.core.providers.test_openai_responses_client import recording
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.agent.loop import Agent
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import AllowListApprover, ApprovalPolicy, ToolSettings
from tiny_agent_core.tools.registry import builtin_tools

__all__ = ["http", "server", "workspace"]  # the agent tests' fixtures, used here

FIRST_RESPONSE = "resp_67e554a155508191900ee113293c4c830794405d35281ae2"


def _agent(workspace: Path, server: LoopbackServer, client: ProviderClient, store: SessionStore) -> Harness:
    harness = Harness(workspace, server, None, store)  # type: ignore[arg-type]
    harness.agent = Agent(
        store=store,
        client=client,
        profile=replace(custom_profile(server.base_url), api="openai-responses", server_state=True),
        model="gpt-4o",
        workspace=workspace,
        tools=builtin_tools(workspace, names=("read",)),
        policy=ApprovalPolicy(ToolSettings.in_memory()),
        approver=AllowListApprover(()),
        api_key="sk-test-server-state",
        on_event=harness.events.append,
        record_request=harness.records.append,
    )
    return harness


async def test_the_second_request_sends_only_the_new_items(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    store = SessionStore.create(workspace, model="gpt-4o", provider="custom")
    harness = _agent(workspace, server, http, store)
    server.queue(Reply.sse(recording("stream-function-call.sse")), Reply.sse(recording("stream-text.sse")))
    result = await harness.agent.run("What is the capital of France?")
    store.close()
    assert result.outcome == "completed"
    first, second = (request.json() for request in server.requests)
    assert first["store"] is True
    assert "previous_response_id" not in first
    assert second["previous_response_id"] == FIRST_RESPONSE
    assert [item["type"] for item in second["input"]] == ["function_call_output"]
    assert second["instructions"] == first["instructions"]


async def test_another_model_or_a_new_agent_sends_the_whole_transcript(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    store = SessionStore.create(workspace, model="gpt-4o", provider="custom")
    harness = _agent(workspace, server, http, store)
    server.queue(Reply.sse(recording("stream-function-call.sse")), Reply.sse(recording("stream-text.sse")))
    await harness.agent.run("What is the capital of France?")
    harness.agent.model = "gpt-4o-mini"
    server.queue(Reply.sse(recording("stream-text.sse")))
    await harness.agent.run("And of Italy?")
    third = server.requests[2].json()
    assert "previous_response_id" not in third
    assert third["input"][0]["content"][0]["text"] == "What is the capital of France?"
    harness.agent.model = "gpt-4o"
    fresh = _agent(workspace, server, http, store)
    server.queue(Reply.sse(recording("stream-text.sse")))
    await fresh.agent.run("And of Spain?")
    store.close()
    assert "previous_response_id" not in server.requests[3].json()
