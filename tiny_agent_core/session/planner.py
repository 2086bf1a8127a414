"""The recovery planner: (reduced state, current configuration) → the next recovery step (notes §5.11).

:func:`plan_recovery` is pure: no I/O, no id allocation, no clock. It returns exactly one plan dict in the
reference's format (``schemas/session/recovery-plan.schema.json``); an executor applies it, reduces again and
asks again until the session is idle:

* ``{"type": "finish", "outcome", "completion"?, "finalEntryId"?, "error"?}``
* ``{"type": "startStep", "stepKind", "attempt", "stepId"?, "contextThroughEntryId"}``
* ``{"type": "startTool", "mode": "start"|"replay", "assistantEntryId", "toolIndex", "toolStartedId"?,
  "toolName", "arguments"}``
* ``{"type": "appendSynthetic", "results": [...]}``
* ``{"type": "closeAttempt", "error": {"code": "aborted", "message": "Operation aborted"}}``
* ``{"type": "blocked", "reason": "configuration_changed"|"environment_changed"|"replay_declaration_changed"|
  "attempts_exhausted"}``

``current`` is ``{"configurationDigest", "environmentIdentity", "tools": [{"name", "definitionDigest",
"replay", "replayKey"}]}`` (``current-configuration.schema.json``); :func:`validate_current` checks that shape.
:func:`plan_abort` is the abort branch alone, which needs no ``current``: it closes a session without a provider
(``tiny-agent session abandon``).
"""

from __future__ import annotations

import re
from typing import Any

from tiny_agent_core.session.framing import parse_js_json
from tiny_agent_core.session.reducer import SYNTHETIC_CONTENT
from tiny_agent_core.session.state import Attempt, CompactionOperation, RunOperation, SessionState, ToolCallState

__all__ = ["plan_abort", "plan_recovery", "validate_current"]

Plan = dict[str, Any]
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}").fullmatch
_CURRENT_KEYS = {"configurationDigest", "environmentIdentity", "tools"}
_CURRENT_TOOL_KEYS = {"name", "definitionDigest", "replay", "replayKey"}


def validate_current(value: Any) -> dict[str, Any]:
    """Check a current configuration against the reference's schema; ``ValueError`` says what is wrong."""
    if type(value) is not dict or set(value) != _CURRENT_KEYS:
        raise ValueError("current configuration must be an object with exactly " + ", ".join(sorted(_CURRENT_KEYS)))
    digest = value["configurationDigest"]
    if type(digest) is not str or _DIGEST(digest) is None:
        raise ValueError("configurationDigest must be sha256:<64 hex>")
    identity = value["environmentIdentity"]
    if type(identity) is not str or not identity:
        raise ValueError("environmentIdentity must be a non-empty string")
    tools = value["tools"]
    if type(tools) is not list:
        raise ValueError("tools must be an array")
    for index, tool in enumerate(tools):
        if type(tool) is not dict or set(tool) != _CURRENT_TOOL_KEYS:
            raise ValueError(f"tools[{index}] must have exactly " + ", ".join(sorted(_CURRENT_TOOL_KEYS)))
        for key in ("name", "replayKey"):
            if type(tool[key]) is not str or not tool[key]:
                raise ValueError(f"tools[{index}].{key} must be a non-empty string")
        if type(tool["definitionDigest"]) is not str or _DIGEST(tool["definitionDigest"]) is None:
            raise ValueError(f"tools[{index}].definitionDigest must be sha256:<64 hex>")
        if tool["replay"] not in ("safe", "never"):
            raise ValueError(f'tools[{index}].replay must be "safe" or "never"')
    return value


def _declaration(current: dict[str, Any], name: str) -> dict[str, Any] | None:
    for tool in current["tools"]:
        if tool["name"] == name:
            found: dict[str, Any] = tool
            return found
    return None


def _started_synthetic(tool: ToolCallState) -> dict[str, Any]:
    return {
        "assistantEntryId": tool.assistant_entry_id,
        "toolIndex": tool.tool_index,
        "toolCallId": tool.tool_call_id,
        "toolName": tool.tool_name,
        "toolStartedId": tool.tool_started_id,
        "resultEntryId": tool.result_entry_id,
        "reason": "interrupted",
        "content": SYNTHETIC_CONTENT["interrupted"],
    }


def _pre_execution_synthetic(
    assistant_entry_id: str, tool_index: int, call: dict[str, Any], reason: str
) -> dict[str, Any]:
    return {
        "assistantEntryId": assistant_entry_id,
        "toolIndex": tool_index,
        "toolCallId": call["id"],
        "toolName": call["function"]["name"],
        "reason": reason,
        "content": SYNTHETIC_CONTENT[reason],
    }


def _assistant_calls(state: SessionState) -> tuple[str, list[dict[str, Any]], int] | None:
    """The current step's assistant entry id, its calls and how many tool messages follow it.

    The current run step is always settled by the transcript's most recent assistant message (a new assistant
    turn needs every earlier call resolved), so the last assistant message is the one to look at.
    """
    operation = state.operation
    if type(operation) is not RunOperation or operation.step is None or not operation.step.settled_entry_id:
        return None
    transcript = state.transcript
    completed = 0
    for index in range(len(transcript) - 1, -1, -1):
        message = transcript[index]
        if message["role"] == "assistant":
            calls: list[dict[str, Any]] = message.get("tool_calls") or []
            if not calls:
                return None
            return operation.step.settled_entry_id, calls, completed
        if message["role"] == "tool":
            completed += 1
    return None


def plan_abort(state: SessionState) -> Plan:
    """The next step of an operation whose abort was requested (step 2 of :func:`plan_recovery`).

    Needs no current configuration: close an open attempt, then write the ``interrupted``/``aborted`` synthetic
    results of the step's unanswered calls, then finish as aborted. ``state`` must have an aborting operation.
    """
    operation = state.operation
    assert operation.kind != "idle", "plan_abort needs an aborting operation"
    step = operation.step
    if step is not None and step.status == "attempting":
        return {"type": "closeAttempt", "error": {"code": "aborted", "message": "Operation aborted"}}
    assistant = _assistant_calls(state)
    if type(operation) is RunOperation and assistant is not None:
        assistant_entry_id, calls, completed = assistant
        started = {(tool.assistant_entry_id, tool.tool_index): tool for tool in operation.tool_calls}
        results: list[dict[str, Any]] = []
        for tool_index, call in enumerate(calls):
            if tool_index < completed:
                continue
            tool = started.get((assistant_entry_id, tool_index))
            if tool is not None:
                if tool.status == "pending":
                    results.append(_started_synthetic(tool))
                continue
            results.append(_pre_execution_synthetic(assistant_entry_id, tool_index, call, "aborted"))
        if results:
            return {"type": "appendSynthetic", "results": results}
    return {"type": "finish", "outcome": "aborted"}


def plan_recovery(state: SessionState, current: dict[str, Any]) -> Plan:
    """The next recovery step for ``state`` under ``current`` (notes §5.11, in the reference's order)."""
    operation = state.operation
    if operation.kind == "idle":
        return {"type": "finish", "outcome": "completed", "completion": "normal"}
    # 2. Abort first.
    if operation.abort_requested:
        return plan_abort(state)
    step = operation.step
    # 3. No step yet.
    if step is None:
        return {
            "type": "startStep",
            "stepKind": "assistant" if type(operation) is RunOperation else "compaction",
            "attempt": 1,
            "contextThroughEntryId": operation.input_through_entry_id,
        }
    # 4.–6. Compatibility, then the step's own status.
    unsettled = _plan_unsettled_step(state, current, step)
    if unsettled is not None:
        return unsettled
    # 7. A settled compaction.
    if type(operation) is CompactionOperation:
        return {"type": "finish", "outcome": "completed", "finalEntryId": operation.result_entry_id}
    assert type(operation) is RunOperation
    return _plan_settled_run(state, current, operation, step)


def _plan_unsettled_step(state: SessionState, current: dict[str, Any], step: Attempt) -> Plan | None:
    """Steps 4–6: blocked by a changed configuration or environment, or the step failed or is still open."""
    if step.configuration_digest != current["configurationDigest"]:
        return {"type": "blocked", "reason": "configuration_changed"}
    if state.header.environment_identity != current["environmentIdentity"]:
        return {"type": "blocked", "reason": "environment_changed"}
    if step.status == "failed":
        return {
            "type": "finish",
            "outcome": "failed",
            "error": {"code": "model_error", "message": "provider request failed"},
        }
    if step.status != "attempting":
        return None
    if step.attempt == 2:
        return {"type": "blocked", "reason": "attempts_exhausted"}
    return {
        "type": "startStep",
        "stepKind": step.step_kind,
        "attempt": 2,
        "stepId": step.step_id,
        "contextThroughEntryId": step.context_through_entry_id,
    }


def _plan_settled_run(state: SessionState, current: dict[str, Any], run: RunOperation, step: Attempt) -> Plan:
    """Steps 8–12: the run's step is settled; answer its calls, or finish, or start the next step."""
    assistant = _assistant_calls(state)
    # 8. Truncated with calls.
    if step.stop_reason == "length" and assistant is not None:
        return _plan_truncated(step, *assistant)
    # 9. A final answer.
    if assistant is None:
        return {"type": "finish", "outcome": "completed", "completion": "normal", "finalEntryId": step.settled_entry_id}
    # 10. The first call with neither a result nor a toolStarted.
    unprocessed = _plan_unprocessed_call(current, run, *assistant)
    if unprocessed is not None:
        return unprocessed
    # 11. Nothing pending: the next model step.
    pending = sorted((tool for tool in run.tool_calls if tool.status == "pending"), key=lambda tool: tool.tool_index)
    if not pending:
        # The reference names the last toolStarted's result here and asserts one exists; when the step's last
        # results are pre-execution synthetics (or all of them are), the reducer's boundary is the last result
        # entry instead, and only that is a legal context. For every other state the two are the same entry.
        return {
            "type": "startStep",
            "stepKind": "assistant",
            "attempt": 1,
            "contextThroughEntryId": state.context_boundary,
        }
    # 12. The lowest-index pending started tool.
    return _plan_pending_tool(current, step, pending[0])


def _plan_truncated(step: Attempt, assistant_entry_id: str, calls: list[dict[str, Any]], completed: int) -> Plan:
    """Step 8: a step cut off by the token limit: its unanswered calls get ``truncated`` results, then it ends."""
    if completed == len(calls):
        return {
            "type": "finish",
            "outcome": "completed",
            "completion": "truncated",
            "finalEntryId": step.settled_entry_id,
        }
    return {
        "type": "appendSynthetic",
        "results": [
            _pre_execution_synthetic(assistant_entry_id, completed + offset, call, "truncated")
            for offset, call in enumerate(calls[completed:])
        ],
    }


def _plan_unprocessed_call(
    current: dict[str, Any], run: RunOperation, assistant_entry_id: str, calls: list[dict[str, Any]], completed: int
) -> Plan | None:
    """Step 10: the first call with neither a result nor a ``toolStarted``: refuse it or start it."""
    processed = {(tool.assistant_entry_id, tool.tool_index) for tool in run.tool_calls}
    for tool_index, call in enumerate(calls):
        if tool_index < completed or (assistant_entry_id, tool_index) in processed:
            continue
        if _declaration(current, call["function"]["name"]) is None:
            return {
                "type": "appendSynthetic",
                "results": [_pre_execution_synthetic(assistant_entry_id, tool_index, call, "unknownTool")],
            }
        try:
            arguments = parse_js_json(call["function"]["arguments"])
        except ValueError:
            arguments = None
        if type(arguments) is not dict:
            return {
                "type": "appendSynthetic",
                "results": [_pre_execution_synthetic(assistant_entry_id, tool_index, call, "invalidArguments")],
            }
        return {
            "type": "startTool",
            "mode": "start",
            "assistantEntryId": assistant_entry_id,
            "toolIndex": tool_index,
            "toolName": call["function"]["name"],
            "arguments": arguments,
        }
    return None


def _plan_pending_tool(current: dict[str, Any], step: Attempt, tool: ToolCallState) -> Plan:
    """Step 12: a started tool whose outcome is unknown: replay it if safe and unchanged, else block or answer."""
    if tool.environment_identity != current["environmentIdentity"]:
        return {"type": "blocked", "reason": "environment_changed"}
    declaration = _declaration(current, tool.tool_name)
    recorded = next(
        (item for item in step.configuration_snapshot["tools"] if item["name"] == tool.tool_name),
        None,
    )
    if declaration is None or recorded is None or declaration["definitionDigest"] != recorded["definitionDigest"]:
        return {"type": "blocked", "reason": "configuration_changed"}
    if tool.replay == "safe" and declaration["replay"] == "safe" and declaration["replayKey"] == tool.replay_key:
        return {
            "type": "startTool",
            "mode": "replay",
            "assistantEntryId": tool.assistant_entry_id,
            "toolIndex": tool.tool_index,
            "toolStartedId": tool.tool_started_id,
            "toolName": tool.tool_name,
            "arguments": tool.arguments,
        }
    if tool.replay == "safe":
        return {"type": "blocked", "reason": "replay_declaration_changed"}
    return {"type": "appendSynthetic", "results": [_started_synthetic(tool)]}
