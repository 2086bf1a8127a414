"""Session times a date cannot hold: a valid session file may say it was created in the year ~287,000 (any safe
integer of milliseconds); listing, costing, exporting and importing it must still work."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.cli import main
from tiny_agent_core.session import reduce_session
from tiny_agent_core.timestamps import MAX_SHOWN_MS, local_datetime, utc_datetime

FAR = 9_007_199_254_740_991  # the largest createdAt the format allows


def test_times_are_clamped_to_what_a_date_holds() -> None:
    assert utc_datetime(FAR) == datetime(9999, 12, 31, tzinfo=UTC)
    assert utc_datetime(MAX_SHOWN_MS + 1) == utc_datetime(MAX_SHOWN_MS)
    assert utc_datetime(-5) == datetime(1970, 1, 1, tzinfo=UTC)
    assert utc_datetime(1_764_547_200_123) == datetime(2025, 12, 1, 0, 0, 0, 123_000, tzinfo=UTC)
    assert local_datetime(FAR).year == 9999


def _far_session(workspace: Path, source: Path) -> Path:
    session = SessionFile(source, 1, created_at=1_764_547_200_000, model="vendor/model-a")
    session.user("hello")
    session.attempt()
    session.answer("hi", usage=(10, 2, 0, 0))
    lines = session.path.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["createdAt"] = FAR
    folder = workspace / ".tiny-agent" / "sessions"
    folder.mkdir(parents=True)
    path = folder / session.path.name
    path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + b"".join(lines[1:]))
    reduce_session(path.read_bytes())  # valid for the strict reducer
    return path


def test_a_far_future_session_is_listed_costed_and_exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = tmp_path / "ws"
    path = _far_session(workspace, tmp_path / "elsewhere")
    assert main(["sessions", "--workspace", str(workspace)]) == 0
    assert "9999-12-31" in capsys.readouterr().out
    assert main(["cost", "--workspace", str(workspace), "--by", "day"]) == 0
    assert "Total" in capsys.readouterr().out
    assert main(["session", "export", "--format", "md", str(path)]) == 0
    assert "9999-12-31" in capsys.readouterr().out
