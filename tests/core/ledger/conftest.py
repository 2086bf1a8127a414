"""Ledger fixtures: the test's data folder (isolated by tests/conftest.py), an open database in it, a workspace."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import AppFolders
from tiny_agent_core.ledger import connect


@pytest.fixture
def data_dir(app_folders: AppFolders) -> Path:
    """The data folder of the test (``TINY_AGENT_DATA_DIR``; it wins over XDG_DATA_HOME and the platform default)."""
    return app_folders.data


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
