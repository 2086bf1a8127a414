"""The agent: a streamed run loop that writes exactly the reference's transactions (notes §5.13, §7).

One :class:`Agent` drives one open session. Every operation — a live run, a recovery after a crash, the
reconciliation after Esc — is the same loop: ask the pure recovery planner (notes §5.11) what comes next for the
durable state, do it, commit it, repeat until the session is idle. The live path differs from recovery only where
the reference's live loop does:

- a provider failure is committed as one transaction ``[usage?, stepFailed, operationFinished failed]`` with the
  provider's own message;
- a blank final answer fails with ``empty_response``, and ``length`` without calls keeps the text and fails (the
  Python reference's choice, so a truncated answer is not lost);
- tool calls pass the approval policy first; a denied call is a started tool with an error result;
- a run that would start more than ``max_steps`` model steps fails with ``step_limit`` (a looping model cannot run
  for ever).

Local models: when the profile knows the model's context window, a local server gets ``max_tokens`` so the answer
fits after the prompt (:func:`~tiny_agent_core.agent.context.answer_room`; never for cloud models, whose own
defaults fit). When a server refuses a form of the request and accepts it repaired, the agent keeps the learned
dialect for the rest of its life and emits :class:`~tiny_agent_core.agent.events.DialectLearned`. When tools were
offered but the server's prompt-token count shows they never reached the model (and no call was ever made),
:class:`~tiny_agent_core.agent.events.ToolsDropped` says so once per run.

Tool output is masked (:mod:`~tiny_agent_core.redaction`: the provider key, secret-named environment values and
the secrets a tool holds, such as an MCP server's token — :class:`~tiny_agent_core.tools.base.HoldsSecrets`)
and made persistable (a lone surrogate becomes U+FFFD, noted in the result) before it is committed, shown or sent.

Cancel (:meth:`Agent.abort`) makes ``abortRequested`` durable first, then cancels the in-flight model stream or
tool; a result that arrives after that is discarded (the reference's race rule) and the planner's abort branch
closes the attempt, writes the ``interrupted``/``aborted`` synthetic results and finishes the operation.

Nothing here blocks the event loop for long: appends are a write + fsync of one line, and the model stream and
tools are awaited. Events for a view are emitted after the fact they describe is durable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from tiny_agent_core.agent.compaction import COMPACTION_PROMPT, CompactionCut, compaction_cut, compaction_messages
from tiny_agent_core.agent.context import (
    Configuration,
    PromptMeasure,
    answer_room,
    current_configuration,
    prompt_floor,
    request_bytes,
)
from tiny_agent_core.agent.events import (
    AgentEvent,
    ApprovalNeeded,
    DialectLearned,
    EventSink,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolCallDelta,
    ToolCallProposed,
    ToolFinished,
    ToolOutput,
    ToolsDropped,
    ToolStarted,
)
from tiny_agent_core.errors import (
    AgentBusyError,
    EmptyResponseError,
    ProviderError,
    ProviderHTTPError,
    RecoveryBlockedError,
    StepLimitError,
    TinyAgentError,
)
from tiny_agent_core.pricing import Cost, Overrides, price_request
from tiny_agent_core.providers.capture import RawCapture
from tiny_agent_core.providers.client import ChatCompleted, ChatStream, ProviderClient
from tiny_agent_core.providers.openai_dialect import DIALECT_REPAIRS
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.results import ConversationState, NormalizedResponse, StreamedText, StreamedToolCall
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.redaction import Redactor, environment_secrets
from tiny_agent_core.session import facts
from tiny_agent_core.session.planner import plan_recovery
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalPolicy, ApprovalRequest, Approver
from tiny_agent_core.tools.base import TOOL_OUTPUT, Tool, ToolAborted, ToolOutcome, tool_secrets
from tiny_agent_core.tools.registry import ToolSet, replay_declaration
from tiny_agent_core.usage import Usage

_log = logging.getLogger(__name__)

T = TypeVar("T")

Phase = Literal["model", "tool", "compact"]

DEFAULT_MAX_STEPS = 200
"""Model steps one run may start before it fails with ``step_limit`` (a real task stays far below it)."""

STEP_LIMIT = StepLimitError.kind
"""The error code of a run that reached its step limit."""


class _Aborted(Exception):
    """The in-flight work was cancelled by :meth:`Agent.abort` (internal control flow)."""


class _Announcing:
    """The agent's approver, wrapped so that a view hears :class:`ApprovalNeeded` when (and only when) the policy
    actually asks, with the request's preview."""

    def __init__(self, agent: Agent, call_id: str) -> None:
        self._agent = agent
        self._call_id = call_id

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self._agent._emit(
            ApprovalNeeded(self._call_id, request.tool_name, dict(request.arguments), request.preview.text)
        )
        return await self._agent.approver.ask(request)


class _Request:
    """Identity and start time of one physical model request."""

    __slots__ = ("attempt", "attempt_id", "operation_id", "started", "started_at_ms", "step_id", "step_kind")

    def __init__(self, operation_id: str, step_id: str, attempt_id: str, attempt: int, step_kind: str) -> None:
        self.operation_id = operation_id
        self.step_id = step_id
        self.attempt_id = attempt_id
        self.attempt = attempt
        self.step_kind = step_kind
        self.started = time.monotonic()
        self.started_at_ms = int(time.time() * 1000)


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


@dataclass(frozen=True)
class RequestRecord:
    """What the agent learned about one physical model request, for the ledger (apart from the session file).

    Emitted once the request's outcome is known: ``outcome`` is ``settled`` (an answer was committed) or
    ``failed`` (``error_code`` ``model_error`` or ``aborted``).
    """

    session_id: str
    operation_id: str
    step_id: str
    attempt_id: str
    attempt: int
    step_kind: str
    provider: str
    model: str
    started_at_ms: int
    finished_at_ms: int
    outcome: Literal["settled", "failed"]
    stop_reason: str | None
    error_code: str | None
    usage: Usage | None
    cost: Cost
    response: NormalizedResponse | None
    error: ProviderError | None
    capture: RawCapture | None
    latency_ms: float
    ttft_ms: float | None


RequestRecorder = Callable[[RequestRecord], None]
"""Receives each physical request after its outcome is known (e.g. to write the SQLite ledger)."""


@dataclass(frozen=True, slots=True)
class _ServerState:
    """What a server-state profile's server holds (:class:`ConversationState`), the canonical messages it covers
    (after the system prompt), and the model that answered; kept in memory only, so a new agent starts afresh."""

    state: ConversationState
    messages: list[dict[str, Any]]
    model: str


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
        self.client = client
        self.profile = profile
        self.model = model
        self.workspace = workspace
        self.tools = ToolSet(tools)
        self.policy = policy
        self.approver = approver
        self._api_key = api_key
        self._timeouts = timeouts
        self._on_event = on_event
        self._record_request = record_request
        self._price_overrides = price_overrides
        self.max_steps = max_steps
        self._redact = Redactor([api_key, *environment_secrets(), *tool_secrets(self.tools.values())])
        self._busy = False
        self._cancel = asyncio.Event()
        self._work: asyncio.Task[Any] | None = None
        self._phase: Phase = "model"
        self._phase_call_id: str | None = None
        self._last_outcome: RunResult | None = None
        self._capture: RawCapture | None = None
        self._server_state: _ServerState | None = None
        self._tools_called = False
        self._tools_dropped = False
        self._last_prompt: PromptMeasure | None = None
        """The last answered request's size and prompt tokens, anchoring the ``max_tokens`` estimate."""

    # -- public API -------------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while an operation runs in this agent."""
        return self._busy

    async def run(self, prompt: str) -> RunResult:
        """Run one prompt to completion (or failure, or abort). The session must be idle."""
        if not prompt.strip():
            raise ValueError("The prompt is empty.")
        if facts.make_persistable(prompt)[1]:
            raise ValueError("The prompt contains text that is not valid Unicode (a lone surrogate); retype it.")
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
        phase: Phase = "compact" if operation.kind == "compaction" else self._phase
        self.store.append(
            facts.abort_requested(
                operation_id=operation.operation_id,
                operation_kind=operation.kind,
                phase=phase,
                tool_call_id=self._phase_call_id if phase == "tool" else None,
            )
        )
        self._cancel.set()
        if self._work is not None and not self._work.done():
            self._work.cancel()
        return True

    # -- the loop ---------------------------------------------------------------------------------------------

    def _enter(self) -> None:
        if self._busy:
            raise AgentBusyError("The agent is already running an operation in this session.")
        self._busy = True
        self._cancel = asyncio.Event()
        self._last_outcome = None
        self._tools_called = self._tools_dropped = False

    def _leave(self) -> None:
        self._busy = False
        self._work = None

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
        self._operation_kind: Literal["run", "compaction"] = "compaction" if kind == "compaction" else "run"
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
            elif kind == "appendSynthetic":
                self._append_synthetic(plan["results"])
            elif kind == "startStep":
                if plan.get("stepId") is None and plan["stepKind"] == "assistant":
                    steps += 1
                    if self.max_steps is not None and steps > self.max_steps:
                        self._fail(STEP_LIMIT, self._step_limit_message(), StepLimitError(self._step_limit_message()))
                        continue
                await self._model_step(
                    configuration,
                    plan["stepKind"],
                    plan.get("stepId"),
                    plan["attempt"],
                    plan["contextThroughEntryId"],
                    live=live,
                )
            elif kind == "startTool":
                await self._tool_step(plan)
            elif kind == "blocked":
                reason = plan["reason"]
                if reason == "attempts_exhausted" and operation.kind == "run":
                    self._fail("model_error", "provider request attempts exhausted")
                else:
                    raise RecoveryBlockedError(reason, self._differences(reason, configuration))
            else:  # pragma: no cover - the planner's plan union is closed
                raise AssertionError(f"unknown plan {kind}")

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

    # -- model steps ------------------------------------------------------------------------------------------

    async def _cancellable(self, phase: Phase, work: Awaitable[T], call_id: str | None = None) -> T:
        """Await ``work`` as a task that :meth:`abort` can cancel; raise :class:`_Aborted` if it was."""
        if self._cancel.is_set():
            if asyncio.iscoroutine(work):
                work.close()
            raise _Aborted
        self._phase, self._phase_call_id = phase, call_id
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._work = task
        try:
            return await task
        except asyncio.CancelledError:
            if self._cancel.is_set() and task.cancelled():
                raise _Aborted from None
            task.cancel()
            raise
        finally:
            self._work = None
            self._phase, self._phase_call_id = "model", None

    async def _stream(
        self, messages: list[dict[str, Any]], step_id: str, tools: list[dict[str, Any]] | None, *, chained: bool
    ) -> ChatCompleted:
        window = self.profile.context_length
        room = None
        if window is not None and self.profile.is_local:
            room = answer_room(window, messages, tools, self._last_prompt)
        stream = self.client.stream_chat(
            self.profile,
            model=self.model,
            messages=messages,
            tools=tools,
            api_key=self._api_key,
            timeouts=self._timeouts,
            extra=None if room is None else {"max_tokens": room},
            state=self._held_state(messages, chained),
        )
        try:
            async with stream:
                async for event in stream:
                    if isinstance(event, ChatCompleted):
                        if chained:
                            self._keep_state(messages, event.response)
                        return event
                    if isinstance(event, StreamedText):
                        self._emit(TextDelta(step_id, event.text))
                    elif isinstance(event, StreamedToolCall):
                        self._emit(ToolCallDelta(step_id, event.index, event.name, event.arguments))
        finally:
            self._capture = stream.capture
            self._learn(stream)
        raise ProviderError("The provider stream ended without a result.")  # pragma: no cover - client guarantees

    def _held_state(self, messages: list[dict[str, Any]], chained: bool) -> ConversationState | None:
        """What the server still holds of ``messages`` (after the system prompt), for a profile that keeps server
        state: the previous response's, when the transcript it covered is unchanged and the model is the same."""
        held = self._server_state
        if not chained or held is None or held.model != self.model:
            return None
        covered = held.state.covered
        return held.state if messages[1 : 1 + covered] == held.messages else None

    def _keep_state(self, messages: list[dict[str, Any]], response: NormalizedResponse) -> None:
        """After an answer of a server-state profile: the server now holds the request's messages and the answer
        (under the response's id); the answer must be in the transcript as given for the state to be used."""
        if response.response_id is None:
            self._server_state = None
            return
        held = [*messages[1:], response.message.as_dict()]
        self._server_state = _ServerState(ConversationState(response.response_id, len(held)), held, self.model)

    def _learn(self, stream: ChatStream) -> None:
        """Keep a dialect the server taught during ``stream`` for the following requests, and say so."""
        old, new = self.profile.dialect, stream.dialect
        if new == old:
            return
        self.profile = replace(self.profile, dialect=new)
        changes = {f.name: getattr(new, f.name) for f in fields(new) if getattr(new, f.name) != getattr(old, f.name)}
        repairs = tuple(DIALECT_REPAIRS[name] for name in changes)
        _log.info("profile %s: the server needs %s", self.profile.id, ", ".join(repairs))
        self._emit(DialectLearned(self.profile.id, self.profile.base_url, changes, repairs))

    async def _model_step(
        self,
        configuration: Configuration,
        step_kind: Literal["assistant", "compaction"],
        step_id: str | None,
        attempt: Literal[1, 2],
        context: str,
        *,
        live: bool,
    ) -> None:
        state = self.store.state
        operation = state.operation
        assert operation.kind != "idle"
        step_id = step_id or facts.new_id()
        attempt_id = facts.new_id()
        self.store.append(
            facts.step_attempt(
                operation_id=operation.operation_id,
                step_id=step_id,
                attempt_id=attempt_id,
                step_kind=step_kind,
                attempt=attempt,
                context_through_entry_id=context,
                configuration_snapshot=configuration.snapshot,
            )
        )
        self._emit(StepStarted(step_id, attempt_id, attempt, self.model))
        self._capture = None  # never file a previous request's capture under this attempt
        cut = compaction_cut(state.active_context) if step_kind == "compaction" else None
        if cut is not None:
            messages, tools = compaction_messages(state.active_context, cut), None
        else:
            messages = [{"role": "system", "content": configuration.system_prompt}, *state.active_context]
            tools = self.tools.definitions() or None
        request = _Request(operation.operation_id, step_id, attempt_id, attempt, step_kind)
        try:
            completed = await self._cancellable(
                "compact" if cut is not None else "model",
                self._stream(messages, step_id, tools, chained=cut is None and self.profile.server_state),
            )
        except _Aborted:
            self._record(request, None, None, "aborted")
            return  # the planner closes the attempt (abort first)
        except ProviderError as error:
            self._commit_model_error(step_id, attempt_id, error, live=live)
            self._record(request, None, error, "model_error")
            return
        response = completed.response
        usage_facts = self._usage_facts(operation.operation_id, attempt_id, response.usage)
        if self._cancel.is_set():  # a late response loses the race with the abort: keep its usage only
            self.store.append([*usage_facts, self._step_failed(step_id, attempt_id, "aborted", "Operation aborted")])
            self._record(request, completed, None, "aborted")
            return
        if cut is not None:
            settled = self._settle_compaction(response, cut, step_id, attempt_id, usage_facts, live=live)
            self._record(request, completed, None, None if settled else "model_error")
            return
        entry_id = facts.new_id()
        self.store.append(
            [
                facts.assistant_entry(
                    response.message,
                    step_id=step_id,
                    attempt_id=attempt_id,
                    stop_reason=response.stop_reason,
                    entry_id=entry_id,
                ),
                *usage_facts,
            ]
        )
        cost = self._record(request, completed, None, None)
        self._step_finished(step_id, attempt_id, completed, cost)
        self._check_tools_reached(step_id, messages, tools, response)
        if response.usage is not None and self.profile.is_local:  # only answer_room (local servers) reads it
            self._last_prompt = PromptMeasure(request_bytes(messages, tools), response.usage.prompt)
        for index, call in enumerate(response.message.calls):
            self._emit(ToolCallProposed(step_id, index, call.id, call.function.name, call.function.arguments))
        if response.message.calls:
            return
        content = response.message.content or ""
        if response.stop_reason == "length":
            self._fail("model_error", "Model response was truncated by the output token limit.")
        elif not content.strip():
            message = f"Model returned an empty response (finish_reason: {response.stop_reason})."
            self._fail("empty_response", message, EmptyResponseError(message))

    def _check_tools_reached(
        self,
        step_id: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response: NormalizedResponse,
    ) -> None:
        """Emit :class:`ToolsDropped` once per run when the offered tools cannot have reached the model."""
        if response.message.calls:
            self._tools_called = True
        usage = response.usage
        if not tools or usage is None or self._tools_called or self._tools_dropped:
            return
        prompt = usage.input + usage.cache_read + usage.cache_write
        floor = prompt_floor(messages, tools)
        if prompt >= floor:
            return
        self._tools_dropped = True
        self._emit(
            ToolsDropped(
                step_id,
                prompt,
                floor,
                f"The server left the tools out of the prompt ({prompt} prompt tokens; the messages and tool "
                f"definitions need at least {floor}), so the model cannot call them. The server needs a chat "
                "template with tools (llama-server: --jinja and a tool-aware template; llama-cpp-python: a "
                'function-calling chat format, which this client enables with tool_choice "auto").',
            )
        )

    def _settle_compaction(
        self,
        response: NormalizedResponse,
        cut: CompactionCut,
        step_id: str,
        attempt_id: str,
        usage_facts: list[dict[str, Any]],
        *,
        live: bool,
    ) -> bool:
        """Commit the compaction entry, or the failure of an invalid summary; True when it settled."""
        operation = self.store.state.operation
        assert operation.kind == "compaction"
        summary = (response.message.content or "").strip()
        if response.stop_reason != "stop" or not summary:
            message = "Model returned an invalid compaction summary"
            failed = self._step_failed(step_id, attempt_id, "model_error", message)
            self.store.append([*usage_facts, failed])
            if live:
                self._fail("model_error", message)
            return False
        source = self.store.state.message_entries()
        self.store.append(
            [
                *usage_facts,
                facts.compaction_entry(
                    result_entry_id=operation.result_entry_id,
                    operation_id=operation.operation_id,
                    summary=summary,
                    compacted_through_entry_id=source[-cut.retained - 1][0],
                    retained_tail=source[-cut.retained :],
                ),
            ]
        )
        return True

    def _step_finished(self, step_id: str, attempt_id: str, completed: ChatCompleted, cost: Cost) -> None:
        response = completed.response
        timings = completed.capture.timings
        self._emit(
            StepFinished(
                step_id,
                attempt_id,
                response.message,
                response.stop_reason,
                response.usage,
                cost.amount,
                cost.source,
                response.repairs,
                response.dropped,
                timings.done_ms,
                timings.first_token_ms,
                outbound_repairs=response.outbound_repairs,
                streamed=completed.capture.stream,
                context_window=self.profile.context_length,
            )
        )

    def _step_failed(self, step_id: str, attempt_id: str, code: str, message: str) -> dict[str, Any]:
        operation = self.store.state.operation
        assert operation.kind != "idle"
        return facts.step_failed(
            operation_id=operation.operation_id, step_id=step_id, attempt_id=attempt_id, code=code, message=message
        )

    def _fail(self, code: str, message: str, error: TinyAgentError | None = None) -> None:
        operation = self.store.state.operation
        assert operation.kind != "idle"
        self.store.append(
            facts.operation_failed(
                operation_id=operation.operation_id, code=code, message=message, operation_kind=operation.kind
            )
        )
        self._conclude(RunResult("failed", error=error or TinyAgentError(message)), operation.operation_id)

    def _usage_facts(self, operation_id: str, attempt_id: str, usage: Usage | None) -> list[dict[str, Any]]:
        if usage is None:
            return []
        return [facts.attempt_usage(operation_id=operation_id, attempt_id=attempt_id, usage=usage)]

    def _commit_model_error(self, step_id: str, attempt_id: str, error: ProviderError, *, live: bool) -> None:
        """Live: ``[usage?, stepFailed, operationFinished failed]`` in one transaction; recovery: the first two."""
        operation = self.store.state.operation
        assert operation.kind != "idle"
        # Masked whatever a lower layer put in it (defence in depth: it is persisted).
        message, _ = facts.make_persistable(self._redact(str(error) or error.__class__.__name__))
        transaction = [
            *self._usage_facts(operation.operation_id, attempt_id, error.usage),
            self._step_failed(step_id, attempt_id, "model_error", message),
        ]
        if live:
            transaction.append(
                facts.operation_failed(
                    operation_id=operation.operation_id,
                    code="model_error",
                    message=message,
                    operation_kind=operation.kind,
                )
            )
        self.store.append(transaction)
        if live:
            self._conclude(RunResult("failed", error=error), operation.operation_id)
        else:
            self._last_outcome = RunResult("failed", error=error)

    def _price(self, response: NormalizedResponse | None, error: ProviderError | None) -> Cost:
        usage = response.usage if response is not None else (error.usage if error is not None else None)
        provider_cost = response.provider_cost if response is not None else None
        try:
            return price_request(
                provider=self.profile.id,
                model=self.model,
                usage=usage,
                provider_cost=provider_cost,
                overrides=self._price_overrides,
                local=self.profile.is_local,
                http_status=error.status if isinstance(error, ProviderHTTPError) else None,
            )
        except Exception:  # pricing is best effort and never fails a request
            _log.warning("pricing failed", exc_info=True)
            return Cost(None, None, detail="pricing failed")

    def _record(
        self,
        request: _Request,
        completed: ChatCompleted | None,
        error: ProviderError | None,
        error_code: str | None,
    ) -> Cost:
        """Price the request and hand its record to the ledger hook; returns the cost."""
        response = completed.response if completed is not None else None
        cost = self._price(response, error)
        if self._record_request is None:
            return cost
        capture = completed.capture if completed is not None else self._capture
        timings = capture.timings if capture is not None else None
        elapsed = (time.monotonic() - request.started) * 1000
        record = RequestRecord(
            session_id=self.store.session_id,
            operation_id=request.operation_id,
            step_id=request.step_id,
            attempt_id=request.attempt_id,
            attempt=request.attempt,
            step_kind=request.step_kind,
            provider=self.profile.id,
            model=self.model,
            started_at_ms=request.started_at_ms,
            finished_at_ms=request.started_at_ms + int(elapsed),
            outcome="failed" if error_code else "settled",
            stop_reason=response.stop_reason if response is not None else None,
            error_code=error_code,
            usage=response.usage if response is not None else (error.usage if error is not None else None),
            cost=cost,
            response=response,
            error=error,
            capture=capture,
            latency_ms=timings.done_ms if timings is not None and timings.done_ms is not None else elapsed,
            ttft_ms=timings.first_token_ms if timings is not None else None,
        )
        try:
            self._record_request(record)
        except Exception:  # the ledger is derived data; a failure must not break the run
            _log.warning("recording the request failed", exc_info=True)
        return cost

    # -- tool steps -------------------------------------------------------------------------------------------

    async def _tool_step(self, plan: Mapping[str, Any]) -> None:
        state = self.store.state
        operation = state.operation
        assert operation.kind == "run"
        assert operation.step is not None
        step_id = operation.step.step_id
        assistant_entry_id, tool_index = plan["assistantEntryId"], plan["toolIndex"]
        message = state.entry_message(assistant_entry_id)
        assert message is not None
        call_id = message["tool_calls"][tool_index]["id"]
        name = plan["toolName"]
        arguments: Mapping[str, Any] = plan["arguments"]
        tool = self.tools[name]
        if plan["mode"] == "replay":
            started_id, result_id = (
                plan["toolStartedId"],
                next(t.result_entry_id for t in operation.tool_calls if t.tool_started_id == plan["toolStartedId"]),
            )
            await self._execute(tool, arguments, step_id, call_id, started_id, result_id)
            return
        try:
            authorization = await self._cancellable(
                "tool",
                self.policy.authorize(
                    tool, arguments, _Announcing(self, call_id), call_id=call_id, rationale=message.get("content")
                ),
                call_id,
            )
        except _Aborted:
            return  # never started: the planner writes the aborted synthetic
        declaration = replay_declaration(tool)
        started_id, result_id = facts.new_id(), facts.new_id()
        self.store.append(
            facts.tool_started(
                tool_started_id=started_id,
                operation_id=operation.operation_id,
                step_id=step_id,
                assistant_entry_id=assistant_entry_id,
                tool_index=tool_index,
                tool_call_id=call_id,
                tool_name=name,
                arguments=dict(authorization.arguments),
                replay=declaration.replay,
                replay_key=declaration.replay_key,
                environment_identity=self.store.state.header.environment_identity,
                result_entry_id=result_id,
            )
        )
        if not authorization.allowed:
            self._commit_result(step_id, call_id, name, started_id, result_id, authorization.denial, None)
            return
        await self._execute(tool, authorization.arguments, step_id, call_id, started_id, result_id)

    async def _execute(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        step_id: str,
        call_id: str,
        started_id: str,
        result_id: str,
    ) -> None:
        self._emit(ToolStarted(started_id, call_id, tool.name, dict(arguments)))
        started = time.monotonic()
        sink = TOOL_OUTPUT.set(lambda text: self._emit(ToolOutput(call_id, tool.name, self._redact(text))))
        try:  # the task _cancellable creates copies the context, and with it the output sink
            outcome = await self._cancellable("tool", tool.execute(arguments, cancel=self._cancel), call_id)
        except (_Aborted, ToolAborted):
            return  # the planner writes the interrupted synthetic for the started tool
        finally:
            TOOL_OUTPUT.reset(sink)
        if self._cancel.is_set():
            return  # a late result loses the race with the abort: discarded, interrupted instead
        self._commit_result(step_id, call_id, tool.name, started_id, result_id, outcome, time.monotonic() - started)

    def _commit_result(
        self,
        step_id: str,
        call_id: str,
        name: str,
        started_id: str,
        result_id: str,
        outcome: ToolOutcome,
        seconds: float | None,
    ) -> None:
        content, replaced = facts.make_persistable(self._redact(outcome.content))
        if replaced:
            _log.warning("tool %s returned %d invalid character(s); replaced with U+FFFD", name, replaced)
            content += f"\n\n[{replaced} character(s) that are not valid Unicode were replaced with \ufffd.]"
        self.store.append(
            facts.tool_result(
                step_id=step_id,
                tool_started_id=started_id,
                result_entry_id=result_id,
                tool_call_id=call_id,
                tool_name=name,
                content=content,
                result=outcome.result_type,
            )
        )
        self._emit(
            ToolFinished(call_id, name, content, outcome.result_type, None if seconds is None else seconds * 1000)
        )

    # -- events -----------------------------------------------------------------------------------------------

    def _emit(self, event: AgentEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a broken view must never break a run
            _log.warning("event sink failed on %s", type(event).__name__, exc_info=True)


def configuration_differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between two configuration snapshots, one phrase per field (``model 'a' → 'b'``, ``tools added:
    bash``, ``system prompt``…); empty when they are equal."""
    out: list[str] = []
    if recorded.get("model") != current.get("model"):
        out.append(f"model {recorded.get('model')!r} → {current.get('model')!r}")
    if recorded.get("routingIdentity") != current.get("routingIdentity"):
        out.append(f"provider {recorded.get('routingIdentity')!r} → {current.get('routingIdentity')!r}")
    if recorded.get("systemPromptDigest") != current.get("systemPromptDigest"):
        out.append("system prompt (workspace, AGENTS.md, skills or the offered tools' names)")
    before = {item["name"]: item["definitionDigest"] for item in recorded.get("tools", ())}
    after = {item["name"]: item["definitionDigest"] for item in current.get("tools", ())}
    for label, names in (
        ("tools added", [name for name in after if name not in before]),
        ("tools removed", [name for name in before if name not in after]),
        ("tool definitions changed", [name for name in after if name in before and before[name] != after[name]]),
    ):
        if names:
            out.append(f"{label}: {', '.join(names)}")
    for key, label in (("adapterIdentity", "wire adapter"), ("outputOptionsDigest", "output options")):
        if recorded.get(key) != current.get(key):
            out.append(label)
    return out
