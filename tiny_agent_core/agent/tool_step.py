"""One tool call of a run: authorize it, record its start, execute it, and commit its masked result.

A ``new`` call passes the approval policy first (:meth:`~tiny_agent_core.tools.approval.ApprovalPolicy.authorize`;
a view hears :class:`~tiny_agent_core.agent.events.ApprovalNeeded` only when the policy actually asks). Its
``toolStarted`` fact is durable before the tool runs; a denied call is a started tool with the denial as its error
result. A ``replay`` call (recovery of a tool the planner may run again) executes under its recorded start.

Output is masked (the agent's :class:`~tiny_agent_core.redaction.Redactor`: the provider key, secret-named
environment values and the secrets the tools hold) and made persistable (a lone surrogate becomes U+FFFD, noted in
the result) before it is committed, shown or sent. An abort wins every race: a call aborted before it started is
left to the planner's ``aborted`` synthetic, and a started one, or a result that arrives after the abort, to its
``interrupted`` synthetic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from tiny_agent_core.agent.events import ApprovalNeeded, EventSink, ToolFinished, ToolOutput, ToolStarted
from tiny_agent_core.agent.inflight import Aborted, InFlight
from tiny_agent_core.redaction import Redactor
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalPolicy, ApprovalRequest, Approver
from tiny_agent_core.tools.base import TOOL_OUTPUT, Tool, ToolAborted, ToolOutcome
from tiny_agent_core.tools.registry import ToolSet, replay_declaration

_log = logging.getLogger(__name__)


class _Announcing:
    """An approver, wrapped so that a view hears :class:`ApprovalNeeded` when (and only when) the policy actually
    asks, with the request's preview."""

    def __init__(self, approver: Approver, call_id: str, emit: EventSink) -> None:
        self._approver = approver
        self._call_id = call_id
        self._emit = emit

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self._emit(ApprovalNeeded(self._call_id, request.tool_name, dict(request.arguments), request.preview.text))
        return await self._approver.ask(request)


class ToolSteps:
    """Runs the tool calls of one agent's session, one at a time (see the module docstring)."""

    def __init__(self, *, store: SessionStore, inflight: InFlight, redact: Redactor, emit: EventSink) -> None:
        self._store = store
        self._inflight = inflight
        self._redact = redact
        self._emit = emit

    async def run(self, plan: Mapping[str, Any], tools: ToolSet, policy: ApprovalPolicy, approver: Approver) -> None:
        """Carry out the planner's ``startTool`` ``plan`` with the agent's current tools, policy and approver."""
        state = self._store.state
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
        tool = tools[name]
        if plan["mode"] == "replay":
            started_id, result_id = (
                plan["toolStartedId"],
                next(t.result_entry_id for t in operation.tool_calls if t.tool_started_id == plan["toolStartedId"]),
            )
            await self._execute(tool, arguments, step_id, call_id, started_id, result_id)
            return
        try:
            authorization = await self._inflight.run(
                "tool",
                policy.authorize(
                    tool,
                    arguments,
                    _Announcing(approver, call_id, self._emit),
                    call_id=call_id,
                    rationale=message.get("content"),
                ),
                call_id,
            )
        except Aborted:
            return  # never started: the planner writes the aborted synthetic
        declaration = replay_declaration(tool)
        started_id, result_id = facts.new_id(), facts.new_id()
        self._store.append(
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
                environment_identity=self._store.state.header.environment_identity,
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
        try:  # the task InFlight.run creates copies the context, and with it the output sink
            outcome = await self._inflight.run("tool", tool.execute(arguments, cancel=self._inflight.event), call_id)
        except (Aborted, ToolAborted):
            return  # the planner writes the interrupted synthetic for the started tool
        finally:
            TOOL_OUTPUT.reset(sink)
        if self._inflight.cancelled:
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
        self._store.append(
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
