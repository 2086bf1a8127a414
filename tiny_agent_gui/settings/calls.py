"""The two network actions of the Providers tab, as async callables the dialog receives (tests pass stubs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from tiny_agent_core.providers.profiles import ProviderProfile, list_models

FetchModels = Callable[[ProviderProfile, str | None], Awaitable[list[str]]]
"""``await fetch(profile, api_key)`` → model ids; raises :class:`~tiny_agent_core.errors.TinyAgentError`."""

TestConnection = Callable[[ProviderProfile, str | None, str | None], Awaitable[str]]
"""``await test(profile, api_key, model)`` → a success sentence; raises
:class:`~tiny_agent_core.errors.TinyAgentError` with the reason it failed."""


@dataclass(frozen=True, slots=True)
class ProviderCalls:
    """What the settings dialog may ask of a provider."""

    fetch_models: FetchModels
    test_connection: TestConnection

    @classmethod
    def over_http(cls, client: httpx.AsyncClient) -> ProviderCalls:
        """The real calls, through the app's one shared ``httpx.AsyncClient``.

        Testing the connection lists the models (``GET /models``, free) rather than sending a chat request (billed).
        """

        async def fetch(profile: ProviderProfile, api_key: str | None) -> list[str]:
            return await list_models(client, profile, api_key)

        async def test(profile: ProviderProfile, api_key: str | None, model: str | None) -> str:
            if not profile.models_endpoint:
                return f"{profile.name} offers no model list to test against; the first request will tell."
            models = await list_models(client, profile, api_key)
            message = f"Connected to {profile.name}: {len(models)} models available."
            if model and models and model not in models:
                message += f" The model {model!r} is not among them."
            return message

        return cls(fetch, test)
