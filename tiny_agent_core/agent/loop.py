"""The agent: a streamed run loop that writes exactly the reference's transactions (notes §5.13, §7).

One :class:`Agent` drives one open session. Every operation — a live run, a recovery after a crash, the
reconciliation after Esc, a compaction — is the same loop: ask the pure recovery planner (notes §5.11) what comes
next for the durable state, do it, commit it, repeat until the session is idle. This module holds that lifecycle
and the dispatch between the steps; the steps live beside it:

- :mod:`~tiny_agent_core.agent.model_step` — one model step (attempt, request, the facts of its outcome); the
  request itself, the learned dialect and the server's conversation state in :mod:`~tiny_agent_core.agent.streaming`;
- :mod:`~tiny_agent_core.agent.tool_step` — one tool call (approval, execution, masking, the persisted result);
- :mod:`~tiny_agent_core.agent.requests` — the price and ledger record of every physical request;
- :mod:`~tiny_agent_core.agent.inflight` — the one awaited piece of work and its cancellation.

The live path differs from recovery only where the reference's live loop does: a provider failure finishes a live
operation in the failure's own transaction (recovery leaves it to the planner), and an invalid compaction summary
fails a live compaction. A run that would start more than ``max_steps`` model steps fails with ``step_limit`` (a
looping model cannot run for ever); an attempt budget the planner reports exhausted fails the run.

Cancel (:meth:`Agent.abort`) makes ``abortRequested`` durable first, then cancels the in-flight model stream or
tool; a result that arrives after that is discarded (the reference's race rule) and the planner's abort branch
closes the attempt, writes the ``interrupted``/``aborted`` synthetic results and finishes the operation.

Nothing here blocks the event loop for long: appends are a write + fsync of one line, and the model stream and
tools are awaited. Events for a view are emitted after the fact they describe is durable.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from tiny_agent_core.agent.compaction import COMPACTION_PROMPT, compaction_cut
from tiny_agent_core.agent.context import Configuration, configuration_differences, current_configuration
from tiny_agent_core.agent.events import AgentEvent, EventSink, RunFinished, RunStarted, ToolFinished
from tiny_agent_core.agent.inflight import InFlight, Phase
from tiny_agent_core.agent.model_step import ModelSteps, StepFailure
from tiny_agent_core.agent.requests import RequestRecord, RequestRecorder
from tiny_agent_core.agent.streaming import Streamer
from tiny_agent_core.agent.tool_step import ToolSteps
from tiny_agent_core.errors import (
    AgentBusyError,
    ProviderError,
    RecoveryBlockedError,
    StepLimitError,
    TinyAgentError,
)
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.redaction import Redactor, environment_secrets
from tiny_agent_core.session import facts
from tiny_agent_core.session.planner import plan_recovery
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import ApprovalPolicy, Approver
from tiny_agent_core.tools.base import Tool, tool_secrets
from tiny_agent_core.tools.registry import ToolSet

__all__ = [
    "DEFAULT_MAX_STEPS",
    "STEP_LIMIT",
    "Agent",
    "RequestRecord",
    "RequestRecorder",
    "RunResult",
    "check_prompt",
]

_log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 200
"""Model steps one run may start before it fails with ``step_limit`` (a real task stays far below it)."""

STEP_LIMIT = StepLimitError.kind
"""The error code of a run that reached its step limit."""


@dataclass(frozen=True)
class RunResult:
    """How an operation ended."""

    outcome: Literal["completed", "aborted", "failed"]
    kind: Literal["run", "compaction"] = "run"
    """Which operation ended."""
    answer: str | None = None
    """The final assistant text of a completed run."""
    error: TinyAgentError | None = None
    """The provider error (or other failure) of a failed run."""


def check_prompt(prompt: str) -> None:
    """Raise ``ValueError`` (its message for the user) when ``prompt`` cannot be run: it is empty, or holds text a
    session file cannot hold (a lone surrogate)."""
    if not prompt.strip():
        raise ValueError("The prompt is empty.")
    if facts.make_persistable(prompt)[1]:
        raise ValueError("The prompt contains text that is not valid Unicode (a lone surrogate); retype it.")


class Agent:
    """Runs prompts in one open session; see the module docstring for the rules.

    ``tools`` are offered to the model in order; ``policy`` and ``approver`` decide which calls run.
    ``on_event`` receives :mod:`~tiny_agent_core.agent.events` in order; ``record_request`` receives every
    physical request for the ledger; ``price_overrides`` are the user's prices (see :mod:`tiny_agent_core.pricing`);
    ``max_steps`` bounds the model steps of one run (``None``: unbounded).
    """

    def __init__(
        self,
        *,
        store: SessionStore,
        client: ProviderClient,
        profile: ProviderProfile,
        model: str,
        workspace: Path,
        tools: Sequence[Tool],
        policy: ApprovalPolicy,
        approver: Approver,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
        on_event: EventSink | None = None,
        record_request: RequestRecorder | None = None,
        price_overrides: Overrides | None = None,
        max_steps: int | None = DEFAULT_MAX_STEPS,
    ) -> None:
        if max_steps is not None and max_steps < 1:
            raise ValueError("max_steps must be a positive number of steps")
        self.store = store
        self.workspace = workspace
        self.tools = ToolSet(tools)
        self.policy = policy
        self.approver = approver
        self._on_event = on_event
        self._record_request = record_request
        self.max_steps = max_steps
        self._busy = False
        self._last_outcome: RunResult | None = None
        self._operation_kind: Literal["run", "compaction"] = "run"
        self._inflight = InFlight()
        redact = Redactor([api_key, *environment_secrets(), *tool_secrets(self.tools.values())])
        self._streamer = Streamer(
            client=client, profile=profile, model=model, api_key=api_key, timeouts=timeouts, emit=self._emit
        )
        self._model_steps = ModelSteps(
            store=store,
            streamer=self._streamer,
            inflight=self._inflight,
            redact=redact,
            emit=self._emit,
            price_overrides=price_overrides,
        )
        self._tool_steps = ToolSteps(store=store, inflight=self._inflight, redact=redact, emit=self._emit)

    # -- public API -------------------------------------------------------------------------------------------

    @property
    def client(self) -> ProviderClient:
        """The provider client the model requests go through."""
        return self._streamer.client

    @client.setter
    def client(self, client: ProviderClient) -> None:
        self._streamer.client = client

    @property
    def profile(self) -> ProviderProfile:
        """The provider profile, with the dialect the server taught so far (see :mod:`.streaming`)."""
        return self._streamer.profile

    @profile.setter
    def profile(self, profile: ProviderProfile) -> None:
        self._streamer.profile = profile

    @property
    def model(self) -> str:
        """The model the next request asks for."""
        return self._streamer.model

    @model.setter
    def model(self, model: str) -> None:
        self._streamer.model = model

    @property
    def busy(self) -> bool:
        """True while an operation runs in this agent."""
        return self._busy

    async def run(self, prompt: str) -> RunResult:
        """Run one prompt to completion (or failure, or abort). The session must be idle; ``prompt`` must pass
        :func:`check_prompt`."""
        check_prompt(prompt)
        self._enter()
        try:
            if self.store.state.operation.kind != "idle":
                raise AgentBusyError("The session has an unfinished operation; recover it before a new prompt.")
            operation_id, entry_id = facts.new_id(), facts.new_id()
            self.store.append(
                [
                    facts.user_entry(prompt, entry_id=entry_id),
                    facts.run_started(operation_id=operation_id, input_entry_id=entry_id),
                ]
            )
            self._emit(RunStarted(self.store.session_id, operation_id, prompt))
            return await self._drive(live=True)
        finally:
            self._leave()

    async def resume(self) -> RunResult | None:
        """Finish an operation left open by a crash, following the planner; ``None`` when already idle.

        Raises :class:`~tiny_agent_core.errors.RecoveryBlockedError` when the plan is blocked; its
        ``reason`` says why and the caller offers the two ways out (restore the configuration, or
        :meth:`abandon`).
        """
        if self.store.state.operation.kind == "idle":
            return None
        self._enter()
        try:
            return await self._drive(live=False)
        finally:
            self._leave()

    async def abandon(self) -> RunResult:
        """The explicit way out of a blocked recovery: abort the open operation durably."""
        operation = self.store.state.operation
        if operation.kind == "idle":
            return RunResult("aborted")
        self._enter()
        try:
            if not operation.abort_requested:
                self.store.append(
                    facts.abort_requested(
                        operation_id=operation.operation_id,
                        operation_kind=operation.kind,
                        phase="compact" if operation.kind == "compaction" else "model",
                    )
                )
            return await self._drive(live=False)
        finally:
            self._leave()

    async def compact(self) -> RunResult:
        """Compact the active context (``/compact``): summarize all but the last turns into one message.

        A completed compaction's ``answer`` says how many messages were compacted and kept.
        """
        self._enter()
        try:
            state = self.store.state
            if state.operation.kind != "idle":
                raise AgentBusyError("Another session operation is active.")
            cut = compaction_cut(state.active_context)
            if cut is None:
                return RunResult("completed", "compaction", "Nothing to compact.")
            source = state.message_entries()
            ids = [entry_id for entry_id, _ in source]
            self.store.append(
                facts.compaction_started(
                    operation_id=facts.new_id(),
                    input_through_entry_id=ids[-1],
                    result_entry_id=facts.new_id(),
                    compacted_entry_ids=ids[: -cut.retained],
                    retained_entry_ids=ids[-cut.retained :],
                    source_digest=facts.source_digest(source),
                )
            )
            result = await self._drive(live=True)
            if result.outcome == "completed":
                compacted = len(source) - cut.retained
                message = f"Compacted {compacted} messages (kept last {cut.retained})."
                return RunResult("completed", "compaction", message)
            return result
        finally:
            self._leave()

    async def abort(self) -> bool:
        """Cancel the running operation: persist ``abortRequested`` first, then cancel the work in flight.

        Returns False when there is nothing to abort (idle, or already aborting).
        """
        operation = self.store.state.operation
        if not self._busy or operation.kind == "idle" or operation.abort_requested:
            return False
        phase: Phase = "compact" if operation.kind == "compaction" else self._inflight.phase
        self.store.append(
            facts.abort_requested(
                operation_id=operation.operation_id,
                operation_kind=operation.kind,
                phase=phase,
                tool_call_id=self._inflight.call_id if phase == "tool" else None,
            )
        )
        self._inflight.cancel()
        return True

    # -- the loop ---------------------------------------------------------------------------------------------

    def _enter(self) -> None:
        if self._busy:
            raise AgentBusyError("The agent is already running an operation in this session.")
        self._busy = True
        self._inflight.reset()
        self._last_outcome = None
        self._model_steps.start_operation()

    def _leave(self) -> None:
        self._busy = False

    def _configuration(self, kind: str) -> Configuration:
        if kind == "compaction":
            return Configuration.build(
                workspace=self.workspace,
                provider=self.profile.id,
                model=self.model,
                tools=[],
                system_prompt=COMPACTION_PROMPT,
            )
        return Configuration.build(
            workspace=self.workspace, provider=self.profile.id, model=self.model, tools=list(self.tools.values())
        )

    async def _drive(self, *, live: bool) -> RunResult:
        kind = self.store.state.operation.kind
        self._operation_kind = "compaction" if kind == "compaction" else "run"
        configuration = self._configuration(kind)
        current = current_configuration(configuration, self.workspace, list(self.tools.values()))
        steps = 0
        while True:
            state = self.store.state
            operation = state.operation
            if operation.kind == "idle":
                return self._finished_result()
            plan = plan_recovery(state, current)
            kind = plan["type"]
            if kind == "finish":
                self._finish(plan)
            elif kind == "closeAttempt":
                self._close_attempt()
            elif kind == "appendSynthetic":
                self._append_synthetic(plan["results"])
            elif kind == "startStep":
                steps = await self._start_step(plan, configuration, steps, live=live)
            elif kind == "startTool":
                await self._tool_steps.run(plan, self.tools, self.policy, self.approver)
            elif kind == "blocked":
                self._blocked(plan["reason"], configuration)
            else:  # pragma: no cover - the planner's plan union is closed
                raise AssertionError(f"unknown plan {kind}")

    async def _start_step(
        self, plan: Mapping[str, Any], configuration: Configuration, steps: int, *, live: bool
    ) -> int:
        """Run the planned model step, unless a new assistant step would pass ``max_steps`` (then the run fails
        with ``step_limit``); returns the operation's count of new assistant steps."""
        if plan.get("stepId") is None and plan["stepKind"] == "assistant":
            steps += 1
            if self.max_steps is not None and steps > self.max_steps:
                self._fail(STEP_LIMIT, self._step_limit_message(), StepLimitError(self._step_limit_message()))
                return steps
        await self._model_step(plan, configuration, live=live)
        return steps

    async def _model_step(self, plan: Mapping[str, Any], configuration: Configuration, *, live: bool) -> None:
        """One model step with the agent's current tools and ledger hook (see :mod:`.model_step`)."""
        await self._model_steps.run(
            plan,
            configuration,
            self.tools.definitions() or None,
            self._record_request,
            self._step_failure,
            live=live,
        )

    def _close_attempt(self) -> None:
        """Close the attempt an abort interrupted (the planner's ``closeAttempt``)."""
        operation = self.store.state.operation
        assert operation.kind != "idle"
        step = operation.step
        assert step is not None
        self.store.append(
            facts.step_failed(
                operation_id=operation.operation_id,
                step_id=step.step_id,
                attempt_id=step.attempt_id,
                code="aborted",
                message="Operation aborted",
            )
        )

    def _blocked(self, reason: str, configuration: Configuration) -> None:
        """A run whose attempts are exhausted fails; any other blocked plan is the caller's to resolve."""
        if reason == "attempts_exhausted" and self.store.state.operation.kind == "run":
            self._fail("model_error", "provider request attempts exhausted")
        else:
            raise RecoveryBlockedError(reason, self._differences(reason, configuration))

    def _differences(self, reason: str, configuration: Configuration) -> list[str]:
        """What differs between the interrupted step's configuration snapshot and this agent's, one phrase each."""
        step = self.store.state.operation.step if self.store.state.operation.kind != "idle" else None
        if reason != "configuration_changed" or step is None:
            return []
        return configuration_differences(step.configuration_snapshot, configuration.snapshot)

    def _step_limit_message(self) -> str:
        return (
            f"The run reached its limit of {self.max_steps} model steps and was stopped. "
            'Send a new prompt (e.g. "continue") to go on, or raise the step limit.'
        )

    def _finished_result(self) -> RunResult:
        assert self._last_outcome is not None, "every path to idle concludes the operation"
        return self._last_outcome

    def _finish(self, plan: Mapping[str, Any]) -> None:
        operation = self.store.state.operation
        assert operation.kind != "idle"
        outcome = plan["outcome"]
        if outcome == "completed":
            self.store.append(
                facts.operation_completed(
                    operation_id=operation.operation_id,
                    final_entry_id=plan["finalEntryId"],
                    operation_kind=operation.kind,
                    completion=plan.get("completion"),
                )
            )
            answer = self._final_answer(plan["finalEntryId"])
            self._conclude(RunResult("completed", answer=answer), operation.operation_id)
        elif outcome == "aborted":
            self.store.append(
                facts.operation_aborted(operation_id=operation.operation_id, operation_kind=operation.kind)
            )
            self._conclude(RunResult("aborted"), operation.operation_id)
        else:
            error = plan["error"]
            self.store.append(
                facts.operation_failed(
                    operation_id=operation.operation_id,
                    code=error["code"],
                    message=error["message"],
                    operation_kind=operation.kind,
                )
            )
            earlier = self._last_outcome.error if self._last_outcome is not None else None
            failure = earlier if earlier is not None else TinyAgentError(error["message"])
            self._conclude(RunResult("failed", error=failure), operation.operation_id)

    def _final_answer(self, entry_id: str) -> str | None:
        message = self.store.state.entry_message(entry_id)
        content = message.get("content") if message else None
        if isinstance(content, str) and content.strip():
            return content.strip()
        return "Model output was truncated." if message and message.get("tool_calls") else None

    def _conclude(self, result: RunResult, operation_id: str) -> None:
        result = replace(result, kind=self._operation_kind)
        self._last_outcome = result
        error = result.error
        self._emit(
            RunFinished(
                operation_id,
                result.outcome,
                answer=result.answer,
                error=str(error) if error else None,
                error_kind=error.kind if isinstance(error, ProviderError | StepLimitError) else None,
                retry_after=getattr(error, "retry_after", None),
                usage=self.store.state.usage,
            )
        )

    def _append_synthetic(self, results: Sequence[Mapping[str, Any]]) -> None:
        operation = self.store.state.operation
        assert operation.kind != "idle"
        step = operation.step
        assert step is not None
        for item in results:
            self.store.append(facts.planned_result(step.step_id, item))
            self._emit(ToolFinished(item["toolCallId"], item["toolName"], item["content"], item["reason"], None))

    def _fail(self, code: str, message: str, error: TinyAgentError | None = None) -> None:
        operation = self.store.state.operation
        assert operation.kind != "idle"
        self.store.append(
            facts.operation_failed(
                operation_id=operation.operation_id, code=code, message=message, operation_kind=operation.kind
            )
        )
        self._conclude(RunResult("failed", error=error or TinyAgentError(message)), operation.operation_id)

    def _step_failure(self, failure: StepFailure) -> None:
        """Answer a model step's failure: fail the operation, conclude the one the step failed, or keep the error
        for the planner's finish."""
        if failure.operation == "fail":
            self._fail(failure.code, failure.message, failure.error)
        elif failure.operation == "failed":
            self._conclude(RunResult("failed", error=failure.error), failure.operation_id)
        else:
            self._last_outcome = RunResult("failed", error=failure.error)

    # -- events -----------------------------------------------------------------------------------------------

    def _emit(self, event: AgentEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a broken view must never break a run
            _log.warning("event sink failed on %s", type(event).__name__, exc_info=True)
