"""A fork ("Re-run on…") holds copies of its origin's earlier requests: cost totals count each physical request once
(grand total, per model, per day, per session), and a copy whose original is gone is counted in its place."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer
from tests.scripted_models import ScriptedModels, answer, tool_call
from tiny_agent_core.fork import fork_before, fork_whole, read_copies
from tiny_agent_core.ledger import connect, get_session, scan_workspace
from tiny_agent_core.ledger.costs import cost_overview, cost_rows, cost_total
from tiny_agent_core.pricing import PriceOverride
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session import reduce_session
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.tools.approval import ToolSettings, non_interactive
from tiny_agent_core.workbench import OpenedSession, build_agent, create_session

RATES = PriceOverride(Decimal(1), Decimal(2))  # $1 / $2 per million input / output tokens


async def _run(server: LoopbackServer, opened: OpenedSession, model: str, prompt: str) -> None:
    policy, approver = non_interactive(["write"])
    async with ProviderClient() as client:
        agent = build_agent(
            opened,
            client=client,
            profile=custom_profile(server.base_url),
            model=model,
            api_key=None,
            approver=approver,
            policy=policy,
            tool_settings=ToolSettings.in_memory(),
            on_event=lambda _event: None,
        )
        assert (await agent.run(prompt)).outcome == "completed"


@pytest.fixture
def priced() -> None:
    settings = AppSettings.load()
    settings.price_overrides = {("custom", "model-x"): RATES, ("custom", "model-y"): RATES}
    settings.save()


async def _origin_and_fork(workspace: Path) -> tuple[Path, Path]:
    """An origin with 3 requests (two runs) and a fork cut before its second prompt that made 1 request of its own."""
    with LoopbackServer() as server:
        server.handler = ScriptedModels(
            {
                "model-x": [
                    tool_call("w1", "write", {"path": "a.txt", "content": "a"}, usage=(1000, 100)),
                    answer("wrote it", usage=(1200, 50)),
                    answer("second", usage=(1500, 20)),
                ],
                "model-y": [answer("second, on y", usage=(1300, 30))],
            }
        )
        origin = create_session(workspace, custom_profile(server.base_url), "model-x")
        await _run(server, origin, "model-x", "first")
        await _run(server, origin, "model-x", "second")
        second = [eid for eid, message in origin.store.state.message_entries() if message.get("content") == "second"]
        origin.store.close()
        fork, prompt = fork_before(origin.store.path, second[0], model="model-y", provider="custom")
        await _run(server, OpenedSession(fork), "model-y", prompt)
        fork.close()
    return origin.store.path, fork.path


async def test_a_forks_copied_requests_are_counted_once(tmp_path: Path, priced: None) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    origin, fork = await _origin_and_fork(workspace)
    assert len(read_copies(fork)) == 2  # the first run's two requests
    assert reduce_session(fork.read_bytes()).usage.input == 1000 + 1200 + 1300  # the fork holds the copies

    conn = connect(tmp_path / "index.sqlite3")
    scan_workspace(conn, workspace)
    total = cost_total(conn)
    assert total.requests == 4  # 3 of the origin + 1 of the fork, not + its 2 copies
    assert total.usage.input == 1000 + 1200 + 1500 + 1300
    assert total.cost == Decimal("0.0012") + Decimal("0.0013") + Decimal("0.00154") + Decimal("0.00136")
    overview = cost_overview(conn)
    assert overview.total.requests == 4
    assert overview.total.cost == total.cost
    assert {row.key: row.requests for row in overview.models} == {"custom/model-x": 3, "custom/model-y": 1}
    assert sum(row.requests for row in overview.days) == 4
    assert sum((cell.cost or Decimal(0)) for cell in overview.daily) == total.cost
    by_session = {row.key: row.requests for row in cost_rows(conn, "session")}
    origin_id = reduce_session(origin.read_bytes()).header.id
    fork_id = reduce_session(fork.read_bytes()).header.id
    assert by_session == {origin_id: 3, fork_id: 1}
    fork_row = get_session(conn, fork_id)
    assert fork_row is not None
    assert fork_row.requests == 1  # its own physical requests
    assert fork_row.cost == Decimal("0.00136")  # 1300 in, 30 out at $1 / $2 per M

    origin.unlink()  # the copies now stand for the requests they copied
    scan_workspace(conn, workspace)
    assert get_session(conn, origin_id) is None
    assert cost_total(conn).requests == 3
    assert cost_total(conn).usage.input == 1000 + 1200 + 1300
    conn.close()


async def test_a_duplicate_counts_none_of_its_copies(tmp_path: Path, priced: None) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    origin, _fork = await _origin_and_fork(workspace)
    duplicate = fork_whole(origin)
    duplicate.close()
    assert len(read_copies(duplicate.path)) == 3
    conn = connect(tmp_path / "index.sqlite3")
    scan_workspace(conn, workspace)
    assert cost_total(conn).requests == 4
    duplicate_row = get_session(conn, duplicate.session_id)
    assert duplicate_row is not None
    assert duplicate_row.requests == 0
    conn.close()


def test_a_missing_or_malformed_copies_sidecar_reads_as_no_copies(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, model="m", provider="custom")
    store.close()
    assert read_copies(store.path) == {}
    sidecar = store.path.with_name(store.path.stem + ".copies.json")
    for text in ("{", "[]", '{"version": 2, "copiedAttempts": {}}', '{"version": 1, "copiedAttempts": [1]}'):
        sidecar.write_text(text)
        assert read_copies(store.path) == {}
    sidecar.write_text('{"version": 1, "copiedAttempts": {"a": "b", "c": 3}}')
    assert read_copies(store.path) == {"a": "b"}
