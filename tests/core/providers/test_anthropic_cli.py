"""``tiny-agent wire normalize --api anthropic``: recorded Anthropic bodies and streams through the command give
what the adapter gives for the same bytes; an HTTP error status is typed as the adapter types it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.cli import main
from tiny_agent_core.providers.anthropic import normalize_body, normalize_sse_text

RECORDINGS = Path(__file__).parent / "recordings" / "anthropic"


def recording(prefix: str) -> dict[str, Any]:
    """The recording whose file name starts with ``prefix``."""
    (path,) = RECORDINGS.glob(f"{prefix}-*.json")
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


CLI_CASES = [("03", True, None), ("04", True, None), ("08", False, None), ("12", True, "content_filter")]


@pytest.mark.parametrize(("prefix", "stream", "refused"), CLI_CASES)
def test_wire_normalize_api_anthropic_runs_the_adapter(
    prefix: str, stream: bool, refused: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = recording(prefix)
    path = tmp_path / "recorded"
    path.write_text(case["sse"] if stream else json.dumps(case["body"]), encoding="utf-8")
    code = main(["wire", "normalize", "--api", "anthropic", *(["--stream"] if stream else []), str(path)])
    out = json.loads(capsys.readouterr().out)
    if refused is not None:
        assert (code, out["ok"], out["error"]["kind"]) == (2, False, refused)
        return
    expected = normalize_sse_text(case["sse"]) if stream else normalize_body(json.dumps(case["body"]))
    assert (code, out) == (0, expected.to_json())


def test_wire_normalize_api_anthropic_types_an_http_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "error.json"
    path.write_text(json.dumps(recording("16")["body"]), encoding="utf-8")
    code = main(["wire", "normalize", "--api", "anthropic", "--status", "529", str(path)])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    assert out["error"]["status"] == 529
    assert "overloaded_error" in out["error"]["message"]
