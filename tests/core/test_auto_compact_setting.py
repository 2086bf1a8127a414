"""The automatic compaction setting in the settings file (AppSettings.auto_compact, ``"autoCompact"``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.agent.auto_compact import DEFAULT_PERCENT
from tiny_agent_core.errors import SettingsError, SettingsFileError
from tiny_agent_core.settings import SCHEMA_VERSION, SETTINGS_FILE, AppSettings


def test_it_is_on_at_85_percent_by_default_and_in_a_file_written_before_it(tmp_path: Path) -> None:
    assert AppSettings.load(tmp_path).auto_compact == DEFAULT_PERCENT == 85
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"version": SCHEMA_VERSION, "maxSteps": 9}))
    settings = AppSettings.load(tmp_path)
    assert settings.load_error is None
    assert settings.auto_compact == DEFAULT_PERCENT


@pytest.mark.parametrize("value", [None, 10, 70, 100])
def test_off_and_a_threshold_round_trip(tmp_path: Path, value: int | None) -> None:
    settings = AppSettings.load(tmp_path)
    settings.auto_compact = value
    settings.save()
    stored = json.loads((tmp_path / SETTINGS_FILE).read_text())
    assert stored["autoCompact"] == (False if value is None else value)
    again = AppSettings.load(tmp_path)
    assert again.load_error is None
    assert again.auto_compact == value


@pytest.mark.parametrize("value", [None, True, 9, 101, "85", 85.5, -1])
def test_an_invalid_threshold_is_refused(tmp_path: Path, value: Any) -> None:
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"version": SCHEMA_VERSION, "autoCompact": value}))
    settings = AppSettings.load(tmp_path)
    assert isinstance(settings.load_error, SettingsFileError)
    assert "autoCompact" in str(settings.load_error)
    settings = AppSettings.load(tmp_path / "fresh")
    settings.auto_compact = 5
    with pytest.raises(SettingsError, match="automatic compaction"):
        settings.save()
