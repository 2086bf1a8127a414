"""A session as a trace: every model request and tool call on one clock per run (no Qt here).

:func:`build_trace` turns a :class:`~tiny_agent_core.timeline.Timeline` into runs (one per operation: a prompt's
run or a compaction), each a list of model requests (:class:`StepSpan`, every attempt, failed ones included) with
the tool calls each settled step asked for (:class:`CallSpan`). Times are milliseconds from the run's first
request, so a session used over days still reads run by run:

* a step starts at its ``stepAttempt`` and lasts the ledger's latency (request sent → response complete) when it
  is known, else until the fact that settled or failed it; its time to first token comes from the ledger;
* a tool call starts at its ``toolStarted`` (after any approval) and ends at its result; a call that never ran
  sits where its synthetic result was written, with no duration.

The window's waterfall, ``tiny-agent session show`` (:func:`render_trace`, :func:`trace_json`) and the tool cards
all read this one model. Unknown stays ``None``: a session another client wrote has no latency, TTFT or cost.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tiny_agent_core.ledger.costs import cost_text
from tiny_agent_core.timeline import AssistantItem, CompactionItem, NoticeItem, StepInfo, Timeline, ToolItem, UserItem
from tiny_agent_core.usage import Usage

__all__ = ["CallSpan", "RunSpan", "StepSpan", "Trace", "TraceRow", "build_trace", "render_trace", "trace_json"]


@dataclass(frozen=True, slots=True)
class CallSpan:
    """One tool call on its run's clock."""

    item: ToolItem
    index: int
    """The call's index in the timeline."""
    start_ms: int | None
    """Since the run's start: when it started, or when its synthetic result was written; ``None`` while pending."""
    duration_ms: int | None
    """Start to result; ``None`` for a call that never started or is still running."""


@dataclass(frozen=True, slots=True)
class StepSpan:
    """One model request (a step attempt) on its run's clock."""

    step: StepInfo
    index: int | None
    """The timeline index of the item that shows the step (its assistant message, compaction or failure notice);
    ``None`` for an attempt no item shows (e.g. a first attempt a recovery replaced)."""
    start_ms: int
    """Since the run's start."""
    duration_ms: int | None
    """The request's latency, else the time until it settled or failed; ``None`` while it runs."""
    calls: tuple[CallSpan, ...]
    """The tool calls of the step's settled answer."""

    @property
    def ttft_ms(self) -> int | None:
        """Time to the first token (``None`` = not recorded)."""
        return self.step.ttft_ms

    @property
    def generation_ms(self) -> int | None:
        """First token to the end of the response (``None`` when either is unknown)."""
        if self.duration_ms is None or self.step.ttft_ms is None:
            return None
        return max(0, self.duration_ms - self.step.ttft_ms)


@dataclass(frozen=True, slots=True)
class RunSpan:
    """One operation (a run of a prompt, or a compaction) and its requests."""

    operation_id: str
    title: str
    """The prompt's first line (``Compaction`` for a compaction)."""
    started_at: int
    """Epoch ms of its first request: the run's zero."""
    duration_ms: int
    """First request's start to the last known end of a request or call."""
    steps: tuple[StepSpan, ...]
    usage: Usage | None
    """The sum of the known usages; ``None`` when no request reported usage."""
    cost: Decimal | None
    """The sum of the known costs; ``None`` when none is known."""
    unknown_costs: int
    """Requests whose cost is unknown (not counted in :attr:`cost`)."""


TraceRow = RunSpan | StepSpan | CallSpan
"""A row of the flattened trace (:meth:`Trace.rows`)."""


@dataclass(frozen=True, slots=True)
class Trace:
    """The runs of one session, with totals."""

    session_id: str
    runs: tuple[RunSpan, ...]

    @property
    def usage(self) -> Usage | None:
        """Every known usage added up (``None`` when none is known)."""
        return _sum_usage(run.usage for run in self.runs)

    @property
    def cost(self) -> Decimal | None:
        """Every known cost added up (``None`` when none is known)."""
        known = [run.cost for run in self.runs if run.cost is not None]
        return sum(known, Decimal(0)) if known else None

    @property
    def unknown_costs(self) -> int:
        """Requests whose cost is unknown."""
        return sum(run.unknown_costs for run in self.runs)

    @property
    def duration_ms(self) -> int:
        """The runs' durations added up (the time the agent worked, not the time between runs)."""
        return sum(run.duration_ms for run in self.runs)

    def steps(self) -> list[StepSpan]:
        """Every request of every run, in order."""
        return [step for run in self.runs for step in run.steps]

    def rows(self) -> list[TraceRow]:
        """Runs, each followed by its steps, each followed by its calls: the waterfall's rows."""
        rows: list[TraceRow] = []
        for run in self.runs:
            rows.append(run)
            for step in run.steps:
                rows.append(step)
                rows.extend(step.calls)
        return rows


def _sum_usage(usages: Any) -> Usage | None:
    total: Usage | None = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    return total


def _step_duration(step: StepInfo) -> int | None:
    if step.latency_ms is not None:
        return step.latency_ms
    if step.finished_at is not None:
        return max(0, step.finished_at - step.started_at)
    return None


def build_trace(timeline: Timeline) -> Trace:
    """The trace of ``timeline`` as it is now (linear in its size)."""
    shown: dict[str, int] = {}
    """attempt id → index of the first item that shows it."""
    calls: dict[str, list[int]] = {}
    """step id → indexes of its tool calls."""
    prompts: list[tuple[int, str]] = []
    items = timeline.items
    for index, item in enumerate(items):
        if isinstance(item, ToolItem):
            calls.setdefault(item.step_id, []).append(index)
        elif isinstance(item, UserItem):
            prompts.append((item.timestamp, item.text))
        elif isinstance(item, AssistantItem | CompactionItem | NoticeItem) and item.step is not None:
            shown.setdefault(item.step.attempt_id, index)
    by_operation: dict[str, list[StepInfo]] = {}
    for step in timeline.steps():
        by_operation.setdefault(step.operation_id, []).append(step)
    times = [timestamp for timestamp, _ in prompts]
    runs = []
    for operation_id, steps in by_operation.items():
        start = steps[0].started_at
        spans = []
        end = start
        for step in steps:
            duration = _step_duration(step)
            latest = timeline.step(step.step_id)
            own = calls.get(step.step_id, ()) if latest is not None and latest.attempt_id == step.attempt_id else ()
            call_spans = tuple(_call_span(items, index, start) for index in own)
            spans.append(StepSpan(step, shown.get(step.attempt_id), step.started_at - start, duration, call_spans))
            end = max(end, step.started_at + (duration or 0))
            for span in call_spans:
                if span.start_ms is not None:
                    end = max(end, start + span.start_ms + (span.duration_ms or 0))
        if steps[0].step_kind == "compaction":
            title = "Compaction"
        else:
            position = bisect.bisect_right(times, start) - 1
            title = prompts[position][1].strip().split("\n", 1)[0] if position >= 0 else ""
        costs = [step.cost for step in steps if step.cost is not None]
        runs.append(
            RunSpan(
                operation_id,
                title,
                start,
                end - start,
                tuple(spans),
                _sum_usage(step.usage for step in steps),
                sum(costs, Decimal(0)) if costs else None,
                len(steps) - len(costs),
            )
        )
    return Trace(timeline.session_id, tuple(runs))


def _call_span(items: Sequence[object], index: int, run_start: int) -> CallSpan:
    item = items[index]
    assert isinstance(item, ToolItem)
    moment = item.started_at if item.started_at is not None else item.finished_at
    return CallSpan(item, index, None if moment is None else moment - run_start, item.duration_ms)


# --- output for the command line ----------------------------------------------------------------------------


def _usage_json(usage: Usage | None) -> dict[str, int] | None:
    return None if usage is None else usage.as_dict()


def _call_json(span: CallSpan) -> dict[str, Any]:
    item = span.item
    outcome = item.outcome
    value: dict[str, Any] = {
        "id": item.call_id,
        "name": item.name,
        "outcome": outcome.kind if outcome is not None else item.status,
    }
    if outcome is not None and outcome.exit_code is not None:
        value["exitCode"] = outcome.exit_code
    if outcome is not None and outcome.reason is not None:
        value["reason"] = outcome.reason
    value["summary"] = item.summary
    value["durationMs"] = span.duration_ms
    diff = item.diff
    if diff is not None:
        value["diff"] = {"added": diff.added, "removed": diff.removed}
    return value


def trace_json(trace: Trace) -> dict[str, Any]:
    """The trace as ``session show --json`` prints it (``null`` where unknown; costs are exact decimal strings)."""
    steps = []
    for span in trace.steps():
        step = span.step
        steps.append(
            {
                "stepId": step.step_id,
                "attemptId": step.attempt_id,
                "attempt": step.attempt,
                "operationId": step.operation_id,
                "model": step.model,
                "status": step.status,
                "stopReason": step.stop_reason,
                "usage": _usage_json(step.usage),
                "cost": str(step.cost) if step.cost is not None else None,
                "latencyMs": step.latency_ms,
                "ttftMs": step.ttft_ms,
                "durationMs": span.duration_ms,
                "toolCalls": [_call_json(call) for call in span.calls],
            }
        )
    return {
        "sessionId": trace.session_id,
        "usage": _usage_json(trace.usage),
        "cost": str(trace.cost) if trace.cost is not None else None,
        "costUnknownRequests": trace.unknown_costs,
        "steps": steps,
    }


def duration_text(ms: int | None) -> str:
    """``850 ms``, ``1.2 s``, ``2 min 5 s``; ``?`` for unknown."""
    if ms is None:
        return "?"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} min {ms % 60_000 // 1000} s"


def _tokens(usage: Usage | None) -> str:
    if usage is None:
        return "usage unknown"
    return f"{usage.prompt:,} in / {usage.output:,} out"


def render_trace(trace: Trace) -> str:
    """The trace as indented text: runs, their steps (model, TTFT, duration, tokens, cost), their tool calls
    (outcome, summary, duration)."""
    cost = cost_text(trace.cost, trace.unknown_costs, unknown="cost unknown")
    lines = [
        f"session {trace.session_id} · {len(trace.runs)} run{'s' if len(trace.runs) != 1 else ''} · "
        f"{len(trace.steps())} requests · {duration_text(trace.duration_ms)} · {_tokens(trace.usage)} · {cost}"
    ]
    for number, run in enumerate(trace.runs, 1):
        lines.append(f"run {number}: {run.title or '(no prompt)'} · {duration_text(run.duration_ms)}")
        for span in run.steps:
            step = span.step
            state = step.stop_reason or step.status
            if step.error is not None:
                state += f" ({step.error.code}: {step.error.message})"
            cost = cost_text(step.cost, unknown="cost unknown")
            lines.append(
                f"  step {step.model} · {state} · ttft {duration_text(step.ttft_ms)} · "
                f"{duration_text(span.duration_ms)} · {_tokens(step.usage)} · {cost}"
            )
            for call in span.calls:
                outcome = call.item.outcome
                mark = outcome.label if outcome is not None else call.item.status
                timing = f" · {duration_text(call.duration_ms)}" if call.duration_ms is not None else ""
                lines.append(f"    [{mark}] {call.item.summary}{timing}")
    return "\n".join(lines)
