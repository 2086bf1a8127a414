"""API kinds: the registry, ``--api`` on the commands, a profile's kind persisted, and the client speaking it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tests.core.providers.support import TEST_KEY, run_chat
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.cli import main
from tiny_agent_core.errors import ModelNotFoundError, ProviderConfigurationError, ProviderError
from tiny_agent_core.providers import openai_chat
from tiny_agent_core.providers.api_kinds import (
    API_KINDS,
    DEFAULT_API,
    SERVER_STATE_LOST,
    KeepsServerState,
    RepairsRequests,
    adapter_for,
)
from tiny_agent_core.providers.client import ChatCompleted, ChatStream, ProviderClient
from tiny_agent_core.providers.profiles import PRESETS, custom_profile, list_models
from tiny_agent_core.providers.results import DEFAULT_LIMITS, ConversationState, new_tool_call_id
from tiny_agent_core.settings import SETTINGS_FILE, AppSettings, ProfileConfig

ANSWER = sse_events([{"id": "r2", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}])
STATE_GONE = {"error": {"message": "Previous response with id 'r1' not found.", "code": "previous_response_not_found"}}
TRANSCRIPT = [
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": "two"},
    {"role": "user", "content": "three"},
]


def test_openai_chat_is_the_default_and_repairs_its_requests() -> None:
    assert DEFAULT_API == "openai-chat"
    assert set(API_KINDS) == {"openai-chat", "anthropic", "openai-responses"}
    assert isinstance(API_KINDS["openai-responses"], KeepsServerState)
    assert not isinstance(API_KINDS["anthropic"], RepairsRequests | KeepsServerState)
    adapter = adapter_for("openai-chat")
    assert adapter is API_KINDS["openai-chat"]
    assert adapter.kind == "openai-chat"
    assert isinstance(adapter, RepairsRequests)
    assert not isinstance(adapter, KeepsServerState)
    for kind, registered in API_KINDS.items():
        assert registered.kind == kind


def test_an_unknown_kind_is_a_typed_error_naming_the_known_ones() -> None:
    with pytest.raises(ProviderConfigurationError) as caught:
        adapter_for("soap")
    assert caught.value.kind == "configuration"
    assert "'soap'" in str(caught.value)
    for kind in API_KINDS:
        assert kind in str(caught.value)


async def test_a_profile_of_an_unknown_kind_sends_nothing(server: LoopbackServer, client: ProviderClient) -> None:
    profile = replace(custom_profile(server.base_url), api="soap")
    with pytest.raises(ProviderConfigurationError):
        client.stream_chat(profile, model="m", messages=TRANSCRIPT)
    assert server.requests == []


async def test_the_adapter_chooses_url_headers_and_body(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(ANSWER))
    profile = replace(custom_profile(server.base_url), extra_headers={"X-Test": "1"})
    events, stream, error = await run_chat(client, server.base_url, profile=profile)
    assert error is None
    assert isinstance(events[-1], ChatCompleted)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert sent.headers["x-test"] == "1"
    assert sent.json()["stream"] is True
    assert stream.capture is not None
    assert stream.capture.url == f"{server.base_url}/chat/completions"


@dataclass(frozen=True)
class ChainingChat:
    """Chat Completions that pretends the server keeps state: with a state, only the messages after ``covered``
    are sent, under ``previous_response_id`` (a test stand-in for the Responses adapter's chaining)."""

    kind: str = "test-chaining"

    def request_url(self, profile: Any) -> str:
        return f"{profile.base_url}/chained"

    def request_headers(self, profile: Any, api_key: str | None) -> dict[str, str]:
        return openai_chat.ADAPTER.request_headers(profile, api_key)

    def build_body(
        self,
        profile: Any,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        extra: Mapping[str, Any] | None,
        *,
        state: ConversationState | None = None,
    ) -> dict[str, Any]:
        if state is None:
            return openai_chat.build_request_body(profile, model, messages, tools, extra)
        body = openai_chat.build_request_body(profile, model, messages[state.covered :], tools, extra)
        body["previous_response_id"] = state.response_id
        return body

    def new_accumulator(self, limits: Any, new_id: Any = new_tool_call_id) -> Any:
        return openai_chat.ADAPTER.new_accumulator(limits, new_id)

    def normalize_body(self, body: bytes | str, limits: Any = DEFAULT_LIMITS, new_id: Any = None) -> Any:
        return openai_chat.ADAPTER.normalize_body(body, limits)

    def http_error(self, status: int, body: bytes | str, headers: Mapping[str, str] | None) -> Any:
        return openai_chat.ADAPTER.http_error(status, body, headers)

    def state_lost(self, error: ProviderError) -> bool:
        return "previous_response_not_found" in str(getattr(error, "body", ""))


@pytest.fixture
def chaining(monkeypatch: pytest.MonkeyPatch) -> str:
    adapter = ChainingChat()
    monkeypatch.setitem(API_KINDS, adapter.kind, adapter)
    return adapter.kind


async def _drain(stream: ChatStream) -> None:
    async with stream:
        async for _ in stream:
            pass


async def _run(client: ProviderClient, server: LoopbackServer, kind: str, state: ConversationState | None) -> Any:
    profile = replace(custom_profile(server.base_url), api=kind)
    async with client.stream_chat(profile, model="m", messages=TRANSCRIPT, api_key=TEST_KEY, state=state) as stream:
        events = [event async for event in stream]
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    return final


async def test_chained_state_sends_only_the_new_messages(
    chaining: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.sse(ANSWER))
    done = await _run(client, server, chaining, ConversationState("r1", 2))
    assert server.requests[0].json()["messages"] == TRANSCRIPT[2:]
    assert server.requests[0].json()["previous_response_id"] == "r1"
    assert done.response.outbound_repairs == ()


async def test_lost_server_state_resends_the_whole_transcript_once_and_says_so(
    chaining: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(404, STATE_GONE), Reply.sse(ANSWER))
    done = await _run(client, server, chaining, ConversationState("r1", 2))
    assert len(server.requests) == 2
    resent = server.requests[1].json()
    assert resent["messages"] == TRANSCRIPT
    assert "previous_response_id" not in resent
    assert done.response.outbound_repairs == (SERVER_STATE_LOST,)
    assert done.capture.outbound_repairs == (SERVER_STATE_LOST,)
    assert done.response.message.content == "ok"


async def test_lost_state_twice_is_the_error_not_a_loop(
    chaining: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(404, STATE_GONE), Reply.error(404, STATE_GONE))
    profile = replace(custom_profile(server.base_url), api=chaining)
    stream = client.stream_chat(profile, model="m", messages=TRANSCRIPT, state=ConversationState("r1", 2))
    with pytest.raises(ModelNotFoundError):
        await _drain(stream)
    assert len(server.requests) == 2


async def test_without_state_a_lost_state_error_is_not_retried(
    chaining: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(404, STATE_GONE))
    profile = replace(custom_profile(server.base_url), api=chaining)
    stream = client.stream_chat(profile, model="m", messages=TRANSCRIPT)
    with pytest.raises(ModelNotFoundError):
        await _drain(stream)
    assert len(server.requests) == 1


async def test_model_list_uses_the_kinds_headers_and_errors(
    chaining: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.json({"data": [{"id": "b"}, {"id": "a"}]}), Reply.error(404, STATE_GONE))
    profile = replace(custom_profile(server.base_url), api=chaining)
    assert await list_models(client.http, profile, TEST_KEY) == ["a", "b"]
    assert server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
    with pytest.raises(ModelNotFoundError):
        await list_models(client.http, profile, TEST_KEY)
    with pytest.raises(ProviderConfigurationError):
        await list_models(client.http, replace(profile, api="soap"), TEST_KEY)


# --- persistence ------------------------------------------------------------------------------------------------


def test_a_profiles_api_kind_and_server_state_round_trip(tmp_path: Path) -> None:
    settings = AppSettings.load(tmp_path)
    custom = replace(ProfileConfig.custom("gateway", "https://llm.example/v1"), api="openai-responses")
    stateful = replace(ProfileConfig.from_preset("openai-responses", "responses"), server_state=True)
    plain = ProfileConfig.from_preset("anthropic", "claude")
    for profile in (custom, stateful, plain):
        settings.add_profile(profile)
    settings.save()
    data = json.loads((tmp_path / SETTINGS_FILE).read_text())
    assert data["profiles"][0]["api"] == "openai-responses"
    assert data["profiles"][1]["serverState"] is True
    assert "api" not in data["profiles"][2]  # the preset's own kind is not written
    again = AppSettings.load(tmp_path)
    assert again.load_error is None
    assert again.profiles == [custom, stateful, plain]
    assert custom.provider_profile().api == "openai-responses"
    assert stateful.provider_profile().server_state
    assert (stateful.provider_profile().api, plain.provider_profile().api) == ("openai-responses", "anthropic")
    assert ProfileConfig.custom("x", "http://127.0.0.1:1/v1").provider_profile().api == "openai-chat"
    assert not ProfileConfig.from_preset("openai", "o").provider_profile().server_state


@pytest.mark.parametrize(("key", "value"), [("api", "Open AI"), ("api", 3), ("api", ""), ("serverState", "yes")])
def test_an_invalid_api_kind_setting_is_refused(tmp_path: Path, key: str, value: Any) -> None:
    profile = {"id": "a", "provider": "openai", "name": "A", key: value}
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"version": 1, "profiles": [profile]}))
    loaded = AppSettings.load(tmp_path)
    assert loaded.load_error is not None
    assert key in str(loaded.load_error)


def test_presets_name_registered_kinds() -> None:
    assert PRESETS["openai"].api == "openai-chat"
    assert PRESETS["anthropic"].api == "anthropic"
    assert PRESETS["openai-responses"].api == "openai-responses"


# --- --api on the commands ------------------------------------------------------------------------------------


def test_wire_normalize_takes_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "body.json"
    body.write_text(
        json.dumps(
            {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
        )
    )
    assert main(["wire", "normalize", "--api", "openai-chat", str(body)]) == 0
    assert json.loads(capsys.readouterr().out)["message"]["content"] == "hi"
    stream = tmp_path / "stream.txt"
    stream.write_text(ANSWER)
    assert main(["wire", "normalize", "--api", "openai-chat", "--stream", str(stream)]) == 0
    assert json.loads(capsys.readouterr().out)["message"]["content"] == "ok"


@pytest.mark.parametrize(
    "command",
    [
        ["wire", "normalize", "f.json"],
        ["chat", "--base-url", "http://127.0.0.1:9/v1", "hi"],
        ["run", "--workspace", ".", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "hi"],
    ],
)
def test_an_unknown_api_is_a_usage_error(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command[:-1], "--api", "soap", command[-1]])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--api" in err
    assert "invalid choice: 'soap'" in err
    assert "openai-chat" in err


def test_chat_sends_in_the_api_kind_chosen(
    chaining: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.queue(Reply.sse(ANSWER), Reply.sse(ANSWER))
    assert main(["chat", "--base-url", server.base_url, "--model", "m", "hi"]) == 0
    assert main(["chat", "--base-url", server.base_url, "--api", chaining, "--model", "m", "hi"]) == 0
    assert [request.path for request in server.requests] == ["/v1/chat/completions", "/v1/chained"]
    assert capsys.readouterr().out == "okok"
