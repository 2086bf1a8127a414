"""Every recorded case in ../shared/wire/cases through the adapter, each outcome reviewed and asserted.

Expectations are keyed by case number. ``ok`` cases give stop reason, usage (input, output, cacheRead,
cacheWrite) or None for unknown, the repairs applied and the number of tool calls; ``err`` cases give the error kind
(and status / retryAfter for HTTP errors). Cases recorded without a status are run as 2xx bodies (an ``error``
object in a 2xx body is a provider error) and additionally with the status their notes give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.providers.wire_cases import load_case
from tests.shared_data import ABSENT_REASON, shared_files
from tiny_agent_core.cli.wire import normalize_bytes
from tiny_agent_core.seam import ASSISTANT_KEYS, FUNCTION_KEYS, TOOL_CALL_KEYS


def ok(stop: str, usage: tuple[int, int, int, int] | None, repairs: list[str], calls: int = 0) -> dict[str, Any]:
    return {"ok": True, "stop": stop, "usage": usage, "repairs": repairs, "calls": calls}


def err(kind: str, status: int | None = None, retry_after: float | None = None) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "status": status, "retry_after": retry_after}


EXPECTED: dict[str, dict[str, Any]] = {
    "001": ok("toolUse", (364, 40, 0, 0), [], calls=2),  # parallel calls by index, args "" then "{}"
    "002": ok("toolUse", (53, 15, 0, 0), [], calls=1),  # args split over 5 deltas
    "003": ok("toolUse", (71, 46, 0, 0), [], calls=2),
    "004": ok("stop", (12, 1888, 0, 0), []),  # top-level moderation object ignored
    "005": ok("stop", (8, 4, 0, 4012), []),  # OpenAI cache_write_tokens
    "006": ok("stop", (7, 87, 0, 0), []),  # reasoning tokens stay inside output
    "007": err("malformed"),  # legacy function_call: dropped, so finish_reason function_call has no calls
    "008": err("content_filter"),  # refusal with no content: the model refused
    "009": err("http_error", 400),
    "010": err("http_error", 404),
    "011": err("http_error", 404),
    "012": err("provider_error"),  # recorded without status; as a 2xx body the error object is a provider error
    "013": err("http_error", 429, 411480.0),  # "Please try again in 114h18m0s."
    "014": ok("stop", (14, 9, 0, 0), []),  # Azure filter results ignored
    "015": err("content_filter"),  # Azure content_filter with no message at all
    "016": ok("stop", None, []),  # Azure stream without usage: unknown, not zero
    "017": ok("stop", (15, 78, 0, 0), []),
    "018": ok("toolUse", (35, 12, 0, 0), ["missing_content", "missing_tool_call_id"], calls=1),  # Gemini compat
    "019": ok("stop", (17, 1515, 0, 0), []),
    "020": err("provider_error"),  # OpenRouter mid-stream error chunk
    "021": err("http_error", 429),  # upstream rate limit, no retry hint
    "022": ok("stop", (2315, 40, 0, 0), []),
    "023": ok("stop", (2317, 53, 0, 0), []),  # duplicate stop chunks, usage on the second
    "024": ok("stop", (31, 80, 0, 0), []),
    "025": ok("length", (3, 100, 0, 3211), []),  # length without calls is a valid wire outcome
    "026": ok("stop", (3, 53, 3211, 115), []),
    "027": ok("length", (0, 100, 2161, 2161), ["usage_input_clamped"]),  # same tokens reported read and written
    "028": ok("toolUse", (326, 91, 0, 0), [], calls=1),
    "029": ok("stop", (254, 5, 0, 0), []),  # usage-only final chunk, PROCESSING comments
    "030": ok("stop", (43, 36, 0, 0), []),  # a null finish_reason after stop does not erase it
    "031": ok("stop", (43, 53, 0, 0), []),
    "032": ok("toolUse", (134, 43, 0, 0), [], calls=1),
    "033": ok("stop", (888, 74, 0, 0), []),
    "034": err("http_error", 402),
    "035": err("http_error", 401),
    "036": err("provider_error"),  # nested {"error":{"error":…}} in a body recorded without status
    "037": err("malformed"),  # doc example printed without the blank line that ends an SSE event
    "038": err("http_error", 429, 40.0),  # error.availability.retry_after
    "043": err("http_error", 400),
    "044": err("http_error", 404),
    "048": ok("toolUse", (51, 116, 512, 0), [], calls=1),  # DeepSeek prompt cache hit
    "049": ok("toolUse", (875, 79, 0, 0), [], calls=2),
    "050": ok("stop", (6, 212, 0, 0), []),
    "051": ok("toolUse", (19, 92, 320, 0), [], calls=1),
    "052": ok("toolUse", (19, 83, 320, 0), [], calls=1),
    "065": ok("length", (57, 20, 0, 0), ["empty_tool_calls"]),  # vLLM tool_calls: []
    "070": ok("stop", (134, 122, 0, 0), []),
}

# Cases recorded without a status, run again with the status their notes give.
WITH_NOTED_STATUS = {"012": (400, err("http_error", 400)), "036": (402, err("http_error", 402))}

CASES = shared_files("wire/cases", "*.json")
PARAMS = [pytest.param(path, id=path.stem[:3]) for path in CASES] or [
    pytest.param(None, marks=pytest.mark.skip(reason=ABSENT_REASON))
]


def _assert_outcome(out: dict[str, Any], expected: dict[str, Any]) -> None:
    assert out["ok"] is expected["ok"], out
    if not expected["ok"]:
        assert out["error"]["kind"] == expected["kind"]
        assert out["error"]["message"]
        assert out["error"].get("status") == expected["status"]
        assert out["error"].get("retryAfter") == expected["retry_after"]
        return
    assert out["stopReason"] == expected["stop"]
    usage = out["usage"]
    assert (tuple(usage[k] for k in ("input", "output", "cacheRead", "cacheWrite")) if usage else None) == expected[
        "usage"
    ]
    assert out["repairs"] == expected["repairs"]
    message = out["message"]
    assert set(message) <= ASSISTANT_KEYS
    assert {"role", "content"} <= set(message)
    assert len(message.get("tool_calls", [])) == expected["calls"]
    for call in message.get("tool_calls", []):
        assert set(call) == TOOL_CALL_KEYS
        assert set(call["function"]) == FUNCTION_KEYS


@pytest.mark.parametrize("path", PARAMS)
def test_wire_case_outcome(path: Path) -> None:
    case = load_case(path)
    number = case.name[:3]
    assert number in EXPECTED, f"new wire case {case.name}: review its outcome and add it to EXPECTED"
    out = normalize_bytes(case.data, stream=case.stream, status=case.status or 200)
    _assert_outcome(out, EXPECTED[number])


@pytest.mark.parametrize("number", sorted(WITH_NOTED_STATUS))
def test_wire_case_with_noted_status(number: str) -> None:
    path = next((p for p in CASES if p.name.startswith(number)), None)
    if path is None:
        pytest.skip(ABSENT_REASON)
    status, expected = WITH_NOTED_STATUS[number]
    _assert_outcome(normalize_bytes(load_case(path).data, stream=False, status=status), expected)


def test_doc_example_stream_with_its_event_terminated_is_a_provider_error() -> None:
    path = next((p for p in CASES if p.name.startswith("037")), None)
    if path is None:
        pytest.skip(ABSENT_REASON)
    out = normalize_bytes(load_case(path).data + b"\n\n", stream=True, status=200)
    assert out["ok"] is False
    assert out["error"]["kind"] == "provider_error"
    assert "Rate limit exceeded" in out["error"]["message"]
