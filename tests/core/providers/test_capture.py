"""Raw capture: what was sent and received, size-capped, and never a credential."""

from __future__ import annotations

import json

from tests.core.providers.support import TEST_KEY, run_chat
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.providers.capture import REDACTED, CaptureRecorder, selected_headers
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.profiles import PRESETS

CHUNK = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}


def _recorder(body: bytes = b"{}", secret: str | None = TEST_KEY, limit: int = 1024) -> CaptureRecorder:
    return CaptureRecorder(
        method="POST",
        url="http://x/v1/chat/completions",
        stream=True,
        request_headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json", "X-Title": "t"},
        request_body=body,
        secret=secret,
        limit=limit,
    )


def test_authorization_header_and_key_are_never_recorded() -> None:
    recorder = _recorder(body=json.dumps({"note": f"my key is {TEST_KEY}"}).encode())
    recorder.response_started(200, {"x-request-id": "req_1", "set-cookie": "a=b", "x-echo": TEST_KEY})
    half = len(TEST_KEY) // 2
    recorder.body_text(f"data: {TEST_KEY[:half]}")  # a key split across two network reads
    recorder.body_text(f"{TEST_KEY[half:]}\n\n")
    capture = recorder.finish()
    dumped = json.dumps(capture.to_json())
    assert TEST_KEY not in dumped
    assert "authorization" not in capture.request_headers
    assert capture.request_headers == {"content-type": "application/json", "x-title": "t"}
    assert capture.response_headers == {"x-request-id": "req_1"}
    assert capture.response_body == f"data: {REDACTED}\n\n"
    assert REDACTED in capture.request_body
    assert capture.request_id == "req_1"


def test_size_cap_records_what_it_dropped() -> None:
    recorder = _recorder(body=b"x" * 3000, limit=1000)
    recorder.response_started(200, {})
    for _ in range(5):
        recorder.body_text("y" * 400)
    capture = recorder.finish()
    assert len(capture.request_body) == 1000
    assert capture.request_dropped_bytes == 2000
    assert len(capture.response_body) == 1000
    assert capture.response_dropped_bytes == 1000


def test_key_cut_by_the_cap_is_still_scrubbed() -> None:
    recorder = _recorder(body=b"x" * 990 + TEST_KEY.encode(), limit=1000)
    capture = recorder.finish()
    assert TEST_KEY[:10] not in capture.request_body
    assert len(capture.request_body.encode()) <= 1000


def test_selected_headers() -> None:
    headers = {
        "X-Request-Id": "a",
        "openai-processing-ms": "12",
        "x-ratelimit-remaining-tokens": "9",
        "retry-after": "3",
        "x-openrouter-provider": "p",
        "server": "nginx",
        "authorization": "Bearer k",
    }
    assert selected_headers(headers) == {
        "x-request-id": "a",
        "openai-processing-ms": "12",
        "x-ratelimit-remaining-tokens": "9",
        "retry-after": "3",
        "x-openrouter-provider": "p",
    }


async def test_capture_of_a_live_request(server: LoopbackServer, client: ProviderClient) -> None:
    echo_body = sse_events([{**CHUNK, "echo": TEST_KEY}])
    server.queue(Reply.sse(echo_body, headers={"x-request-id": "req_42", "x-ratelimit-limit-requests": "60"}))
    profile = PRESETS["openrouter"].with_base_url(server.base_url)
    events, stream, error = await run_chat(client, server.base_url, profile=profile)
    assert error is None
    assert isinstance(events[-1], ChatCompleted)
    capture = events[-1].capture
    assert capture is stream.capture
    # The server did receive the key; the capture does not have it anywhere.
    assert server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
    assert TEST_KEY not in json.dumps(capture.to_json())
    assert capture.status == 200
    assert capture.request_id == "req_42"
    assert capture.response_headers["x-ratelimit-limit-requests"] == "60"
    assert json.loads(capture.request_body)["messages"][1] == {"role": "user", "content": "Say hi."}
    assert capture.request_headers["x-title"] == "tiny-agent desktop"
    assert capture.sse_events == 2
    timings = capture.timings
    assert timings.headers_ms is not None
    assert timings.first_byte_ms is not None
    assert timings.first_token_ms is not None
    assert timings.done_ms is not None
    assert timings.headers_ms <= timings.first_byte_ms <= timings.first_token_ms <= timings.done_ms
    assert capture.error is None
