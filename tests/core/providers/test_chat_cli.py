"""``tiny-agent chat`` end to end: a real subprocess against the loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.providers.support import TEST_KEY
from tests.loopback import LoopbackServer, Reply, free_port_url, sse_events

PROJECT = Path(__file__).resolve().parents[3]

CHUNKS = [
    {"id": "chatcmpl-9", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
    {"id": "chatcmpl-9", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hello"}}]},
    {"id": "chatcmpl-9", "model": "m", "choices": [{"index": 0, "delta": {"content": ", wörld"}}]},
    {"id": "chatcmpl-9", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"id": "chatcmpl-9", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
]


def run_cli(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        {
            "TEST_PROVIDER_KEY": TEST_KEY,
            "HOME": str(tmp_path / "home"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "TMPDIR": str(tmp_path / "tmp"),
            "PYTHONPATH": str(PROJECT),
            "PYTHONIOENCODING": "utf-8",
        }
    )
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", "chat", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=tmp_path,
        timeout=timeout,
        check=False,
    )


def assert_key_nowhere(tmp_path: Path, result: subprocess.CompletedProcess[str]) -> None:
    assert TEST_KEY not in result.stdout
    assert TEST_KEY not in result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path


def test_chat_streams_text_and_reports(tmp_path: Path, server: LoopbackServer) -> None:
    server.queue(Reply.sse(sse_events(CHUNKS), pace=0.01, headers={"x-request-id": "req_abc"}))
    result = run_cli(
        tmp_path, "--base-url", server.base_url, "--model", "m", "--api-key-env", "TEST_PROVIDER_KEY", "Say hi"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello, wörld"
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert set(report) == {"stopReason", "usage", "latencyMs", "ttftMs", "requestId", "tokensPerSecond"}
    assert report["stopReason"] == "stop"
    assert report["usage"] == {"input": 12, "output": 3, "cacheRead": 0, "cacheWrite": 0}
    assert report["tokensPerSecond"] > 0  # 3 tokens between the first delta and the last, paced 10 ms apart
    assert report["requestId"] == "req_abc"
    assert isinstance(report["latencyMs"], int)
    assert isinstance(report["ttftMs"], int)
    assert report["ttftMs"] <= report["latencyMs"]
    sent = server.requests[0].json()
    assert sent["messages"] == [{"role": "user", "content": "Say hi"}]
    assert "tools" not in sent
    assert sent["stream"] is True
    assert server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
    assert_key_nowhere(tmp_path, result)


def test_chat_picks_the_first_listed_model_and_uses_response_id(tmp_path: Path, server: LoopbackServer) -> None:
    server.queue(Reply.json({"data": [{"id": "zeta"}, {"id": "alpha"}]}), Reply.sse(sse_events(CHUNKS)))
    result = run_cli(tmp_path, "--base-url", server.base_url + "/", "hi")
    assert result.returncode == 0, result.stderr
    assert server.requests[0].path == "/v1/models"
    assert server.requests[1].json()["model"] == "alpha"
    assert "authorization" not in server.requests[1].headers
    assert json.loads(result.stderr.splitlines()[-1])["requestId"] == "chatcmpl-9"


@pytest.mark.parametrize(
    ("reply", "kind", "status", "retry_after"),
    [
        (Reply.error(401, {"error": {"message": f"Incorrect API key provided: {TEST_KEY}"}}), "http_error", 401, None),
        (Reply.error(429, {"error": {"message": "slow down"}}, retry_after="12"), "http_error", 429, 12),
        (Reply.error(503, "upstream unavailable"), "http_error", 503, None),
        (Reply.sse(sse_events(CHUNKS[:2]), cut_after=2), "connection", None, None),
        (Reply.sse(sse_events([*CHUNKS[:2], "{oops"])), "malformed", None, None),
        (
            Reply.sse(
                sse_events([CHUNKS[1], {"choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]}])
            ),
            "content_filter",
            None,
            None,
        ),
        (Reply.sse(sse_events([CHUNKS[1], {"error": {"message": "overloaded"}}])), "provider_error", None, None),
        (Reply.sse(sse_events(CHUNKS), stall_after=2, stall=30), "timeout", None, None),
    ],
    ids=["401", "429", "503", "cut", "malformed", "content_filter", "provider_error", "stall"],
)
def test_chat_failures(
    tmp_path: Path, server: LoopbackServer, reply: Reply, kind: str, status: int | None, retry_after: float | None
) -> None:
    server.queue(reply)
    result = run_cli(
        tmp_path,
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--api-key-env",
        "TEST_PROVIDER_KEY",
        "--timeout",
        "1",
        "hi",
    )
    assert result.returncode == 2, result.stderr
    last = json.loads(result.stderr.strip().splitlines()[-1])
    error = last["error"]
    assert error["kind"] == kind
    assert error["message"]
    assert error.get("status") == status
    assert error.get("retryAfter") == retry_after
    assert_key_nowhere(tmp_path, result)


def test_chat_connection_refused(tmp_path: Path) -> None:
    url = free_port_url()
    result = run_cli(tmp_path, "--base-url", url, "--model", "m", "hi")
    assert result.returncode == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["kind"] == "connection"
    assert url in error["message"]


def test_chat_missing_key_variable_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "NOT_SET_ANYWHERE_X", "hi")
    assert result.returncode == 2
    assert "NOT_SET_ANYWHERE_X" in result.stderr


def test_timeout_bounds_the_whole_request(tmp_path: Path, server: LoopbackServer) -> None:
    trickle = [CHUNKS[1]] * 40  # one event every 0.25 s: never silent for a second, never done within 2 s
    server.queue(Reply.sse(sse_events(trickle), pace=0.25))
    started = time.monotonic()
    result = run_cli(tmp_path, "--base-url", server.base_url, "--model", "m", "--timeout", "2", "hi")
    assert result.returncode == 2, result.stderr
    assert json.loads(result.stderr.strip().splitlines()[-1])["error"]["kind"] == "timeout"
    assert time.monotonic() - started < 9


@pytest.mark.parametrize(
    "args",
    [
        ["--base-url", "http://[::1", "hi"],
        ["--base-url", "http://127.0.0.1:99999/v1", "--model", "m", "hi"],
        ["--base-url", "http://127.0.0.1:9/v1", "--timeout", "-1", "hi"],
    ],
)
def test_bad_arguments_are_one_line(tmp_path: Path, args: list[str]) -> None:
    result = run_cli(tmp_path, *args)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("tiny-agent chat: error: argument ")


def test_an_empty_answer_exits_2_with_a_typed_error(tmp_path: Path, server: LoopbackServer) -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]},
    ]
    server.queue(Reply.sse(sse_events(chunks)))
    result = run_cli(tmp_path, "--base-url", server.base_url, "--model", "m", "hi")
    assert result.returncode == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["kind"] == "empty_response"
    assert "empty answer" in error["message"]
