"""Helpers (no tests): sessions for transcript and inspector tests, written through the real store and builders."""

from __future__ import annotations

import json
from pathlib import Path

from tiny_agent_core.messages import AssistantMessage, FunctionCall, ToolCall
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.timeline import Timeline

SNAPSHOT = facts.configuration_snapshot(
    model="test/模型",
    system_prompt_digest=facts.system_prompt_digest("system"),
    tools=[("read", facts.tool_definition_digest("read", "Read a file", {"type": "object"}))],
)


class Session:
    """A writable session whose timeline follows every commit."""

    def __init__(self, folder: Path) -> None:
        self.store = SessionStore.create(folder, model="test/模型")
        self.timeline = Timeline.from_bytes(self.store.path.read_bytes())
        self.store.observe_commits(self.timeline.apply)
        self.operation = ""
        self.last_entry = ""

    def run(self, prompt: str) -> None:
        """``[user, runStarted]``."""
        self.operation, self.last_entry = facts.new_id(), facts.new_id()
        self.store.append(
            [
                facts.user_entry(prompt, entry_id=self.last_entry),
                facts.run_started(operation_id=self.operation, input_entry_id=self.last_entry),
            ]
        )

    def attempt(self, step_id: str) -> str:
        """A ``stepAttempt`` of ``step_id``; returns the attempt id."""
        attempt_id = facts.new_id()
        self.store.append(
            facts.step_attempt(
                operation_id=self.operation,
                step_id=step_id,
                attempt_id=attempt_id,
                context_through_entry_id=self.last_entry,
                configuration_snapshot=SNAPSHOT,
            )
        )
        return attempt_id

    def answer(self, step_id: str, attempt_id: str, text: str, *, finish: bool = True) -> None:
        """The final assistant text, its usage, and the completed run."""
        entry_id = facts.new_id()
        message = AssistantMessage(content=text)
        self.store.append(
            [
                facts.assistant_entry(
                    message, step_id=step_id, attempt_id=attempt_id, stop_reason="stop", entry_id=entry_id
                ),
                facts.attempt_usage(
                    operation_id=self.operation,
                    attempt_id=attempt_id,
                    usage={"input": 12, "output": 3, "cacheRead": 0, "cacheWrite": 0},
                ),
            ]
        )
        if finish:
            self.store.append(facts.operation_completed(operation_id=self.operation, final_entry_id=entry_id))

    def tool_round(self, path: str, result: str) -> None:
        """An assistant step calling ``read`` once, its start and its successful result."""
        step_id = facts.new_id()
        attempt_id = self.attempt(step_id)
        entry_id, started_id, result_id = facts.new_id(), facts.new_id(), facts.new_id()
        arguments = json.dumps({"path": path})
        call = ToolCall(id="call_" + step_id[-6:], function=FunctionCall(name="read", arguments=arguments))
        message = AssistantMessage(content=None, tool_calls=(call,))
        self.store.append(
            facts.assistant_entry(
                message, step_id=step_id, attempt_id=attempt_id, stop_reason="toolUse", entry_id=entry_id
            )
        )
        self.store.append(
            facts.tool_started(
                tool_started_id=started_id,
                operation_id=self.operation,
                step_id=step_id,
                assistant_entry_id=entry_id,
                tool_index=0,
                tool_call_id=call.id,
                tool_name="read",
                arguments={"path": path},
                replay="safe",
                replay_key=facts.READ_REPLAY_KEY,
                environment_identity=self.store.state.header.environment_identity,
                result_entry_id=result_id,
            )
        )
        self.store.append(
            facts.tool_result(
                step_id=step_id,
                tool_started_id=started_id,
                result_entry_id=result_id,
                tool_call_id=call.id,
                tool_name="read",
                content=result,
            )
        )
        self.last_entry = result_id

    def fail(self, step_id: str, attempt_id: str, message: str) -> None:
        """A live model error: ``[stepFailed, operationFinished failed]``."""
        self.store.append(
            [
                facts.step_failed(
                    operation_id=self.operation,
                    step_id=step_id,
                    attempt_id=attempt_id,
                    code="model_error",
                    message=message,
                ),
                facts.operation_failed(operation_id=self.operation, code="model_error", message=message),
            ]
        )

    def full_run(self, prompt: str, path: str, result: str, answer: str) -> None:
        """A run that reads one file and answers."""
        self.run(prompt)
        self.tool_round(path, result)
        step_id = facts.new_id()
        self.answer(step_id, self.attempt(step_id), answer)
