"""Detecting local OpenAI-compatible servers: found when one answers a model list, bounded when none does."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.local_servers import (
    LOCAL_PRESETS,
    detect_local_servers,
    local_targets,
    probe,
    start_command,
)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    client = httpx.AsyncClient(trust_env=False)
    yield client
    await client.aclose()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_targets_are_the_local_presets_on_loopback() -> None:
    targets = dict(local_targets())
    assert list(targets) == list(LOCAL_PRESETS)
    assert targets["ollama"] == "http://127.0.0.1:11434/v1"
    assert targets["lmstudio"] == "http://127.0.0.1:1234/v1"
    assert targets["llamacpp"] == "http://127.0.0.1:8080/v1"
    assert targets["vllm"] == "http://127.0.0.1:8000/v1"


def test_start_commands() -> None:
    assert start_command("ollama") == "ollama serve"
    assert start_command("openai") is None
    assert all(start_command(preset) for preset in LOCAL_PRESETS)


async def test_a_server_answering_a_model_list_is_found(server: LoopbackServer, http: httpx.AsyncClient) -> None:
    server.queue(Reply.json({"object": "list", "data": [{"id": "qwen3:8b"}, {"id": "llama3.2:3b"}]}))
    closed = f"http://127.0.0.1:{_closed_port()}/v1"
    found = await detect_local_servers(http, [("ollama", server.base_url), ("lmstudio", closed)])
    assert len(found) == 1
    assert found[0].preset_id == "ollama"
    assert found[0].name == "Ollama"
    assert found[0].base_url == server.base_url
    assert found[0].port == server.port
    assert found[0].models == ("llama3.2:3b", "qwen3:8b")
    assert server.requests[0].path.endswith("/v1/models")


@pytest.mark.parametrize(
    "reply",
    [
        Reply.error(401, {"error": {"message": "no"}}),
        Reply.json("<html>not an API</html>"),
        Reply(delay=5.0),
    ],
    ids=["http-error", "not-a-model-list", "silent"],
)
async def test_anything_else_is_not_found_and_fast(
    server: LoopbackServer, http: httpx.AsyncClient, reply: Reply
) -> None:
    server.queue(reply)
    started = time.monotonic()
    assert await probe(http, "llamacpp", server.base_url, seconds=0.3) is None
    assert time.monotonic() - started < 1.5


async def test_nothing_running_returns_empty_within_the_bound(http: httpx.AsyncClient) -> None:
    targets = [(preset, f"http://127.0.0.1:{_closed_port()}/v1") for preset in LOCAL_PRESETS]
    started = time.monotonic()
    assert await detect_local_servers(http, targets, seconds=0.5) == []
    assert time.monotonic() - started < 1.5
