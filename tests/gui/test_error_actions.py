"""Which way out a failed run offers, decided from the error's type and kind."""

from __future__ import annotations

import httpx

from tiny_agent_core.errors import (
    AuthenticationError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.profiles import PRESETS, custom_profile
from tiny_agent_gui.error_actions import DEFAULT_RETRY_SECONDS, action_for

OLLAMA = PRESETS["ollama"]
OPENROUTER = PRESETS["openrouter"]


def _refused(url: str) -> ProviderConnectionError:
    try:
        raise ProviderConnectionError("refused") from httpx.ConnectError("Connection refused")
    except ProviderConnectionError as error:
        return error


class _ContextLength(ProviderError):
    """Stands for the core's ContextLengthError: the window decides on ``kind`` alone."""

    kind = "context_length"
    context_length = 8192


def test_auth_opens_settings() -> None:
    action = action_for(AuthenticationError("no", status=403), OPENROUTER)
    assert action is not None
    assert action.kind == "settings"
    assert action.text.startswith("OpenRouter refused the API key (HTTP 403).")


def test_rate_limit_waits_as_asked_or_a_default() -> None:
    asked = action_for(RateLimitError("slow", status=429, retry_after=7.5), OPENROUTER)
    assert asked is not None
    assert asked.retry_after == 7.5
    assert "asked to wait 7.5 s" in asked.text
    unsaid = action_for(RateLimitError("slow", status=429), OPENROUTER)
    assert unsaid is not None
    assert unsaid.retry_after == DEFAULT_RETRY_SECONDS
    too_long = action_for(RateLimitError("slow", status=429, retry_after=3600), OPENROUTER)
    assert too_long is not None
    assert too_long.retry_after is None  # not waited for by itself


def test_a_refused_local_server_names_its_start_command() -> None:
    action = action_for(_refused(OLLAMA.base_url), OLLAMA)
    assert action is not None
    assert action.kind == "local_server"
    assert action.command == "ollama serve"
    custom = action_for(_refused("x"), custom_profile("http://192.168.1.20:8000/v1"))
    assert custom is not None
    assert custom.command is None
    assert "Is the server running?" in custom.text
    assert action_for(_refused("x"), OPENROUTER) is None  # a cloud provider: the inline Retry is enough
    assert action_for(ProviderConnectionError("reset mid-stream"), OLLAMA) is None


def test_context_length_offers_compact_and_new_session() -> None:
    action = action_for(_ContextLength("too long"), OPENROUTER)
    assert action is not None
    assert action.kind == "context_length"
    assert action.text.startswith("The conversation no longer fits in the model's context (8,192 tokens). Compact")


def test_other_errors_have_no_extra_action() -> None:
    assert action_for(ServerError("boom", status=500), OPENROUTER) is None
    assert action_for(None, OPENROUTER) is None
