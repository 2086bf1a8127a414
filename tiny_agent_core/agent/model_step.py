"""One model step: commit the attempt, stream the request, commit what came back, and record the request.

Every step begins with its durable ``stepAttempt`` (with the configuration snapshot the planner compares on
recovery), then streams the active context (after the system prompt; a compaction step sends its own prompt and no
tools). What follows depends on how the request ended, as the reference's live loop does (notes §5.13):

- aborted before an answer: nothing more here; the planner closes the attempt;
- a provider failure: ``[usage?, stepFailed model_error]`` and, in a live run, ``operationFinished failed`` in the
  same transaction, with the provider's own message (masked: it is persisted);
- an answer that arrives after an abort: only its usage is kept, the attempt fails ``aborted``;
- a compaction summary: the compaction entry, or a ``model_error`` when the summary is blank or cut off;
- an answer: the assistant entry and its usage; a blank final answer fails with ``empty_response``, and
  ``length`` without calls keeps the text and fails (the Python reference's choice, so a truncated answer is not
  lost).

A failure that ends the operation goes back to the loop as a :class:`StepFailure`, at the point where the step
would have ended it; the loop owns how an operation finishes. Every request is priced and recorded
(:mod:`~tiny_agent_core.agent.requests`) once its outcome is known. When tools were offered but the server's
prompt-token count shows they never reached the model (and no call was ever made),
:class:`~tiny_agent_core.agent.events.ToolsDropped` says so once per operation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tiny_agent_core.agent.compaction import CompactionCut, compaction_cut, compaction_messages
from tiny_agent_core.agent.context import Configuration, prompt_floor
from tiny_agent_core.agent.events import EventSink, StepFinished, StepStarted, ToolCallProposed, ToolsDropped
from tiny_agent_core.agent.inflight import Aborted, InFlight
from tiny_agent_core.agent.requests import ModelRequest, RequestRecorder, deliver
from tiny_agent_core.agent.streaming import Streamer
from tiny_agent_core.errors import EmptyResponseError, ProviderError, TinyAgentError
from tiny_agent_core.pricing import Cost, Overrides
from tiny_agent_core.providers.client import ChatCompleted
from tiny_agent_core.providers.results import NormalizedResponse
from tiny_agent_core.redaction import Redactor
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.usage import Usage


@dataclass(frozen=True)
class StepFailure:
    """A model step's failure that the operation must answer.

    ``operation`` says what is left to do: ``fail`` — finish the operation failed with ``code`` and ``message``;
    ``failed`` — the step's own transaction already finished it (a live provider failure): conclude it;
    ``open`` — the operation stays open for the planner (a provider failure in recovery): keep ``error`` for the
    result.
    """

    operation: Literal["fail", "failed", "open"]
    operation_id: str
    code: str
    message: str
    error: TinyAgentError


FailureSink = Callable[[StepFailure], None]
"""What the operation does with a :class:`StepFailure`, called where the step ends the operation."""


@dataclass(frozen=True)
class _Step:
    """The identity of one model step's attempt and the request it sends."""

    operation_id: str
    step_id: str
    attempt_id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    cut: CompactionCut | None
    """Where a compaction step cuts the context (``None`` for an assistant step)."""
    request: ModelRequest


class ModelSteps:
    """Runs the model steps of one agent's session, one at a time (see the module docstring)."""

    def __init__(
        self,
        *,
        store: SessionStore,
        streamer: Streamer,
        inflight: InFlight,
        redact: Redactor,
        emit: EventSink,
        price_overrides: Overrides | None,
    ) -> None:
        self._store = store
        self._streamer = streamer
        self._inflight = inflight
        self._redact = redact
        self._emit = emit
        self._price_overrides = price_overrides
        self._tools_called = False
        self._tools_dropped = False

    def start_operation(self) -> None:
        """A new operation: :class:`ToolsDropped` may be said once more."""
        self._tools_called = self._tools_dropped = False

    async def run(
        self,
        plan: Mapping[str, Any],
        configuration: Configuration,
        offered: list[dict[str, Any]] | None,
        recorder: RequestRecorder | None,
        fail: FailureSink,
        *,
        live: bool,
    ) -> None:
        """Carry out the planner's ``startStep`` ``plan`` with ``offered`` tool definitions; ``recorder`` receives
        the request's record, ``fail`` a failure that ends the operation."""
        step = self._begin(plan, configuration, offered)
        try:
            completed = await self._inflight.run(
                "compact" if step.cut is not None else "model",
                self._streamer.stream(
                    step.messages,
                    step.step_id,
                    step.tools,
                    chained=step.cut is None and self._streamer.profile.server_state,
                ),
            )
        except Aborted:
            self._record(step.request, recorder, None, None, "aborted")
            return  # the planner closes the attempt (abort first)
        except ProviderError as error:
            fail(self._commit_model_error(step, error, live=live))
            self._record(step.request, recorder, None, error, "model_error")
            return
        response = completed.response
        usage_facts = _usage_facts(step.operation_id, step.attempt_id, response.usage)
        if self._inflight.cancelled:  # a late response loses the race with the abort: keep its usage only
            aborted = _step_failed(step, "aborted", "Operation aborted")
            self._store.append([*usage_facts, aborted])
            self._record(step.request, recorder, completed, None, "aborted")
            return
        if step.cut is not None:
            settled = self._settle_compaction(step, step.cut, response, usage_facts, fail if live else None)
            self._record(step.request, recorder, completed, None, None if settled else "model_error")
            return
        self._settle_answer(step, completed, usage_facts, recorder, fail)

    def _begin(
        self, plan: Mapping[str, Any], configuration: Configuration, offered: list[dict[str, Any]] | None
    ) -> _Step:
        """Commit the step's attempt, say so, and build its request."""
        state = self._store.state
        operation = state.operation
        assert operation.kind != "idle"
        step_kind, attempt = plan["stepKind"], plan["attempt"]
        step_id = plan.get("stepId") or facts.new_id()
        attempt_id = facts.new_id()
        self._store.append(
            facts.step_attempt(
                operation_id=operation.operation_id,
                step_id=step_id,
                attempt_id=attempt_id,
                step_kind=step_kind,
                attempt=attempt,
                context_through_entry_id=plan["contextThroughEntryId"],
                configuration_snapshot=configuration.snapshot,
            )
        )
        model = self._streamer.model
        self._emit(StepStarted(step_id, attempt_id, attempt, model))
        self._streamer.capture = None  # never file a previous request's capture under this attempt
        cut = compaction_cut(state.active_context) if step_kind == "compaction" else None
        if cut is not None:
            messages, tools = compaction_messages(state.active_context, cut), None
        else:
            messages = [{"role": "system", "content": configuration.system_prompt}, *state.active_context]
            tools = offered
        request = ModelRequest(
            session_id=self._store.session_id,
            operation_id=operation.operation_id,
            step_id=step_id,
            attempt_id=attempt_id,
            attempt=attempt,
            step_kind=step_kind,
            provider=self._streamer.profile.id,
            model=model,
            local=self._streamer.profile.is_local,
        )
        return _Step(operation.operation_id, step_id, attempt_id, messages, tools, cut, request)

    def _settle_answer(
        self,
        step: _Step,
        completed: ChatCompleted,
        usage_facts: list[dict[str, Any]],
        recorder: RequestRecorder | None,
        fail: FailureSink,
    ) -> None:
        """Commit an assistant answer and its usage, say what it proposes, and fail a blank or cut-off one."""
        response = completed.response
        self._store.append(
            [
                facts.assistant_entry(
                    response.message,
                    step_id=step.step_id,
                    attempt_id=step.attempt_id,
                    stop_reason=response.stop_reason,
                    entry_id=facts.new_id(),
                ),
                *usage_facts,
            ]
        )
        cost = self._record(step.request, recorder, completed, None, None)
        self._step_finished(step, completed, cost)
        self._check_tools_reached(step, response)
        if response.usage is not None:
            self._streamer.measure(response.usage)
        for index, call in enumerate(response.message.calls):
            self._emit(ToolCallProposed(step.step_id, index, call.id, call.function.name, call.function.arguments))
        if response.message.calls:
            return
        content = response.message.content or ""
        if response.stop_reason == "length":
            message = "Model response was truncated by the output token limit."
            fail(StepFailure("fail", step.operation_id, "model_error", message, TinyAgentError(message)))
        elif not content.strip():
            message = f"Model returned an empty response (finish_reason: {response.stop_reason})."
            fail(StepFailure("fail", step.operation_id, "empty_response", message, EmptyResponseError(message)))

    def _settle_compaction(
        self,
        step: _Step,
        cut: CompactionCut,
        response: NormalizedResponse,
        usage_facts: list[dict[str, Any]],
        fail: FailureSink | None,
    ) -> bool:
        """Commit the compaction entry, or the failure of an invalid summary (ending the operation through
        ``fail`` when given); True when it settled."""
        operation = self._store.state.operation
        assert operation.kind == "compaction"
        summary = (response.message.content or "").strip()
        if response.stop_reason != "stop" or not summary:
            message = "Model returned an invalid compaction summary"
            self._store.append([*usage_facts, _step_failed(step, "model_error", message)])
            if fail is not None:
                fail(StepFailure("fail", step.operation_id, "model_error", message, TinyAgentError(message)))
            return False
        source = self._store.state.message_entries()
        self._store.append(
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

    def _commit_model_error(self, step: _Step, error: ProviderError, *, live: bool) -> StepFailure:
        """Live: ``[usage?, stepFailed, operationFinished failed]`` in one transaction; recovery: the first two."""
        operation = self._store.state.operation
        assert operation.kind != "idle"
        # Masked whatever a lower layer put in it (defence in depth: it is persisted).
        message, _ = facts.make_persistable(self._redact(str(error) or error.__class__.__name__))
        transaction = [
            *_usage_facts(step.operation_id, step.attempt_id, error.usage),
            _step_failed(step, "model_error", message),
        ]
        if live:
            transaction.append(
                facts.operation_failed(
                    operation_id=step.operation_id,
                    code="model_error",
                    message=message,
                    operation_kind=operation.kind,
                )
            )
        self._store.append(transaction)
        return StepFailure("failed" if live else "open", step.operation_id, "model_error", message, error)

    def _step_finished(self, step: _Step, completed: ChatCompleted, cost: Cost) -> None:
        response = completed.response
        timings = completed.capture.timings
        self._emit(
            StepFinished(
                step.step_id,
                step.attempt_id,
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
                context_window=self._streamer.profile.context_length,
            )
        )

    def _check_tools_reached(self, step: _Step, response: NormalizedResponse) -> None:
        """Emit :class:`ToolsDropped` once per operation when the offered tools cannot have reached the model."""
        if response.message.calls:
            self._tools_called = True
        usage = response.usage
        if not step.tools or usage is None or self._tools_called or self._tools_dropped:
            return
        prompt = usage.input + usage.cache_read + usage.cache_write
        floor = prompt_floor(step.messages, step.tools)
        if prompt >= floor:
            return
        self._tools_dropped = True
        self._emit(
            ToolsDropped(
                step.step_id,
                prompt,
                floor,
                f"The server left the tools out of the prompt ({prompt} prompt tokens; the messages and tool "
                f"definitions need at least {floor}), so the model cannot call them. The server needs a chat "
                "template with tools (llama-server: --jinja and a tool-aware template; llama-cpp-python: a "
                'function-calling chat format, which this client enables with tool_choice "auto").',
            )
        )

    def _record(
        self,
        request: ModelRequest,
        recorder: RequestRecorder | None,
        completed: ChatCompleted | None,
        error: ProviderError | None,
        error_code: str | None,
    ) -> Cost:
        """Price the request and hand its record to ``recorder``; returns the cost."""
        cost = request.price(completed.response if completed is not None else None, error, self._price_overrides)
        if recorder is not None:
            record = request.record(
                completed=completed, capture=self._streamer.capture, error=error, error_code=error_code, cost=cost
            )
            deliver(recorder, record)
        return cost


def _step_failed(step: _Step, code: str, message: str) -> dict[str, Any]:
    return facts.step_failed(
        operation_id=step.operation_id, step_id=step.step_id, attempt_id=step.attempt_id, code=code, message=message
    )


def _usage_facts(operation_id: str, attempt_id: str, usage: Usage | None) -> list[dict[str, Any]]:
    if usage is None:
        return []
    return [facts.attempt_usage(operation_id=operation_id, attempt_id=attempt_id, usage=usage)]
