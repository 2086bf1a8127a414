"""Provider profiles: where a Chat Completions endpoint lives and what it can do (SPEC §7).

A :class:`ProviderProfile` is plain data: base URL, whether a key is needed, capability flags and extra headers.
:data:`PRESETS` has the providers users pick in Settings; :func:`custom_profile` makes one for any
OpenAI-compatible base URL, and :func:`profile_for_base_url` recognises a preset from its URL (so
``tiny-agent chat --base-url https://openrouter.ai/api/v1`` still sends OpenRouter's attribution headers).

:func:`list_models` fetches ``GET <base_url>/models`` where the provider offers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from tiny_agent_core.errors import MalformedResponseError, ProviderConfigurationError
from tiny_agent_core.providers.openai_chat import MAX_RESPONSE_BYTES, http_error, parse_json
from tiny_agent_core.providers.transport import (
    Deadline,
    Timeouts,
    body_too_large,
    read_body,
    translate_transport_errors,
)

APP_URL = "https://github.com/tiny-agent/tiny-agent-desktop"
"""Sent as OpenRouter's ``HTTP-Referer`` attribution header."""
APP_TITLE = "tiny-agent desktop"
"""Sent as OpenRouter's ``X-Title`` attribution header."""


@dataclass(frozen=True)
class ProviderProfile:
    """How to talk to one OpenAI-compatible Chat Completions provider."""

    id: str
    """Stable machine name (``"openai"``, ``"ollama"``, ``"custom"``…)."""
    name: str
    """What Settings shows."""
    base_url: str
    """Everything before ``/chat/completions``, without a trailing slash."""
    key_required: bool = True
    """The provider rejects requests without an API key (local servers usually do not need one)."""
    key_env: str | None = None
    """The conventional environment variable holding the key, offered when no keyring is available."""
    streaming: bool = True
    """Ask for a streamed (SSE) response; when off, the same events are produced from the JSON body."""
    stream_options: bool = True
    """The server accepts ``stream_options: {include_usage: true}`` (some reject unknown fields)."""
    streamed_usage: bool = True
    """Usage arrives in the stream (with ``stream_options`` or by default)."""
    tools: bool = True
    """The endpoint accepts ``tools`` (function calling)."""
    models_endpoint: bool = True
    """``GET /models`` lists the available models."""
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    """Headers sent with every request (attribution, API versions). Never credentials."""
    default_model: str | None = None
    """A reasonable model to preselect; users normally pick one from the model list."""

    @property
    def chat_url(self) -> str:
        """``<base_url>/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    @property
    def models_url(self) -> str:
        """``<base_url>/models``."""
        return f"{self.base_url}/models"

    def with_base_url(self, base_url: str) -> ProviderProfile:
        """The same profile pointing elsewhere (e.g. a vLLM server on another host)."""
        return replace(self, base_url=normalize_base_url(base_url))

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Request headers: extras, and ``Authorization: Bearer <key>`` when a key is given (see
        :func:`check_api_key`)."""
        out = dict(self.extra_headers)
        if api_key:
            out["Authorization"] = f"Bearer {check_api_key(api_key)}"
        return out


def check_api_key(api_key: str) -> str:
    """``api_key`` without surrounding whitespace; raises :class:`ProviderConfigurationError` when what is left has
    characters an HTTP header cannot carry (a space, a line break, a typographic quote from a paste…). The message
    never contains the key."""
    key = api_key.strip()
    if not key or any(not 0x21 <= ord(char) <= 0x7E for char in key):
        raise ProviderConfigurationError(
            "The API key contains characters that cannot be sent in an HTTP header (spaces, line breaks or "
            "non-ASCII characters, often from copying it). Paste the key again."
        )
    return key


def normalize_base_url(base_url: str) -> str:
    """Strip whitespace, a trailing slash and an accidental ``/chat/completions`` suffix."""
    url = base_url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    return url


PRESETS: dict[str, ProviderProfile] = {
    profile.id: profile
    for profile in (
        ProviderProfile("openai", "OpenAI", "https://api.openai.com/v1", key_env="OPENAI_API_KEY"),
        ProviderProfile(
            "openrouter",
            "OpenRouter",
            "https://openrouter.ai/api/v1",
            key_env="OPENROUTER_API_KEY",
            extra_headers={"HTTP-Referer": APP_URL, "X-Title": APP_TITLE},
        ),
        ProviderProfile("deepseek", "DeepSeek", "https://api.deepseek.com/v1", key_env="DEEPSEEK_API_KEY"),
        ProviderProfile("groq", "Groq", "https://api.groq.com/openai/v1", key_env="GROQ_API_KEY"),
        # Mistral sends usage in the last chunk on its own and rejects unknown request fields.
        ProviderProfile(
            "mistral", "Mistral", "https://api.mistral.ai/v1", key_env="MISTRAL_API_KEY", stream_options=False
        ),
        ProviderProfile("together", "Together", "https://api.together.xyz/v1", key_env="TOGETHER_API_KEY"),
        ProviderProfile("ollama", "Ollama", "http://localhost:11434/v1", key_required=False),
        ProviderProfile("lmstudio", "LM Studio", "http://localhost:1234/v1", key_required=False),
        ProviderProfile("vllm", "vLLM", "http://localhost:8000/v1", key_required=False),
        ProviderProfile("llamacpp", "llama.cpp server", "http://localhost:8080/v1", key_required=False),
    )
}
"""The built-in provider presets, by id."""


def custom_profile(base_url: str, *, name: str | None = None, key_required: bool = False) -> ProviderProfile:
    """A profile for any OpenAI-compatible server; capabilities default to the common ones."""
    url = normalize_base_url(base_url)
    return ProviderProfile("custom", name or urlsplit(url).netloc or url, url, key_required=key_required)


def profile_for_base_url(base_url: str) -> ProviderProfile:
    """The preset whose base URL is ``base_url`` (hosted providers: same host), else a custom profile."""
    url = normalize_base_url(base_url)
    host = urlsplit(url).netloc.lower()
    for preset in PRESETS.values():
        if preset.base_url == url:
            return preset
        preset_host = urlsplit(preset.base_url).netloc
        if preset.key_required and preset_host == host:
            return preset.with_base_url(url)
    return custom_profile(url)


def parse_model_list(body: bytes | str) -> list[str]:
    """Model ids from a ``GET /models`` body: ``{"data": [{"id": ...}]}`` (or a bare list, or ``models``)."""
    try:
        value: Any = parse_json(body)
    except ValueError as error:
        raise MalformedResponseError(f"The model list is not valid JSON: {error}.") from error
    items = value
    if isinstance(value, dict):
        items = value.get("data", value.get("models"))
    if not isinstance(items, list):
        raise MalformedResponseError("The model list has no 'data' array.")
    ids: set[str] = set()
    for item in items:
        model_id = item.get("id", item.get("name")) if isinstance(item, dict) else item
        if isinstance(model_id, str) and model_id:
            ids.add(model_id)
    return sorted(ids)


async def list_models(
    client: httpx.AsyncClient,
    profile: ProviderProfile,
    api_key: str | None,
    *,
    timeouts: Timeouts | None = None,
) -> list[str]:
    """The model ids ``GET <base_url>/models`` offers, sorted; ``[]`` when the profile has no model list.

    Raises the same typed errors as a chat request (HTTP errors, timeouts, connection failures, malformed); the
    body is read up to :data:`~tiny_agent_core.providers.openai_chat.MAX_RESPONSE_BYTES`.
    """
    if not profile.models_endpoint:
        return []
    timeouts = timeouts or Timeouts(connect=10.0, read=15.0, write=15.0, pool=10.0, total=60.0)
    with translate_transport_errors(profile.base_url, timeouts):
        deadline = Deadline(profile.base_url, timeouts.total)
        request = client.build_request(
            "GET", profile.models_url, headers=profile.headers(api_key), timeout=timeouts.to_httpx()
        )
        response = await deadline.within(client.send(request, stream=True))
        try:
            body, complete = await read_body(response, MAX_RESPONSE_BYTES, deadline)
        finally:
            await response.aclose()
    if response.status_code >= 400:
        raise http_error(response.status_code, body, response.headers)
    if not complete:
        raise body_too_large(profile.base_url, MAX_RESPONSE_BYTES)
    return parse_model_list(body)
