"""Closing an open operation without a provider: the way out of a session whose recovery cannot continue.

:func:`abandon_operation` does what ``Agent.abandon`` does, through the store and the planner's abort branch
(:func:`~tiny_agent_core.session.planner.plan_abort`), with no model request and no tool: it writes
``abortRequested`` unless one is already durable, then follows the plan until the session is idle — an open
attempt is closed (``stepFailed`` ``aborted``), a started tool gets its ``interrupted`` result, a call never
started gets its ``aborted`` result, and the operation finishes with ``operationFinished`` ``aborted``. Every fact
is validated by the store before it is written, exactly as a live run's are.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from tiny_agent_core.session import facts
from tiny_agent_core.session.planner import plan_abort
from tiny_agent_core.session.store import SessionStore

__all__ = ["Abandoned", "abandon_operation"]


class Abandoned(NamedTuple):
    """What :func:`abandon_operation` closed."""

    operation_id: str
    operation_kind: Literal["run", "compaction"]
    abort_requested: bool
    """True when this call wrote ``abortRequested`` (False: an abort was already durable)."""
    attempts_closed: int
    """Open model attempts closed as ``aborted`` (0 or 1)."""
    synthetic_results: int
    """``interrupted`` and ``aborted`` tool results written."""

    def as_json(self) -> dict[str, Any]:
        """The JSON object ``tiny-agent session abandon`` prints under ``closed``."""
        return {
            "operationId": self.operation_id,
            "operationKind": self.operation_kind,
            "abortRequested": self.abort_requested,
            "attemptsClosed": self.attempts_closed,
            "syntheticResults": self.synthetic_results,
        }


def abandon_operation(store: SessionStore) -> Abandoned | None:
    """Finish the open operation of ``store`` (open for writing) as aborted; ``None`` when it was idle.

    Raises what :meth:`SessionStore.append` raises; each transaction that was committed stays committed, and
    calling again continues from there.
    """
    operation = store.state.operation
    if operation.kind == "idle":
        return None
    requested = not operation.abort_requested
    if requested:
        store.append(
            facts.abort_requested(
                operation_id=operation.operation_id,
                operation_kind=operation.kind,
                phase="compact" if operation.kind == "compaction" else "model",
            )
        )
    closed = results = 0
    while (current := store.state.operation).kind != "idle":
        plan = plan_abort(store.state)
        step = current.step
        if plan["type"] == "closeAttempt":
            assert step is not None
            error = plan["error"]
            store.append(
                facts.step_failed(
                    operation_id=current.operation_id,
                    step_id=step.step_id,
                    attempt_id=step.attempt_id,
                    code=error["code"],
                    message=error["message"],
                )
            )
            closed += 1
        elif plan["type"] == "appendSynthetic":
            assert step is not None
            for item in plan["results"]:
                store.append(facts.planned_result(step.step_id, item))
                results += 1
        else:
            store.append(facts.operation_aborted(operation_id=current.operation_id, operation_kind=current.kind))
    return Abandoned(operation.operation_id, operation.kind, requested, closed, results)
