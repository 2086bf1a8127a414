"""The real agent against the loopback server, replaying recorded OpenRouter answers: the provider's own figure
(``usage.cost``) is the cost, marked provider, before and after the index is deleted and rebuilt; a 429 is not
billed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from tests.core.agent.conftest import make_agent
from tests.loopback import LoopbackServer, Reply, load_case
from tests.shared_data import shared_files
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.ledger import connect, rebuild
from tiny_agent_core.ledger.costs import cost_rows
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.session.store import SessionStore


def _figure(case: Path) -> Decimal | None:
    """The case's ``usage.cost`` exactly as written (never through float); ``None`` when absent or BYOK."""
    body = json.loads(case.read_text(), parse_float=Decimal).get("body")
    usage = (body.get("usage") if isinstance(body, dict) else None) or {}
    if "cost" not in usage or usage.get("is_byok"):
        return None
    return Decimal(usage["cost"])


PRICED_CASES = [case for case in shared_files("wire/cases", "*openrouter*.json") if _figure(case) is not None]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback provider for one test."""
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[ProviderClient]:
    """The app's provider client (no proxies: loopback only)."""
    transport = httpx.AsyncClient(trust_env=False)
    async with ProviderClient(transport) as client:
        yield client
    await transport.aclose()


async def _run(
    workspace: Path, server: LoopbackServer, http: ProviderClient, conn: sqlite3.Connection, reply: Reply
) -> str:
    """One prompt through the real agent, its requests recorded in the ledger as the app records them."""
    store = SessionStore.create(workspace, model="vendor/model", provider="openrouter")
    harness = make_agent(workspace, server, http, store=store, model="vendor/model", allow=())
    server.queue(reply)
    await harness.agent.run("hello")
    recorder = LedgerRecorder(conn, store.path, workspace)
    for record in harness.records:
        recorder(record)
    recorder.close()
    store.close()
    return store.path.name


@pytest.mark.skipif(not PRICED_CASES, reason="../shared is not present: no recorded OpenRouter cases")
@pytest.mark.parametrize("case", PRICED_CASES, ids=lambda case: case.stem)
async def test_openrouter_usage_cost_is_the_cost_even_after_a_rebuild(
    case: Path, workspace: Path, server: LoopbackServer, http: ProviderClient, data_dir: Path
) -> None:
    conn = connect()
    await _run(workspace, server, http, conn, Reply.from_case(load_case(case)))
    [row] = cost_rows(conn)
    assert (row.cost, row.sources["provider"], row.requests) == (_figure(case), 1, 1)
    conn.close()
    for path in data_dir.iterdir():
        path.unlink()
    fresh = connect()
    try:
        rebuild(fresh, [workspace])
        [again] = cost_rows(fresh)
        assert (again.cost, again.sources["provider"]) == (_figure(case), 1)
    finally:
        fresh.close()


async def test_a_429_from_the_provider_is_not_billed(
    workspace: Path, server: LoopbackServer, http: ProviderClient, data_dir: Path
) -> None:
    conn = connect()
    try:
        body = {"error": {"message": "Rate limit exceeded", "code": 429}}
        await _run(workspace, server, http, conn, Reply.error(429, body))
        [row] = cost_rows(conn)
        assert row.requests >= 1
        assert (row.cost, row.unknown_cost_requests) == (Decimal(0), 0)
        assert row.sources["not_billed"] == row.requests
    finally:
        conn.close()
