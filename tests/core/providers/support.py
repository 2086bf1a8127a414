"""Helpers shared by the provider client tests."""

from __future__ import annotations

import copy
import json
from typing import Any

from tiny_agent_core.errors import ProviderError
from tiny_agent_core.providers.client import ChatCompleted, ChatEvent, ChatStream, ProviderClient, error_summary
from tiny_agent_core.providers.profiles import ProviderProfile, custom_profile
from tiny_agent_core.providers.transport import Timeouts

TEST_KEY = "sk-test-7Hq2Zr9WmXcVbN4kLp0Sd1Fg"
"""The API key every provider test sends; it must never appear in a capture, an error or a file."""

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}]

FAST = Timeouts(connect=5.0, read=5.0, write=5.0, pool=5.0)


async def run_chat(
    client: ProviderClient,
    base_url: str,
    *,
    profile: ProviderProfile | None = None,
    timeouts: Timeouts = FAST,
    tools: list[dict[str, Any]] | None = None,
) -> tuple[list[ChatEvent], ChatStream, ProviderError | None]:
    """Run one request to the end: (events, the stream, the failure or None)."""
    events: list[ChatEvent] = []
    stream = client.stream_chat(
        profile or custom_profile(base_url),
        model="test-model",
        messages=MESSAGES,
        tools=tools,
        api_key=TEST_KEY,
        timeouts=timeouts,
    )
    failure: ProviderError | None = None
    try:
        async with stream:
            async for event in stream:
                events.append(event)
    except ProviderError as error:
        failure = error
    # Every request any test makes: the key never reaches the capture or the error.
    assert stream.capture is not None
    assert TEST_KEY not in json.dumps(stream.capture.to_json())
    assert TEST_KEY not in repr(stream.capture)
    assert failure is None or TEST_KEY not in str(failure)
    return events, stream, failure


def outcome(events: list[ChatEvent], error: ProviderError | None) -> dict[str, Any]:
    """The ``wire normalize`` JSON for what the client produced."""
    if error is not None:
        return {"ok": False, "error": error_summary(error)}
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    return final.response.to_json()


def without_generated_ids(result: dict[str, Any]) -> dict[str, Any]:
    """Blank tool-call ids the adapter generated (they are random), so two runs compare equal."""
    out = copy.deepcopy(result)
    if "missing_tool_call_id" in out.get("repairs", ()):
        for call in (out.get("message") or {}).get("tool_calls") or []:
            call["id"] = "<generated>"
    return out
