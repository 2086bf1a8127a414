"""Scripted valid sessions for tests and benchmarks, written with the core fact builders.

:class:`SessionScript` plays the agent loop's transactions (notes §5.13) into an in-memory list of lines — or,
with ``store=...``, through a real :class:`SessionStore`. Each high-level call writes exactly the transactions the
reference writes, so every prefix of the result is a valid session.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tiny_agent_core.session import facts
from tiny_agent_core.session.canonical_json import canonical_digest
from tiny_agent_core.session.store import SessionStore

MODEL = "test/model"
ENVIRONMENT = "fixture"
TOOLS = {
    "read": ("safe", facts.READ_REPLAY_KEY),
    "bash": ("never", "builtin:bash:v1"),
    "write": ("never", "builtin:write:v1"),
}
TOOL_DIGESTS = {name: canonical_digest({"name": name, "description": name, "parameters": {}}) for name in TOOLS}
SNAPSHOT = facts.configuration_snapshot(
    model=MODEL,
    system_prompt_digest=facts.system_prompt_digest("You are tiny-agent."),
    tools=list(TOOL_DIGESTS.items()),
)
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def current_configuration(**changes: Any) -> dict[str, Any]:
    """The current configuration matching :data:`SNAPSHOT` (override keys with ``changes``)."""
    value: dict[str, Any] = {
        "configurationDigest": facts.configuration_digest(SNAPSHOT),
        "environmentIdentity": ENVIRONMENT,
        "tools": [
            {"name": name, "definitionDigest": TOOL_DIGESTS[name], "replay": replay, "replayKey": key}
            for name, (replay, key) in TOOLS.items()
        ],
    }
    value.update(changes)
    return value


@dataclass
class Call:
    """One tool call the model makes, and what happens to it."""

    name: str = "read"
    arguments: str = '{"path":"README.md"}'
    result: str = "contents"
    outcome: str = "success"  # success | error | interrupted | pending | invalidArguments | unknownTool


@dataclass
class SessionScript:
    """Writes a valid session transaction by transaction."""

    store: SessionStore | None = None
    seed: int = 0
    lines: list[bytes] = field(default_factory=list)
    seq: int = 1
    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    active_through: str | None = None
    _timestamp: int = 1_710_000_000_000

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)
        if self.store is None:
            header = {
                "kind": "header",
                "version": 2,
                "id": facts.new_id(),
                "createdAt": self._timestamp,
                "cwd": "/workspace",
                "provider": "openrouter",
                "model": MODEL,
                "environmentIdentity": ENVIRONMENT,
            }
            self.lines.append(_DUMPS(header).encode())

    # --- output -----------------------------------------------------------------------------------------------

    def data(self) -> bytes:
        """The session file so far."""
        return b"".join(line + b"\n" for line in self.lines)

    def commit(self, batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Write one transaction (through the store if there is one)."""
        if self.store is not None:
            committed = self.store.append(batch)
        else:
            self._timestamp += 1
            committed = []
            for value in batch:
                fact = {"kind": value["kind"], "seq": self.seq, "id": value.get("id") or facts.new_id()}
                fact["timestamp"] = self._timestamp
                fact.update((key, item) for key, item in value.items() if key not in fact)
                committed.append(fact)
                self.seq += 1
            self.lines.append(_DUMPS(committed[0] if len(committed) == 1 else committed).encode())
        for fact in committed:
            entry = fact.get("entry")
            if fact["kind"] == "entry" and entry["type"] == "message":
                self.messages.append((fact["id"], entry["message"]))
                self.active_through = fact["id"]
        return committed

    # --- runs -------------------------------------------------------------------------------------------------

    def run(
        self,
        prompt: str,
        steps: Sequence[Sequence[Call] | str],
        *,
        finish: str = "completed",
        usage: tuple[int, int, int, int] = (10, 2, 3, 0),
    ) -> str:
        """A run: each step is a list of calls (``toolUse``) or the final answer text (``stop``).

        ``finish``: ``completed`` (normal), ``open`` (no operationFinished), ``failed`` (the last step fails
        instead of answering), ``aborted`` (abort requested during the last step's model call, reconciled).
        Returns the operation id.
        """
        user_id, operation_id = facts.new_id(), facts.new_id()
        self.commit(
            [
                facts.user_entry(prompt, entry_id=user_id),
                facts.run_started(operation_id=operation_id, input_entry_id=user_id),
            ]
        )
        final_id = None
        for index, step in enumerate(steps):
            last = index == len(steps) - 1
            step_id, attempt_id = facts.new_id(), facts.new_id()
            self.commit([self.step_attempt(operation_id, step_id, attempt_id)])
            counters = dict(zip(("input", "output", "cacheRead", "cacheWrite"), usage, strict=True))
            if last and finish in ("failed", "aborted"):
                if finish == "aborted":
                    self.commit([facts.abort_requested(operation_id=operation_id, operation_kind="run", phase="model")])
                code, text = ("aborted", "Operation aborted") if finish == "aborted" else ("model_error", "boom")
                batch = [
                    facts.attempt_usage(operation_id=operation_id, attempt_id=attempt_id, usage=counters),
                    facts.step_failed(
                        operation_id=operation_id, step_id=step_id, attempt_id=attempt_id, code=code, message=text
                    ),
                ]
                if finish == "failed":
                    batch.append(facts.operation_failed(operation_id=operation_id, code=code, message=text))
                else:
                    batch.append(facts.operation_aborted(operation_id=operation_id))
                self.commit(batch)
                return operation_id
            assistant_id = facts.new_id()
            if isinstance(step, str):
                message: dict[str, Any] = {"role": "assistant", "content": step}
                stop_reason = "stop"
            else:
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{index}_{number}",
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for number, call in enumerate(step)
                    ],
                }
                stop_reason = "toolUse"
            self.commit(
                [
                    facts.assistant_entry(
                        message, step_id=step_id, attempt_id=attempt_id, stop_reason=stop_reason, entry_id=assistant_id
                    ),
                    facts.attempt_usage(operation_id=operation_id, attempt_id=attempt_id, usage=counters),
                ]
            )
            final_id = assistant_id
            if isinstance(step, str):
                continue
            for number, call in enumerate(step):
                call_id = f"call_{index}_{number}"
                if call.outcome in ("invalidArguments", "unknownTool"):
                    self.commit(
                        [
                            facts.synthetic_result(
                                step_id=step_id,
                                assistant_entry_id=assistant_id,
                                tool_index=number,
                                tool_call_id=call_id,
                                tool_name=call.name,
                                reason=call.outcome,  # type: ignore[arg-type]
                            )
                        ]
                    )
                    continue
                started_id, result_id = facts.new_id(), facts.new_id()
                replay, key = TOOLS.get(call.name, ("never", f"tool:{call.name}:v1"))
                self.commit(
                    [
                        facts.tool_started(
                            tool_started_id=started_id,
                            operation_id=operation_id,
                            step_id=step_id,
                            assistant_entry_id=assistant_id,
                            tool_index=number,
                            tool_call_id=call_id,
                            tool_name=call.name,
                            arguments=json.loads(call.arguments),
                            replay=replay,  # type: ignore[arg-type]
                            replay_key=key,
                            environment_identity=ENVIRONMENT,
                            result_entry_id=result_id,
                        )
                    ]
                )
                if call.outcome == "pending":
                    return operation_id
                self.commit(
                    [
                        facts.tool_result(
                            step_id=step_id,
                            tool_started_id=started_id,
                            result_entry_id=result_id,
                            tool_call_id=call_id,
                            tool_name=call.name,
                            content=call.result,
                            result=call.outcome,  # type: ignore[arg-type]
                        )
                    ]
                )
        if finish == "completed" and final_id is not None:
            self.commit([facts.operation_completed(operation_id=operation_id, final_entry_id=final_id)])
        return operation_id

    def step_attempt(
        self, operation_id: str, step_id: str, attempt_id: str, *, kind: str = "assistant"
    ) -> dict[str, Any]:
        assert self.active_through is not None
        return facts.step_attempt(
            operation_id=operation_id,
            step_id=step_id,
            attempt_id=attempt_id,
            context_through_entry_id=self.active_through,
            configuration_snapshot=SNAPSHOT,
            step_kind=kind,  # type: ignore[arg-type]
        )

    # --- compaction -------------------------------------------------------------------------------------------

    def compact(self, summary: str = "summary", keep: int = 2) -> str:
        """A completed compaction keeping the last ``keep`` messages (the cut is moved back to a user message)."""
        source = list(self.messages)
        cut = max(1, len(source) - keep)
        while 1 < cut < len(source) and source[cut][1]["role"] != "user":
            cut -= 1
        operation_id, result_id = facts.new_id(), facts.new_id()
        step_id, attempt_id = facts.new_id(), facts.new_id()
        self.commit(
            [
                facts.compaction_started(
                    operation_id=operation_id,
                    input_through_entry_id=source[-1][0],
                    result_entry_id=result_id,
                    compacted_entry_ids=[entry_id for entry_id, _ in source[:cut]],
                    retained_entry_ids=[entry_id for entry_id, _ in source[cut:]],
                    source_digest=facts.source_digest(source),
                )
            ]
        )
        self.active_through = source[-1][0]
        self.commit([self.step_attempt(operation_id, step_id, attempt_id, kind="compaction")])
        self.commit(
            [
                facts.attempt_usage(
                    operation_id=operation_id,
                    attempt_id=attempt_id,
                    usage={"input": 5, "output": 1, "cacheRead": 0, "cacheWrite": 0},
                ),
                facts.compaction_entry(
                    result_entry_id=result_id,
                    operation_id=operation_id,
                    summary=summary,
                    compacted_through_entry_id=source[cut - 1][0],
                    retained_tail=source[cut:],
                ),
            ]
        )
        self.commit(
            [
                facts.operation_completed(
                    operation_id=operation_id, final_entry_id=result_id, operation_kind="compaction", completion=None
                )
            ]
        )
        return operation_id


def generate_session(fact_target: int, *, seed: int = 0, content_size: int = 700, compact_every: int = 500) -> bytes:
    """A valid idle session of at least ``fact_target`` facts (~600 bytes per fact on average).

    Runs of three tool steps each (read/bash results of ``content_size`` characters, some non-ASCII), a final
    answer, and a compaction every ``compact_every`` runs.
    """
    script = SessionScript(seed=seed)
    rng = script.random
    alphabet = 'abcdefghijklmnopqrstuvwxyz 0123456789\n{}"\\é中🙂'
    runs = 0
    while script.seq <= fact_target:
        text = "".join(rng.choice(alphabet) for _ in range(64))
        body = (text * (content_size // 64 + 1))[:content_size]
        calls = [
            [Call("read", '{"path":"src/main.py"}', body)],
            [Call("bash", '{"command":"pytest -q"}', body, "error"), Call("read", '{"path":"a.txt"}', "short")],
            [Call("write", '{"path":"out.txt","content":"x"}', "Successfully wrote 1 bytes to out.txt.")],
        ]
        script.run(f"prompt {runs}: {text}", [*calls, f"done {runs} {text[:32]}"])
        runs += 1
        if runs % compact_every == 0:
            script.compact(f"summary after {runs} runs")
    return script.data()
