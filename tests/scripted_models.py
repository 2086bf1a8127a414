"""Several scripted models behind one loopback server: each request is answered by the next reply of its model.

A compare run sends the requests of its models at once, in no fixed order, so a single reply queue would hand
model A's answer to model B. :class:`ScriptedModels` is a :class:`~tests.loopback.LoopbackServer` handler that
reads the request's ``model`` and answers with that model's next scripted reply (a 500 once a script runs out,
so a test never hangs on a missing reply)::

    with LoopbackServer() as server:
        server.handler = ScriptedModels({"model-a": [edit_reply(...), answer(...)], "model-b": [...]})

Used by the compare tests, ``benchmarks/compare_models.py`` and ``assets/make_screenshots.py``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from tests.loopback import RecordedRequest, Reply, sse_events


class ScriptedModels:
    """A loopback handler answering each model from its own script."""

    def __init__(self, scripts: Mapping[str, Iterable[Reply]]) -> None:
        self._scripts = {model: deque(replies) for model, replies in scripts.items()}
        self._lock = threading.Lock()
        self.models: list[str] = []
        """The model of every request, in arrival order."""

    def __call__(self, request: RecordedRequest) -> Reply:
        model = str(request.json().get("model"))
        with self._lock:
            self.models.append(model)
            script = self._scripts.get(model)
            if not script:
                return Reply.error(500, {"error": {"message": f"no scripted reply left for {model}"}})
            return script.popleft()


def _chunk(delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}]}


def _usage(prompt: int, completion: int, cost: float | None) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if cost is not None:
        usage["cost"] = cost  # the provider's own figure, as OpenRouter sends it
    return {"choices": [], "usage": usage}


def tool_call(
    call_id: str,
    name: str,
    arguments: Mapping[str, Any],
    *,
    usage: tuple[int, int] = (40, 12),
    cost: float | None = None,
    pace: float = 0.0,
) -> Reply:
    """A streamed assistant turn making one tool call (``cost``: the provider's figure for it)."""
    head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    chunks = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"tool_calls": [head]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(dict(arguments))}}]}),
        _chunk({}, "tool_calls"),
        _usage(*usage, cost),
    ]
    return Reply.sse(sse_events(chunks), pace=pace)


def answer(
    text: str, *, pieces: int = 2, pace: float = 0.0, usage: tuple[int, int] | None = None, cost: float | None = None
) -> Reply:
    """A streamed final answer in ``pieces`` deltas, ``pace`` seconds apart (a per-token delay)."""
    size = max(1, -(-len(text) // pieces))
    parts = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    chunks: list[Any] = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": part}) for part in parts]
    chunks.append(_chunk({}, "stop"))
    prompt, completion = usage if usage is not None else (60, len(parts))
    chunks.append(_usage(prompt, completion, cost))
    return Reply.sse(sse_events(chunks), pace=pace)
