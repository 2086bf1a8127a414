"""The trace of a session: runs on their own clocks, every request (failed ones too), calls, totals."""

from __future__ import annotations

from decimal import Decimal

from tests.core.session.builders import Call, SessionScript
from tiny_agent_core.ledger.requests import Cost, RequestRow
from tiny_agent_core.timeline import Timeline
from tiny_agent_core.trace import CallSpan, RunSpan, StepSpan, build_trace, render_trace, trace_json


def _timeline() -> Timeline:
    script = SessionScript(seed=3)
    script.run(
        "first\nsecond line", [[Call("bash", '{"command":"make"}', "out\n\nCommand exited with code 2")], "done"]
    )
    script.run("then fail", [[Call("read", '{"path":"a"}', "x", "unknownTool")], "never"], finish="failed")
    script.compact(keep=2)
    script.run("open one", [[Call("read", '{"path":"b"}', "", "pending")]], finish="open")
    return Timeline.from_bytes(script.data())


def test_runs_steps_and_calls() -> None:
    timeline = _timeline()
    trace = build_trace(timeline)
    assert [run.title for run in trace.runs] == ["first", "then fail", "Compaction", "open one"]
    first = trace.runs[0]
    assert [step.step.stop_reason for step in first.steps] == ["toolUse", "stop"]
    assert first.steps[0].start_ms == 0
    (call,) = first.steps[0].calls
    assert call.item.outcome is not None
    assert call.item.outcome.exit_code == 2
    assert call.start_ms is not None
    assert call.duration_ms is not None
    failed = trace.runs[1]
    assert failed.steps[-1].step.status == "failed"
    assert failed.steps[-1].calls == ()
    assert failed.steps[0].calls[0].duration_ms is None  # never ran: no duration
    running = trace.runs[3].steps[0].calls[0]  # started, no result: the session is still open
    assert running.item.status == "running"
    assert running.item.outcome is None
    assert running.start_ms is not None
    assert running.duration_ms is None
    rows = trace.rows()
    assert sum(isinstance(row, RunSpan) for row in rows) == 4
    assert sum(isinstance(row, StepSpan) for row in rows) == len(timeline.steps())
    assert sum(isinstance(row, CallSpan) for row in rows) == 3
    known = [step.usage for step in timeline.steps() if step.usage is not None]
    assert trace.usage == sum(known[1:], known[0])
    assert trace.cost is None  # a session without a ledger: cost unknown, not $0
    assert trace.unknown_costs == len(timeline.steps())


def test_ledger_timings_split_the_request_and_costs_add_up() -> None:
    timeline = _timeline()
    step = timeline.steps()[0]
    timeline.enrich_request(
        RequestRow(
            attempt_id=step.attempt_id, session_id=timeline.session_id, operation_id=step.operation_id,
            step_id=step.step_id, attempt=1, step_kind="assistant", provider="custom", model=step.model,
            usage=step.usage, stop_reason="toolUse", error_code=None, outcome="settled", started_at=step.started_at,
            finished_at=step.started_at + 900, cost=Cost(Decimal("0.0125"), "provider"), response_model=None,
            latency_ms=900, ttft_ms=300, http_status=200, error_kind=None, dialect_repairs=[],
        )
    )  # fmt: skip
    trace = build_trace(timeline)
    span = trace.runs[0].steps[0]
    assert (span.ttft_ms, span.duration_ms, span.generation_ms) == (300, 900, 600)
    assert trace.runs[0].cost == Decimal("0.0125")
    assert trace.cost == Decimal("0.0125")
    assert trace.unknown_costs == len(timeline.steps()) - 1
    value = trace_json(trace)
    assert value["cost"] == "0.0125"
    assert value["steps"][0]["latencyMs"] == 900
    assert value["steps"][0]["toolCalls"][0]["exitCode"] == 2
    text = render_trace(trace)
    assert "ttft 300 ms · 900 ms" in text
    assert "[exit 2] bash make → exit 2 · 1 line" in text
    # some costs unknown: a lower bound, worded as everywhere else (ledger.costs.cost_text)
    assert text.splitlines()[0].endswith(f" · ≥ $0.012 + {trace.unknown_costs} unknown")
