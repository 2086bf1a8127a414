"""Steps and their attempts: the ``stepAttempt`` and ``stepFailed`` records and the configuration snapshot.

A step is one model call of an operation; it has one attempt, or two when the first was interrupted (attempt
2 repeats attempt 1's context and configuration). Each attempt records the configuration it ran under, and
its canonical digest.
"""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.canonical_json import digest_text, fast_canonical_json
from tiny_agent_core.session.fact_types import StepAttempt, StepFailed
from tiny_agent_core.session.rules.context import FactContext, Reservations
from tiny_agent_core.session.state import IDLE, Attempt, CompactionOperation, RunOperation

__all__ = ["apply_step_attempt", "apply_step_failed"]

_STEP_ATTEMPT_KEYS = frozenset(
    {
        "type",
        "operationId",
        "stepId",
        "attemptId",
        "stepKind",
        "attempt",
        "contextThroughEntryId",
        "configurationSnapshot",
        "configurationDigest",
    }
)
_STEP_FAILED_KEYS = frozenset({"type", "operationId", "stepId", "attemptId", "error"})
_STEP_KINDS = frozenset({"assistant", "compaction"})
_SNAPSHOT_KEYS = frozenset(
    {"model", "systemPromptDigest", "tools", "adapterIdentity", "routingIdentity", "outputOptionsDigest"}
)
_SNAPSHOT_TOOL_KEYS = frozenset({"name", "definitionDigest"})


def apply_step_attempt(context: FactContext, record: dict[str, Any]) -> StepAttempt:
    """A ``stepAttempt`` record: the first attempt of a new step, or the retry of an interrupted one."""
    if not _STEP_ATTEMPT_KEYS.issuperset(record):
        context.fail("INVALID_FACT")
    found = context.open_operation(record.get("operationId"))
    number = record.get("attempt")
    if number != 1 or type(number) is not int:  # the usual first attempt needs no call
        number = context.count(number, minimum=1)
    reservations: Reservations = {}
    # Attempt 1 opens a new step (a new id); attempt 2 names the step it retries.
    step_id = context.reserve(record.get("stepId"), reservations) if number == 1 else context.uuid(record.get("stepId"))
    attempt_id = context.reserve(record.get("attemptId"), reservations)
    step_kind = record.get("stepKind")
    if type(step_kind) is not str or step_kind not in _STEP_KINDS or number > 2:
        context.fail("INVALID_FACT")
    if step_kind != ("assistant" if type(found) is RunOperation else "compaction"):
        context.fail("INVALID_TRANSITION")
    index = context.index
    context_id, context_entry = context.known(index.entries, record.get("contextThroughEntryId"))
    if context_entry is None:
        context.fail("INVALID_REFERENCE")
    if number == 1 and context_id != index.active_through:
        context.fail("INVALID_TRANSITION")
    claimed = record.get("configurationDigest")
    digest, snapshot, tool_names = _snapshot_digest(context, record.get("configurationSnapshot"), claimed)
    if claimed != digest:  # a malformed digest, or another snapshot's (the same code either way)
        context.fail("INVALID_FACT")
    prior = index.steps.get(step_id)
    journal = context.journal
    if number == 1:
        if prior:
            context.fail("INVALID_TRANSITION")
        _check_previous_step_done(context, found)
    else:
        first = _interrupted_first_attempt(context, prior, found, step_kind, context_id, digest)
        journal.assign(first, "closed", True)
    attempt = Attempt(
        found.operation_id, step_id, attempt_id, number, step_kind, context_id, snapshot, digest, tool_names
    )
    context.commit_reservations(reservations)
    index.attempts[attempt_id] = attempt  # grow-only (SessionState.grow_only_parts)
    if prior is None:
        index.steps[step_id] = [attempt]  # grow-only too
    else:
        journal.append(prior, attempt)
    journal.assign(found, "latest_step_id", step_id)
    operation = context.state.operation
    if operation is not IDLE:
        journal.assign(operation, "step", attempt)
    return StepAttempt(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        found.operation_id,
        step_id,
        attempt_id,
        number,
        step_kind,
        context_id,
        snapshot,
        digest,
    )


def _check_previous_step_done(context: FactContext, found: RunOperation | CompactionOperation) -> None:
    """A new step may follow only a settled run step that asked for tools, once every tool has its result."""
    operation = context.state.operation
    active = None if operation is IDLE else operation.step  # type: ignore[union-attr]
    if active is None:
        return
    if active.status != "settled":
        context.fail("INVALID_TRANSITION")
    settled = context.index.entries.get(active.settled_entry_id) if active.settled_entry_id is not None else None
    if (
        type(found) is not RunOperation
        or settled is None
        or settled.stop_reason != "toolUse"
        or type(operation) is not RunOperation
        or operation.pending_tools > 0
    ):
        context.fail("INVALID_TRANSITION")


def _interrupted_first_attempt(
    context: FactContext,
    prior: list[Attempt] | None,
    found: RunOperation | CompactionOperation,
    step_kind: str,
    context_id: str,
    digest: str,
) -> Attempt:
    """The open attempt 1 that attempt 2 retries, with the same kind, operation, context and configuration."""
    first = prior[0] if prior else None
    if (
        first is None
        or len(prior) != 1  # type: ignore[arg-type]
        or first.attempt != 1
        or first.closed
        or first.failed
        or first.step_kind != step_kind
        or first.operation_id != found.operation_id
        or first.context_through_entry_id != context_id
        or first.configuration_digest != digest
    ):
        context.fail("INVALID_TRANSITION")
    return first


def apply_step_failed(context: FactContext, record: dict[str, Any]) -> StepFailed:
    """A ``stepFailed`` record: an open attempt of the operation ended with a provider error."""
    context.only_keys(record, _STEP_FAILED_KEYS)
    found = context.open_operation(record.get("operationId"))
    _, attempt = context.known(context.index.attempts, record.get("attemptId"))
    code, message = context.check_error(record.get("error"))
    if (
        attempt is None
        or attempt.operation_id != found.operation_id
        or attempt.step_id != record.get("stepId")
        or attempt.closed
    ):
        context.fail("INVALID_REFERENCE")
    journal = context.journal
    journal.assign(attempt, "closed", True)
    journal.assign(attempt, "failed", True)
    operation = context.state.operation
    if operation is not IDLE and operation.step is attempt:  # type: ignore[union-attr]
        journal.assign(attempt, "status", "failed")
    return StepFailed(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        found.operation_id,
        attempt.step_id,
        attempt.attempt_id,
        code,
        message,
    )


def _check_snapshot(context: FactContext, value: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A ``configurationSnapshot``: model, digests, adapter and routing identities, uniquely named tools; returns
    it and its tools' names."""
    snapshot = context.object(value)
    context.only_keys(snapshot, _SNAPSHOT_KEYS)
    context.string(snapshot.get("model"))
    context.digest(snapshot.get("systemPromptDigest"))
    context.digest(snapshot.get("outputOptionsDigest"))
    tools = snapshot.get("tools")
    if type(tools) is not list:
        context.fail("INVALID_FACT")
    names = set()
    for raw in tools:
        tool = context.object(raw)
        context.only_keys(tool, _SNAPSHOT_TOOL_KEYS)
        name = context.string(tool.get("name"))
        if name in names:
            context.fail("INVALID_FACT")
        names.add(name)
        context.digest(tool.get("definitionDigest"))
    context.string(snapshot.get("adapterIdentity"))
    context.string(snapshot.get("routingIdentity"))
    return snapshot, frozenset(names)


_SNAPSHOT_CACHE: dict[str, tuple[str, dict[str, Any], frozenset[str]]] = {}
"""Configuration snapshots already validated, by their canonical digest (a run repeats one snapshot per step)."""


def _snapshot_digest(context: FactContext, snapshot: Any, claimed: Any) -> tuple[str, dict[str, Any], frozenset[str]]:
    """Validate a ``configurationSnapshot`` (``INVALID_FACT``); return its canonical digest, a shared copy and its
    tools' names.

    Memoized: when ``claimed`` (the record's ``configurationDigest``) is the digest of a snapshot validated before
    and ``snapshot`` equals that snapshot, it is the same JSON (a validated snapshot holds only strings, lists and
    objects, which compare equal only to the same JSON), so its digest is the cached one; equal snapshots share
    one object in the state.
    """
    cached = _SNAPSHOT_CACHE.get(claimed) if type(claimed) is str else None
    if cached is not None and cached[1] == snapshot:
        return cached
    checked, tool_names = _check_snapshot(context, snapshot)
    result = (digest_text(fast_canonical_json(checked, checked=True)), checked, tool_names)
    if len(_SNAPSHOT_CACHE) >= 256:
        _SNAPSHOT_CACHE.clear()
    _SNAPSHOT_CACHE[result[0]] = result
    return result
