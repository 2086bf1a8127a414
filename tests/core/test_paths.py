"""The app folders (tiny_agent_core.paths): platformdirs under ``tiny-agent-desktop``, each moved by its override or
by the XDG variables, and the files the app places in the data folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import AppFolders
from tiny_agent_core.ledger import connect
from tiny_agent_core.paths import (
    CONFIG_DIR_ENV,
    DATA_DIR_ENV,
    LOG_DIR_ENV,
    comparisons_folder,
    config_dir,
    data_dir,
    database_path,
    default_workspace,
    log_dir,
)


def test_override_moves_database(app_folders: AppFolders) -> None:
    assert database_path() == app_folders.data / "index.sqlite3"
    assert default_workspace() == app_folders.data / "workspace"
    assert comparisons_folder() == app_folders.data / "compare"
    connect().close()
    assert (app_folders.data / "index.sqlite3").is_file()


def test_each_folder_has_its_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, folder in ((DATA_DIR_ENV, data_dir), (CONFIG_DIR_ENV, config_dir), (LOG_DIR_ENV, log_dir)):
        monkeypatch.setenv(variable, f"  {tmp_path / variable}  ")
        assert folder() == tmp_path / variable


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG variables apply on Linux")
def test_xdg_variables_move_the_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (DATA_DIR_ENV, CONFIG_DIR_ENV, LOG_DIR_ENV):
        monkeypatch.delenv(variable)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    assert data_dir() == tmp_path / "xdg-data" / "tiny-agent-desktop"
    assert config_dir() == tmp_path / "xdg-config" / "tiny-agent-desktop"
    assert log_dir() == tmp_path / "xdg-state" / "tiny-agent-desktop" / "log"
    connect().close()
    assert (tmp_path / "xdg-data" / "tiny-agent-desktop" / "index.sqlite3").is_file()


def test_blank_override_falls_back_to_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, folder in ((DATA_DIR_ENV, data_dir), (CONFIG_DIR_ENV, config_dir)):
        monkeypatch.setenv(variable, "  ")
        assert folder().name == "tiny-agent-desktop"
    monkeypatch.setenv(LOG_DIR_ENV, "")
    assert log_dir().parent.name == "tiny-agent-desktop"
