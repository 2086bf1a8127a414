"""A tiny writer of valid v2 session files for the ledger tests (reference notes §5.13, byte-for-byte shapes).

It writes the transactions the reference agent writes: ``[user entry, runStarted]``, ``stepAttempt``,
``[assistant entry, usage?]``, ``toolStarted`` then the tool result, ``[stepFailed, operationFinished failed]``,
``operationFinished``. Ids are deterministic lowercase UUIDv7 strings; timestamps increase by 1 ms per
transaction.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_ZERO = "sha256:" + "0" * 64


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def snapshot(model: str) -> dict[str, Any]:
    """A configuration snapshot with the read tool (digests are placeholders, as in the reference fixtures)."""
    return {
        "adapterIdentity": "openrouter:chat-completions:v1",
        "model": model,
        "outputOptionsDigest": _ZERO,
        "routingIdentity": f"openrouter:{model}",
        "systemPromptDigest": _ZERO,
        "tools": [{"definitionDigest": _ZERO, "name": "read"}],
    }


class SessionFile:
    """Builds one session file in ``<workspace>/.tiny-agent/sessions/``; each method appends one transaction."""

    def __init__(
        self, workspace: Path, number: int, *, created_at: int, model: str = "test/model", provider: str = "openrouter"
    ) -> None:
        self.number = number
        self.counter = 0
        self.seq = 0
        self.time = created_at
        self.model = model
        self.id = self.new_id()
        stamp = datetime.fromtimestamp(created_at / 1000, UTC).strftime("%Y-%m-%dT%H-%M-%S-") + (
            f"{created_at % 1000:03d}Z"
        )
        folder = workspace / ".tiny-agent" / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{stamp}_{self.id}.jsonl"
        header = {
            "createdAt": created_at,
            "cwd": str(workspace),
            "environmentIdentity": "test",
            "id": self.id,
            "kind": "header",
            "model": model,
            "provider": provider,
            "version": 2,
        }
        self._write(header)
        self.operation_id = ""
        self.boundary = ""
        self.step_id = ""
        self.attempt_id = ""

    def new_id(self) -> str:
        """The next deterministic UUIDv7."""
        self.counter += 1
        return f"{self.number:08x}-0000-7000-8000-{self.counter:012x}"

    def _write(self, value: Any) -> None:
        with self.path.open("ab") as handle:
            handle.write(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")

    def _facts(self, *facts: dict[str, Any]) -> None:
        self.time += 1
        out = []
        for fact in facts:
            self.seq += 1
            out.append({**fact, "seq": self.seq, "timestamp": self.time, "id": fact.get("id") or self.new_id()})
        self._write(out[0] if len(out) == 1 else out)

    def user(self, text: str) -> None:
        """``[user entry, runStarted]``."""
        entry_id = self.new_id()
        self.operation_id = self.new_id()
        self.boundary = entry_id
        self._facts(
            {
                "id": entry_id,
                "kind": "entry",
                "entry": {"type": "message", "message": {"role": "user", "content": text}},
            },
            {
                "kind": "record",
                "record": {
                    "type": "runStarted",
                    "operationId": self.operation_id,
                    "operationKind": "run",
                    "inputEntryId": entry_id,
                },
            },
        )

    def attempt(self, *, retry: bool = False, model: str | None = None) -> str:
        """``stepAttempt`` (attempt 2 of the current step when ``retry``); returns the attempt id."""
        if not retry:
            self.step_id = self.new_id()
        self.attempt_id = self.new_id()
        config = snapshot(model or self.model)
        self._facts(
            {
                "kind": "record",
                "record": {
                    "type": "stepAttempt",
                    "operationId": self.operation_id,
                    "stepId": self.step_id,
                    "attemptId": self.attempt_id,
                    "stepKind": "assistant",
                    "attempt": 2 if retry else 1,
                    "contextThroughEntryId": self.boundary,
                    "configurationSnapshot": config,
                    "configurationDigest": _digest(config),
                },
            }
        )
        return self.attempt_id

    def _usage_fact(self, usage: tuple[int, int, int, int]) -> dict[str, Any]:
        return {
            "kind": "usage",
            "operationId": self.operation_id,
            "attemptId": self.attempt_id,
            "usage": {"input": usage[0], "output": usage[1], "cacheRead": usage[2], "cacheWrite": usage[3]},
        }

    def answer(self, text: str, usage: tuple[int, int, int, int] | None) -> None:
        """``[assistant entry (stop), usage?]`` then ``operationFinished completed normal``."""
        entry_id = self.new_id()
        facts: list[dict[str, Any]] = [
            {
                "id": entry_id,
                "kind": "entry",
                "entry": {
                    "type": "message",
                    "stepId": self.step_id,
                    "attemptId": self.attempt_id,
                    "stopReason": "stop",
                    "message": {"role": "assistant", "content": text},
                },
            }
        ]
        if usage is not None:
            facts.append(self._usage_fact(usage))
        self._facts(*facts)
        self._finish({"outcome": "completed", "completion": "normal", "finalEntryId": entry_id})

    def call_read(self, path: str, usage: tuple[int, int, int, int] | None, result: str = "contents") -> None:
        """``[assistant entry (toolUse) calling read, usage?]``, ``toolStarted``, the tool result entry."""
        entry_id = self.new_id()
        call_id = f"call_{self.counter}"
        arguments = {"path": path}
        facts: list[dict[str, Any]] = [
            {
                "id": entry_id,
                "kind": "entry",
                "entry": {
                    "type": "message",
                    "stepId": self.step_id,
                    "attemptId": self.attempt_id,
                    "stopReason": "toolUse",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "read", "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                },
            }
        ]
        if usage is not None:
            facts.append(self._usage_fact(usage))
        self._facts(*facts)
        started_id = self.new_id()
        result_id = self.new_id()
        self._facts(
            {
                "id": started_id,
                "kind": "record",
                "record": {
                    "type": "toolStarted",
                    "operationId": self.operation_id,
                    "stepId": self.step_id,
                    "assistantEntryId": entry_id,
                    "toolIndex": 0,
                    "toolCallId": call_id,
                    "toolName": "read",
                    "arguments": arguments,
                    "replay": "safe",
                    "replayKey": "builtin:read:v1",
                    "environmentIdentity": "test",
                    "resultEntryId": result_id,
                },
            }
        )
        self.time += 4  # the tool ran for a few milliseconds
        self._facts(
            {
                "id": result_id,
                "kind": "entry",
                "entry": {
                    "type": "message",
                    "stepId": self.step_id,
                    "message": {"role": "tool", "content": result, "tool_call_id": call_id},
                    "toolName": "read",
                    "toolStartedId": started_id,
                    "result": {"type": "success"},
                },
            }
        )
        self.boundary = result_id

    def fail(self, usage: tuple[int, int, int, int] | None = None, message: str = "provider request failed") -> None:
        """``[usage?, stepFailed model_error, operationFinished failed]``."""
        error = {"code": "model_error", "message": message}
        facts: list[dict[str, Any]] = []
        if usage is not None:
            facts.append(self._usage_fact(usage))
        facts.append(
            {
                "kind": "record",
                "record": {
                    "type": "stepFailed",
                    "operationId": self.operation_id,
                    "stepId": self.step_id,
                    "attemptId": self.attempt_id,
                    "error": error,
                },
            }
        )
        facts.append(self._finish_fact({"outcome": "failed", "error": error}))
        self._facts(*facts)

    def _finish_fact(self, fields: dict[str, Any]) -> dict[str, Any]:
        record = {"type": "operationFinished", "operationId": self.operation_id, "operationKind": "run", **fields}
        return {"kind": "record", "record": record}

    def _finish(self, fields: dict[str, Any]) -> None:
        self._facts(self._finish_fact(fields))
