"""Fixtures of the provider tests: a loopback server per test and the app's one provider client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import LOOPBACK_TLS
from tests.loopback import LoopbackServer
from tiny_agent_core.providers.client import ProviderClient


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A fresh loopback server (own thread, ephemeral port)."""
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[ProviderClient]:
    """A provider client over one httpx client that ignores proxy settings (loopback only)."""
    http = httpx.AsyncClient(trust_env=False, verify=LOOPBACK_TLS)
    async with ProviderClient(http) as provider:
        yield provider
    await http.aclose()
