"""The ledger recorder: every request's cost, repairs and dropped fields reach the index, and come back."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from tests.core.agent.conftest import Harness, make_agent
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.ledger import connect, get_session, session_requests
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.timeline import Timeline


async def test_a_run_is_recorded_with_cost_repairs_and_dropped_fields(
    workspace: Path, server: LoopbackServer, http: ProviderClient, tmp_path: Path
) -> None:
    conn = connect(tmp_path / "index.sqlite3")
    harness: Harness = make_agent(workspace, server, http)
    recorder = LedgerRecorder(conn, harness.store.path, workspace, secrets=["sk-test"])
    harness.agent._record_request = recorder
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "hmm", "content": "hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cost": 0.0012}},
    ]
    server.queue(Reply.sse(sse_events(chunks, done=False)))
    result = await harness.agent.run("hello")
    assert result.outcome == "completed"
    recorder.close()
    [row] = session_requests(conn, harness.store.session_id)
    assert row.cost is not None
    assert (row.cost.amount, row.cost.source) == (Decimal("0.0012"), "provider")
    assert row.dialect_repairs == ["missing_done_marker"]
    assert row.dropped_fields == ["message.reasoning_content"]
    assert row.http_status == 200
    summary = get_session(conn, harness.store.session_id)
    assert summary is not None
    assert summary.title == "hello"
    timeline = Timeline.from_bytes(harness.store.path.read_bytes())
    timeline.enrich(conn)
    [step] = timeline.steps()
    assert step.dropped == ("message.reasoning_content",)
    assert step.cost == Decimal("0.0012")
    harness.store.close()
    conn.close()
