"""The workbench, the core's front door: sessions (writable, or read-only with a reason when another writer holds
them), agents whose requests reach the index, titles and cost sums — over one data folder."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

import tiny_agent_core
from tests.loopback import LoopbackServer
from tests.scripted_models import answer, tool_call
from tiny_agent_core.cost_sums import CostSum, step_costs
from tiny_agent_core.errors import SessionError
from tiny_agent_core.ledger import connect
from tiny_agent_core.pricing import Cost
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.timeline import StepInfo
from tiny_agent_core.usage import Usage
from tiny_agent_core.workbench import Workbench, create_session, open_session


def test_a_session_held_by_another_writer_opens_read_only_with_a_reason(tmp_path: Path) -> None:
    first = create_session(tmp_path, custom_profile("http://127.0.0.1:9/v1"), "m")
    assert not first.read_only
    assert first.workspace == tmp_path.resolve()
    second = open_session(first.store.path)
    assert second.read_only
    assert second.read_only_reason is not None
    assert second.read_only_reason == (
        "This session is open for writing in another window or process. It is shown read-only; close it there to "
        "continue here."
    )
    assert second.store.session_id == first.store.session_id
    first.store.close()
    third = open_session(first.store.path)
    assert not third.read_only
    third.store.close()
    second.store.close()


def test_the_workbench_is_exported_from_the_package() -> None:
    assert tiny_agent_core.Workbench is Workbench
    assert tiny_agent_core.CostSum is CostSum


def test_a_workbench_keeps_its_index_in_its_data_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nested" / "data"
    with Workbench(folder) as bench:
        assert folder.is_dir()
        assert bench.database == folder / "index.sqlite3"
        assert not bench.database.exists()  # opened on first use
        assert bench.ledger is not None
        assert bench.database.is_file()
    assert (folder.stat().st_mode & 0o077) == 0


def test_sessions_are_created_found_and_opened_through_the_workbench(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with Workbench(tmp_path / "data") as bench:
        created = bench.create_session(workspace, custom_profile("http://127.0.0.1:9/v1"), "m")
        session_id = created.store.session_id
        held = bench.find_session(workspace, session_id)
        assert held.read_only  # the first one still writes it
        assert held.read_only_reason is not None
        held.close()
        created.close()
        created.close()  # closing twice is harmless
        again = bench.find_session(workspace, session_id)
        assert not again.read_only
        again.close()
        with pytest.raises(SessionError, match="Invalid session ID"):
            bench.find_session(workspace, "not-an-id")


async def test_an_agent_run_is_indexed_with_its_title_and_cost(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\n")
    with LoopbackServer() as server, Workbench(tmp_path / "data") as bench:
        server.queue(
            tool_call("call_1", "read", {"path": "notes.txt"}, cost=0.0015),
            answer("It says to remember the milk.", cost=0.0005),
        )
        profile = custom_profile(server.base_url)
        session = bench.create_session(workspace, profile, "scripted")
        async with ProviderClient() as client:
            agent = bench.agent(session, client=client, profile=profile, model="scripted")
            result = await agent.run("What do my   notes say?")
        assert result.outcome == "completed"
        assert result.answer == "It says to remember the milk."
        summary = await bench.refresh_index(session)
        assert summary is not None
        assert summary.title == "What do my notes say?"
        assert bench.summary(session) == summary
        assert bench.summary(session.store.session_id) == summary
        cost = bench.cost(session)
        assert cost == CostSum(Decimal("0.002"), 0, frozenset({"provider"}))
        session.close()
    # the read tool ran without asking: reading inside the workspace needs no approval by default
    tool_message = server.requests[1].json()["messages"][-1]
    assert "remember the milk" in tool_message["content"]


async def test_without_an_approver_a_call_that_needs_approval_is_denied(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with LoopbackServer() as server, Workbench(tmp_path / "data") as bench:
        server.queue(tool_call("call_1", "write", {"path": "x.txt", "content": "hi"}), answer("Denied, fine."))
        profile = custom_profile(server.base_url)
        session = bench.create_session(workspace, profile, "scripted")
        async with ProviderClient() as client:
            result = await bench.agent(session, client=client, profile=profile, model="scripted").run("Write x.txt")
        session.close()
    assert result.outcome == "completed"
    assert not (workspace / "x.txt").exists()
    assert "nobody can be asked" in server.requests[1].json()["messages"][-1]["content"]


def test_a_workspace_is_indexed_and_listed_through_the_workbench(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    profile = custom_profile("http://127.0.0.1:9/v1")
    first = create_session(workspace, profile, "m")
    second = create_session(workspace, profile, "m")
    for session in (first, second):
        session.close()
    (second.store.path.parent / "broken_x.jsonl").write_text("not a session\n")
    with Workbench(tmp_path / "data") as bench:
        assert bench.sessions() == []
        report = bench.index_workspace(workspace)
        assert report.indexed == 2
        assert [Path(item.path).name for item in report.corrupt] == ["broken_x.jsonl"]
        listed = bench.sessions(workspace)
        assert {summary.id for summary in listed} == {first.store.session_id, second.store.session_id}
        assert bench.sessions(tmp_path / "elsewhere") == []
        assert [summary.id for summary in bench.sessions(limit=1)] == [listed[0].id]
        assert bench.index_workspace(workspace).unchanged == 2


def test_a_workbench_over_no_index_builds_sessions_but_indexes_nothing(tmp_path: Path) -> None:
    bench = Workbench.over(None)
    assert bench.database is None
    assert bench.ledger is None
    session = bench.create_session(tmp_path, custom_profile("http://127.0.0.1:9/v1"), "m")
    assert bench.index(session) is None
    assert bench.summary(session) is None
    assert bench.cost(session) == CostSum()
    assert bench.index_workspace(tmp_path).indexed == 0
    assert bench.sessions() == []
    session.close()


async def test_a_failed_reindex_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conn = connect(tmp_path / "index.sqlite3")
    bench = Workbench.over(conn)
    assert bench.database == tmp_path / "index.sqlite3"
    missing = tmp_path / "ws" / ".tiny-agent" / "sessions" / "gone.jsonl"
    assert await bench.refresh_index(missing) is None
    assert "re-indexing" in caplog.text
    bench.close()  # not its connection: still open
    conn.execute("SELECT 1")
    conn.close()


def test_cost_sums_add_known_costs_and_count_unknown_ones() -> None:
    assert CostSum.of([]) == CostSum(None, 0, frozenset())
    costs = [Cost(Decimal("0.25"), "provider"), Cost(None, None), Cost(Decimal("0.5"), "price_table")]
    assert CostSum.of(costs) == CostSum(Decimal("0.75"), 1, frozenset({"provider", "price_table"}))
    assert CostSum.of([Cost(None, None)]) == CostSum(None, 1, frozenset())


def _step(status: str, *, usage: Usage | None = None, cost: str | None = None, source: str | None = None) -> StepInfo:
    amount = Decimal(cost) if cost is not None else None
    return StepInfo("s", "a", 1, "o", "assistant", "m", 0, status, usage=usage, cost=amount, cost_source=source)


def test_step_costs_leave_out_a_request_that_failed_before_any_answer() -> None:
    steps = [
        _step("settled", cost="0.25", source="price_table"),
        _step("settled"),  # answered, cost unknown
        _step("failed"),  # failed before any answer, no usage: nothing billed that we know of
        _step("failed", usage=Usage(10, 0, 0, 0)),  # failed after reporting usage: its cost is unknown
        _step("failed", cost="0.5", source="provider"),
    ]
    assert step_costs(steps) == CostSum(Decimal("0.75"), 2, frozenset({"price_table", "provider"}))
    assert step_costs([_step("failed")]) == CostSum()
