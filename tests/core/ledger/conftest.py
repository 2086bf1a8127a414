"""Ledger tests never touch the real user data folder: ``TINY_AGENT_DATA_DIR`` points into ``tmp_path``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tiny_agent_core.ledger import connect


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data folder of the test (the override wins over XDG_DATA_HOME and the platform default)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(folder))
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))  # price overrides: none unless a test sets
    return folder


@pytest.fixture
def conn(data_dir: Path) -> Iterator[sqlite3.Connection]:
    """An open, migrated database in the test's data folder."""
    connection = connect()
    yield connection
    connection.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder
