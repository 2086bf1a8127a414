"""Local servers: outbound repairs, what the client learns from a refusal, context-window errors and questions.

The replies replay what llama-cpp-python's server (``chatml-function-calling``) and llama.cpp's ``llama-server``
send; the llama-cpp-python bodies were recorded from the real server that ``make e2e-local`` runs.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.providers.support import run_chat
from tests.loopback import Abort, LoopbackServer, Reply, sse_events
from tiny_agent_core.errors import (
    ContextLengthError,
    EmptyStreamError,
    MalformedResponseError,
    ProviderConnectionError,
    ServerError,
)
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.http_errors import http_error
from tiny_agent_core.providers.openai_chat import normalize_response_body, normalize_sse_text
from tiny_agent_core.providers.openai_dialect import LOCAL_DIALECT, OUTBOUND_REPAIRS, Dialect, repair_request
from tiny_agent_core.providers.profiles import (
    PRESETS,
    ProviderProfile,
    context_length,
    context_length_from_models,
    context_length_from_ollama,
    context_length_from_props,
    custom_profile,
    profile_for_base_url,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
CALL_TURN = [
    {"role": "user", "content": "read notes.txt"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"n"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "milk"},
]
# Recorded from llama-cpp-python 0.3.36 (chatml-function-calling, SmolLM2-135M), non-streamed with
# tool_choice "auto": both tool_calls and the legacy function_call (whose name ends in a colon).
LLAMA_CPP_PYTHON_CALL = {
    "id": "chatcmpl-406fd0ee-2ea1-4711-b1fd-325dba450942",
    "object": "chat.completion",
    "created": 1796129554,
    "model": "smollm2",
    "choices": [
        {
            "index": 0,
            "message": {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call__0_read_cmpl-17ca31a5-4b88-4c80-8573-313dee9bd03f",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{ "path": "read_list.py"}'},
                    }
                ],
                "role": "assistant",
                "function_call": {"name": "read:", "arguments": '{ "path": "read_list.py"}'},
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 203, "completion_tokens": 14, "total_tokens": 217},
}
# Recorded from the same server: an assistant tool-call message with content null (HTTP 500; the trace's file path
# shortened).
NOT_A_STRING = {
    "error": {
        "message": "7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, "
        "'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant', "
        "'ctx': {'expected': \"'system'\"}}\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, "
        "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': "
        'None}\n\n  File "llama_cpp/server/app.py", line 376, in create_chat_completion\n    POST '
        "/v1/chat/completions",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


def test_repairs_follow_the_dialect() -> None:
    body = {"model": "m", "messages": CALL_TURN, "tools": TOOLS, "stream": True, "stream_options": {"x": 1}}
    sent, names = repair_request(body, LOCAL_DIALECT)
    assert names == ("tool_choice_auto", "tool_call_content_empty_string")
    assert sent["tool_choice"] == "auto"
    assert sent["messages"][1]["content"] == ""
    assert body["messages"][1]["content"] is None  # the caller's body is never changed
    sent, names = repair_request(body, Dialect(stream_tools=False))
    assert names == ("tools_not_streamed",)
    assert "stream" not in sent
    assert "stream_options" not in sent
    assert repair_request(body, Dialect()) == (body, ())
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    assert repair_request(plain, Dialect(tool_choice_auto=True, stream_tools=False, null_content=False)) == (plain, ())


_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.none() | st.text(max_size=5)},
    optional={"tool_calls": st.lists(st.just({"id": "c"}), max_size=2)},
)


@given(
    messages=st.lists(_MESSAGE, max_size=5),
    tools=st.booleans(),
    stream=st.booleans(),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_repairs_change_only_what_they_name(
    messages: list[dict[str, Any]], tools: bool, stream: bool, flags: tuple[bool, bool, bool]
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": messages, **({"tools": TOOLS} if tools else {})}
    if stream:
        body["stream"] = True
    dialect = Dialect(*flags)
    sent, names = repair_request(body, dialect)
    assert set(names) <= set(OUTBOUND_REPAIRS)
    assert repair_request(sent, dialect)[0] == sent  # idempotent
    assert ("tool_choice" in sent) == ("tool_choice_auto" in names)
    assert (sent.get("stream") != body.get("stream")) == ("tools_not_streamed" in names)
    changed = [i for i, (a, b) in enumerate(zip(messages, sent["messages"], strict=True)) if a != b]
    assert bool(changed) == ("tool_call_content_empty_string" in names)
    for index in changed:
        assert sent["messages"][index] == {**messages[index], "content": ""}
        assert messages[index]["content"] is None
        assert messages[index]["role"] == "assistant"


def test_local_servers_get_the_local_dialect() -> None:
    assert custom_profile("http://127.0.0.1:8089/v1").dialect == LOCAL_DIALECT
    assert custom_profile("http://192.168.1.20:8000/v1").is_local
    assert custom_profile("https://llm.example.com/v1").dialect == Dialect()
    assert profile_for_base_url("https://api.openai.com/v1").dialect == Dialect()
    assert not PRESETS["openai"].is_local
    for preset in ("ollama", "lmstudio", "vllm", "llamacpp"):
        assert PRESETS[preset].is_local
        assert PRESETS[preset].dialect == LOCAL_DIALECT


async def test_a_server_that_cannot_stream_tools_gets_them_unstreamed(
    client: ProviderClient, server: LoopbackServer
) -> None:
    # llama-cpp-python with tool_choice "auto" and stream: 200, an event-stream content type, and no event at all.
    server.queue(Reply.sse(b""), Reply.json(LLAMA_CPP_PYTHON_CALL))
    events, stream, failure = await run_chat(client, server.base_url, tools=TOOLS)
    assert failure is None
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    assert final.response.outbound_repairs == ("tool_choice_auto", "tools_not_streamed")
    assert final.response.message.calls[0].function.name == "read"
    assert final.response.usage is not None
    assert final.response.usage.input == 203
    assert stream.dialect == Dialect(tool_choice_auto=True, stream_tools=False, null_content=False)
    first, second = (request.json() for request in server.requests)
    assert first["stream"] is True
    assert first["tool_choice"] == "auto"
    assert "stream" not in second
    assert second["tool_choice"] == "auto"
    assert final.capture.to_json()["outboundRepairs"] == ["tool_choice_auto", "tools_not_streamed"]
    assert final.capture.stream is False


async def test_the_resend_survives_the_connection_the_refusal_closed(
    client: ProviderClient, server: LoopbackServer
) -> None:
    # llama-cpp-python closes the empty stream's keep-alive connection just as the resend reuses it.
    server.queue(Reply.sse(b""), Reply(steps=[Abort()]), Reply.json(LLAMA_CPP_PYTHON_CALL))
    _, stream, failure = await run_chat(client, server.base_url, tools=TOOLS)
    assert failure is None
    assert stream.dialect.stream_tools is False
    assert len(server.requests) == 3
    server.queue(Reply.sse(b""), Reply(steps=[Abort()]), Reply(steps=[Abort()]))
    _, _, failure = await run_chat(client, server.base_url, tools=TOOLS)
    assert isinstance(failure, ProviderConnectionError)  # only once
    assert len(server.requests) == 6


async def test_a_refusal_in_words_is_learned_the_same_way(client: ProviderClient, server: LoopbackServer) -> None:
    server.queue(
        Reply.error(500, {"error": {"message": "Automatic streaming tool choice is not supported"}}),
        Reply.json(LLAMA_CPP_PYTHON_CALL),
    )
    _, stream, failure = await run_chat(client, server.base_url, tools=TOOLS)
    assert failure is None
    assert stream.dialect.stream_tools is False


async def test_an_empty_stream_without_tools_is_a_typed_error(client: ProviderClient, server: LoopbackServer) -> None:
    server.queue(Reply.sse(b""))
    _, _, failure = await run_chat(client, server.base_url)
    assert isinstance(failure, EmptyStreamError)
    assert failure.kind == "malformed"
    assert len(server.requests) == 1


async def test_null_content_refused_is_resent_as_empty_text(client: ProviderClient, server: LoopbackServer) -> None:
    profile = ProviderProfile("custom", "x", server.base_url)  # the OpenAI default dialect, on loopback
    server.queue(Reply.error(500, NOT_A_STRING), Reply.sse(sse_events(_answer_chunks("ok"))))
    stream = client.stream_chat(profile, model="m", messages=CALL_TURN, tools=TOOLS)
    async with stream:
        events = [event async for event in stream]
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    assert final.response.outbound_repairs == ("tool_call_content_empty_string",)
    assert server.requests[0].json()["messages"][1]["content"] is None
    assert server.requests[1].json()["messages"][1]["content"] == ""
    assert stream.dialect == Dialect(null_content=False)


async def test_the_same_refusal_twice_is_not_retried_again(client: ProviderClient, server: LoopbackServer) -> None:
    server.queue(Reply.error(500, NOT_A_STRING), Reply.error(500, NOT_A_STRING))
    profile = ProviderProfile("custom", "x", server.base_url)
    stream = client.stream_chat(profile, model="m", messages=CALL_TURN, tools=TOOLS)
    with pytest.raises(ServerError):
        async with stream:
            _ = [event async for event in stream]
    assert len(server.requests) == 2


def _answer_chunks(text: str) -> list[dict[str, Any]]:
    return [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]


@pytest.mark.parametrize(
    ("status", "body", "window"),
    [
        # llama.cpp llama-server (recorded from the one vendored in llama-cpp-python 0.3.36)
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "request (5031 tokens) exceeds the available context size (4096 tokens), try "
                    "increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5031,
                    "n_ctx": 4096,
                }
            },
            4096,
        ),
        # older llama-server
        (400, {"error": {"message": "the request exceeds the available context size, try increasing it"}}, None),
        # llama-cpp-python 0.3.36 (recorded), as OpenAI and vLLM word it
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 4096 tokens. However, you requested 5015 "
                    "tokens (5010 in the messages, 5 in the completion). Please reduce the length of the messages "
                    "or completion.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            4096,
        ),
        # older llama-cpp-python
        (400, {"error": {"message": "Requested tokens (4310) exceed context window of 4096"}}, 4096),
        (413, "prompt is too long", None),
    ],
)
def test_context_overflow_is_a_context_length_error_with_the_way_out(
    status: int, body: Any, window: int | None
) -> None:
    error = http_error(status, json.dumps(body) if not isinstance(body, str) else body)
    assert isinstance(error, ContextLengthError)
    assert error.kind == "context_length"
    assert error.context_length == window
    assert "compact" in str(error)
    assert "new session" in str(error)
    assert "retry later" not in str(error)


def test_other_errors_are_not_context_errors() -> None:
    assert not isinstance(http_error(429, '{"error": {"message": "too many tokens per minute"}}'), ContextLengthError)
    assert not isinstance(http_error(500, '{"error": {"message": "out of memory"}}'), ContextLengthError)


def test_a_legacy_function_call_alone_is_refused() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "function_call": {"name": "read", "arguments": "{}"}},
                "finish_reason": "stop",
            }
        ]
    }
    with pytest.raises(MalformedResponseError, match="legacy function_call"):
        normalize_response_body(json.dumps(body))
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "function_call": {"name": "read"}}}]},
        {"choices": [{"index": 0, "delta": {"function_call": {"arguments": "{}"}}, "finish_reason": "stop"}]},
    ]
    with pytest.raises(MalformedResponseError, match="legacy function_call"):
        normalize_sse_text(sse_events(chunks))
    # Beside tool_calls (llama-cpp-python sends both), the calls carry the meaning.
    result = normalize_response_body(json.dumps(LLAMA_CPP_PYTHON_CALL))
    assert [call.function.name for call in result.message.calls] == ["read"]


def test_context_length_parsers() -> None:
    llama_models = {"object": "list", "data": [{"id": "smollm2", "meta": {"n_ctx_train": 8192, "n_vocab": 49152}}]}
    assert context_length_from_models(llama_models, "smollm2") == 8192
    assert context_length_from_models(llama_models, "other") is None
    vllm = {"data": [{"id": "q", "max_model_len": 32768}]}
    assert context_length_from_models(vllm, "q") == 32768
    openrouter = {"data": [{"id": "a/b", "context_length": 131072, "top_provider": {"context_length": 65536}}]}
    assert context_length_from_models(openrouter, "a/b") == 131072
    assert context_length_from_models({"data": [{"id": "x", "context_length": "big"}]}, "x") is None
    assert context_length_from_props({"default_generation_settings": {"n_ctx": 4096}}) == 4096
    assert context_length_from_props({"n_ctx": 2048}) == 2048
    assert context_length_from_props([]) is None
    show = {"parameters": "stop <|im_end|>\nnum_ctx 8192", "model_info": {"llama.context_length": 131072}}
    assert context_length_from_ollama(show) == 8192
    assert context_length_from_ollama({"model_info": {"qwen2.context_length": 32768}}) == 32768
    assert context_length_from_ollama({"model_info": {"qwen2.context_length": -1}}) is None


_KEYS = st.sampled_from(
    ["data", "id", "meta", "n_ctx", "context_length", "model_info", "parameters", "default_generation_settings"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.just("id"),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=12,
)


@given(_JSON)
def test_context_length_parsers_accept_anything(value: Any) -> None:
    for found in (
        context_length_from_models(value, "id"),
        context_length_from_props(value),
        context_length_from_ollama(value),
    ):
        assert found is None or (type(found) is int and found > 0)


async def test_context_length_asks_local_servers_in_order(server: LoopbackServer) -> None:
    profile = custom_profile(server.base_url)
    async with httpx.AsyncClient(trust_env=False) as http:
        server.queue(Reply.json({"default_generation_settings": {"n_ctx": 4096}}))
        assert await context_length(http, profile, "m", None) == 4096
        server.queue(Reply.error(404, "not found"), Reply.json({"data": [{"id": "m", "meta": {"n_ctx_train": 8192}}]}))
        assert await context_length(http, profile, "m", None) == 8192
        server.queue(Reply.error(404), Reply.json({"data": [{"id": "m"}]}), Reply.json({"model_info": {}}))
        assert await context_length(http, profile, "m", None) is None
        paths = [request.path for request in server.requests]
    assert paths == ["/props", "/props", "/v1/models", "/props", "/v1/models", "/api/show"]
    assert server.requests[-1].json() == {"model": "m"}
    async with httpx.AsyncClient(trust_env=False) as http:
        configured = ProviderProfile("x", "x", server.base_url, context_length=512)
        assert await context_length(http, configured, "m", None) == 512
