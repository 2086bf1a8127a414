"""Fixtures for agent tests: a workspace, a loopback provider, and an agent wired to both."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LOOPBACK_TLS
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.agent.events import AgentEvent
from tiny_agent_core.agent.loop import Agent
from tiny_agent_core.agent.requests import RequestRecord
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.session.reducer import reduce_session
from tiny_agent_core.session.state import SessionState
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import AllowListApprover, ApprovalPolicy, ToolSettings
from tiny_agent_core.tools.registry import builtin_tools

API_KEY = "sk-test-agent-0123456789abcdefghijklmnop"
MODEL = "test-model"


def text_reply(text: str, *, usage: tuple[int, int] | None = (10, 2), pace: float = 0.0, **kwargs: Any) -> Reply:
    """A streamed final answer, split in two deltas."""
    half = len(text) // 2
    chunks: list[Any] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text[:half]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": text[half:]}, "finish_reason": "stop"}]},
    ]
    if usage:
        chunks.append({"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}})
    return Reply.sse(sse_events(chunks), pace=pace, **kwargs)


def tool_reply(*calls: tuple[str, str, str], finish: str = "tool_calls", content: str | None = None) -> Reply:
    """A streamed assistant turn calling tools: each call is (id, name, arguments text)."""
    chunks: list[Any] = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}]}]
    for index, (call_id, name, arguments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [head]}, "finish_reason": None}]})
        piece = {"index": index, "function": {"arguments": arguments}}
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": None}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}})
    return Reply.sse(sse_events(chunks))


@dataclass
class Harness:
    """An agent in a fresh workspace, talking to a loopback server, recording its events."""

    workspace: Path
    server: LoopbackServer
    agent: Agent
    store: SessionStore
    events: list[AgentEvent] = field(default_factory=list)
    records: list[RequestRecord] = field(default_factory=list)

    def reduced(self) -> SessionState:
        """The session file reduced from disk by the strict reducer (fails on any invalid byte)."""
        return reduce_session(self.store.path.read_bytes())

    def request_messages(self, index: int) -> list[dict[str, Any]]:
        """The ``messages`` the agent sent in request ``index``."""
        body: dict[str, Any] = self.server.requests[index].json()
        messages: list[dict[str, Any]] = body["messages"]
        return messages

    def records_of_all(self) -> list[dict[str, Any]]:
        """The session's record facts, in order."""
        out = []
        for line in self.store.path.read_text().splitlines()[1:]:
            value = json.loads(line)
            for fact in value if isinstance(value, list) else [value]:
                if fact["kind"] == "record":
                    out.append(fact["record"])
        return out

    def records_of(self, kind: str) -> list[dict[str, Any]]:
        """The session's record facts of one type, in order."""
        return [record for record in self.records_of_all() if record["type"] == kind]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback provider for one test."""
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[ProviderClient]:
    """The app's one provider client (proxy settings ignored: loopback only)."""
    transport = httpx.AsyncClient(trust_env=False, verify=LOOPBACK_TLS)
    async with ProviderClient(transport) as client:
        yield client
    await transport.aclose()


def make_agent(
    workspace: Path,
    server: LoopbackServer,
    client: ProviderClient,
    *,
    allow: tuple[str, ...] = ("read", "write", "edit", "bash", "bg"),
    store: SessionStore | None = None,
    model: str = MODEL,
    read_timeout: float = 10.0,
    api_key: str = API_KEY,
    max_steps: int | None = None,
) -> Harness:
    """An agent over ``workspace`` whose approver allows exactly ``allow`` (``max_steps``: the agent's default)."""
    store = store or SessionStore.create(workspace, model=model, provider="custom")
    policy = ApprovalPolicy(ToolSettings.in_memory())
    harness = Harness(workspace, server, None, store)  # type: ignore[arg-type]
    harness.agent = Agent(
        store=store,
        client=client,
        profile=custom_profile(server.base_url),
        model=model,
        workspace=workspace,
        tools=builtin_tools(workspace),
        policy=policy,
        approver=AllowListApprover(allow),
        api_key=api_key,
        timeouts=Timeouts(connect=5, read=read_timeout),
        on_event=harness.events.append,
        record_request=harness.records.append,
        **({} if max_steps is None else {"max_steps": max_steps}),
    )
    return harness


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def harness(workspace: Path, server: LoopbackServer, http: ProviderClient) -> Iterator[Harness]:
    """The default agent harness (every tool allowed)."""
    made = make_agent(workspace, server, http)
    yield made
    made.store.close()
