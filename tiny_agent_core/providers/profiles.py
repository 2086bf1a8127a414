"""Provider profiles: where a provider's endpoint lives, which API kind it speaks and what it can do (SPEC §7).

A :class:`ProviderProfile` is plain data: base URL, API kind (:mod:`~tiny_agent_core.providers.api_kinds`: the
wire dialect, whose adapter builds the request URL, headers and body), whether a key is needed, capability flags
and extra headers.
:data:`PRESETS` has the providers users pick in Settings; :func:`custom_profile` makes one for any
OpenAI-compatible base URL, and :func:`profile_for_base_url` recognises a preset from its URL (so
``tiny-agent chat --base-url https://openrouter.ai/api/v1`` still sends OpenRouter's attribution headers).

:func:`list_models` fetches ``GET <base_url>/models`` where the provider offers it; :func:`context_length` asks the
server how many tokens the model's context window holds.

Local servers (:attr:`ProviderProfile.is_local`: loopback, private and ``.local`` hosts, by the URL alone) get
:data:`~tiny_agent_core.providers.openai_dialect.LOCAL_DIALECT`, the request repairs llama.cpp-family servers need.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from tiny_agent_core.errors import MalformedResponseError, ProviderConfigurationError, ProviderError
from tiny_agent_core.providers.locality import is_local_url
from tiny_agent_core.providers.openai_dialect import LOCAL_DIALECT, Dialect
from tiny_agent_core.providers.results import MAX_RESPONSE_BYTES, parse_json
from tiny_agent_core.providers.transport import (
    Deadline,
    Timeouts,
    body_too_large,
    read_body,
    translate_transport_errors,
)

if TYPE_CHECKING:
    from tiny_agent_core.providers.api_kinds import WireAdapter

APP_URL = "https://github.com/tiny-agent/tiny-agent-desktop"
"""Sent as OpenRouter's ``HTTP-Referer`` attribution header."""
APP_TITLE = "tiny-agent desktop"
"""Sent as OpenRouter's ``X-Title`` attribution header."""


@dataclass(frozen=True)
class ProviderProfile:
    """How to talk to one provider: where it is, which API kind it speaks, what it can do."""

    id: str
    """Stable machine name (``"openai"``, ``"ollama"``, ``"custom"``…)."""
    name: str
    """What Settings shows."""
    base_url: str
    """Everything before the API's own path (``/chat/completions``, ``/messages``…), without a trailing slash."""
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
    dialect: Dialect = field(default_factory=Dialect)
    """What the server needs of a request beyond the OpenAI API (the outbound repairs); learned ones are added."""
    context_length: int | None = None
    """The model's context window in tokens when the user set it (else :func:`context_length` asks the server)."""
    api: str = "openai-chat"
    """The API kind (wire dialect) of the endpoint, a key of :data:`~tiny_agent_core.providers.api_kinds.API_KINDS`;
    :attr:`dialect` applies to ``openai-chat`` only."""
    server_state: bool = False
    """Let the server keep the conversation and send only new messages (``openai-responses``
    ``previous_response_id`` chaining); off: every request carries the whole transcript."""

    @property
    def is_local(self) -> bool:
        """The server is on this machine or the local network (no API charge; see :mod:`.locality`)."""
        return is_local_url(self.base_url)

    @property
    def models_url(self) -> str:
        """``<base_url>/models``."""
        return f"{self.base_url}/models"

    def with_base_url(self, base_url: str) -> ProviderProfile:
        """The same profile pointing elsewhere (e.g. a vLLM server on another host)."""
        return replace(self, base_url=normalize_base_url(base_url))

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Extras, and ``Authorization: Bearer <key>`` when a key is given (see :func:`check_api_key`): the headers
        of the OpenAI-style API kinds (an adapter's ``request_headers`` decides what its requests send)."""
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


_ENDPOINT_SUFFIXES = ("/chat/completions", "/messages", "/responses")
"""Request paths of the API kinds, which users sometimes paste as part of the base URL."""


def normalize_base_url(base_url: str) -> str:
    """Strip whitespace, a trailing slash and an accidental endpoint suffix (``/chat/completions``, ``/messages``,
    ``/responses``)."""
    url = base_url.strip().rstrip("/")
    for suffix in _ENDPOINT_SUFFIXES:
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


PRESETS: dict[str, ProviderProfile] = {
    profile.id: profile
    for profile in (
        ProviderProfile("openai", "OpenAI", "https://api.openai.com/v1", key_env="OPENAI_API_KEY"),
        ProviderProfile(
            "openai-responses",
            "OpenAI (Responses)",
            "https://api.openai.com/v1",
            key_env="OPENAI_API_KEY",
            api="openai-responses",
        ),
        # Its adapter sends the x-api-key and anthropic-version headers.
        ProviderProfile(
            "anthropic", "Anthropic", "https://api.anthropic.com/v1", key_env="ANTHROPIC_API_KEY", api="anthropic"
        ),
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
        ProviderProfile("ollama", "Ollama", "http://localhost:11434/v1", key_required=False, dialect=LOCAL_DIALECT),
        ProviderProfile("lmstudio", "LM Studio", "http://localhost:1234/v1", key_required=False, dialect=LOCAL_DIALECT),
        ProviderProfile("vllm", "vLLM", "http://localhost:8000/v1", key_required=False, dialect=LOCAL_DIALECT),
        ProviderProfile(
            "llamacpp", "llama.cpp server", "http://localhost:8080/v1", key_required=False, dialect=LOCAL_DIALECT
        ),
    )
}
"""The built-in provider presets, by id."""


def custom_profile(base_url: str, *, name: str | None = None, key_required: bool = False) -> ProviderProfile:
    """A profile for any OpenAI-compatible server; capabilities default to the common ones, and a local server
    gets :data:`~tiny_agent_core.providers.openai_dialect.LOCAL_DIALECT`."""
    url = normalize_base_url(base_url)
    dialect = LOCAL_DIALECT if is_local_url(url) else Dialect()
    return ProviderProfile(
        "custom", name or urlsplit(url).netloc or url, url, key_required=key_required, dialect=dialect
    )


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


def _adapter(profile: ProviderProfile) -> WireAdapter:
    """The adapter of the profile's API kind (imported here: the adapters' registry imports the adapter modules,
    which may refer to this one)."""
    from tiny_agent_core.providers.api_kinds import adapter_for

    return adapter_for(profile.api)


async def _fetch(
    client: httpx.AsyncClient,
    profile: ProviderProfile,
    api_key: str | None,
    url: str,
    timeouts: Timeouts,
    limit: int,
    payload: dict[str, Any] | None = None,
) -> tuple[httpx.Response, bytes, bool]:
    """One GET (POST with ``payload``) bounded by ``timeouts`` and ``limit``: the response, up to ``limit`` bytes of
    its body and whether that is all of it (:func:`~tiny_agent_core.providers.transport.read_body`). Transport
    failures are typed errors. The headers are those of the profile's API kind."""
    headers = _adapter(profile).request_headers(profile, api_key)
    with translate_transport_errors(profile.base_url, timeouts):
        deadline = Deadline(profile.base_url, timeouts.total)
        request = client.build_request(
            "POST" if payload is not None else "GET",
            url,
            json=payload,
            headers=headers,
            timeout=timeouts.to_httpx(),
        )
        response = await deadline.within(client.send(request, stream=True))
        try:
            body, complete = await read_body(response, limit, deadline)
        finally:
            await response.aclose()
    return response, body, complete


async def list_models(
    client: httpx.AsyncClient,
    profile: ProviderProfile,
    api_key: str | None,
    *,
    timeouts: Timeouts | None = None,
) -> list[str]:
    """The model ids ``GET <base_url>/models`` offers, sorted; ``[]`` when the profile has no model list.

    Raises the same typed errors as a chat request (HTTP errors, timeouts, connection failures, malformed); the
    body is read up to :data:`~tiny_agent_core.providers.results.MAX_RESPONSE_BYTES`.
    """
    if not profile.models_endpoint:
        return []
    timeouts = timeouts or Timeouts(connect=10.0, read=15.0, write=15.0, pool=10.0, total=60.0)
    response, body, complete = await _fetch(client, profile, api_key, profile.models_url, timeouts, MAX_RESPONSE_BYTES)
    if response.status_code >= 400:
        raise _adapter(profile).http_error(response.status_code, body, response.headers)
    if not complete:
        raise body_too_large(profile.base_url, MAX_RESPONSE_BYTES)
    return parse_model_list(body)


_PROBE_TIMEOUTS = Timeouts(connect=2.0, read=3.0, write=3.0, pool=2.0, total=5.0)
"""Bounds of each context-length question: a server that does not answer soon is not asked further."""
_PROBE_BYTES = 4 * 1024 * 1024
"""The largest answer read from a context-length question (a model list with metadata is a few KiB)."""
_CONTEXT_KEYS = ("context_length", "max_model_len", "context_window", "max_context_length", "n_ctx")
"""Model-list fields that state a context window (OpenRouter, vLLM, LM Studio…), in order of preference."""


def _tokens(value: Any) -> int | None:
    return value if type(value) is int and 0 < value < 1 << 31 else None


def _server_root(base_url: str) -> str:
    url = normalize_base_url(base_url)
    return url[: -len("/v1")] if url.endswith("/v1") else url


async def _ask(
    client: httpx.AsyncClient,
    profile: ProviderProfile,
    api_key: str | None,
    url: str,
    timeouts: Timeouts,
    payload: dict[str, Any] | None = None,
) -> Any:
    """The JSON answer of one bounded GET (POST with ``payload``); ``None`` when there is no usable one."""
    try:
        response, body, complete = await _fetch(client, profile, api_key, url, timeouts, _PROBE_BYTES, payload)
    except ProviderError:
        return None
    if response.status_code >= 400 or not complete:
        return None
    try:
        return parse_json(body)
    except ValueError:
        return None


def context_length_from_models(value: Any, model: str) -> int | None:
    """The context window a ``GET /models`` answer states for ``model`` (``context_length``, ``max_model_len``,
    ``context_window``, ``max_context_length``, ``n_ctx``, or llama.cpp's ``meta.n_ctx_train``), else ``None``."""
    items = value.get("data", value.get("models")) if isinstance(value, dict) else value
    if not isinstance(items, list):
        return None
    for item in items:
        if not isinstance(item, dict) or model not in (item.get("id"), item.get("name"), item.get("model")):
            continue
        meta = item.get("meta")
        for owner in (item, item.get("top_provider"), meta):
            if isinstance(owner, dict):
                for key in _CONTEXT_KEYS:
                    if (found := _tokens(owner.get(key))) is not None:
                        return found
        if isinstance(meta, dict):
            return _tokens(meta.get("n_ctx_train"))
    return None


def context_length_from_props(value: Any) -> int | None:
    """The context window of a llama.cpp ``GET /props`` answer (``default_generation_settings.n_ctx``, ``n_ctx``)."""
    if not isinstance(value, dict):
        return None
    settings = value.get("default_generation_settings")
    found = _tokens(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return found if found is not None else _tokens(value.get("n_ctx"))


def context_length_from_ollama(value: Any) -> int | None:
    """The context window of an Ollama ``POST /api/show`` answer: ``num_ctx`` among the model's parameters, else
    the model's ``<architecture>.context_length``."""
    if not isinstance(value, dict):
        return None
    parameters = value.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == "num_ctx" and words[1].isdigit():
                return _tokens(int(words[1]))
    info = value.get("model_info")
    if isinstance(info, dict):
        for key, item in info.items():
            if isinstance(key, str) and key.endswith(".context_length") and (found := _tokens(item)) is not None:
                return found
    return None


async def context_length(
    client: httpx.AsyncClient,
    profile: ProviderProfile,
    model: str,
    api_key: str | None,
    *,
    timeouts: Timeouts = _PROBE_TIMEOUTS,
) -> int | None:
    """How many tokens ``model``'s context window holds, or ``None`` when nobody says.

    The profile's own setting wins; then the server is asked, each question bounded by ``timeouts`` and any
    failure meaning "not said", until one answers: llama.cpp's ``GET /props`` (the window the server really runs
    with; local servers only), the model list's metadata (:func:`context_length_from_models`), Ollama's
    ``POST /api/show`` (local servers only).
    """
    if profile.context_length is not None:
        return profile.context_length
    root = _server_root(profile.base_url)
    found = None
    if profile.is_local:
        found = context_length_from_props(await _ask(client, profile, api_key, f"{root}/props", timeouts))
    if found is None and profile.models_endpoint:
        models = await _ask(client, profile, api_key, profile.models_url, timeouts)
        found = context_length_from_models(models, model)
    if found is None and profile.is_local:
        show = await _ask(client, profile, api_key, f"{root}/api/show", timeouts, {"model": model})
        found = context_length_from_ollama(show)
    return found
