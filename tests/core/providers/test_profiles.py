"""Provider profiles: presets, capability flags in the request, attribution headers, model lists."""

from __future__ import annotations

import httpx
import pytest

from tests.core.providers.support import TEST_KEY, run_chat
from tests.loopback import LoopbackServer, Reply, free_port_url, sse_events
from tiny_agent_core.errors import AuthenticationError, MalformedResponseError, ProviderConnectionError
from tiny_agent_core.providers.api_kinds import API_KINDS
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.openai_chat import build_request_body
from tiny_agent_core.providers.profiles import (
    PRESETS,
    custom_profile,
    list_models,
    normalize_base_url,
    parse_model_list,
    profile_for_base_url,
)

DONE = sse_events([{"id": "c", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}])


def test_presets() -> None:
    expected = {"openai", "openai-responses", "anthropic", "openrouter", "deepseek", "groq", "mistral", "together"}
    local = {"ollama", "lmstudio", "vllm", "llamacpp"}
    assert set(PRESETS) == expected | local
    for name in expected:
        assert PRESETS[name].key_required
        assert PRESETS[name].base_url.startswith("https://")
    for name in local:
        assert not PRESETS[name].key_required
        assert PRESETS[name].base_url.startswith("http://localhost:")
    assert set(PRESETS["openrouter"].extra_headers) == {"HTTP-Referer", "X-Title"}
    for profile in PRESETS.values():
        assert not profile.base_url.endswith("/")
        assert "Authorization" not in profile.extra_headers
        assert profile.api in API_KINDS
    assert (PRESETS["anthropic"].api, PRESETS["anthropic"].key_env) == ("anthropic", "ANTHROPIC_API_KEY")
    assert PRESETS["anthropic"].base_url == "https://api.anthropic.com/v1"
    assert PRESETS["anthropic"].models_endpoint
    assert (PRESETS["openai-responses"].api, PRESETS["openai-responses"].base_url) == (
        "openai-responses",
        "https://api.openai.com/v1",
    )
    assert PRESETS["openai"].api == "openai-chat"


def test_base_url_handling() -> None:
    assert normalize_base_url(" http://h:1/v1/ ") == "http://h:1/v1"
    assert normalize_base_url("http://h/v1/chat/completions") == "http://h/v1"
    assert normalize_base_url("https://api.anthropic.com/v1/messages") == "https://api.anthropic.com/v1"
    assert normalize_base_url("https://api.openai.com/v1/responses/") == "https://api.openai.com/v1"
    assert profile_for_base_url("https://api.openai.com/v1").id == "openai"
    assert profile_for_base_url("https://openrouter.ai/api/v1/").id == "openrouter"
    assert profile_for_base_url("http://localhost:11434/v1").id == "ollama"
    custom = profile_for_base_url("http://10.0.0.5:8000/v1")
    assert custom.id == "custom"
    assert not custom.key_required
    assert custom.api == "openai-chat"
    assert API_KINDS[custom.api].request_url(custom) == "http://10.0.0.5:8000/v1/chat/completions"
    assert custom.models_url == "http://10.0.0.5:8000/v1/models"


def test_request_body_follows_flags() -> None:
    messages = [{"role": "user", "content": "x"}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    profile = PRESETS["openai"]
    body = build_request_body(profile, "gpt", messages, tools)
    assert body == {
        "model": "gpt",
        "messages": messages,
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert "stream_options" not in build_request_body(PRESETS["mistral"], "m", messages)
    no_stream = custom_profile("http://h/v1").__class__(**{**PRESETS["openai"].__dict__, "streaming": False})
    assert build_request_body(no_stream, "m", messages) == {"model": "m", "messages": messages}
    extra = build_request_body(profile, "m", messages, None, {"temperature": 0, "stream": False})
    assert extra["temperature"] == 0
    assert extra["stream"] is True
    assert "tools" not in extra


async def test_attribution_headers_and_key_reach_the_server(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(DONE))
    profile = PRESETS["openrouter"].with_base_url(server.base_url)
    _events, _stream, error = await run_chat(client, server.base_url, profile=profile)
    assert error is None
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.method == "POST"
    assert request.headers["http-referer"].startswith("https://")
    assert request.headers["x-title"] == "tiny-agent desktop"
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert request.headers["accept"] == "text/event-stream"
    assert request.json()["stream_options"] == {"include_usage": True}


async def test_list_models(server: LoopbackServer) -> None:
    server.queue(
        Reply.json({"object": "list", "data": [{"id": "b-model", "object": "model"}, {"id": "a-model"}]}),
        Reply.error(401, {"error": {"message": "bad key"}}),
    )
    async with httpx.AsyncClient(trust_env=False) as http:
        profile = custom_profile(server.base_url)
        assert await list_models(http, profile, TEST_KEY) == ["a-model", "b-model"]
        with pytest.raises(AuthenticationError):
            await list_models(http, profile, "wrong")
    assert server.requests[0].method == "GET"
    assert server.requests[0].path == "/v1/models"
    assert server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"


async def test_list_models_refused() -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        with pytest.raises(ProviderConnectionError):
            await list_models(http, custom_profile(free_port_url()), None)


def test_parse_model_list_forms() -> None:
    assert parse_model_list('{"data": [{"id": "x"}]}') == ["x"]
    assert parse_model_list('{"models": [{"name": "llama3"}]}') == ["llama3"]
    assert parse_model_list('["a", "b"]') == ["a", "b"]
    with pytest.raises(MalformedResponseError):
        parse_model_list("{}")
    with pytest.raises(MalformedResponseError):
        parse_model_list("<html>")
