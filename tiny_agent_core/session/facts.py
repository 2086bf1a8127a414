"""Builders for the facts the agent loop writes (reference notes §5.13), ready for ``SessionStore.append``.

Each builder returns a fact *input*: ``{"kind", "id"?, ...}`` without ``seq``/``timestamp`` (the store sets
those, and an ``id`` when none is given). Ids that later facts refer to (an operation, a step, an attempt, a
result entry) are allocated by the caller with :func:`new_id` and passed in, exactly as the reference runtime
pre-allocates them. The transactions the reference writes, in order:

1. run accepted: ``[user_entry, run_started]``;
2. ``step_attempt`` (then the model call);
3. success: ``[assistant_entry, attempt_usage]``; a live model error: ``[attempt_usage?, step_failed,
   operation_failed]``;
4. per tool: ``tool_started`` (before execution), then ``tool_result``; pre-execution ``synthetic_result`` entries
   one per transaction;
5. ``operation_completed`` / ``operation_failed`` / ``operation_aborted``;
6. abort: ``abort_requested`` before signalling; compaction: ``compaction_started``, ``step_attempt``,
   ``attempt_usage``, ``compaction_entry``, ``operation_completed``.

Configuration digests (§5.8): :func:`configuration_snapshot` builds the snapshot and :func:`configuration_digest`
its digest. :func:`system_prompt_digest` hashes the JSON-quoted prompt as the TypeScript reference does (the
Python reference hashes the raw bytes; sessions made by tiny-ts can only be *recovered* with the former).

Text a session file cannot hold: a lone surrogate (a name that is not UTF-8, decoded with ``surrogateescape``)
makes the store refuse the whole transaction. :func:`make_persistable` replaces them in text the agent did not
choose, such as a tool's output, before it becomes a fact. :func:`tool_started` writes arguments as
``JSON.stringify`` would: a number that does not fit a double (``1e400``) is ``null``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from tiny_agent_core.session.canonical_json import canonical_digest, js_numbers
from tiny_agent_core.session.reducer import SYNTHETIC_CONTENT

__all__ = [
    "ADAPTER_IDENTITY",
    "READ_REPLAY_KEY",
    "abort_requested",
    "assistant_entry",
    "attempt_usage",
    "compaction_entry",
    "compaction_started",
    "configuration_digest",
    "configuration_snapshot",
    "make_persistable",
    "new_id",
    "operation_aborted",
    "operation_completed",
    "operation_failed",
    "planned_result",
    "routing_identity",
    "run_started",
    "source_digest",
    "step_attempt",
    "step_failed",
    "synthetic_result",
    "system_prompt_digest",
    "tool_definition_digest",
    "tool_result",
    "tool_started",
    "tool_usage",
    "user_entry",
]

Fact = dict[str, Any]
ADAPTER_IDENTITY = "openrouter:chat-completions:v1"
"""The reference's ``adapterIdentity`` for the Chat Completions adapter."""
READ_REPLAY_KEY = "builtin:read:v1"
"""The replay key of the built-in ``read`` tool, the only ``safe`` replay (notes §5.10)."""


class _AsDict(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


MessageLike = Mapping[str, Any] | _AsDict


def _message(message: MessageLike) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    return message.as_dict()


_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def make_persistable(text: str) -> tuple[str, int]:
    """``text`` as a session file can hold it, and how many lone surrogates were replaced by U+FFFD.

    A high surrogate followed by a low one is joined into its character (not counted); every other surrogate
    code point (e.g. ``\\udcff`` from a file name decoded with ``surrogateescape``) becomes U+FFFD.
    """
    if text.isascii() or _SURROGATES.search(text) is None:
        return text, 0
    replaced = 0

    def repair(found: re.Match[str]) -> str:
        nonlocal replaced
        unit = found.group()
        if len(unit) == 2:
            return unit.encode("utf-16", "surrogatepass").decode("utf-16")
        replaced += 1
        return "\ufffd"

    return _SURROGATES.sub(repair, text), replaced


def new_id() -> str:
    """A fresh lowercase UUIDv7 (fact, operation, step, attempt and result ids)."""
    import uuid6  # on first use: it loads importlib.metadata, a fifth of a read-only command's start

    return str(uuid6.uuid7())


# --- configuration -------------------------------------------------------------------------------------------------


def system_prompt_digest(system_prompt: str) -> str:
    """``digest(systemPrompt)``: the hash of the JSON-quoted prompt, as the TypeScript reference computes it."""
    return canonical_digest(system_prompt)


def tool_definition_digest(
    name: str, description: str, parameters: Mapping[str, Any], definition_identity: str | None = None
) -> str:
    """``digest({name, description, parameters[, definitionIdentity]})``."""
    value: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if definition_identity:
        value["definitionIdentity"] = definition_identity
    return canonical_digest(value)


def routing_identity(model: str) -> str:
    """``openrouter:<model>``."""
    return f"openrouter:{model}"


def configuration_snapshot(
    *,
    model: str,
    system_prompt_digest: str,
    tools: Iterable[tuple[str, str]] = (),
    adapter_identity: str = ADAPTER_IDENTITY,
    routing_identity: str | None = None,
    output_options_digest: str | None = None,
) -> dict[str, Any]:
    """The exact-key ``configurationSnapshot``; ``tools`` are ``(name, definitionDigest)`` in tool order."""
    return {
        "model": model,
        "systemPromptDigest": system_prompt_digest,
        "tools": [{"name": name, "definitionDigest": digest} for name, digest in tools],
        "adapterIdentity": adapter_identity,
        "routingIdentity": routing_identity if routing_identity is not None else f"openrouter:{model}",
        "outputOptionsDigest": output_options_digest if output_options_digest is not None else canonical_digest({}),
    }


def configuration_digest(snapshot: Mapping[str, Any]) -> str:
    """``canonicalDigest(snapshot)``."""
    return canonical_digest(snapshot)


def source_digest(source: Iterable[tuple[str, MessageLike]]) -> str:
    """``digest([{sourceEntryId, message}, …])`` over ``(entry id, message)`` pairs (a compaction source)."""
    return canonical_digest([{"sourceEntryId": entry_id, "message": _message(message)} for entry_id, message in source])


# --- entries -------------------------------------------------------------------------------------------------------


def _entry(entry: dict[str, Any], fact_id: str | None) -> Fact:
    fact: Fact = {"kind": "entry"}
    if fact_id is not None:
        fact["id"] = fact_id
    fact["entry"] = entry
    return fact


def _record(record: dict[str, Any], fact_id: str | None = None) -> Fact:
    fact: Fact = {"kind": "record"}
    if fact_id is not None:
        fact["id"] = fact_id
    fact["record"] = record
    return fact


def user_entry(content: str, *, entry_id: str | None = None) -> Fact:
    """A user message entry."""
    return _entry({"type": "message", "message": {"role": "user", "content": content}}, entry_id)


def assistant_entry(
    message: MessageLike,
    *,
    step_id: str,
    attempt_id: str,
    stop_reason: Literal["stop", "toolUse", "length"],
    entry_id: str | None = None,
) -> Fact:
    """The assistant message that settles an attempt."""
    return _entry(
        {
            "type": "message",
            "stepId": step_id,
            "attemptId": attempt_id,
            "stopReason": stop_reason,
            "message": _message(message),
        },
        entry_id,
    )


def tool_result(
    *,
    step_id: str,
    tool_started_id: str,
    result_entry_id: str,
    tool_call_id: str,
    tool_name: str,
    content: str,
    result: Literal["success", "error", "interrupted"] = "success",
) -> Fact:
    """The result entry of a started tool (its id is the ``resultEntryId`` reserved by ``toolStarted``).

    ``result="interrupted"`` writes the fixed interrupted synthetic; ``content`` is then ignored.
    """
    if result == "interrupted":
        outcome: dict[str, Any] = {"type": "synthetic", "reason": "interrupted"}
        content = SYNTHETIC_CONTENT["interrupted"]
    else:
        outcome = {"type": result}
    return _entry(
        {
            "type": "message",
            "stepId": step_id,
            "message": {"role": "tool", "content": content, "tool_call_id": tool_call_id},
            "toolName": tool_name,
            "toolStartedId": tool_started_id,
            "result": outcome,
        },
        result_entry_id,
    )


def synthetic_result(
    *,
    step_id: str,
    assistant_entry_id: str,
    tool_index: int,
    tool_call_id: str,
    tool_name: str,
    reason: Literal["invalidArguments", "unknownTool", "truncated", "aborted"],
    entry_id: str | None = None,
) -> Fact:
    """A pre-execution synthetic result with the fixed content of ``reason``."""
    return _entry(
        {
            "type": "message",
            "stepId": step_id,
            "assistantEntryId": assistant_entry_id,
            "toolIndex": tool_index,
            "message": {"role": "tool", "content": SYNTHETIC_CONTENT[reason], "tool_call_id": tool_call_id},
            "toolName": tool_name,
            "result": {"type": "synthetic", "reason": reason},
        },
        entry_id,
    )


def planned_result(step_id: str, item: Mapping[str, Any]) -> Fact:
    """The fact for one result of a planner ``appendSynthetic`` plan in step ``step_id``: the ``interrupted``
    result of a started tool (it has ``toolStartedId``), else a pre-execution synthetic result with a new id."""
    if item.get("toolStartedId"):
        return tool_result(
            step_id=step_id,
            tool_started_id=item["toolStartedId"],
            result_entry_id=item["resultEntryId"],
            tool_call_id=item["toolCallId"],
            tool_name=item["toolName"],
            content="",
            result="interrupted",
        )
    return synthetic_result(
        step_id=step_id,
        assistant_entry_id=item["assistantEntryId"],
        tool_index=item["toolIndex"],
        tool_call_id=item["toolCallId"],
        tool_name=item["toolName"],
        reason=item["reason"],
        entry_id=new_id(),
    )


def compaction_entry(
    *,
    result_entry_id: str,
    operation_id: str,
    summary: str,
    compacted_through_entry_id: str,
    retained_tail: Sequence[tuple[str, MessageLike]],
) -> Fact:
    """The compaction result; ``retained_tail`` is ``(source entry id, message)`` in order."""
    return _entry(
        {
            "type": "compaction",
            "operationId": operation_id,
            "summary": summary,
            "compactedThroughEntryId": compacted_through_entry_id,
            "retainedTail": [
                {"sourceEntryId": entry_id, "message": _message(message)} for entry_id, message in retained_tail
            ],
        },
        result_entry_id,
    )


# --- records -------------------------------------------------------------------------------------------------------


def run_started(*, operation_id: str, input_entry_id: str) -> Fact:
    """Starts a run on the user entry ``input_entry_id`` (same transaction or earlier)."""
    return _record(
        {"type": "runStarted", "operationId": operation_id, "operationKind": "run", "inputEntryId": input_entry_id}
    )


def compaction_started(
    *,
    operation_id: str,
    input_through_entry_id: str,
    result_entry_id: str,
    compacted_entry_ids: Sequence[str],
    retained_entry_ids: Sequence[str],
    source_digest: str,
) -> Fact:
    """Starts a compaction over every message entry through ``input_through_entry_id``."""
    return _record(
        {
            "type": "compactionStarted",
            "operationId": operation_id,
            "operationKind": "compaction",
            "inputThroughEntryId": input_through_entry_id,
            "resultEntryId": result_entry_id,
            "compactedEntryIds": list(compacted_entry_ids),
            "retainedEntryIds": list(retained_entry_ids),
            "sourceDigest": source_digest,
        }
    )


def step_attempt(
    *,
    operation_id: str,
    step_id: str,
    attempt_id: str,
    context_through_entry_id: str,
    configuration_snapshot: Mapping[str, Any],
    step_kind: Literal["assistant", "compaction"] = "assistant",
    attempt: Literal[1, 2] = 1,
) -> Fact:
    """A model attempt; the digest is computed from the snapshot."""
    return _record(
        {
            "type": "stepAttempt",
            "operationId": operation_id,
            "stepId": step_id,
            "attemptId": attempt_id,
            "stepKind": step_kind,
            "attempt": attempt,
            "contextThroughEntryId": context_through_entry_id,
            "configurationSnapshot": dict(configuration_snapshot),
            "configurationDigest": canonical_digest(configuration_snapshot),
        }
    )


def step_failed(*, operation_id: str, step_id: str, attempt_id: str, code: str, message: str) -> Fact:
    """Closes an open attempt as failed (``code`` e.g. ``model_error`` or ``aborted``)."""
    return _record(
        {
            "type": "stepFailed",
            "operationId": operation_id,
            "stepId": step_id,
            "attemptId": attempt_id,
            "error": {"code": code, "message": message},
        }
    )


def tool_started(
    *,
    tool_started_id: str,
    operation_id: str,
    step_id: str,
    assistant_entry_id: str,
    tool_index: int,
    tool_call_id: str,
    tool_name: str,
    arguments: Mapping[str, Any],
    replay: Literal["safe", "never"],
    replay_key: str,
    environment_identity: str,
    result_entry_id: str,
) -> Fact:
    """Intent before effect: written before the tool runs; reserves ``result_entry_id``.

    ``arguments`` are written as ``JSON.stringify`` would write them (numbers that do not fit a double are
    ``null``), so arguments read from a call such as ``{"n": 1e400}`` can always be recorded.
    """
    return _record(
        {
            "type": "toolStarted",
            "operationId": operation_id,
            "stepId": step_id,
            "assistantEntryId": assistant_entry_id,
            "toolIndex": tool_index,
            "toolCallId": tool_call_id,
            "toolName": tool_name,
            "arguments": js_numbers(dict(arguments)),
            "replay": replay,
            "replayKey": replay_key,
            "environmentIdentity": environment_identity,
            "resultEntryId": result_entry_id,
        },
        tool_started_id,
    )


def abort_requested(
    *,
    operation_id: str,
    operation_kind: Literal["run", "compaction"],
    phase: Literal["model", "tool", "compact"],
    tool_call_id: str | None = None,
) -> Fact:
    """Persisted before the abort is signalled (``tool_call_id`` exactly when ``phase == "tool"``)."""
    record: dict[str, Any] = {
        "type": "abortRequested",
        "operationId": operation_id,
        "operationKind": operation_kind,
        "phase": phase,
    }
    if tool_call_id is not None:
        record["toolCallId"] = tool_call_id
    record["reason"] = "escape"
    return _record(record)


def operation_completed(
    *,
    operation_id: str,
    final_entry_id: str,
    operation_kind: Literal["run", "compaction"] = "run",
    completion: Literal["normal", "truncated"] | None = "normal",
) -> Fact:
    """A completed run (``completion`` normal/truncated) or compaction (no ``completion``)."""
    record: dict[str, Any] = {
        "type": "operationFinished",
        "operationId": operation_id,
        "operationKind": operation_kind,
        "outcome": "completed",
    }
    if operation_kind == "run" and completion is not None:
        record["completion"] = completion
    record["finalEntryId"] = final_entry_id
    return _record(record)


def operation_failed(
    *, operation_id: str, code: str, message: str, operation_kind: Literal["run", "compaction"] = "run"
) -> Fact:
    """A failed operation (``code`` e.g. ``model_error``, ``empty_response``)."""
    return _record(
        {
            "type": "operationFinished",
            "operationId": operation_id,
            "operationKind": operation_kind,
            "outcome": "failed",
            "error": {"code": code, "message": message},
        }
    )


def operation_aborted(*, operation_id: str, operation_kind: Literal["run", "compaction"] = "run") -> Fact:
    """An aborted operation (needs a prior ``abortRequested`` and no open work)."""
    return _record(
        {
            "type": "operationFinished",
            "operationId": operation_id,
            "operationKind": operation_kind,
            "outcome": "aborted",
        }
    )


# --- usage ---------------------------------------------------------------------------------------------------------


def _usage(usage: Any) -> dict[str, int]:
    if isinstance(usage, Mapping):
        return {key: int(usage[key]) for key in ("input", "output", "cacheRead", "cacheWrite")}
    as_dict: dict[str, int] = usage.as_dict()  # tiny_agent_core.usage.Usage
    return as_dict


def attempt_usage(*, operation_id: str, attempt_id: str, usage: Any) -> Fact:
    """Usage of one model attempt (a ``Usage`` or ``{input, output, cacheRead, cacheWrite}``)."""
    return {"kind": "usage", "operationId": operation_id, "attemptId": attempt_id, "usage": _usage(usage)}


def tool_usage(*, operation_id: str, tool_started_id: str, usage: Any) -> Fact:
    """Usage attributed to a started tool."""
    return {"kind": "usage", "operationId": operation_id, "toolStartedId": tool_started_id, "usage": _usage(usage)}
