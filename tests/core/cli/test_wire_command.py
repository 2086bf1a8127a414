"""``tiny-agent wire normalize``: the output contract and exit codes, in-process and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tiny_agent_core.cli import main

BODY = {
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "",
                "reasoning_content": "hidden",
                "tool_calls": [
                    {"index": 0, "id": "", "type": "function", "function": {"name": "read", "arguments": ""}}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 200, "completion_tokens": 9, "prompt_cache_hit_tokens": 80},
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["wire", "normalize", *args])
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return code, json.loads(out)


def test_accepted_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(BODY))
    code, out = run(capsys, str(path))
    assert code == 0
    message = out["message"]
    assert isinstance(message, dict)
    call_id = message["tool_calls"][0]["id"]
    assert call_id.startswith("call_")
    assert out == {
        "ok": True,
        "stopReason": "toolUse",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
        "usage": {"input": 120, "output": 9, "cacheRead": 80, "cacheWrite": 0},
        "repairs": ["missing_tool_call_id", "empty_arguments"],
    }


def test_accepted_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "stream.txt"
    path.write_text(
        ': OPENROUTER PROCESSING\n\ndata: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
        "data: [DONE]\n\n"
    )
    code, out = run(capsys, "--stream", str(path))
    assert (code, out) == (
        0,
        {
            "ok": True,
            "stopReason": "stop",
            "message": {"role": "assistant", "content": "hi"},
            "usage": None,
            "repairs": [],
        },
    )


@pytest.mark.parametrize(
    ("args", "content", "expected"),
    [
        ([], "{", {"kind": "malformed"}),
        (["--stream"], "data: {}\n\n", {"kind": "malformed"}),
        (["--stream"], b"data: \xff\n\n", {"kind": "malformed"}),
        ([], '{"choices":[{"finish_reason":"content_filter"}]}', {"kind": "content_filter"}),
        ([], '{"error":{"message":"upstream down"}}', {"kind": "provider_error"}),
        (
            ["--status", "429"],
            '{"error":{"message":"Please try again in 2s."}}',
            {"kind": "http_error", "status": 429, "retryAfter": 2.0},
        ),
        (["--status", "401"], "", {"kind": "http_error", "status": 401}),
    ],
)
def test_rejected(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    content: str | bytes,
    expected: dict[str, object],
) -> None:
    path = tmp_path / "in"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out = run(capsys, *args, str(path))
    assert code == 2
    assert out["ok"] is False
    error = out["error"]
    assert isinstance(error, dict)
    assert error.pop("message")
    assert error == expected


def test_subprocess_reads_stdin_and_never_prints_a_traceback() -> None:
    for data, code in ((json.dumps(BODY), 0), ("not json at all", 2), ("", 2)):
        proc = subprocess.run(
            [sys.executable, "-m", "tiny_agent_core", "wire", "normalize", "-"],
            input=data.encode(),
            capture_output=True,
            check=False,
            timeout=60,
        )
        assert proc.returncode == code, proc.stderr
        assert b"Traceback" not in proc.stderr
        assert json.loads(proc.stdout)["ok"] is (code == 0)


def test_missing_file_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["wire", "normalize", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
