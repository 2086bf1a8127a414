"""``tiny-agent wire normalize --api openai-responses``: the recordings through the CLI give the adapter's result,
and errors come out typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.providers.test_openai_responses import EXPECTED, recording
from tiny_agent_core.providers.api_kinds import normalize_sse_text
from tiny_agent_core.providers.openai_responses import ADAPTER, normalize_response_body


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_wire_normalize_api_openai_responses_runs_the_adapter(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiny_agent_core.cli import main

    stream = not name.endswith(".json")
    path = tmp_path / "recorded"
    path.write_text(recording(name), encoding="utf-8")
    code = main(["wire", "normalize", "--api", "openai-responses", *(["--stream"] if stream else []), str(path)])
    out = json.loads(capsys.readouterr().out)
    expected = normalize_sse_text(ADAPTER, recording(name)) if stream else normalize_response_body(recording(name))
    assert (code, out) == (0, expected.to_json())


@pytest.mark.parametrize(
    ("name", "stream", "status", "kind"),
    [
        ("stream-error-insufficient-quota.jsonl", True, 200, "http_error"),
        ("error-400-previous-response-not-found.json", False, 400, "http_error"),
        ("error-404-model-not-found.json", False, 404, "http_error"),
    ],
)
def test_wire_normalize_api_openai_responses_types_errors(
    name: str, stream: bool, status: int, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiny_agent_core.cli import main

    path = tmp_path / "recorded"
    path.write_text(recording(name), encoding="utf-8")
    flags = ["--stream"] if stream else ["--status", str(status)]
    code = main(["wire", "normalize", "--api", "openai-responses", *flags, str(path)])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    assert out["ok"] is False
    assert out["error"]["kind"] == kind
