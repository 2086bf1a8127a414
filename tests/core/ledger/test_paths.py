"""The database lives in the platform user data folder; XDG_DATA_HOME and TINY_AGENT_DATA_DIR move it."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from tiny_agent_core.ledger import connect, data_dir, database_path, default_workspace


def test_override_moves_database(data_dir: Path) -> None:
    assert database_path() == data_dir / "index.sqlite3"
    assert default_workspace() == data_dir / "workspace"
    connect().close()
    assert (data_dir / "index.sqlite3").is_file()


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_DATA_HOME applies on Linux")
def test_xdg_data_home_moves_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINY_AGENT_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "xdg" / "tiny-agent-desktop"
    connect().close()
    assert (tmp_path / "xdg" / "tiny-agent-desktop" / "index.sqlite3").is_file()


def test_blank_override_falls_back_to_platformdirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", "  ")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir().name == "tiny-agent-desktop"


def test_public_api_is_exported() -> None:
    import tiny_agent_core.ledger as ledger

    assert ledger.__all__ == sorted(ledger.__all__)
    public = {
        name
        for name, value in vars(ledger).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(ledger.__all__)
